//===- Backends.h - The backend a compile is for ----------------*- C++ -*-===//
//
// `--backend NAME` on compile, plan and train: the name, and the kernel
// facts (runtime/plan/KernelInfo.h) of the backends that state any, which
// the CLI links (RematCpuKernelInfo) and hands to the compiler.
//
//===----------------------------------------------------------------------===//
#ifndef REMAT_TOOLS_REMAT_BACKENDS_H
#define REMAT_TOOLS_REMAT_BACKENDS_H

#include "compiler/Driver.h"
#include "runtime/backends/cpu/CpuKernelInfo.h"

#include <string>

namespace remat::tools {

/// Compiles for `backend` ("cpu" or "cuda"): on cpu the kernels' scratch
/// is laid out in the arena and the report states the CPU runtime's
/// workspace and allowance; cuda sizes its own workspace when it runs.
inline void setBackend(compiler::CompileOptions &options,
                       const std::string &backend) {
  options.backend = backend;
  options.kernelInfo = backend == "cpu" ? &runtime::cpuKernelInfo() : nullptr;
}

} // namespace remat::tools

#endif // REMAT_TOOLS_REMAT_BACKENDS_H
