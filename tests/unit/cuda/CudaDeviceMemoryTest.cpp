//===- CudaDeviceMemoryTest.cpp - Every device byte accounted for --------===//
//
// Built only with REMAT_CUDA_EMULATOR=ON: the emulator counts device memory
// by what took it (cudaemu::memoryUsage: allocations and their rounding,
// cuBLAS handles, modules loaded on first launch, instantiated graphs), so
// these tests can check the CUDA backend's report (CudaMemoryReport) part
// by part against an account it did not keep itself:
//   measured (used - context) = arena + workspace + runtime overhead,
// with nothing unattributed. ctest runs them with the emulator's default
// 256-byte granularity (unit-cuda) and with a GPU's 2 MiB pages
// (unit-cuda-memory).
//
//===----------------------------------------------------------------------===//
#include "CudaTestUtil.h"

#include "runtime/Executor.h"
#include "runtime/plan/Loader.h"
#include "runtime/backends/cuda/CudaBackend.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

using namespace remat::runtime;
using namespace remat::runtime::test;
using nlohmann::json;

namespace {

/// The backend's report against the emulator's count since `before` (taken
/// before the backend was created), with the arena and workspace the
/// backend holds and the alignment padding of its arena.
void checkAccounting(const CudaBackend &gpu, const cudaemu::MemoryUsage &before,
                     uint64_t arena, uint64_t workspace, uint64_t pad = 0) {
  CudaMemoryReport r = gpu.memoryReport();
  cudaemu::MemoryUsage now = cudaemu::memoryUsage();
  INFO("used " << now.used << ", context " << r.contextBytes << ", arena "
               << r.arenaBytes << ", workspace " << r.workspaceBytes
               << ", handles " << r.handleBytes << ", allocation "
               << r.allocationBytes << ", modules " << r.moduleBytes
               << ", graphs " << r.graphBytes << ", unattributed "
               << r.unattributedBytes);
  CHECK(r.contextBytes == before.used);
  CHECK(r.usedBytes == now.used);
  CHECK(r.peakBytes >= now.used);
  // The budget's part: exactly the plan's arena and the workspace.
  CHECK(r.arenaBytes == arena);
  CHECK(r.workspaceBytes == workspace);
  // Measured device bytes = arena + workspace + reported runtime overhead.
  CHECK(int64_t(now.used - r.contextBytes) ==
        int64_t(r.arenaBytes + r.workspaceBytes) + r.overheadBytes());
  // Each part of the overhead as the emulator counted it.
  CHECK(now.requested - before.requested == arena + pad + workspace);
  CHECK(int64_t(now.allocated - before.allocated) ==
        int64_t(arena + workspace) + r.allocationBytes);
  CHECK(r.handleBytes == int64_t(now.handles - before.handles));
  CHECK(r.moduleBytes == int64_t(now.modules - before.modules));
  CHECK(r.graphBytes == int64_t(now.graphs - before.graphs));
  CHECK(r.unattributedBytes == 0);
}

LoadedPlan loadPlanFile(const std::string &path, bool dropBudget) {
  std::ifstream in(path);
  json plan = json::parse(in);
  if (dropBudget)
    plan["report"].erase("budget_bytes");
  return loadPlanText(plan.dump(), path);
}

} // namespace

TEST_CASE("the cuda backend accounts for every device byte of a run: arena "
          "+ workspace + runtime overhead = measured",
          "[cuda][emulator][memory]") {
  // tiny_linear: no GEMM workspace, no budget (its 1 KiB CPU budget leaves
  // no room for a workspace); gpt2_tiny: every GPT-2 op under its budget.
  std::string plans = std::string(REMAT_SOURCE_DIR) + "/tests/e2e/plans/";
  auto [name, dropBudget] =
      GENERATE(std::make_pair("tiny_linear.plan", true),
               std::make_pair("gpt2_tiny_520k.plan", false));
  LoadedPlan plan = loadPlanFile(plans + name, dropBudget);
  INFO(name);
  cudaemu::MemoryUsage before = cudaemu::memoryUsage();
  auto gpu = std::make_unique<CudaBackend>();
  checkAccounting(*gpu, before, 0, 0);
  CHECK(gpu->memoryReport().handleBytes > 0);
  {
    Executor exec(plan, *gpu);
    uint64_t arena = exec.arenaBytes(), workspace = exec.workspaceBytes();
    checkAccounting(*gpu, before, arena, workspace);
    // Step 0 runs eagerly (every kernel's module loads), step 1 is
    // captured into a graph, step 2 replays it.
    for (int step = 0; step < 3; ++step) {
      exec.runStep();
      INFO("after training step " << step);
      checkAccounting(*gpu, before, arena, workspace);
    }
    CHECK(gpu->graphsCaptured() == 1);
    CudaMemoryReport r = gpu->memoryReport();
    CHECK(r.graphBytes > 0);
    // Modules of kernels an earlier test launched are in the context.
    CHECK(r.moduleBytes >= 0);
  }
  // The executor freed its arena (and the graph with it).
  checkAccounting(*gpu, before, 0, cudaWorkspaceFor(plan).total());
  CHECK(gpu->memoryReport().graphBytes == 0);
  gpu.reset();
  CHECK(cudaemu::memoryUsage().allocated == before.allocated);
}

