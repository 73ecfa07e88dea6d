//===- CudaArenaTest.cpp - The cuda arena, workspace and lifetime --------===//
//
// Found by coverage (CudaCoverageTest.cpp): arena alignment and frees, what
// the backend's destructor frees, runStep before prepare, one plan after
// another, workspaces the device cannot hold, a failed allocation, the
// workspace knobs and budgets, GEMMs in tf32.
//
//===----------------------------------------------------------------------===//
#include "CudaOpSession.h"
#include "CudaTestUtil.h"

#include "runtime/backends/cuda/CudaBackend.h"
#include "runtime/plan/Loader.h"

#include <cuda_runtime.h> // defines REMAT_CUDA_EMULATION on the emulator

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <string>

using namespace remat::runtime;
using namespace remat::runtime::test;
using nlohmann::json;

namespace {

/// attention over 4096 slices of 4096 x 4096 scores: 256 GiB of scratch
/// under a 1 TiB REMAT_CUDA_ATTENTION_SCRATCH_BYTES, more than any device
/// holds. Its buffers (2 GiB) are only declared: prepare allocates the
/// workspace alone.
LoadedPlan hugeAttentionPlan() {
  std::mt19937 rng(53);
  Shape small = {1, 1, 4, 2};
  json plan = opPlanJson({OpKind::Attention,
                          {{"causal", false}, {"scale", 1.0}},
                          {randomTensor(small, rng), randomTensor(small, rng),
                           randomTensor(small, rng)},
                          {typeOf(small)}});
  uint64_t offset = 0;
  for (json &b : plan["buffers"]) {
    uint64_t bytes = 4; // the scalar loss
    if (b["shape"].size() == 4) {
      b["shape"] = {4096, 1, 4096, 8};
      bytes = uint64_t(4096) * 4096 * 8 * 4;
    }
    b["bytes"] = bytes;
    b["offset"] = offset;
    offset += (bytes + 255) / 256 * 256;
  }
  plan["arena_bytes"] = offset;
  return loadPlanText(plan.dump(), "huge_attention.plan");
}

} // namespace

TEST_CASE("the cuda arena honours alignments above 256 bytes and ignores "
          "pointers it did not allocate",
          "[cuda]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  CudaBackend gpu;
  uint64_t before = cudaDeviceUsedBytes();
  const uint64_t alignment = uint64_t(1) << 16, big = uint64_t(64) << 20;
  void *base = gpu.allocateArena(big, alignment);
  CHECK(reinterpret_cast<uintptr_t>(base) % alignment == 0);
  std::vector<char> in(1000), out(1000);
  for (size_t i = 0; i < in.size(); ++i)
    in[i] = char(i * 7);
  // The last bytes: the padding for the alignment must come on top.
  char *tail = static_cast<char *>(base) + big - in.size();
  gpu.copyIn(tail, in.data(), in.size());
  char local = 0;
  gpu.freeArena(&local); // not an arena: ignored
  gpu.copyOut(out.data(), tail, out.size());
  CHECK(out == in);
  CHECK(gpu.arenaAllocations() == 1);
  gpu.freeArena(base);
  gpu.freeArena(base); // twice: ignored
  // On a GPU other allocations may come and go; 64 MiB must not stay.
  CHECK(cudaDeviceUsedBytes() < before + big / 2);
}

TEST_CASE("destroying the cuda backend frees the arenas and graph it still "
          "holds",
          "[cuda]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  uint64_t before = cudaDeviceUsedBytes();
  const uint64_t big = uint64_t(64) << 20;
  {
    CudaBackend gpu;
    OpSession s(gpu, dropoutCase());
    s.trainingStep(0);
    s.trainingStep(1);
    CHECK(gpu.graphsCaptured() == 1);
    s.abandonArena();
    gpu.allocateArena(big, 256);
    CHECK(cudaDeviceUsedBytes() >= before + big);
  }
  // On a GPU other allocations may come and go; 64 MiB must not stay.
  CHECK(cudaDeviceUsedBytes() < before + big / 2);
}

