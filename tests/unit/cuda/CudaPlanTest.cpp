//===- CudaPlanTest.cpp - Whole plans, graphs, errors, memory on cuda -----===//
#include "CudaTestUtil.h"

#include "runtime/BoundsCheck.h"
#include "runtime/Executor.h"
#include "runtime/plan/Loader.h"
#include "runtime/backends/cuda/CudaBackend.h"
#include "runtime/backends/cuda/kernels/Kernels.h"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <random>
#include <fstream>
#include <sstream>

using namespace remat::runtime;
using namespace remat::runtime::test;
using nlohmann::json;

namespace {

/// tests/e2e/plans/tiny_linear.plan without its budget: it was compiled for
/// the CPU under a 1 KiB budget, which leaves no room for the CUDA
/// workspace (the backend would refuse it, as it should). These tests check
/// results, not the budget; the GPT-2 tiny plan keeps its budget.
json tinyPlanJson() {
  std::ifstream in(std::string(REMAT_SOURCE_DIR) +
                   "/tests/e2e/plans/tiny_linear.plan");
  json plan = json::parse(in);
  plan["report"].erase("budget_bytes");
  return plan;
}

LoadedPlan tinyPlan() { return loadPlanText(tinyPlanJson().dump(), "tiny.plan"); }

struct Run {
  std::vector<float> losses;
  std::map<std::string, NamedTensor> state;
};

Run runPlan(Backend &backend, const LoadedPlan &plan, int steps) {
  Executor exec(plan, backend);
  Run run;
  for (int s = 0; s < steps; ++s)
    run.losses.push_back(float(exec.runStep().loss));
  run.state = exec.stateTensors();
  return run;
}


/// The plan run on cuda with graphs (replayed) and with REMAT_CUDA_GRAPHS=0
/// (eager), plus the graph statistics of the first run.
struct GraphRuns {
  Run replayed, eager;
  int64_t captured = 0, replays = 0;
};

GraphRuns runWithAndWithoutGraphs(const LoadedPlan &plan, int steps) {
  GraphRuns runs;
  CudaBackend withGraphs;
  runs.replayed = runPlan(withGraphs, plan, steps);
  runs.captured = withGraphs.graphsCaptured();
  runs.replays = withGraphs.graphReplays();
  ScopedEnv off("REMAT_CUDA_GRAPHS", "0");
  CudaBackend noGraphs;
  runs.eager = runPlan(noGraphs, plan, steps);
  return runs;
}

} // namespace

TEST_CASE("the tiny plan gives the same losses on the cuda and cpu backends",
          "[cuda]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  LoadedPlan plan = tinyPlan();
  auto cpu = createCpuBackend();
  CudaBackend gpu;
  Run expected = runPlan(*cpu, plan, 8);
  Run actual = runPlan(gpu, plan, 8);
  REQUIRE(actual.losses.size() == expected.losses.size());
  for (size_t i = 0; i < actual.losses.size(); ++i) {
    INFO("step " << i + 1 << ": cuda " << actual.losses[i] << ", cpu "
                 << expected.losses[i]);
    CHECK(actual.losses[i] ==
          Approx(expected.losses[i]).epsilon(1e-4).margin(1e-6));
  }
  CHECK(actual.losses.back() < actual.losses.front());
  CHECK(gpu.arenaAllocations() == 1);
}

TEST_CASE("cuda graph replay gives bitwise the results of eager execution",
          "[cuda]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  LoadedPlan plan = tinyPlan();
  CudaBackend withGraphs;
  Run replayed = runPlan(withGraphs, plan, 6);
  CHECK(withGraphs.graphsCaptured() == 1);
  CHECK(withGraphs.graphReplays() == 4); // step 0 eager, 1 captured, 2..5
  Run eager;
  {
    ScopedEnv off("REMAT_CUDA_GRAPHS", "0");
    CudaBackend noGraphs;
    eager = runPlan(noGraphs, plan, 6);
    CHECK(noGraphs.graphsCaptured() == 0);
  }
  CHECK(replayed.losses == eager.losses);
  for (const auto &[name, t] : eager.state)
    CHECK(replayed.state.at(name).bytes == t.bytes);
}

