//===- CudaModule.cpp - The CUDA backend as a module loaded on demand ----===//
//
// libremat-cuda.so's entry points, which runtime/BackendModule.cpp finds
// with dlsym when a run asks for --backend cuda. Only this module links
// cudart, cuBLAS and NCCL, so a CPU run maps none of them.
//
//===----------------------------------------------------------------------===//
#include "runtime/backends/cuda/CudaBackend.h"

extern "C" {

/// backendInterfaceVersion() as this module was built.
__attribute__((visibility("default"))) uint64_t
remat_backend_interface_version() {
  return remat::runtime::backendInterfaceVersion();
}

/// A new CudaBackend, owned by the caller (deleted through Backend's
/// virtual destructor). Throws as CudaBackend's constructor does.
__attribute__((visibility("default"))) remat::runtime::Backend *
remat_create_backend() {
  return remat::runtime::createCudaBackend().release();
}

} // extern "C"
