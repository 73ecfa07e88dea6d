//===- Gemm.cpp - Row-major GEMM for the CPU backend ----------------------===//
#include "runtime/backends/cpu/Gemm.h"

#include "runtime/backends/cpu/DnnlMatmul.h"

#include <algorithm>

#ifdef REMAT_HAVE_OPENBLAS
#include <cblas.h>
#endif

namespace remat::runtime::cpu {

namespace {

template <typename T>
void loopGemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k,
              T alpha, const T *a, int64_t lda, const T *b, int64_t ldb, T beta,
              T *c, int64_t ldc) {
  if (transB && !transA) {
    // Rows of A and B are both contiguous in k: one dot product per entry.
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        const T *arow = a + i * lda, *brow = b + j * ldb;
        T sum = T(0);
        for (int64_t p = 0; p < k; ++p)
          sum += arow[p] * brow[p];
        T *out = c + i * ldc + j;
        *out = alpha * sum + (beta == T(0) ? T(0) : beta * *out);
      }
    return;
  }
  for (int64_t i = 0; i < m; ++i) {
    T *row = c + i * ldc;
    for (int64_t j = 0; j < n; ++j)
      row[j] = beta == T(0) ? T(0) : beta * row[j];
    for (int64_t p = 0; p < k; ++p) {
      T aip = alpha * (transA ? a[p * lda + i] : a[i * lda + p]);
      if (transB) {
        for (int64_t j = 0; j < n; ++j)
          row[j] += aip * b[j * ldb + p];
      } else {
        const T *brow = b + p * ldb;
        for (int64_t j = 0; j < n; ++j)
          row[j] += aip * brow[j];
      }
    }
  }
}

#ifdef REMAT_HAVE_OPENBLAS
void blasGemm(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int m, int n, int k,
              float alpha, const float *a, int lda, const float *b, int ldb,
              float beta, float *c, int ldc) {
  cblas_sgemm(CblasRowMajor, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c,
              ldc);
}
void blasGemm(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int m, int n, int k,
              double alpha, const double *a, int lda, const double *b, int ldb,
              double beta, double *c, int ldc) {
  cblas_dgemm(CblasRowMajor, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c,
              ldc);
}
#endif

template <typename T>
bool viaDnnl(const GemmShape &, const T *, const T *, T *, void *, uint64_t) {
  return false;
}
template <>
bool viaDnnl<float>(const GemmShape &g, const float *a, const float *b,
                    float *c, void *scratch, uint64_t scratchBytes) {
  // The scratchpad starts at a cache line within the scratch given.
  auto address = reinterpret_cast<uintptr_t>(scratch);
  uint64_t skip = scratch ? (kGemmScratchAlignment -
                             address % kGemmScratchAlignment) %
                                kGemmScratchAlignment
                          : 0;
  if (skip > scratchBytes)
    scratch = nullptr, scratchBytes = 0;
  else if (scratch)
    scratch = static_cast<char *>(scratch) + skip, scratchBytes -= skip;
  return dnnlMatmulRun(g, GemmTypes::F32, a, b, c, scratch, scratchBytes);
}

} // namespace

template <typename T>
void gemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k, T alpha,
          const T *a, int64_t lda, const T *b, int64_t ldb, T beta, T *c,
          int64_t ldc, void *scratch, uint64_t scratchBytes) {
  if (viaDnnl<T>({transA, transB, m, n, k, lda, ldb, ldc, float(alpha),
                  float(beta)},
                 a, b, c, scratch, scratchBytes))
    return;
#ifdef REMAT_HAVE_OPENBLAS
  if (m > 0 && n > 0 && k > 0) {
    // OpenBLAS sizes its internal packing buffer with M; row blocks keep
    // that library workspace small and bounded (it is memory the plan does
    // not see). Each block is the same GEMM on a slice of C's rows, so the
    // result does not depend on how M is split.
    constexpr int64_t kRowBlock = 4096;
    for (int64_t i0 = 0; i0 < m; i0 += kRowBlock) {
      int64_t rows = std::min(kRowBlock, m - i0);
      const T *aBlock = transA ? a + i0 : a + i0 * lda;
      blasGemm(transA ? CblasTrans : CblasNoTrans,
               transB ? CblasTrans : CblasNoTrans, int(rows), int(n), int(k),
               alpha, aBlock, int(lda), b, int(ldb), beta, c + i0 * ldc,
               int(ldc));
    }
    return;
  }
#endif
  loopGemm<T>(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

template void gemm<float>(bool, bool, int64_t, int64_t, int64_t, float,
                          const float *, int64_t, const float *, int64_t,
                          float, float *, int64_t, void *, uint64_t);
template void gemm<double>(bool, bool, int64_t, int64_t, int64_t, double,
                           const double *, int64_t, const double *, int64_t,
                           double, double *, int64_t, void *, uint64_t);

template <typename T>
void gemmEach(const GemmShape &g, const T *a, const T *b, T *c, void *scratch,
              uint64_t scratchBytes) {
  for (int64_t i = 0; i < g.batch; ++i)
    gemm<T>(g.transA, g.transB, g.m, g.n, g.k, T(g.alpha), a + i * g.strideA,
            g.lda, b + i * g.strideB, g.ldb, T(g.beta), c + i * g.strideC,
            g.ldc, scratch, scratchBytes);
}

template void gemmEach<float>(const GemmShape &, const float *, const float *,
                              float *, void *, uint64_t);
template void gemmEach<double>(const GemmShape &, const double *,
                               const double *, double *, void *, uint64_t);

bool gemmUsesBlas() {
#ifdef REMAT_HAVE_OPENBLAS
  return true;
#else
  return false;
#endif
}

std::string gemmBlasCore() {
#ifdef REMAT_HAVE_OPENBLAS
  const char *core = openblas_get_corename();
  return core ? core : "";
#else
  return "";
#endif
}

unsigned gemmThreads() {
#ifdef REMAT_HAVE_OPENBLAS
  return unsigned(std::max(1, openblas_get_num_threads()));
#else
  return 0;
#endif
}

} // namespace remat::runtime::cpu