namespace {

/// tiny_linear's model with dropout on the prediction and adamw instead of
/// sgd: both read the training step on the device, so a replayed graph that
/// saw a stale step would give other masks and bias corrections.
LoadedPlan dropoutAdamwPlan() {
  auto buffer = [](const char *name, const char *role, Shape shape,
                   uint64_t offset, json extra = json::object()) {
    uint64_t bytes = 4;
    for (int64_t d : shape)
      bytes *= uint64_t(d);
    json b = {{"name", name},     {"role", role},     {"dtype", "f32"},
              {"shape", shape},   {"offset", offset}, {"bytes", bytes}};
    b.update(extra);
    return b;
  };
  json zeros = {{"init", {{"kind", "zeros"}}}};
  json buffers = json::array({
      buffer("x", "input", {8, 4}, 0,
             {{"data", {{"kind", "randn"}, {"mean", 0.0}, {"std", 1.0}}}}),
      buffer("w", "param", {4, 2}, 128,
             {{"init", {{"kind", "normal"}, {"mean", 0.0}, {"std", 0.5}}}}),
      buffer("w_teacher", "param", {4, 2}, 192,
             {{"init", {{"kind", "uniform"}, {"low", -1.0}, {"high", 1.0}}}}),
      buffer("m:w", "optimizer", {4, 2}, 256, zeros),
      buffer("v:w", "optimizer", {4, 2}, 320, zeros),
      buffer("grad:w", "grad", {4, 2}, 384),
      buffer("target", "activation", {8, 2}, 448),
      buffer("h", "activation", {8, 2}, 512),
      buffer("hd", "activation", {8, 2}, 576),
      buffer("loss", "activation", {}, 640),
      buffer("dloss", "temporary", {}, 704),
      buffer("dhd", "activation", {8, 2}, 768),
      buffer("dh", "activation", {8, 2}, 832)});
  json drop = {{"rate", 0.5}, {"seed", int64_t(0x2DFDC1C35LL)}};
  auto step = [](const char *op, std::vector<int> ins, std::vector<int> outs,
                 json attrs, const char *phase) {
    return json{{"op", op},       {"inputs", ins},   {"outputs", outs},
                {"attrs", attrs}, {"phase", phase}, {"recompute", false}};
  };
  json none = json::object();
  json steps = json::array(
      {step("matmul", {0, 2}, {6}, none, "forward"),
       step("matmul", {0, 1}, {7}, none, "forward"),
       step("dropout", {7}, {8}, drop, "forward"),
       step("mse", {8, 6}, {9}, none, "forward"),
       step("constant", {}, {10}, {{"value", 1.0}}, "backward"),
       step("mse_grad", {8, 6, 10}, {11}, none, "backward"),
       step("dropout", {11}, {12}, drop, "backward"),
       step("matmul", {0, 12}, {5}, {{"transpose_a", true}}, "backward"),
       step("adamw_update", {1, 5, 3, 4}, {1, 3, 4},
            {{"lr", 0.05},
             {"beta1", 0.9},
             {"beta2", 0.99},
             {"eps", 1e-8},
             {"weight_decay", 0.01}},
            "optimizer")});
  json plan = {{"format", "remat-plan"}, {"version", 1},
               {"model", "dropout_adamw"}, {"seed", 11},
               {"alignment", 64},         {"arena_bytes", 896},
               {"buffers", buffers},      {"steps", steps},
               {"loss", 9},               {"tokens_per_sample", 1},
               {"batch", 8}};
  return loadPlanText(plan.dump(), "dropout_adamw.plan");
}

} // namespace

