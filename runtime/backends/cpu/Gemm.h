//===- Gemm.h - Row-major GEMM for the CPU backend ------------------------===//
//
// C = alpha * op(A) * op(B) + beta * C, row-major, op = transpose or not.
// float goes to oneDNN's matmul where it runs the shape with the scratch
// given (DnnlMatmul.h), else, like double, to OpenBLAS (cblas_sgemm,
// cblas_dgemm) where built with REMAT_HAVE_OPENBLAS; otherwise to a plain
// i-k-j loop that accumulates in k order. Each is deterministic for fixed
// shapes and threads.
//
//===----------------------------------------------------------------------===//
#ifndef REMAT_RUNTIME_BACKENDS_CPU_GEMM_H
#define REMAT_RUNTIME_BACKENDS_CPU_GEMM_H

#include "runtime/backends/cpu/DnnlMatmul.h"

#include <cstdint>
#include <string>

namespace remat::runtime::cpu {

template <typename T>
void gemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k, T alpha,
          const T *a, int64_t lda, const T *b, int64_t ldb, T beta, T *c,
          int64_t ldc, void *scratch = nullptr, uint64_t scratchBytes = 0);

/// The `shape.batch` GEMMs of `shape` (DnnlMatmul.h), a gemm() call each:
/// the i-th on A + i*strideA, B + i*strideB and C + i*strideC, with the
/// shape's alpha and beta.
template <typename T>
void gemmEach(const GemmShape &shape, const T *a, const T *b, T *c,
              void *scratch = nullptr, uint64_t scratchBytes = 0);

/// Whether GEMMs use OpenBLAS in this build.
bool gemmUsesBlas();
/// The kernel OpenBLAS picked for this CPU (openblas_get_corename:
/// "Haswell", "SkylakeX", ...); empty without OpenBLAS.
std::string gemmBlasCore();
/// The threads OpenBLAS runs float GEMMs on (openblas_get_num_threads:
/// OPENBLAS_NUM_THREADS, at most one a core); 0 without OpenBLAS.
unsigned gemmThreads();

} // namespace remat::runtime::cpu

#endif // REMAT_RUNTIME_BACKENDS_CPU_GEMM_H
