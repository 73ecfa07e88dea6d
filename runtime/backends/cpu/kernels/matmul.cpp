//===- matmul.cpp - matmul through gemm (Gemm.h) -------------------------===//
//
// A 2-D B shared by every batch of an untransposed A is one GEMM over all
// batches ([batch*M, K] x [K, N]), and so is sum_batch (the batches' rows
// flattened: [batch*K, M]^T x [batch*K, N]); otherwise one GEMM per batch.
//
//===----------------------------------------------------------------------===//
#include "runtime/backends/cpu/kernels/Common.h"

#include "runtime/backends/cpu/Gemm.h"

namespace remat::runtime::cpu {

template <typename T> void runMatmul(const KernelCall &call, T *, uint64_t) {
  const OpAttrs &at = *call.attrs;
  const Shape &as = call.inputs[0].shape, &bs = call.inputs[1].shape;
  size_t ra = as.size(), rb = bs.size();
  int64_t m = at.transposeA ? as[ra - 1] : as[ra - 2];
  int64_t k = at.transposeA ? as[ra - 2] : as[ra - 1];
  int64_t n = at.transposeB ? bs[rb - 2] : bs[rb - 1];
  int64_t batch = product(as.begin(), as.end() - 2);
  bool sharedB = rb == 2;
  const T *a = inData<T>(call, 0), *b = inData<T>(call, 1);
  T *c = outData<T>(call, 0);
  int64_t lda = at.transposeA ? m : k, ldb = at.transposeB ? k : n;
  if (at.sumBatch) {
    // [batch*K, M]^T x [batch*K, N]: the batches' products summed, as one
    // GEMM over the flattened rows.
    gemm<T>(true, false, m, n, batch * k, T(1), a, lda, b, ldb, T(0), c, n);
    return;
  }
  if (sharedB && !at.transposeA) {
    // [batch*M, K] x [K, N]: one GEMM over all batches.
    gemm<T>(false, at.transposeB, batch * m, n, k, T(1), a, lda, b, ldb, T(0),
            c, n);
    return;
  }
  for (int64_t i = 0; i < batch; ++i)
    gemm<T>(at.transposeA, at.transposeB, m, n, k, T(1), a + i * m * k, lda,
            b + (sharedB ? 0 : i * k * n), ldb, T(0), c + i * m * n, n);
}

template void runMatmul<float>(const KernelCall &, float *, uint64_t);
template void runMatmul<double>(const KernelCall &, double *, uint64_t);

} // namespace remat::runtime::cpu
