//===- CudaBackend.h - The CUDA backend (cuBLAS + kernels, CUDA graphs) --===//
//
// Memory: ONE cudaMalloc for the arena (allocateArena) and ONE for the
// workspace (prepare), reported by workspaceBytes so it counts toward the
// budget:
//
//   [256 B DeviceStatus][cuBLAS workspace][kernel scratch]
//
// cuBLAS workspace: 32 MiB when the plan has a GEMM (matmul, attention),
// overridable with REMAT_CUDA_CUBLAS_WORKSPACE_BYTES; kernel scratch: the
// largest single step's need (reductions' partials, the normalization
// gradient's row statistics, the embedding gradient's sort, attention's
// probabilities, losses' partials). Before allocating, arena + workspace is
// checked against cudaMemGetInfo's free bytes. The plan's budget counts the
// arena and the workspace as requested; everything else the device's used bytes
// grow by (the CUDA context, the stream and cuBLAS handle, cudaMalloc's
// rounding, modules loaded on first launch, CUDA graphs) is measured where it
// arises and reported beside the budget (memoryReport).
//
// Execution: one non-blocking stream; every kernel mirrors the CPU twin's
// math (runtime/backends/cpu/kernels/) with deterministic reductions (no
// float atomics), so results are bitwise reproducible across runs and
// budgets. GEMMs are f32 cuBLAS; REMAT_CUDA_TF32=1 allows TF32 tensor cores.
//
// CUDA graphs (REMAT_CUDA_GRAPHS=0 turns them off): training step 0 runs
// eagerly; the first later step that follows a step with no host access
// between beginTrainingStep and endTrainingStep is captured and launched;
// later steps replay it. Step-dependent values (dropout's counter, adamw's
// t) live in device memory, set before each step. A host access inside a
// step (copyIn / copyOut / synchronize from onStepExecuted) ends a capture
// (the part captured so far is launched, the rest runs eagerly) or, while
// replaying, runs the steps queued so far eagerly, so mid-step reads always
// see exactly the steps before them. Should capturing, instantiating or
// launching a graph fail, the step's calls (none has run yet) run eagerly
// and graphs stay off (one line on stderr says why).
//
// Data-parallel runs: createDeviceComm gives NCCL gradient means and param
// gathers on a second stream (CudaNccl.cpp, where built with NCCL); graphs
// are off while that comm exists. Under an MPI launcher each rank takes the
// device of its local rank (modulo the visible devices).
//
// Errors: every CUDA / cuBLAS call is checked (CudaCheck.h). An embedding
// index or cross_entropy label out of range is recorded on the device and
// thrown at the next synchronize() as std::runtime_error naming the plan
// step. After one error has been thrown, later synchronize() calls do not
// throw again (the executor's destructor synchronizes), and none throws
// while another exception unwinds the stack.
//
//===----------------------------------------------------------------------===//
#ifndef REMAT_RUNTIME_BACKENDS_CUDA_CUDABACKEND_H
#define REMAT_RUNTIME_BACKENDS_CUDA_CUDABACKEND_H

#include "runtime/Backend.h"

#include <cstdint>
#include <memory>

namespace remat::runtime {

/// The device memory as the CUDA backend measures it (Backend.h).
using CudaMemoryReport = DeviceMemoryReport;

struct CudaWorkspace;

class CudaBackend : public Backend {
public:
  /// Selects device 0 (honours CUDA_VISIBLE_DEVICES), creates the stream and
  /// the cuBLAS handle. Throws std::runtime_error when there is no device.
  CudaBackend();
  ~CudaBackend() override;