TEST_CASE("graph replay reads dropout's and adamw's step on the device",
          "[cuda]") {
  // The plan is checked on the CPU everywhere; the rest needs a device.
  LoadedPlan plan = dropoutAdamwPlan();
  auto cpu = createCpuBackend();
  Run expected = runPlan(*cpu, plan, 6);
  REMAT_REQUIRE_CUDA_DEVICE();
  GraphRuns runs = runWithAndWithoutGraphs(plan, 6);
  const Run &replayed = runs.replayed, &eager = runs.eager;
  CHECK(runs.captured == 1);
  CHECK(runs.replays == 4);
  CHECK(replayed.losses == eager.losses);
  for (const auto &[name, t] : eager.state)
    CHECK(replayed.state.at(name).bytes == t.bytes);
  for (size_t i = 0; i < expected.losses.size(); ++i) {
    INFO("step " << i + 1 << ": cuda " << replayed.losses[i] << ", cpu "
                 << expected.losses[i]);
    CHECK(replayed.losses[i] ==
          Approx(expected.losses[i]).epsilon(1e-4).margin(1e-6));
  }
}

TEST_CASE("cuda results are bitwise reproducible across runs", "[cuda]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  LoadedPlan plan = tinyPlan();
  CudaBackend first, second;
  Run a = runPlan(first, plan, 4), b = runPlan(second, plan, 4);
  CHECK(a.losses == b.losses);
  for (const auto &[name, t] : a.state)
    CHECK(b.state.at(name).bytes == t.bytes);
}

TEST_CASE("a different buffer layout (another budget) gives bitwise the "
          "same results on cuda",
          "[cuda]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  LoadedPlan packed = tinyPlan();
  // The same step list with dy in its own bytes instead of reusing h's:
  // what a larger budget would give. 960 is only 64-byte aligned where 640
  // is 128-byte aligned, so a GEMM operand's alignment changes too (cuBLAS
  // must not pick another algorithm for it).
  json spread = tinyPlanJson();
  for (json &b : spread["buffers"])
    if (b["name"] == "dy")
      b["offset"] = 960;
  spread["arena_bytes"] = 1024;
  LoadedPlan roomy = loadPlanText(spread.dump(), "roomy.plan");
  CudaBackend first, second;
  Run a = runPlan(first, packed, 4), b = runPlan(second, roomy, 4);
  CHECK(a.losses == b.losses);
  for (const auto &[name, t] : a.state)
    CHECK(b.state.at(name).bytes == t.bytes);
}

TEST_CASE("mid-step reads see the steps before them with graphs on", "[cuda]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  LoadedPlan plan = tinyPlan();
  size_t gradW = 6; // grad:w, written by step 6
  auto readEveryStep = [&](Backend &backend) {
    Executor exec(plan, backend);
    std::vector<std::vector<char>> reads;
    exec.onStepExecuted = [&](size_t stepIndex) {
      if (stepIndex == 6 && exec.stepsRun() >= 2)
        reads.push_back(exec.readBuffer(gradW));
    };
    for (int s = 0; s < 5; ++s)
      exec.runStep();
    return reads;
  };
  CudaBackend gpu;
  auto withGraphs = readEveryStep(gpu);
  ScopedEnv off("REMAT_CUDA_GRAPHS", "0");
  CudaBackend eagerGpu;
  auto eager = readEveryStep(eagerGpu);
  CHECK(withGraphs == eager);
}

TEST_CASE("an embedding index out of range is reported at synchronize "
          "naming the step",
          "[cuda]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(20);
  OpCase c{OpKind::Embedding,
           json::object(),
           {randomTensor({5, 4}, rng), tensorOf({3}, {1, 9, 2}, DType::I32)},
           {typeOf({3, 4})}};
  CudaBackend gpu;
  try {
    runOnBackend(gpu, c);
    FAIL("no error");
  } catch (const std::runtime_error &e) {
    std::string msg = e.what();
    INFO(msg);
    CHECK(msg.find("op_test.plan: /steps/0 'embedding'") != std::string::npos);
    CHECK(msg.find("index 9 at position 1 is outside [0, 5)") !=
          std::string::npos);
  }
  CHECK_NOTHROW(gpu.synchronize()); // reported once
}

