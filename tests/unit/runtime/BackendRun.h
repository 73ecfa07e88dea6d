//===- BackendRun.h - One op on a backend, as a one-step plan -*- C++ -*-===//
//
// runOnBackend builds a one-step plan around the op (inputs as `input`
// buffers, optimizer state as `param` / `optimizer` buffers updated in
// place, plus a scalar loss written by a `constant` step), validates it
// with the loader, and runs it through the Backend interface exactly as the
// executor does: checkSupport, workspaceBytes, allocateArena, prepare,
// copyIn, runStep, synchronize, copyOut. Unlike runOp (TestUtil.h), the
// backend stages bf16 tensors and places the step's scratch as for a plan.
//
//===----------------------------------------------------------------------===//
#ifndef REMAT_TESTS_UNIT_RUNTIME_BACKENDRUN_H
#define REMAT_TESTS_UNIT_RUNTIME_BACKENDRUN_H

#include "TestUtil.h"

#include "runtime/Backend.h"

#include <nlohmann/json.hpp>

#include <functional>
#include <optional>
#include <random>
#include <set>
#include <string>

namespace remat::runtime::test {

struct OpCase {
  OpKind op;
  nlohmann::json attrs = nlohmann::json::object();
  std::vector<HostTensor> inputs;
  std::vector<TensorType> outputs;
  int64_t trainingStep = 0;
  int64_t microbatch = 0; ///< KernelCall::microbatch
  /// KernelCall's micro-batch slice (sliceSamples, firstSample, padding).
  int64_t sliceSamples = 1, firstSample = 0, padding = 0;
};

/// The one-step plan (JSON, 256-aligned buffers) runOnBackend runs.
nlohmann::json opPlanJson(const OpCase &c);

/// Runs the op on `backend`; returns its results.
std::vector<HostTensor> runOnBackend(Backend &backend, const OpCase &c);

/// On `backend`: cross_entropy, mse and their gradients on a micro-batch
/// of 3 samples whose last is padding equal the same ops on the 2 real
/// samples, scaled by 2/3 (the padded slice's count), with zero gradients
/// for the padding; dropout's mask of a slice starting at sample 3 is rows
/// 3.. of the unsplit batch's.
void checkPaddedSlice(Backend &backend);

/// `t` as a bf16 tensor where it is f32 (its values rounded to bf16 on the
/// way in).
HostTensor asBf16(HostTensor t);

/// `t` with its values rounded to bf16 (to nearest, ties to even), its
/// dtype kept: what a bf16 buffer of it holds, as a float32 operand.
HostTensor bf16Rounded(HostTensor t);

/// For every op of the table for which `skip` is false: its sample
/// (OpSamples.h) with bf16 on every f32 operand, then on those shaped as
/// the first (normalization: bf16 x and dy, float32 parameters), wherever
/// the type rule takes it: fn(case), inside Catch2 INFOs naming the op and
/// the variant. Returns the names of the ops run.
std::set<std::string>
forEachBf16Case(std::mt19937 &rng, const std::function<bool(OpKind)> &skip,
                const std::function<void(const OpCase &)> &fn);

/// The sample with bf16 in place of f32 on every input, or with
/// `activationsOnly` on those shaped as the first (and on every given f32
/// result), its other results as the type rule infers them; nullopt when
/// the rule does not take it or nothing is bf16.
std::optional<OpCase> bf16Variant(OpKind op, const nlohmann::json &attrs,
                                  const std::vector<HostTensor> &inputs,
                                  const std::vector<TensorType> &outputs,
                                  bool activationsOnly);

} // namespace remat::runtime::test

#endif // REMAT_TESTS_UNIT_RUNTIME_BACKENDRUN_H
