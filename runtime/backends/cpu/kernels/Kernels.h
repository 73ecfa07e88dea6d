//===- Kernels.h - One CPU kernel function per kernel family ----*- C++ -*-===//
//
// runKernel (runtime/backends/cpu/Kernels.h) calls the function of the
// call's kernel family (ops/OpTable.h): runMatmul, runBinary, ... Each is
// defined in this folder's file of its family group (matmul.cpp,
// binary.cpp, ..., the names of the CUDA backend's kernels/*.cu) and
// instantiated there for float and double. A family that serves several
// ops switches on call.op and throws std::logic_error for an op it has no
// case for.
//
//===----------------------------------------------------------------------===//
#ifndef REMAT_RUNTIME_BACKENDS_CPU_KERNELS_KERNELS_H
#define REMAT_RUNTIME_BACKENDS_CPU_KERNELS_KERNELS_H

#include "runtime/Backend.h"

#include <cstdint>
#include <vector>

namespace remat::runtime::cpu {

/// Per-channel mean and Σ(x - mean)² (double) of the x of an op of the
/// families BatchNorm, BatchNormGrad or RunningStatUpdate, shared by steps
/// that read the same unchanged x (SharedMoments.h). Sized for the
/// channels before a step runs.
struct ChannelMoments {
  std::vector<double> mean, squares;
  /// True: the step reads them; false: it computes them from x and stores
  /// every channel's (the caller sets filled after the step).
  bool filled = false;
};

/// Runs an op of those families with shared moments (their kernel file);
/// throws std::logic_error for any other op.
template <typename T>
void runWithMoments(const KernelCall &call, ChannelMoments &moments);
extern template void runWithMoments<float>(const KernelCall &,
                                           ChannelMoments &);
extern template void runWithMoments<double>(const KernelCall &,
                                            ChannelMoments &);

/// attention or attention_grad on bf16 tensors through oneDNN's bf16 GEMMs
/// (attentionBf16Gemms, CpuWorkspace.h) with `scratch` (64-aligned) of
/// `bytes`: the probabilities and their gradient in float32, rounded to
/// bf16 where a GEMM reads them. False, having written nothing, where
/// oneDNN does not run a GEMM or `bytes` is too few.
bool runAttentionBf16(const KernelCall &call, char *scratch, uint64_t bytes);

// One function per kernel family: float operands and results are T, index
// operands their own dtype; `workspace` holds `workspaceElements` of T.
#define REMAT_KERNEL_FAMILY(Family)                                            \
  template <typename T>                                                        \
  void run##Family(const KernelCall &call, T *workspace,                       \
                   uint64_t workspaceElements);                                \
  extern template void run##Family<float>(const KernelCall &, float *,         \
                                          uint64_t);                           \
  extern template void run##Family<double>(const KernelCall &, double *,       \
                                           uint64_t);
#include "ops/generated/OpTable.inc"

} // namespace remat::runtime::cpu

#endif // REMAT_RUNTIME_BACKENDS_CPU_KERNELS_KERNELS_H