TEST_CASE("a cross_entropy label out of range is reported at synchronize",
          "[cuda]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(21);
  for (OpKind op : {OpKind::CrossEntropy, OpKind::CrossEntropyGrad}) {
    std::vector<HostTensor> ins = {randomTensor({2, 6}, rng),
                                   tensorOf({2}, {0, -1}, DType::I64)};
    std::vector<TensorType> outs = {typeOf({})};
    if (op == OpKind::CrossEntropyGrad) {
      ins.push_back(tensorOf({}, {1.0}));
      outs = {typeOf({2, 6})};
    }
    CudaBackend gpu;
    try {
      runOnBackend(gpu, {op, json::object(), ins, outs});
      FAIL("no error");
    } catch (const std::runtime_error &e) {
      std::string msg = e.what();
      INFO(msg);
      CHECK(msg.find("/steps/0") != std::string::npos);
      CHECK(msg.find("label -1 at position 1 is outside [0, 6)") !=
            std::string::npos);
    }
  }
}

TEST_CASE("an arena larger than the free device memory is refused with both "
          "numbers",
          "[cuda]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  // 4 PiB, and the largest arena a plan can state (arena + workspace used
  // to overflow to a small number and pass the check).
  for (uint64_t arena : {uint64_t(1) << 52, UINT64_MAX}) {
    json plan = tinyPlanJson();
    plan["arena_bytes"] = arena;
    LoadedPlan loaded = loadPlanText(plan.dump(), "huge.plan");
    CudaBackend gpu;
    try {
      Executor exec(loaded, gpu);
      FAIL("no error");
    } catch (const std::runtime_error &e) {
      std::string msg = e.what();
      INFO(msg);
      CHECK(msg.find("huge.plan: /arena_bytes: the arena (" +
                     std::to_string(arena) + " B)") != std::string::npos);
      CHECK(msg.find("B free") != std::string::npos);
    }
    CHECK(gpu.arenaAllocations() == 0);
  }
}

TEST_CASE("attention over more than 2^24 positions is refused before "
          "anything is allocated",
          "[cuda]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  // q, k, v, out [1, 1, S, 1]: S*S*4 B of scores would overflow past 2^30.
  int64_t s = (int64_t(1) << 24) + 1, bytes = 4 * s;
  int64_t aligned = (bytes + 255) / 256 * 256;
  json buffers = json::array();
  for (int i = 0; i < 4; ++i)
    buffers.push_back({{"name", std::string("t") + char('0' + i)},
                       {"role", i < 3 ? "input" : "activation"},
                       {"dtype", "f32"},
                       {"shape", {1, 1, s, 1}},
                       {"offset", i * aligned},
                       {"bytes", bytes}});
  for (int i = 0; i < 3; ++i)
    buffers[size_t(i)]["data"] = {{"kind", "randn"}};
  buffers.push_back({{"name", "loss"}, {"role", "activation"},
                     {"dtype", "f32"}, {"shape", json::array()},
                     {"offset", 4 * aligned}, {"bytes", 4}});
  json plan = {{"format", "remat-plan"}, {"version", 1}, {"model", "long"},
               {"seed", 0}, {"batch", 1}, {"tokens_per_sample", 1},
               {"alignment", 256}, {"arena_bytes", 4 * aligned + 256},
               {"buffers", buffers}, {"loss", 4},
               {"steps",
                {{{"op", "attention"}, {"inputs", {0, 1, 2}},
                  {"outputs", {3}}, {"phase", "forward"},
                  {"attrs", {{"causal", true}, {"scale", 1.0}}}},
                 {{"op", "constant"}, {"inputs", json::array()},
                  {"outputs", {4}}, {"phase", "forward"},
                  {"attrs", {{"value", 0.0}}}}}}};
  LoadedPlan loaded = loadPlanText(plan.dump(), "long.plan");
  CudaBackend gpu;
  CHECK_THROWS_WITH(Executor(loaded, gpu),
                    Catch::Contains("long.plan: /steps/0 'attention': "
                                    "attention over 16777217 positions") &&
                        Catch::Contains("S <= 2^24"));
  CHECK(gpu.arenaAllocations() == 0);
}

