//===- CudaEmuCublas.cpp - The CUDA emulator's cuBLAS subset -------------===//
//
// The calls cublas_v2.h declares: the handle's settings and a strided
// batched GEMM on f32 (Sgemm) or f32 and bf16 operands (GemmEx), enqueued in
// stream order like a kernel.
//
//===----------------------------------------------------------------------===//
#include "cublas_v2.h"
#include "cuda_runtime.h"

#include "CudaEmuInternal.h"
#include "ops/BFloat16.h"

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

/// An operand's elements: f32, or bf16 widened exactly.
struct Elements {
  const void *data;
  bool bf16;
  float operator[](size_t i) const {
    return bf16
               ? remat::ops::bf16ToFloat(static_cast<const uint16_t *>(data)[i])
               : static_cast<const float *>(data)[i];
  }
};

/// The column-major GEMM both entry points enqueue: C = alpha op(A) op(B) +
/// beta C, products summed in float in index order, C stored as f32 or
/// rounded to bf16.
cublasStatus_t gemm(cublasHandle_t handle, const void *entry,
                    cublasOperation_t transA, cublasOperation_t transB, int m,
                    int n, int k, float alphaValue, Elements a, int lda,
                    long long strideA, Elements b, int ldb, long long strideB,
                    float betaValue, void *c, bool cBf16, int ldc,
                    long long strideC, int batchCount) {
  if (!handle)
    return CUBLAS_STATUS_NOT_INITIALIZED;
  bool ta = transA != CUBLAS_OP_N, tb = transB != CUBLAS_OP_N;
  int rowsA = ta ? k : m, rowsB = tb ? n : k;
  if (m < 0 || n < 0 || k < 0 || batchCount < 0 || lda < std::max(1, rowsA) ||
      ldb < std::max(1, rowsB) || ldc < std::max(1, m))
    return CUBLAS_STATUS_INVALID_VALUE;
  // cuBLAS loads its GEMM kernels on the first call.
  loadModule(entry);
  // TF32 rounds f32 inputs only (bf16 ones have fewer bits already).
  bool tf32 = handle->mode == CUBLAS_TF32_TENSOR_OP_MATH;
  cudaError_t err = enqueue(handle->stream, [=]() {
    // op(A) rows and op(B) columns copied contiguous (k floats each), so
    // the dot products stream; the sum order (p = 0..k-1) is unchanged.
    std::vector<float> rowsA(size_t(m) * size_t(k)), colsB(size_t(n) * size_t(k));
    auto read = [&](Elements e, size_t i) {
      float x = e[i];
      return tf32 && !e.bf16 ? toTf32(x) : x;
    };
    for (int batch = 0; batch < batchCount; ++batch) {
      size_t offA = size_t(batch * strideA), offB = size_t(batch * strideB);
      size_t offC = size_t(batch * strideC);
      for (int i = 0; i < m; ++i)
        for (int p = 0; p < k; ++p)
          rowsA[size_t(i) * size_t(k) + size_t(p)] =
              read(a, offA + (ta ? p + size_t(i) * lda : i + size_t(p) * lda));
      for (int j = 0; j < n; ++j)
        for (int p = 0; p < k; ++p)
          colsB[size_t(j) * size_t(k) + size_t(p)] =
              read(b, offB + (tb ? j + size_t(p) * ldb : p + size_t(j) * ldb));
      for (int j = 0; j < n; ++j)
        for (int i = 0; i < m; ++i) {
          const float *x = &rowsA[size_t(i) * size_t(k)];
          const float *y = &colsB[size_t(j) * size_t(k)];
          float sum = 0.0f;
          for (int p = 0; p < k; ++p)
            sum += x[p] * y[p];
          size_t at = offC + i + size_t(j) * ldc;
          // beta == 0: C is not read (it may hold NaN), as cuBLAS documents.
          float out =
              betaValue == 0.0f
                  ? alphaValue * sum
                  : alphaValue * sum + betaValue * Elements{c, cBf16}[at];
          if (cBf16)
            static_cast<uint16_t *>(c)[at] = remat::ops::floatToBf16(out);
          else
            static_cast<float *>(c)[at] = out;
        }
    }
  });
  return err == cudaSuccess ? CUBLAS_STATUS_SUCCESS
                            : CUBLAS_STATUS_EXECUTION_FAILED;
}

} // namespace

cublasStatus_t cublasSgemmStridedBatched(
    cublasHandle_t handle, cublasOperation_t transA, cublasOperation_t transB,
    int m, int n, int k, const float *alpha, const float *a, int lda,
    long long strideA, const float *b, int ldb, long long strideB,
    const float *beta, float *c, int ldc, long long strideC, int batchCount) {
  if (!alpha || !beta)
    return handle ? CUBLAS_STATUS_INVALID_VALUE : CUBLAS_STATUS_NOT_INITIALIZED;
  return gemm(
      handle, reinterpret_cast<const void *>(&cublasSgemmStridedBatched),
      transA, transB, m, n, k, *alpha, {a, false}, lda, strideA, {b, false},
      ldb, strideB, *beta, c, false, ldc, strideC, batchCount);
}

cublasStatus_t cublasGemmStridedBatchedEx(
    cublasHandle_t handle, cublasOperation_t transA, cublasOperation_t transB,
    int m, int n, int k, const void *alpha, const void *a, cudaDataType aType,
    int lda, long long strideA, const void *b, cudaDataType bType, int ldb,
    long long strideB, const void *beta, void *c, cudaDataType cType, int ldc,
    long long strideC, int batchCount, cublasComputeType_t computeType,
    cublasGemmAlgo_t) {
  if (!handle)
    return CUBLAS_STATUS_NOT_INITIALIZED;
  auto known = [](cudaDataType t) {
    return t == CUDA_R_32F || t == CUDA_R_16BF;
  };
  if (!alpha || !beta || computeType != CUBLAS_COMPUTE_32F || !known(aType) ||
      !known(bType) || !known(cType))
    return CUBLAS_STATUS_INVALID_VALUE;
  return gemm(
      handle, reinterpret_cast<const void *>(&cublasGemmStridedBatchedEx),
      transA, transB, m, n, k, *static_cast<const float *>(alpha),
      {a, aType == CUDA_R_16BF}, lda, strideA, {b, bType == CUDA_R_16BF}, ldb,
      strideB, *static_cast<const float *>(beta), c, cType == CUDA_R_16BF, ldc,
      strideC, batchCount);
}
