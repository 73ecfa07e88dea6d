//===- CudaOpSession.h - One op's plan driven call by call on a backend --===//
//
// OpSession: the Backend interface step by step (several calls per
// prepare, training-step brackets, reads in between) on one op's plan; and
// a dropout op whose mask changes with the training step, with the CPU's
// result, for the CUDA-graph and lifetime tests.
//
//===----------------------------------------------------------------------===//
#ifndef REMAT_TESTS_UNIT_CUDA_CUDAOPSESSION_H
#define REMAT_TESTS_UNIT_CUDA_CUDAOPSESSION_H

#include "CudaTestUtil.h"

#include "runtime/Backend.h"
#include "runtime/plan/Loader.h"

#include <random>
#include <vector>

namespace remat::runtime::test {

/// One op's plan (opPlanJson: step 0 the op, step 1 the loss constant)
/// loaded, its arena allocated and prepared on a backend and its inputs
/// copied in, for tests that drive the Backend interface step by step:
/// several calls per prepare, training-step brackets, reads in between.
class OpSession {
public:
  OpSession(Backend &backend, const OpCase &c)
      : backend(backend),
        loaded(loadPlanText(opPlanJson(c).dump(), "op_test.plan")) {
    backend.checkSupport(loaded);
    backend.workspaceBytes(loaded);
    base = static_cast<char *>(
        backend.allocateArena(loaded.plan.arenaBytes, loaded.plan.alignment));
    try {
      backend.prepare(loaded);
      calls = PlanCalls(loaded, base);
      const StepDesc &op = loaded.plan.steps[0];
      for (size_t i = 0; i < c.inputs.size(); ++i) {
        std::vector<char> bytes = hostBytes(c.inputs[i]);
        backend.copyIn(refOf(op.inputs[i]).data, bytes.data(), bytes.size());
      }
    } catch (...) {
      backend.freeArena(base);
      throw;
    }
  }
  OpSession(const OpSession &) = delete;
  OpSession &operator=(const OpSession &) = delete;
  ~OpSession() {
    if (base)
      backend.freeArena(base);
  }

  TensorRef refOf(int64_t id) const { return calls.ref(id); }

  KernelCall call(size_t step, int64_t trainingStep) const {
    return calls.call(step, trainingStep);
  }

  /// Runs plan step `step` (0: the op, 1: the loss constant).
  void run(size_t step, int64_t trainingStep) {
    backend.runStep(call(step, trainingStep));
  }

  /// Both plan steps inside begin/endTrainingStep, as the executor does.
  void trainingStep(int64_t t) {
    backend.beginTrainingStep(t);
    run(0, t);
    run(1, t);
    backend.endTrainingStep(t);
  }

  /// The op's result `i`, copied out now.
  HostTensor output(size_t i = 0) const {
    const TensorRef &r = calls.output(0, i);
    std::vector<char> bytes(size_t(r.numElements) * dtypeSize(r.dtype));
    backend.copyOut(bytes.data(), r.data, bytes.size());
    return hostTensorFromBytes({r.dtype, r.shape}, bytes);
  }

  /// Leaves the arena to the backend (its destructor must free it).
  void abandonArena() { base = nullptr; }

  Backend &backend;
  LoadedPlan loaded;
  char *base = nullptr;

private:
  PlanCalls calls; ///< a graph replay keeps pointers into these refs
};

/// A dropout op whose mask changes with the training step: what a graph
/// replay must reproduce (the step is read on the device).
inline OpCase dropoutCase() {
  std::mt19937 rng(40);
  return {OpKind::Dropout,
          {{"rate", 0.5}, {"seed", 77}},
          {randomTensor({37, 41}, rng)},
          {typeOf({37, 41})}};
}

/// The CPU's dropout result at training step t.
inline HostTensor cpuDropout(int64_t t) {
  OpCase c = dropoutCase();
  c.trainingStep = t;
  return runOnBackend(*createCpuBackend(), c)[0];
}

} // namespace remat::runtime::test

#endif // REMAT_TESTS_UNIT_CUDA_CUDAOPSESSION_H