TEST_CASE("the cuda device peak covers the arena and the workspace", "[cuda]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  LoadedPlan plan = tinyPlan();
  CudaBackend gpu;
  Executor exec(plan, gpu);
  exec.runStep();
  CHECK(exec.workspaceBytes() > 0);
  CHECK(gpu.devicePeakBytes() >=
        gpu.contextBytes() + exec.arenaBytes() + exec.workspaceBytes());
  CHECK(cudaDeviceUsedBytes() > 0);
}

TEST_CASE("createBackend knows the cuda backend", "[cuda]") {
  CHECK(availableBackends().find("cuda") != std::string::npos);
  if (!haveCudaDevice()) {
    WARN("no CUDA device; skipping");
    CHECK_THROWS_WITH(createBackend("cuda"), Catch::Contains("no CUDA device"));
    return;
  }
  CHECK(createBackend("cuda")->name() == "cuda");
}

TEST_CASE("randn and randint inputs generated on the device equal the host "
          "generator's",
          "[cuda]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  CudaBackend gpu;
  const uint64_t n = 1000003; // not a multiple of 4
  char *arena = static_cast<char *>(gpu.allocateArena(n * 8, 256));
  for (int variant = 0; variant < 3; ++variant) {
    SyntheticRequest r;
    r.numElements = n;
    r.seed = 0x5eed00000001ULL;
    r.streamId = 0x9e3779b9u;
    r.step = 7;
    r.mean = 0.5;
    r.std = 2.0;
    if (variant > 0) {
      r.kind = SyntheticRequest::Kind::Randint;
      r.int64Elements = variant == 2;
      r.low = -3;
      r.high = 50257;
    }
    size_t size = variant == 2 ? 8 : 4;
    std::vector<char> expected(n * size), got(n * size);
    for (uint64_t b = 0; b * 4 < n; ++b)
      writeSyntheticBlock(r, b, expected.data());
    REQUIRE(gpu.generateInput(arena, r));
    gpu.copyOut(got.data(), arena, got.size());
    gpu.synchronize();
    INFO("variant " << variant);
    if (variant > 0) {
      CHECK(got == expected);
      continue;
    }
    // Normals: at most one ulp apart, and that rarely (libm vs CUDA).
    const float *a = reinterpret_cast<const float *>(got.data());
    const float *e = reinterpret_cast<const float *>(expected.data());
    uint64_t differing = 0, beyondUlp = 0;
    for (uint64_t i = 0; i < n; ++i) {
      if (a[i] == e[i])
        continue;
      ++differing;
      if (std::nextafter(e[i], a[i]) != a[i])
        ++beyondUlp;
    }
    CHECK(beyondUlp == 0);
    CHECK(differing <= n / 1000);
  }
  gpu.freeArena(arena);
}

TEST_CASE("the cuda workspace shrinks to fit the plan's budget beside the "
          "arena",
          "[cuda]") {
  // Host arithmetic only: runs without a device.
  std::mt19937 rng(21);
  Shape s = {2, 2, 64, 16}; // one (batch, head) slice of attention_grad:
  const uint64_t slice = 64 * 64 * 4 * 2; // 32 KiB
  OpCase c{OpKind::AttentionGrad,
           {{"causal", true}, {"scale", 0.25}},
           {randomTensor(s, rng), randomTensor(s, rng), randomTensor(s, rng),
            randomTensor(s, rng)},
           {typeOf(s), typeOf(s), typeOf(s)}};
  json plan = opPlanJson(c);
  uint64_t arena = plan["arena_bytes"].get<uint64_t>();
  const uint64_t status = CudaWorkspace::kStatusBytes, mib = 1 << 20;
  auto withBudget = [&](std::optional<uint64_t> budget) {
    json p = plan;
    if (budget)
      p["report"] = {{"budget_bytes", *budget}};
    return cudaWorkspaceFor(loadPlanText(p.dump(), "budget.plan"));
  };
  // No budget, or room enough: the defaults (32 MiB cuBLAS, all 4 slices).
  CudaWorkspace full = withBudget(std::nullopt);
  CHECK(full.cublas == 32 * mib);
  CHECK(full.scratch == 4 * slice);
  CudaWorkspace roomy = withBudget(arena + full.total());
  CHECK(roomy.cublas == full.cublas);
  CHECK(roomy.scratch == full.scratch);
  // Tighter: attention scratch goes first (2 slices), then cuBLAS's.
  CudaWorkspace fewer = withBudget(arena + status + 32 * mib + 2 * slice);
  CHECK(fewer.cublas == 32 * mib);
  CHECK(fewer.scratch == 2 * slice);
  CudaWorkspace tight = withBudget(arena + status + 5 * mib);
  CHECK(tight.scratch == slice);
  CHECK(tight.cublas == 5 * mib - slice);
  CHECK(arena + tight.total() <= arena + status + 5 * mib);
  // Below one slice and 4 MiB of cuBLAS: an error naming the reserve.
  CHECK_THROWS_WITH(withBudget(arena + status + 4 * mib),
                    Catch::Contains("--workspace-reserve " +
                                    std::to_string(full.total())));
}

