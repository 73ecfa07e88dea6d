//===- BackendModule.cpp - createBackend, and backends loaded on demand ---===//
//
// The CPU backend is linked in. The CUDA backend is a module of its own,
// libremat-cuda.so (runtime/backends/cuda/CudaModule.cpp), which alone
// links cudart, cuBLAS and NCCL: createBackend("cuda") loads it with
// dlopen on first use, so a CPU run maps none of the CUDA libraries nor
// the pages their initializers touch. The module is looked for, in order:
//
//   $REMAT_CUDA_BACKEND             a path to the module, when set
//   <the executable's folder>/libremat-cuda.so
//   the build tree's copy           (REMAT_CUDA_MODULE_PATH, compile time)
//
// and must have been built with this build's backend interface
// (backendInterfaceVersion in Backend.h), else it is refused with both
// versions named.
//
//===----------------------------------------------------------------------===//
#include "runtime/Backend.h"

#include <cstdlib>
#include <dlfcn.h>
#include <filesystem>
#include <mutex>
#include <sstream>
#include <vector>

namespace remat::runtime {

#ifdef REMAT_HAVE_CUDA_BACKEND
namespace {

/// The module's entry points (CudaModule.cpp).
using VersionFn = uint64_t (*)();
using CreateFn = Backend *(*)();

struct CudaModule {
  CreateFn create = nullptr;
  std::string error; ///< why it could not be loaded (create is null)
};

std::vector<std::string> cudaModuleCandidates() {
  std::vector<std::string> paths;
  if (const char *env = std::getenv("REMAT_CUDA_BACKEND"); env && *env) {
    paths.push_back(env);
    return paths;
  }
  std::error_code ec;
  std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec)
    paths.push_back((exe.parent_path() / "libremat-cuda.so").string());
#ifdef REMAT_CUDA_MODULE_PATH
  if (paths.empty() || paths.back() != REMAT_CUDA_MODULE_PATH)
    paths.push_back(REMAT_CUDA_MODULE_PATH);
#endif
  return paths;
}

CudaModule loadCudaModule() {
  CudaModule m;
  std::ostringstream why;
  for (const std::string &path : cudaModuleCandidates()) {
    std::error_code ec;
    if (!std::filesystem::exists(path, ec)) {
      why << "\n  " << path << ": no such file";
      continue;
    }
    // Never closed: the backend's code must outlive every object it made.
    void *handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      why << "\n  " << dlerror();
      continue;
    }
    auto version = reinterpret_cast<VersionFn>(
        dlsym(handle, "remat_backend_interface_version"));
    auto create =
        reinterpret_cast<CreateFn>(dlsym(handle, "remat_create_backend"));
    if (!version || !create) {
      why << "\n  " << path << ": not a remat backend module";
      continue;
    }
    if (version() != backendInterfaceVersion()) {
      why << "\n  " << path << ": built with backend interface " << std::hex
          << version() << ", this program has " << backendInterfaceVersion()
          << std::dec << " (rebuild both from one tree)";
      continue;
    }
    m.create = create;
    return m;
  }
  m.error = "the cuda backend's module libremat-cuda.so could not be "
            "loaded (set REMAT_CUDA_BACKEND to its path):" + why.str();
  return m;
}

std::unique_ptr<Backend> createCudaBackendFromModule() {
  static std::once_flag once;
  static CudaModule module;
  std::call_once(once, [] { module = loadCudaModule(); });
  if (!module.create)
    throw PlanError(module.error);
  return std::unique_ptr<Backend>(module.create());
}

} // namespace
#endif

std::unique_ptr<Backend> createBackend(const std::string &name) {
  if (name == "cpu")
    return createCpuBackend();
#ifdef REMAT_HAVE_CUDA_BACKEND
  if (name == "cuda")
    return createCudaBackendFromModule();
#endif
  throw PlanError("unknown backend '" + name +
                  "' (available: " + availableBackends() + ")");
}

std::string availableBackends() {
#ifdef REMAT_HAVE_CUDA_BACKEND
  return "cpu, cuda";
#else
  return "cpu";
#endif
}

} // namespace remat::runtime