TEST_CASE("runStep before prepare is a logic error", "[cuda]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  CudaBackend gpu;
  OpAttrs attrs;
  KernelCall call; // a constant with no outputs: never launched
  call.attrs = &attrs;
  CHECK_THROWS_AS(gpu.runStep(call), std::logic_error);
}

TEST_CASE("one cuda backend runs one plan after another, each with its own "
          "workspace",
          "[cuda]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(47);
  OpCase reduce{OpKind::SumTo,
                json::object(),
                {randomTensor({4096, 3}, rng)},
                {typeOf({3})}};
  Shape s = {80, 40};
  OpCase layerNormGrad{
      OpKind::LayerNormGrad,
      {{"epsilon", 1e-5}},
      {randomTensor(s, rng), randomTensor({40}, rng), randomTensor(s, rng)},
      {typeOf(s), typeOf({40}), typeOf({40})}};
  auto cpu = createCpuBackend();
  CudaBackend gpu;
  for (const OpCase *c : {&reduce, &layerNormGrad, &reduce}) {
    std::vector<HostTensor> expected = runOnBackend(*cpu, *c);
    std::vector<HostTensor> actual = runOnBackend(gpu, *c);
    REQUIRE(actual.size() == expected.size());
    for (size_t i = 0; i < actual.size(); ++i) {
      INFO(opName(c->op) << " result " << i);
      CHECK(normalizedError(actual[i], expected[i]) <= kReductionTol);
    }
  }
}

TEST_CASE("prepare reports a workspace the device cannot hold and leaves the "
          "backend unprepared",
          "[cuda]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  ScopedEnv cap("REMAT_CUDA_ATTENTION_SCRATCH_BYTES", "1099511627776");
  LoadedPlan huge = hugeAttentionPlan();
  CudaBackend gpu;
  CHECK(gpu.workspaceBytes(huge) >= (uint64_t(256) << 30));
  CHECK_THROWS_WITH(gpu.prepare(huge),
                    Catch::Contains("cudaMalloc") && Catch::Contains("failed"));
  OpAttrs attrs;
  KernelCall call;
  call.attrs = &attrs;
  CHECK_THROWS_AS(gpu.runStep(call), std::logic_error);
}

TEST_CASE("a failed cuda allocation is not reported again by the next kernel "
          "launch",
          "[cuda]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(52);
  CudaBackend gpu;
  {
    ScopedEnv cap("REMAT_CUDA_ATTENTION_SCRATCH_BYTES", "1099511627776");
    CHECK_THROWS(gpu.prepare(hugeAttentionPlan()));
  }
  // The failed cudaMalloc also set the runtime's last error, which the
  // launch check after the next kernel reads: it must see only its own.
  OpCase relu{OpKind::Relu,
              json::object(),
              {randomTensor({5, 7}, rng)},
              {typeOf({5, 7})}};
  std::vector<HostTensor> expected = runOnBackend(*createCpuBackend(), relu);
  std::vector<HostTensor> actual = runOnBackend(gpu, relu);
  CHECK(actual[0].values == expected[0].values);
}