TEST_CASE("user data reaches the device through the pinned staging, one "
          "step ahead: the cpu's losses",
          "[cuda]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  LoadedPlan plan = tinyPlan();
  // Three batches of x [8, 4] stacked: step s reads batch s mod 3.
  NpyArray data{DType::F32, {24, 4}, std::vector<char>(24 * 4 * 4)};
  std::vector<float> values(24 * 4);
  for (size_t i = 0; i < values.size(); ++i)
    values[i] = std::cos(0.3f * float(i));
  std::memcpy(data.bytes.data(), values.data(), data.bytes.size());
  auto run = [&](Backend &backend) {
    Executor exec(plan, backend);
    exec.setInputData("x", data);
    std::vector<float> losses;
    for (int s = 0; s < 7; ++s)
      losses.push_back(float(exec.runStep(s + 1 < 7).loss));
    return losses;
  };
  auto cpu = createCpuBackend();
  CudaBackend gpu;
  std::vector<float> expected = run(*cpu), actual = run(gpu);
  for (size_t i = 0; i < actual.size(); ++i) {
    INFO("step " << i + 1);
    CHECK(actual[i] == Approx(expected[i]).epsilon(1e-4).margin(1e-6));
  }
}

TEST_CASE("the shipped GPT-2 tiny plan gives the cpu's losses on cuda, with "
          "and without graphs",
          "[cuda]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  // Every op family GPT-2 uses, recomputation, dropout and the loss
  // gradient written over the logits (ExecutorTest checks the same file
  // on the CPU).
  LoadedPlan plan = loadPlan(std::string(REMAT_SOURCE_DIR) +
                             "/tests/e2e/plans/gpt2_tiny_520k.plan");
  auto cpu = createCpuBackend();
  Run expected = runPlan(*cpu, plan, 5);
  GraphRuns runs = runWithAndWithoutGraphs(plan, 5);
  const Run &replayed = runs.replayed;
  CHECK(runs.captured == 1);
  CHECK(replayed.losses == runs.eager.losses);
  for (size_t i = 0; i < expected.losses.size(); ++i) {
    INFO("step " << i + 1 << ": cuda " << replayed.losses[i] << ", cpu "
                 << expected.losses[i]);
    CHECK(replayed.losses[i] ==
          Approx(expected.losses[i]).epsilon(1e-4).margin(1e-6));
  }
}

TEST_CASE("every step of the GPT-2 tiny plan keeps to its buffers on cuda",
          "[cuda]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  // runtime/BoundsCheck.h: each step also runs on an arena whose other
  // bytes are 0xFF; a stray read or write throws naming the step.
  LoadedPlan plan = loadPlan(std::string(REMAT_SOURCE_DIR) +
                             "/tests/e2e/plans/gpt2_tiny_520k.plan");
  std::unique_ptr<Backend> checked =
      withBoundsCheck(std::make_unique<CudaBackend>());
  auto cpu = createCpuBackend();
  Run expected = runPlan(*cpu, plan, 2);
  Run actual = runPlan(*checked, plan, 2);
  for (size_t i = 0; i < expected.losses.size(); ++i)
    CHECK(actual.losses[i] ==
          Approx(expected.losses[i]).epsilon(1e-4).margin(1e-6));
}

