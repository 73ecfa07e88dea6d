//===- CudaCheck.h - Checked CUDA runtime and cuBLAS calls ---------------===//
//
// REMAT_CUDA_CHECK(cudaMalloc(&p, n)) throws std::runtime_error
//   "cuda: cudaMalloc(&p, n) failed: out of memory (CudaBackend.cpp:123)";
// REMAT_CUBLAS_CHECK does the same for cuBLAS status codes.
//
//===----------------------------------------------------------------------===//
#ifndef REMAT_RUNTIME_BACKENDS_CUDA_CUDACHECK_H
#define REMAT_RUNTIME_BACKENDS_CUDA_CUDACHECK_H

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <stdexcept>
#include <string>

namespace remat::runtime::cuda {

[[noreturn]] inline void throwCallError(const char *call, const char *what,
                                        const char *file, int line) {
  throw std::runtime_error(std::string("cuda: ") + call + " failed: " + what +
                           " (" + file + ":" + std::to_string(line) + ")");
}

inline void checkCuda(cudaError_t err, const char *call, const char *file,
                      int line) {
  if (err != cudaSuccess)
    throwCallError(call, cudaGetErrorString(err), file, line);
}

inline void checkCublas(cublasStatus_t status, const char *call,
                        const char *file, int line) {
  if (status != CUBLAS_STATUS_SUCCESS)
    throwCallError(call, cublasGetStatusString(status), file, line);
}

} // namespace remat::runtime::cuda

#define REMAT_CUDA_CHECK(call)                                                 \
  ::remat::runtime::cuda::checkCuda((call), #call, __FILE__, __LINE__)
#define REMAT_CUBLAS_CHECK(call)                                               \
  ::remat::runtime::cuda::checkCublas((call), #call, __FILE__, __LINE__)

#endif // REMAT_RUNTIME_BACKENDS_CUDA_CUDACHECK_H
