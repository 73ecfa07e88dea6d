//===- CudaEmuCublas.cpp - The CUDA emulator's cuBLAS subset -------------===//
//
// The calls cublas_v2.h declares: the handle's settings and a strided
// batched SGEMM, enqueued in stream order like a kernel.
//
//===----------------------------------------------------------------------===//
#include "cublas_v2.h"
#include "cuda_runtime.h"

#include "CudaEmuInternal.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

namespace cudaemu {

struct Cublas {
  cudaStream_t stream = nullptr;
  cublasMath_t mode = CUBLAS_DEFAULT_MATH;
  void *workspace = nullptr;
  size_t workspaceBytes = 0;
};

} // namespace cudaemu

using namespace cudaemu;

cublasStatus_t cublasCreate(cublasHandle_t *handle) {
  if (!handle)
    return CUBLAS_STATUS_INVALID_VALUE;
  *handle = new Cublas();
  countRuntimeBytes(&Device::handles, int64_t(device().handleBytes));
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasDestroy(cublasHandle_t handle) {
  if (!handle)
    return CUBLAS_STATUS_NOT_INITIALIZED;
  countRuntimeBytes(&Device::handles, -int64_t(device().handleBytes));
  delete handle;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetStream(cublasHandle_t handle, cudaStream_t stream) {
  if (!handle)
    return CUBLAS_STATUS_NOT_INITIALIZED;
  handle->stream = stream;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetWorkspace(cublasHandle_t handle, void *workspace,
                                  size_t bytes) {
  if (!handle)
    return CUBLAS_STATUS_NOT_INITIALIZED;
  // cuBLAS wants 256-byte alignment of a user workspace.
  if (reinterpret_cast<uintptr_t>(workspace) % 256 != 0)
    return CUBLAS_STATUS_INVALID_VALUE;
  handle->workspace = workspace;
  handle->workspaceBytes = bytes;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetMathMode(cublasHandle_t handle, cublasMath_t mode) {
  if (!handle)
    return CUBLAS_STATUS_NOT_INITIALIZED;
  handle->mode = mode;
  return CUBLAS_STATUS_SUCCESS;
}

const char *cublasGetStatusString(cublasStatus_t status) {
  switch (status) {
  case CUBLAS_STATUS_SUCCESS:
    return "CUBLAS_STATUS_SUCCESS";
  case CUBLAS_STATUS_NOT_INITIALIZED:
    return "CUBLAS_STATUS_NOT_INITIALIZED";
  case CUBLAS_STATUS_ALLOC_FAILED:
    return "CUBLAS_STATUS_ALLOC_FAILED";
  case CUBLAS_STATUS_INVALID_VALUE:
    return "CUBLAS_STATUS_INVALID_VALUE";
  case CUBLAS_STATUS_EXECUTION_FAILED:
    return "CUBLAS_STATUS_EXECUTION_FAILED";
  }
  return "CUBLAS_STATUS_UNKNOWN";
}

namespace {

/// A float as a TF32 tensor core reads it: 10 mantissa bits, rounded to
/// nearest (ties away, as the hardware's conversion does).
float toTf32(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, 4);
  if ((bits & 0x7f800000u) != 0x7f800000u) // finite
    bits = (bits + 0x1000u) & 0xffffe000u;
  std::memcpy(&x, &bits, 4);
  return x;
}

} // namespace

cublasStatus_t cublasSgemmStridedBatched(
    cublasHandle_t handle, cublasOperation_t transA, cublasOperation_t transB,
    int m, int n, int k, const float *alpha, const float *a, int lda,
    long long strideA, const float *b, int ldb, long long strideB,
    const float *beta, float *c, int ldc, long long strideC, int batchCount) {
  if (!handle)
    return CUBLAS_STATUS_NOT_INITIALIZED;
  bool ta = transA != CUBLAS_OP_N, tb = transB != CUBLAS_OP_N;
  int rowsA = ta ? k : m, rowsB = tb ? n : k;
  if (m < 0 || n < 0 || k < 0 || batchCount < 0 || !alpha || !beta ||
      lda < std::max(1, rowsA) || ldb < std::max(1, rowsB) ||
      ldc < std::max(1, m))
    return CUBLAS_STATUS_INVALID_VALUE;
  // cuBLAS loads its GEMM kernels on the first call.
  loadModule(reinterpret_cast<const void *>(&cublasSgemmStridedBatched));
  float alphaValue = *alpha, betaValue = *beta;
  bool tf32 = handle->mode == CUBLAS_TF32_TENSOR_OP_MATH;
  cudaError_t err = enqueue(handle->stream, [=]() {
    // op(A) rows and op(B) columns copied contiguous (k floats each), so
    // the dot products stream; the sum order (p = 0..k-1) is unchanged.
    std::vector<float> rowsA(size_t(m) * size_t(k)), colsB(size_t(n) * size_t(k));
    for (int batch = 0; batch < batchCount; ++batch) {
      const float *A = a + batch * strideA;
      const float *B = b + batch * strideB;
      float *C = c + batch * strideC;
      for (int i = 0; i < m; ++i)
        for (int p = 0; p < k; ++p) {
          float x = ta ? A[p + size_t(i) * lda] : A[i + size_t(p) * lda];
          rowsA[size_t(i) * size_t(k) + size_t(p)] = tf32 ? toTf32(x) : x;
        }
      for (int j = 0; j < n; ++j)
        for (int p = 0; p < k; ++p) {
          float y = tb ? B[j + size_t(p) * ldb] : B[p + size_t(j) * ldb];
          colsB[size_t(j) * size_t(k) + size_t(p)] = tf32 ? toTf32(y) : y;
        }
      for (int j = 0; j < n; ++j)
        for (int i = 0; i < m; ++i) {
          const float *x = &rowsA[size_t(i) * size_t(k)];
          const float *y = &colsB[size_t(j) * size_t(k)];
          float sum = 0.0f;
          for (int p = 0; p < k; ++p)
            sum += x[p] * y[p];
          float &out = C[i + size_t(j) * ldc];
          // beta == 0: C is not read (it may hold NaN), as cuBLAS documents.
          out = betaValue == 0.0f ? alphaValue * sum
                                  : alphaValue * sum + betaValue * out;
        }
    }
  });
  return err == cudaSuccess ? CUBLAS_STATUS_SUCCESS
                            : CUBLAS_STATUS_EXECUTION_FAILED;
}
