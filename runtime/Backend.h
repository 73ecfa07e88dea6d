//===- Backend.h - The kernel interface every backend implements ---------===//
//
// A backend owns device memory and runs one plan step at a time. The
// executor (Executor.h) calls it in this order:
//
//   checkSupport(plan)            reject what the backend cannot compute
//   workspaceBytes(plan)          scratch the kernels need (reported)
//   allocateArena(bytes, align)   ONE allocation for every plan buffer
//   prepare(plan)                 allocate the workspace, build kernels
//   copyIn(...)                   parameter init, inputs of each step
//   beginTrainingStep(t)          per training step t (0-based)
//   runStep(call) ...             every plan step, in order
//   endTrainingStep(t)
//   synchronize()                 before the loss is read / time measured
//   copyOut(...)                  loss, weights, dumped gradients
//   freeArena(base)
//
// Pointers passed to runStep / copyIn / copyOut are device pointers inside
// the arena; a CUDA backend may enqueue asynchronously and only has to be
// done when synchronize() returns (copyOut itself is synchronous).
//
//===----------------------------------------------------------------------===//
#ifndef REMAT_RUNTIME_BACKEND_H
#define REMAT_RUNTIME_BACKEND_H

#include "runtime/GradientComm.h"
#include "runtime/plan/Loader.h"
#include "runtime/plan/Ops.h"
#include "runtime/SyntheticDraw.h"

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace remat::runtime {

class Ranks;

/// One operand or result of a kernel: a device pointer into the arena plus
/// its dtype and static shape.
struct TensorRef {
  void *data = nullptr;
  DType dtype = DType::F32;
  Shape shape;
  int64_t numElements = 0;

  template <typename T> T *as() const { return static_cast<T *>(data); }
};

/// Everything a kernel launch needs. Operand counts, dtypes and shapes were
/// checked by the loader against docs/ops.md.
struct KernelCall {
  OpKind op{};
  const OpAttrs *attrs = nullptr;
  const TensorRef *inputs = nullptr;
  int numInputs = 0;
  const TensorRef *outputs = nullptr;
  int numOutputs = 0;
  /// 0-based training-step number: the Philox counter of dropout; adamw's t
  /// is trainingStep + 1.
  int64_t trainingStep = 0;
  /// Index of the step in the plan (for error messages).
  size_t stepIndex = 0;
};

/// The operand and result refs of every step of `plan` in an arena at
/// `base`, and the KernelCall of a step over them. The refs live as long as
/// this object: a CUDA backend replaying a graph keeps their pointers.
class PlanCalls {
public:
  PlanCalls() = default;
  PlanCalls(const LoadedPlan &plan, char *base) : plan(&plan), base(base) {
    for (const StepDesc &s : plan.plan.steps) {
      std::vector<TensorRef> ins, outs;
      for (int64_t b : s.inputs)
        ins.push_back(ref(b));
      for (int64_t b : s.outputs)
        outs.push_back(ref(b));
      inputs.push_back(std::move(ins));
      outputs.push_back(std::move(outs));
    }
  }

  /// Buffer `index` of the plan in the arena.
  TensorRef ref(int64_t index) const {
    const BufferDesc &b = plan->plan.buffers[size_t(index)];
    return TensorRef{base + b.offset, b.dtype, b.shape,
                     int64_t(*checkedNumElements(b.shape))};
  }

  /// Plan step `step` in 0-based training step `trainingStep`.
  KernelCall call(size_t step, int64_t trainingStep) const {
    KernelCall c;
    c.op = plan->steps[step].op;
    c.attrs = &plan->steps[step].attrs;
    c.inputs = inputs[step].data();
    c.numInputs = int(inputs[step].size());
    c.outputs = outputs[step].data();
    c.numOutputs = int(outputs[step].size());
    c.trainingStep = trainingStep;
    c.stepIndex = step;
    return c;
  }

  /// Result `i` of plan step `step`.
  const TensorRef &output(size_t step, size_t i) const {
    return outputs[step][i];
  }

private:
  const LoadedPlan *plan = nullptr;
  char *base = nullptr;
  std::vector<std::vector<TensorRef>> inputs, outputs;
};

class Backend {
public:
  virtual ~Backend() = default;

  /// "cpu", "cuda".
  virtual std::string name() const = 0;

  /// Throws PlanError naming the buffer or step the backend cannot run
  /// (e.g. "dtype f16 is not supported by the cpu backend").
  virtual void checkSupport(const LoadedPlan &plan) const = 0;

  /// Scratch bytes the kernels of this plan need beyond the arena.
  virtual uint64_t workspaceBytes(const LoadedPlan &plan) const = 0;

  /// One device allocation of exactly `bytes`, aligned to `alignment`,
  /// zero-filled. Called once per executor.
  virtual void *allocateArena(uint64_t bytes, uint64_t alignment) = 0;
  virtual void freeArena(void *base) = 0;

  /// Called once after allocateArena, before any step: allocate the
  /// workspace, select kernels, capture graphs.
  virtual void prepare(const LoadedPlan &plan) = 0;

  /// The bytes [offset, offset + size) of the arena that plan step `step`
  /// may use as kernel scratch beside its results (a gap no live buffer
  /// occupies while it runs: StepScratch.h); {0, 0} for none. Valid after
  /// prepare(). The bounds check allows writes there.
  virtual std::pair<uint64_t, uint64_t> arenaScratch(size_t step) const {
    (void)step;
    return {0, 0};
  }

  virtual void copyIn(void *deviceDst, const void *hostSrc, uint64_t bytes) = 0;
  /// Whether the backend runs copies and kernels in one queue, so the
  /// executor may fill step t+1's inputs right after enqueuing step t's
  /// calls (before synchronize): the host prepares the next batch while
  /// the device computes. False (the default): inputs are filled just
  /// before their step.
  virtual bool overlapsInputCopies() const { return false; }
  /// An input copy that may complete after it returns (the source may be
  /// reused at once: the backend stages it), ordered after every call
  /// enqueued before it. Returns false when the backend has no such copy
  /// (the executor then uses copyIn). trainingStep is the step the input
  /// is for.
  virtual bool copyInputAsync(void *deviceDst, const void *hostSrc,
                              uint64_t bytes, int64_t trainingStep) {
    return false;
  }
  /// Generates a randn / randint input at deviceDst where it lives, the
  /// values writeSyntheticBlock gives (SyntheticDraw.h), instead of the
  /// executor generating it on the host and copying it in. Returns false
  /// when the backend does not (the default; the CPU generates on the host).
  virtual bool generateInput(void *deviceDst, const SyntheticRequest &request) {
    return false;
  }
  virtual void copyOut(void *hostDst, const void *deviceSrc,
                       uint64_t bytes) = 0;

  /// Runs one plan step. A data-dependent failure (an embedding index or a
  /// label outside its range) throws std::runtime_error; nothing is written
  /// outside the step's result buffers.
  virtual void runStep(const KernelCall &call) = 0;

  virtual void synchronize() = 0;

  /// Bracket the plan steps of one training step (after its inputs were
  /// copied in, before the loss is read). A CUDA backend may record the
  /// steps into a graph on the first step and replay it later; the default
  /// does nothing. onStepExecuted callbacks may copyOut in between.
  virtual void beginTrainingStep(int64_t trainingStep) {}
  virtual void endTrainingStep(int64_t trainingStep) {}

  /// The backend's own gradient communication over `ranks` (a data-
  /// parallel run's; null: one rank, as `remat run --comm nccl` without
  /// an MPI launcher) on its device
  /// memory: the CUDA backend's NCCL where built with it. Null (the
  /// default): none; host memory uses MPI (createMpiGradientComm). Called
  /// after prepare(), before the first training step; the comm must be
  /// destroyed before the backend. A backend may change how it runs steps
  /// for a communicating run (the CUDA backend turns graphs off).
  virtual std::unique_ptr<GradientComm> createDeviceComm(Ranks *ranks) {
    return nullptr;
  }
  /// Whether createDeviceComm can give one (this build has NCCL).
  virtual bool hasDeviceComm() const { return false; }
};

/// The CPU backend (always available).
std::unique_ptr<Backend> createCpuBackend();

/// "cpu" or, where built with the CUDA backend, "cuda". An unknown name is a
/// PlanError listing the available ones.
std::unique_ptr<Backend> createBackend(const std::string &name);

/// Names accepted by createBackend, comma-separated.
std::string availableBackends();

} // namespace remat::runtime

#endif // REMAT_RUNTIME_BACKEND_H