  std::string name() const override { return "cuda"; }
  void checkSupport(const LoadedPlan &plan) const override;
  uint64_t workspaceBytes(const LoadedPlan &plan) const override;
  void *allocateArena(uint64_t bytes, uint64_t alignment) override;
  void freeArena(void *base) override;
  void prepare(const LoadedPlan &plan) override;
  void copyIn(void *deviceDst, const void *hostSrc, uint64_t bytes) override;
  void copyOut(void *hostDst, const void *deviceSrc, uint64_t bytes) override;
  /// One stream: the executor fills step t+1's inputs right after step t's
  /// calls; copyInputAsync stages them in pinned memory (two slots,
  /// alternate steps) and copies asynchronously, so the host prepares the
  /// next batch while the device computes.
  bool overlapsInputCopies() const override { return true; }
  bool copyInputAsync(void *deviceDst, const void *hostSrc, uint64_t bytes,
                      int64_t trainingStep) override;
  /// randn / randint inputs are generated on the device (kernels/
  /// synthetic.cu), not on the host and copied in.
  bool generateInput(void *deviceDst, const SyntheticRequest &request) override;
  void runStep(const KernelCall &call) override;
  void synchronize() override;
  void beginTrainingStep(int64_t trainingStep) override;
  void endTrainingStep(int64_t trainingStep) override;
  /// NCCL where built with it (CudaNccl.cpp: a communication stream, graphs
  /// off while the comm exists); null otherwise.
  std::unique_ptr<GradientComm> createDeviceComm(Ranks *ranks) override;
  bool hasDeviceComm() const override;
  /// "cuda workspace: cuBLAS N B, kernel scratch N B, status N B".
  std::string workspaceSummary() const override;
  /// memoryReport().
  std::optional<DeviceMemoryReport> deviceMemory() const override {
    return memoryReport();
  }

  /// Device bytes in use (cudaMemGetInfo total - free) when the backend was
  /// created, before its stream and cuBLAS handle: the CUDA context plus
  /// anything else on the device.
  uint64_t contextBytes() const;
  /// The largest device-bytes-in-use seen (sampled at every call of the
  /// backend): context + arena + workspace + runtime overhead.
  /// The `device_peak_bytes` log key.
  uint64_t devicePeakBytes() const;
  /// The device's used bytes now, split by what took them.
  CudaMemoryReport memoryReport() const;
  /// The workspace the latest prepare() allocated (cuBLAS's part and the
  /// kernels' scratch; zeros before).
  CudaWorkspace workspaceSplit() const;
  /// Number of arena allocations made (tests: exactly one per executor).
  int arenaAllocations() const;
  /// Graph statistics (tests): steps captured, steps replayed.
  int64_t graphsCaptured() const;
  int64_t graphReplays() const;

  struct State;

private:
  std::unique_ptr<State> state;
};

/// The workspace of a plan: [256 B status][cuBLAS workspace][kernel
/// scratch]. The defaults (REMAT_CUDA_CUBLAS_WORKSPACE_BYTES, attention's
/// scratch cap) when arena + workspace fits the plan's budget (its
/// report.budget_bytes; no budget: always); otherwise less attention
/// scratch first (attention then works in smaller chunks), then less cuBLAS
/// workspace, down to one attention slice and 4 MiB. Throws PlanError,
/// naming the --workspace-reserve to compile with, when even that does not
/// fit. Host arithmetic only (needs no device for plans without an
/// embedding gradient, whose sort asks CUB for its temporary size).
struct CudaWorkspace {
  static constexpr uint64_t kStatusBytes = 256;
  uint64_t cublas = 0, scratch = 0;
  uint64_t total() const { return kStatusBytes + cublas + scratch; }
};
CudaWorkspace cudaWorkspaceFor(const LoadedPlan &plan);

/// The CUDA backend as a Backend (what createBackend("cuda") returns).
std::unique_ptr<Backend> createCudaBackend();

/// Number of CUDA devices; 0 when the driver reports none or fails.
int cudaDeviceCount();

/// cudaMemGetInfo's total - free on the current device, now.
uint64_t cudaDeviceUsedBytes();

} // namespace remat::runtime

#endif // REMAT_RUNTIME_BACKENDS_CUDA_CUDABACKEND_H
