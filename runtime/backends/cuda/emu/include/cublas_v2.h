//===- cublas_v2.h - The CUDA emulator's cuBLAS subset --------------------===//
//
// The cuBLAS calls the CUDA backend makes, on the CPU: a strided batched
// SGEMM in column-major order (float products summed in float, in index
// order), run in stream order like a kernel, and its Ex form on bf16
// operands and result with float compute (the bf16 values widened exactly,
// summed in float in the same order, the sum rounded to bf16 to nearest,
// ties to even). The math mode is recorded;
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

/// library_types.h's element types, those the emulator's GemmEx takes.
enum cudaDataType { CUDA_R_32F = 0, CUDA_R_16BF = 14 };
enum cublasComputeType_t { CUBLAS_COMPUTE_32F = 68 };
enum cublasGemmAlgo_t { CUBLAS_GEMM_DEFAULT = -1 };

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

/// A, B and C each CUDA_R_32F or CUDA_R_16BF, computeType CUBLAS_COMPUTE_32F
/// (alpha and beta are floats), any algo.
cublasStatus_t cublasGemmStridedBatchedEx(
    cublasHandle_t handle, cublasOperation_t transA, cublasOperation_t transB,
    int m, int n, int k, const void *alpha, const void *a, cudaDataType aType,
    int lda, long long strideA, const void *b, cudaDataType bType, int ldb,
    long long strideB, const void *beta, void *c, cudaDataType cType, int ldc,
    long long strideC, int batchCount, cublasComputeType_t computeType,
    cublasGemmAlgo_t algo);

#endif // REMAT_CUDA_EMU_CUBLAS_V2_H
