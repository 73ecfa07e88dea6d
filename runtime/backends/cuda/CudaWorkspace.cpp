//===- CudaWorkspace.cpp - The CUDA backend's workspace for a plan -------===//
//
// cudaWorkspaceFor (CudaBackend.h): the cuBLAS workspace and kernel scratch
// a plan gets, shrunk to fit the plan's budget when it has one; and the
// line remat run prints of it (workspaceSummary).
//
//===----------------------------------------------------------------------===//
#include "runtime/backends/cuda/CudaBackend.h"

#include "runtime/backends/cuda/CudaBackendInternal.h"

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

namespace remat::runtime {

using cuda::alignUp;

namespace {

constexpr uint64_t kStatusBytes = CudaWorkspace::kStatusBytes;
constexpr uint64_t kDefaultCublasWorkspace = uint64_t(32) << 20;

uint64_t envBytes(const char *name, uint64_t fallback) {
  const char *v = std::getenv(name);
  if (!v || !*v)
    return fallback;
  char *end = nullptr;
  unsigned long long n = std::strtoull(v, &end, 10);
  return end && *end == '\0' ? uint64_t(n) : fallback;
}

bool usesGemm(const LoadedPlan &plan) {
  for (const ResolvedStep &s : plan.steps)
    if (s.op == OpKind::Matmul || s.op == OpKind::Attention ||
        s.op == OpKind::AttentionGrad)
      return true;
  return false;
}

uint64_t cublasWorkspaceFor(const LoadedPlan &plan) {
  if (!usesGemm(plan))
    return 0;
  return alignUp(
      envBytes("REMAT_CUDA_CUBLAS_WORKSPACE_BYTES", kDefaultCublasWorkspace),
      256);
}

/// The kernel scratch of the plan: the largest single step's need, its
/// kernel's and the float copies of its bf16 tensors (CudaBf16.cpp). With
/// `minimum`, attention counts one (batch, head) slice only (it works in
/// chunks of what the scratch holds): the least the plan can run with.
uint64_t scratchFor(const LoadedPlan &plan, bool minimum = false) {
  uint64_t most = 0;
  const Plan &p = plan.plan;
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    OpKind op = plan.steps[i].op;
    std::vector<TensorType> ins, outs;
    for (int64_t b : p.steps[i].inputs)
      ins.push_back({p.buffers[size_t(b)].dtype, p.buffers[size_t(b)].shape});
    for (int64_t b : p.steps[i].outputs)
      outs.push_back({p.buffers[size_t(b)].dtype, p.buffers[size_t(b)].shape});
    uint64_t kernel =
        minimum && (op == OpKind::Attention || op == OpKind::AttentionGrad)
            ? cuda::attentionSliceBytes(op, ins[0].shape)
            : cuda::scratchBytesFor(op, plan.steps[i].attrs, ins, outs);
    // Float copies of bf16 tensors come first (CudaBf16.cpp).
    most = std::max(most,
                    alignUp(kernel, 256) + cuda::floatCopyBytes(op, ins, outs));
  }
  return alignUp(most, 256);
}

/// The least cuBLAS workspace the backend gives a plan with GEMMs when the
/// budget is tight (cuBLAS's recommendation before Hopper).
constexpr uint64_t kMinimumCublasWorkspace = uint64_t(4) << 20;

} // namespace

CudaWorkspace cudaWorkspaceFor(const LoadedPlan &plan) {
  CudaWorkspace full{cublasWorkspaceFor(plan), scratchFor(plan)};
  std::optional<uint64_t> budget = plan.budgetBytes();
  uint64_t arena = plan.plan.arenaBytes;
  if (!budget || (arena <= *budget && full.total() <= *budget - arena))
    return full;
  uint64_t minimumScratch = scratchFor(plan, true);
  uint64_t minimumCublas =
      full.cublas ? std::min(full.cublas, kMinimumCublasWorkspace) : 0;
  uint64_t available = *budget > arena ? *budget - arena : 0;
  CudaWorkspace least{minimumCublas, minimumScratch};
  if (least.total() > available)
    throw PlanError(
        plan.source + ": /report/budget_bytes: the plan's budget of " +
        std::to_string(*budget) +
        " B leaves " + std::to_string(available) +
        " B beside its arena of " + std::to_string(arena) +
        " B, but the cuda backend's workspace needs at least " +
        std::to_string(least.total()) + " B (" +
        std::to_string(full.total()) +
        " B by default); compile with --workspace-reserve " +
        std::to_string(full.total()) + " (or at least " +
        std::to_string(least.total()) + ")");
  uint64_t spare = available - kStatusBytes; // >= least.cublas + least.scratch
  CudaWorkspace split;
  if (spare >= full.cublas + minimumScratch) {
    split.cublas = full.cublas;
    split.scratch = std::min(full.scratch, spare - full.cublas) / 256 * 256;
  } else {
    split.scratch = minimumScratch;
    split.cublas = std::max(minimumCublas, (spare - minimumScratch) / 256 * 256);
  }
  return split;
}

std::string CudaBackend::workspaceSummary() const {
  CudaWorkspace split = workspaceSplit();
  std::ostringstream line;
  line << "cuda workspace: cuBLAS " << split.cublas << " B, kernel scratch "
       << split.scratch << " B, status " << CudaWorkspace::kStatusBytes
       << " B";
  return line.str();
}

} // namespace remat::runtime