//===----------------------------------------------------------------------===//
// Kernel guards: what the kernels cannot do is refused before anything runs
//===----------------------------------------------------------------------===//

TEST_CASE("rows past the grid's 2^31 - 1 blocks are refused naming the step",
          "[cuda]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  // softmax and cross_entropy run one block per row of [rows, 1]; nothing
  // is allocated, so the shapes need no memory.
  const int64_t limit = cuda::kMaxGridX;
  auto softmaxOver = [](int64_t rows) {
    OpCase c{OpKind::Softmax,
             json::object(),
             {HostTensor{DType::F32, {rows, 1}, {}}},
             {TensorType{DType::F32, {rows, 1}}}};
    return loadPlanText(opPlanJson(c).dump(), "rows.plan");
  };
  CudaBackend gpu;
  CHECK_THROWS_WITH(gpu.checkSupport(softmaxOver(limit + 1)),
                    Catch::Contains("rows.plan: /steps/0 'softmax': "
                                    "2147483648 rows; the cuda backend runs "
                                    "one block per row and takes at most "
                                    "2147483647"));
  OpCase entropy{OpKind::CrossEntropy,
                 json::object(),
                 {HostTensor{DType::F32, {limit + 5, 1}, {}},
                  HostTensor{DType::I32, {limit + 5}, {}}},
                 {TensorType{DType::F32, {}}}};
  CHECK_THROWS_WITH(
      gpu.checkSupport(loadPlanText(opPlanJson(entropy).dump(), "ce.plan")),
      Catch::Contains("/steps/0 'cross_entropy': 2147483652 rows"));
  // At the limit the rows pass; what stops the plan then (if anything) is
  // its 16 GiB arena against the device's memory.
  try {
    gpu.checkSupport(softmaxOver(limit));
  } catch (const std::exception &e) {
    CHECK_THAT(e.what(), !Catch::Contains("rows;") &&
                             Catch::Contains("/arena_bytes: the arena"));
  }
  // The launchers check too (for callers that skip checkSupport).
  CHECK(cuda::rowGrid(limit, "softmaxKernel") == 2147483647u);
  CHECK_THROWS_WITH(cuda::rowGrid(limit + 1, "softmaxKernel"),
                    Catch::Contains("softmaxKernel over 2147483648 rows"));
  CHECK(gpu.arenaAllocations() == 0);
}

TEST_CASE("a plan aligned below its element size is refused naming the "
          "buffer",
          "[cuda]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(61);
  CudaBackend gpu;
  json floats = opPlanJson({OpKind::Relu,
                            json::object(),
                            {randomTensor({4, 8}, rng)},
                            {typeOf({4, 8})}});
  floats["alignment"] = 2; // the offsets (multiples of 256) stay valid
  CHECK_THROWS_WITH(
      gpu.checkSupport(loadPlanText(floats.dump(), "two.plan")),
      Catch::Contains("two.plan: /alignment: 2 B is below the 4-byte "
                      "elements of f32 buffer 'in0'"));
  floats["alignment"] = 4;
  CHECK_NOTHROW(gpu.checkSupport(loadPlanText(floats.dump(), "four.plan")));
  // i64 labels need 8.
  json labels =
      opPlanJson({OpKind::CrossEntropy,
                  json::object(),
                  {randomTensor({4, 3}, rng), indices({4}, 3, rng, DType::I64)},
                  {TensorType{DType::F32, {}}}});
  labels["alignment"] = 4;
  CHECK_THROWS_WITH(
      gpu.checkSupport(loadPlanText(labels.dump(), "labels.plan")),
      Catch::Contains("labels.plan: /alignment: 4 B is below the 8-byte "
                      "elements of i64 buffer 'in1'"));
  CHECK(gpu.arenaAllocations() == 0);
}
