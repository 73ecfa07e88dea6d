//===- ExecutorTestUtil.h - Helpers of the executor tests ----------------===//
//
// A buffer's bytes as floats, the losses of a few steps on the CPU backend,
// a plan builder that lays buffers out back to back, and a one-layer
// language model on the synthetic sequence task.
//
//===----------------------------------------------------------------------===//
#ifndef REMAT_TESTS_UNIT_RUNTIME_EXECUTORTESTUTIL_H
#define REMAT_TESTS_UNIT_RUNTIME_EXECUTORTESTUTIL_H

#include "runtime/Executor.h"

#include <nlohmann/json.hpp>

#include <cstring>
#include <string>
#include <vector>

namespace remat::runtime::test {

inline std::vector<float> asFloats(const std::vector<char> &bytes) {
  std::vector<float> out(bytes.size() / 4);
  std::memcpy(out.data(), bytes.data(), bytes.size());
  return out;
}

/// The losses of `steps` steps of `plan` on a fresh CPU backend.
std::vector<double> runLosses(const LoadedPlan &plan, int steps,
                              ExecutorOptions options = {});

/// Lays buffers out back to back (aligned) while a test builds a plan.
struct PlanBuilder {
  Plan plan;
  int64_t add(const std::string &name, BufferRole role, DType dtype,
              Shape shape) {
    BufferDesc b;
    b.name = name;
    b.role = role;
    b.dtype = dtype;
    b.shape = shape;
    b.bytes = *checkedByteSize(shape, dtype);
    b.offset = (plan.arenaBytes + plan.alignment - 1) / plan.alignment *
               plan.alignment;
    plan.arenaBytes = b.offset + b.bytes;
    if (role == BufferRole::Param || role == BufferRole::Optimizer)
      b.init = InitSpec{};
    plan.buffers.push_back(b);
    return int64_t(plan.buffers.size() - 1);
  }
  void step(const std::string &op, std::vector<int64_t> ins,
            std::vector<int64_t> outs,
            nlohmann::json attrs = nlohmann::json::object(),
            Phase phase = Phase::Forward) {
    plan.steps.push_back({op, ins, outs, attrs, phase, false});
  }
};

/// A one-layer language model on the synthetic sequence task: embedding ->
/// layer_norm -> matmul -> cross_entropy, backward, adamw on every param.
Plan sequenceModelPlan();

} // namespace remat::runtime::test

#endif // REMAT_TESTS_UNIT_RUNTIME_EXECUTORTESTUTIL_H