TEST_CASE("the arena's alignment padding is overhead, not budget",
          "[cuda][emulator][memory]") {
  cudaemu::MemoryUsage before = cudaemu::memoryUsage();
  CudaBackend gpu;
  const uint64_t bytes = 3 << 20, alignment = uint64_t(1) << 16;
  void *base = gpu.allocateArena(bytes, alignment);
  checkAccounting(gpu, before, bytes, 0, alignment);
  CHECK(gpu.memoryReport().allocationBytes >= int64_t(alignment));
  gpu.freeArena(base);
  checkAccounting(gpu, before, 0, 0);
  CHECK(gpu.memoryReport().allocationBytes == 0);
}

TEST_CASE("device memory taken between the backend's calls is reported "
          "unattributed",
          "[cuda][emulator][memory]") {
  cudaemu::MemoryUsage before = cudaemu::memoryUsage();
  CudaBackend gpu;
  void *other = nullptr;
  REQUIRE(cudaMalloc(&other, 5 << 20) == cudaSuccess); // not the backend's
  CudaMemoryReport r = gpu.memoryReport();
  CHECK(r.unattributedBytes >= int64_t(5 << 20));
  CHECK(int64_t(r.usedBytes - r.contextBytes) ==
        int64_t(r.arenaBytes + r.workspaceBytes) + r.overheadBytes());
  REQUIRE(cudaFree(other) == cudaSuccess);
  CHECK(gpu.memoryReport().unattributedBytes == 0);
  CHECK(cudaemu::memoryUsage().allocated == before.allocated);
}

// REMAT_DEVICE_PLANS names a directory of plans (tests/device/device-plans.sh's
// .plans: GPT-2 124M and seed_mlp up to 32 GiB; tools/test.sh fills one);
// hidden (not in "[cuda]"): ctest's unit-cuda-device-plans runs it, giving
// the emulator an H200's memory and 2 MiB pages, and skips without it. Each
// plan is allocated and prepared as the executor does (arenas from 1 GiB on are
// mapped lazily by the emulator, so no host memory backs them); its steps are
// far too slow to run here.
TEST_CASE("every plan of tests/device/device-plans.sh is accounted for: arena + "
          "workspace + runtime overhead = measured, arena + workspace within "
          "the budget",
          "[.][emulator][device-plans]") {
  const char *dir = std::getenv("REMAT_DEVICE_PLANS");
  REQUIRE(dir);
  std::vector<std::string> paths;
  for (const auto &entry : std::filesystem::directory_iterator(dir))
    if (entry.path().extension() == ".plan")
      paths.push_back(entry.path().string());
  std::sort(paths.begin(), paths.end());
  REQUIRE(!paths.empty());
  for (const std::string &path : paths) {
    INFO(path);
    LoadedPlan plan = loadPlanFile(path, false);
    cudaemu::MemoryUsage before = cudaemu::memoryUsage();
    CudaBackend gpu;
    gpu.checkSupport(plan);
    uint64_t workspace = gpu.workspaceBytes(plan);
    void *arena = gpu.allocateArena(plan.plan.arenaBytes, plan.plan.alignment);
    gpu.prepare(plan);
    gpu.synchronize();
    uint64_t pad = plan.plan.alignment > 256 ? plan.plan.alignment : 0;
    checkAccounting(gpu, before, plan.plan.arenaBytes, workspace, pad);
    auto budget = plan.plan.report.find("budget_bytes");
    if (budget != plan.plan.report.end() && budget->is_number_integer())
      CHECK(plan.plan.arenaBytes + workspace <= budget->get<uint64_t>());
    CudaMemoryReport r = gpu.memoryReport();
    std::printf("%s: arena %llu + workspace %llu + overhead %lld (handles "
                "%lld, allocation rounding %lld, modules %lld) = measured "
                "%llu B\n",
                std::filesystem::path(path).filename().c_str(),
                (unsigned long long)r.arenaBytes,
                (unsigned long long)r.workspaceBytes,
                (long long)r.overheadBytes(), (long long)r.handleBytes,
                (long long)r.allocationBytes, (long long)r.moduleBytes,
                (unsigned long long)(r.usedBytes - r.contextBytes));
    gpu.freeArena(arena);
  }
}
