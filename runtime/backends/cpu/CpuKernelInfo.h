//===- CpuKernelInfo.h - What the CPU backend states about itself -*- C++ -*-===//
//
// The CPU backend's answers to the compiler's questions (runtime/plan/
// KernelInfo.h): each op's kernel scratch (CpuWorkspace.h, oneDNN's
// included), where a plan's scratch goes (StepScratch.h) and the runtime's
// own memory beside the arena. A library of its own, RematCpuKernelInfo,
// which the CLI links and hands to the compiler; the backend uses the same
// functions, so the compiler's figures and the runtime's allocations agree.
//
//===----------------------------------------------------------------------===//
#ifndef REMAT_RUNTIME_BACKENDS_CPU_CPUKERNELINFO_H
#define REMAT_RUNTIME_BACKENDS_CPU_CPUKERNELINFO_H

#include "runtime/plan/KernelInfo.h"
#include "runtime/plan/PlanFormat.h"

#include <cstdint>

namespace remat::runtime {

/// The CPU backend's KernelInfo.
const KernelInfo &cpuKernelInfo();

/// The CPU runtime's own memory beside the arena and the workspace while
/// the plan runs, stated so that a budget can be checked against measured
/// memory (report key runtime_allowance_bytes, docs/cli.md "What the budget
/// covers"): kCpuRuntimeBaseBytes (the allocator's bookkeeping, code
/// pages first run, measured), the host staging of the largest buffer the
/// runtime writes from the host (initial values, inputs), and
/// cpuBlasAllowanceBytes for OpenBLAS's packing buffers at `blasThreads`
/// threads (0: GEMMs without OpenBLAS).
constexpr uint64_t kCpuRuntimeBaseBytes = uint64_t(4) << 20;
/// remat-run's resident memory before the arena on the CPU backend (report
/// key runtime_fixed_bytes): its code, the libraries it maps (no CUDA
/// library: runtime/BackendModule.cpp) and the loaded plan. Measured
/// 11.1-12.3 MB for the plans of models/ (seed_mlp tiny to gpt2 small,
/// docs/benchmarks.md); ctest e2e-first-hour-runtime-small checks a run
/// stays within it. `remat train` holds its compiler beside it.
constexpr uint64_t kCpuRuntimeFixedBytes = uint64_t(16) << 20;
uint64_t cpuRuntimeAllowanceBytes(const Plan &plan, unsigned blasThreads);
/// The pages of OpenBLAS's GEMM buffers one run touches at `threads`
/// threads: kCpuBlasBytes + threads * kCpuBlasThreadBytes (0 for 0
/// threads). Each thread's buffer is 128 MiB of address space of which a
/// GEMM touches its packed blocks of A and B; the CPU backend's row blocks
/// (backends/cpu/Gemm.cpp: at most 4096 rows of C a call) bound the packed
/// B, so the touched pages are bounded whatever the shapes. Measured
/// (OpenBLAS 0.3.21's Haswell, Zen, Sandybridge, Nehalem, Core2 and
/// Barcelona kernels at 1 and 2 threads, the largest GEMMs the row blocks
/// allow): at most 9.4 MiB at 1 thread and 9.9 MiB at 2, each thread
/// adding at most 1.2 MiB (docs/benchmarks.md).
constexpr uint64_t kCpuBlasBytes = uint64_t(9) << 20;
constexpr uint64_t kCpuBlasThreadBytes = uint64_t(3) << 19; // 1.5 MiB
uint64_t cpuBlasAllowanceBytes(unsigned threads);

} // namespace remat::runtime

#endif // REMAT_RUNTIME_BACKENDS_CPU_CPUKERNELINFO_H