TEST_CASE("the cuda workspace knobs fall back to their defaults on bad values",
          "[cuda]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(49);
  Shape s = {1, 2, 16, 4};
  LoadedPlan attention =
      loadPlanText(opPlanJson({OpKind::Attention,
                               {{"causal", false}, {"scale", 1.0}},
                               {randomTensor(s, rng), randomTensor(s, rng),
                                randomTensor(s, rng)},
                               {typeOf(s)}})
                       .dump(),
                   "attention.plan");
  const uint64_t mib = 1 << 20, slice = 16 * 16 * 4;
  CudaWorkspace defaults = cudaWorkspaceFor(attention);
  CHECK(defaults.cublas == 32 * mib);
  CHECK(defaults.scratch == 2 * slice);
  {
    ScopedEnv cublas("REMAT_CUDA_CUBLAS_WORKSPACE_BYTES", "1000000");
    ScopedEnv cap("REMAT_CUDA_ATTENTION_SCRATCH_BYTES", "1024");
    CudaWorkspace set = cudaWorkspaceFor(attention);
    CHECK(set.cublas == 1000192); // 256-aligned
    CHECK(set.scratch == slice);
  }
  for (const char *bad : {"lots", "12k", "0"}) {
    INFO("value '" << bad << "'");
    ScopedEnv cap("REMAT_CUDA_ATTENTION_SCRATCH_BYTES", bad);
    CHECK(cudaWorkspaceFor(attention).scratch == defaults.scratch);
    if (std::string(bad) != "0") {
      ScopedEnv cublas("REMAT_CUDA_CUBLAS_WORKSPACE_BYTES", bad);
      CHECK(cudaWorkspaceFor(attention).cublas == defaults.cublas);
    }
  }
}

TEST_CASE("a plan without GEMMs gets no cuBLAS workspace, and a budget below "
          "its arena or not a positive integer is handled",
          "[cuda]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(50);
  // sum_to [4096, 3] -> [3]: 32 chunks x 3 floats = 384 B, 512 aligned.
  json plan = opPlanJson({OpKind::SumTo,
                          json::object(),
                          {randomTensor({4096, 3}, rng)},
                          {typeOf({3})}});
  uint64_t arena = plan["arena_bytes"].get<uint64_t>();
  auto withBudget = [&](const json &budget) {
    json p = plan;
    p["report"] = {{"budget_bytes", budget}};
    return cudaWorkspaceFor(loadPlanText(p.dump(), "budget.plan"));
  };
  CudaWorkspace fits = withBudget(arena + 256 + 512);
  CHECK(fits.cublas == 0);
  CHECK(fits.scratch == 512);
  CHECK_THROWS_WITH(withBudget(arena + 256 + 511),
                    Catch::Contains("needs at least 768 B"));
  CHECK_THROWS_WITH(withBudget(arena / 2),
                    Catch::Contains("leaves 0 B beside its arena of " +
                                    std::to_string(arena) + " B"));
  // Not a budget: no limit.
  for (const json &notBudget : {json(0), json(-5), json("1 KiB"), json(2.5)}) {
    INFO("budget_bytes " << notBudget.dump());
    CudaWorkspace w = withBudget(notBudget);
    CHECK(w.cublas == 0);
    CHECK(w.scratch == 512);
  }
}

TEST_CASE("REMAT_CUDA_TF32=1 runs GEMMs in tf32, within its precision of the "
          "cpu",
          "[cuda]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(51);
  OpCase c{OpKind::Matmul,
           json::object(),
           {randomTensor({64, 96}, rng), randomTensor({96, 48}, rng)},
           {typeOf({64, 48})}};
  HostTensor expected = runOnBackend(*createCpuBackend(), c)[0];
  HostTensor f32 = runOnBackend(*createCudaBackend(), c)[0];
  ScopedEnv tf32("REMAT_CUDA_TF32", "1");
  HostTensor reduced = runOnBackend(*createCudaBackend(), c)[0];
  // tf32 keeps 10 of f32's 23 mantissa bits: about 1e-3 relative per
  // product, summed over k = 96 random-sign terms.
  double err = normalizedError(reduced, expected);
  INFO("tf32 normalized error " << err);
  CHECK(err <= 2e-3); // measured 2.8e-4 on the emulator
  CHECK(normalizedError(f32, expected) <= kReductionTol);
#ifdef REMAT_CUDA_EMULATION
  // The emulator rounds GEMM operands to tf32 exactly as the tensor cores
  // do; on a GPU cuBLAS may still pick an f32 kernel for a GEMM this small.
  CHECK(reduced.values != f32.values);
#endif
}
