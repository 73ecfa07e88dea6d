//===- cublas_v2.h - The CUDA emulator's cuBLAS subset --------------------===//
//
// The cuBLAS calls the CUDA backend makes, on the CPU: a strided batched
// SGEMM in column-major order (float products summed in float, in index
// order), run in stream order like a kernel. The math mode is recorded;
// CUBLAS_TF32_TENSOR_OP_MATH rounds the inputs to TF32 (10-bit mantissa,
// round to nearest) as tensor cores read them. Arguments are checked as
// cuBLAS documents (CUBLAS_STATUS_INVALID_VALUE).
//
//===----------------------------------------------------------------------===//
#ifndef REMAT_CUDA_EMU_CUBLAS_V2_H
#define REMAT_CUDA_EMU_CUBLAS_V2_H

#include "cuda_runtime.h"

enum cublasStatus_t {
  CUBLAS_STATUS_SUCCESS = 0,
  CUBLAS_STATUS_NOT_INITIALIZED = 1,
  CUBLAS_STATUS_ALLOC_FAILED = 3,
  CUBLAS_STATUS_INVALID_VALUE = 7,
  CUBLAS_STATUS_EXECUTION_FAILED = 13,
};

enum cublasOperation_t { CUBLAS_OP_N = 0, CUBLAS_OP_T = 1, CUBLAS_OP_C = 2 };

enum cublasMath_t {
  CUBLAS_DEFAULT_MATH = 0,
  CUBLAS_TENSOR_OP_MATH = 1,
  CUBLAS_PEDANTIC_MATH = 2,
  CUBLAS_TF32_TENSOR_OP_MATH = 3,
};

namespace cudaemu {
struct Cublas;
}
using cublasHandle_t = cudaemu::Cublas *;

cublasStatus_t cublasCreate(cublasHandle_t *handle);
cublasStatus_t cublasDestroy(cublasHandle_t handle);
cublasStatus_t cublasSetStream(cublasHandle_t handle, cudaStream_t stream);
cublasStatus_t cublasSetWorkspace(cublasHandle_t handle, void *workspace,
                                  size_t bytes);
cublasStatus_t cublasSetMathMode(cublasHandle_t handle, cublasMath_t mode);
const char *cublasGetStatusString(cublasStatus_t status);

cublasStatus_t cublasSgemmStridedBatched(
    cublasHandle_t handle, cublasOperation_t transA, cublasOperation_t transB,
    int m, int n, int k, const float *alpha, const float *a, int lda,
    long long strideA, const float *b, int ldb, long long strideB,
    const float *beta, float *c, int ldc, long long strideC, int batchCount);

#endif // REMAT_CUDA_EMU_CUBLAS_V2_H
