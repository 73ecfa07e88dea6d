//===- matmul.cpp - matmul through gemm (Gemm.h) -------------------------===//
//
// A 2-D B shared by every batch of an untransposed A is one GEMM over all
// batches ([batch*M, K] x [K, N]), and so is sum_batch (the batches' rows
// flattened: [batch*K, M]^T x [batch*K, N]); otherwise one GEMM per batch
// (matmulGemms, CpuWorkspace.h). The workspace holds the GEMMs' scratchpad
// where oneDNN runs them.
//
//===----------------------------------------------------------------------===//
#include "runtime/backends/cpu/kernels/Common.h"

#include "runtime/backends/cpu/CpuWorkspace.h"
#include "runtime/backends/cpu/Gemm.h"

namespace remat::runtime::cpu {

template <typename T>
void runMatmul(const KernelCall &call, T *workspace, uint64_t elements) {
  gemmEach<T>(
      matmulGemms(*call.attrs, call.inputs[0].shape, call.inputs[1].shape),
      inData<T>(call, 0), inData<T>(call, 1), outData<T>(call, 0), workspace,
      elements * sizeof(T));
}

template void runMatmul<float>(const KernelCall &, float *, uint64_t);
template void runMatmul<double>(const KernelCall &, double *, uint64_t);

} // namespace remat::runtime::cpu
