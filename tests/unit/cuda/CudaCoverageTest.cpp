//===- CudaCoverageTest.cpp - Kernel branches and backend paths, covered --===//
//
// Cases found by measuring which lines of kernels/*.cu and the backend's
// host code (Cuda*.cpp)
// the other [cuda] tests never execute: size-1 and empty reductions, the
// one-pass reduction of many long outputs, index-dtype layout ops, rank 8
// (kMaxRank), rows wider than a block, uneven attention chunks, every index
// error branch, and the CUDA-graph fallbacks (a host read during a capture,
// a replay that departs from the captured calls, a capture left unfinished,
// three interrupted captures), plus arena alignment, workspace knobs and
// errors. Kernel results are compared with the CPU backend by normalized
// error with CudaOpsTest.cpp's tolerances (0 = bitwise).
//
// Not covered, and why: the int64_t-index kernel instances and gridFor's
// 2^20-block cap need more than 2^31 (2^28) elements; the cuBLAS 32-bit
// limit, embedding_grad's 32-bit sort keys, rank > kMaxRank in a kernel
// (checkSupport rejects it first) and zero-sized GEMMs (the loader rejects
// dims <= 0) cannot be reached through a valid plan; a failing launch,
// graph instantiate or graph launch needs a device or driver fault.
//
//===----------------------------------------------------------------------===//
#include "CudaTestUtil.h"

#include "runtime/plan/Loader.h"
#include "runtime/backends/cuda/CudaBackend.h"

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

/// One op's plan (opPlanJson: step 0 the op, step 1 the loss constant)
/// loaded, its arena allocated and prepared on a backend and its inputs
/// copied in, for tests that drive the Backend interface step by step:
/// several calls per prepare, training-step brackets, reads in between.
class OpSession {
public:
  OpSession(Backend &backend, const OpCase &c)
      : backend(backend),
        loaded(loadPlanText(opPlanJson(c).dump(), "op_test.plan")) {
    backend.checkSupport(loaded);
    backend.workspaceBytes(loaded);
    base = static_cast<char *>(
        backend.allocateArena(loaded.plan.arenaBytes, loaded.plan.alignment));
    try {
      backend.prepare(loaded);
      calls = PlanCalls(loaded, base);
      const StepDesc &op = loaded.plan.steps[0];
      for (size_t i = 0; i < c.inputs.size(); ++i) {
        std::vector<char> bytes = hostBytes(c.inputs[i]);
        backend.copyIn(refOf(op.inputs[i]).data, bytes.data(), bytes.size());
      }
    } catch (...) {
      backend.freeArena(base);
      throw;
    }
  }
  OpSession(const OpSession &) = delete;
  OpSession &operator=(const OpSession &) = delete;
  ~OpSession() {
    if (base)
      backend.freeArena(base);
  }

  TensorRef refOf(int64_t id) const { return calls.ref(id); }

  KernelCall call(size_t step, int64_t trainingStep) const {
    return calls.call(step, trainingStep);
  }

  /// Runs plan step `step` (0: the op, 1: the loss constant).
  void run(size_t step, int64_t trainingStep) {
    backend.runStep(call(step, trainingStep));
  }

  /// Both plan steps inside begin/endTrainingStep, as the executor does.
  void trainingStep(int64_t t) {
    backend.beginTrainingStep(t);
    run(0, t);
    run(1, t);
    backend.endTrainingStep(t);
  }

  /// The op's result `i`, copied out now.
  HostTensor output(size_t i = 0) const {
    const TensorRef &r = calls.output(0, i);
    std::vector<char> bytes(size_t(r.numElements) * dtypeSize(r.dtype));
    backend.copyOut(bytes.data(), r.data, bytes.size());
    return hostTensorFromBytes({r.dtype, r.shape}, bytes);
  }

  /// Leaves the arena to the backend (its destructor must free it).
  void abandonArena() { base = nullptr; }

  Backend &backend;
  LoadedPlan loaded;
  char *base = nullptr;

private:
  PlanCalls calls; ///< a graph replay keeps pointers into these refs
};

/// A dropout op whose mask changes with the training step: what a graph
/// replay must reproduce (the step is read on the device).
OpCase dropoutCase() {
  std::mt19937 rng(40);
  return {OpKind::Dropout,
          {{"rate", 0.5}, {"seed", 77}},
          {randomTensor({37, 41}, rng)},
          {typeOf({37, 41})}};
}

/// The CPU's dropout result at training step t.
HostTensor cpuDropout(int64_t t) {
  OpCase c = dropoutCase();
  c.trainingStep = t;
  return runOnBackend(*createCpuBackend(), c)[0];
}

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

bool contains(const std::string &text, const std::string &part) {
  return text.find(part) != std::string::npos;
}

} // namespace

//===----------------------------------------------------------------------===//
// Kernels
//===----------------------------------------------------------------------===//

TEST_CASE("cuda reductions over size-1 dims and empty reduced sets are bitwise "
          "equal to the cpu",
          "[cuda]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(30);
  // Size-1 dims are dropped before the walk, in the kept and the reduced
  // set; a size-1 dim sum_to keeps (y and x both 1) is not reduced.
  checkAgainstCpu({OpKind::SumTo,
                   json::object(),
                   {randomTensor({6, 1, 5, 3}, rng)},
                   {typeOf({1, 1, 3})}},
                  0);
  checkAgainstCpu({OpKind::ReduceMean,
                   {{"axes", {0, 1}}, {"keep_dims", true}},
                   {randomTensor({3, 1, 4, 1}, rng)},
                   {typeOf({1, 1, 4, 1})}},
                  0);
  // Only size-1 dims reduced: nothing left to walk, each output is x.
  checkAgainstCpu({OpKind::ReduceSum,
                   {{"axes", {1}}},
                   {randomTensor({4, 1, 5}, rng)},
                   {typeOf({4, 5})}},
                  0);
  checkAgainstCpu({OpKind::SumTo,
                   json::object(),
                   {randomTensor({4, 1, 5}, rng)},
                   {typeOf({4, 1, 5})}},
                  0);
}

TEST_CASE("cuda two-pass reductions walk non-contiguous reduced dims and "
          "kept size-1 dims",
          "[cuda]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(31);
  // Axes 0 and 2 do not merge: the reduced walk stays rank 2 (strided).
  checkAgainstCpu({OpKind::ReduceSum,
                   {{"axes", {0, 2}}},
                   {randomTensor({64, 3, 64}, rng)},
                   {typeOf({3})}},
                  kReductionTol);
  checkAgainstCpu({OpKind::SumTo,
                   json::object(),
                   {randomTensor({1, 4096, 3}, rng)},
                   {typeOf({1, 3})}},
                  kReductionTol);
}

TEST_CASE("cuda long reductions to many outputs stay one pass, bitwise equal "
          "to the cpu",
          "[cuda]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(32);
  // 32768 outputs fill the device: no chunks even at length 257 > 256.
  checkAgainstCpu({OpKind::SumTo,
                   json::object(),
                   {randomTensor({257, 32768}, rng)},
                   {typeOf({32768})}},
                  0);
}

TEST_CASE("cuda layout ops on index tensors keep every bit", "[cuda]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(33);
  checkAgainstCpu({OpKind::Transpose,
                   {{"permutation", {1, 0}}},
                   {indices({5, 7}, 1000, rng, DType::I32)},
                   {typeOf({7, 5}, DType::I32)}},
                  0);
  checkAgainstCpu({OpKind::Reshape,
                   json::object(),
                   {indices({6, 4}, 1000, rng, DType::I64)},
                   {typeOf({3, 8}, DType::I64)}},
                  0);
  // i64 transpose moves 8-byte elements, high words included.
  HostTensor x = indices({3, 4, 5}, 1000, rng, DType::I64);
  x.values[7] = double(int64_t(1) << 40);
  x.values[31] = -3;
  checkAgainstCpu({OpKind::Transpose,
                   {{"permutation", {2, 0, 1}}},
                   {x},
                   {typeOf({5, 3, 4}, DType::I64)}},
                  0);
}

TEST_CASE("cuda strided kernels handle rank 8, the backend's limit", "[cuda]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(34);
  Shape a = {2, 1, 2, 1, 2, 1, 2, 3}, b = {1, 2, 1, 2, 1, 2, 1, 3};
  Shape c = {2, 2, 2, 2, 2, 2, 2, 3};
  for (OpKind op : {OpKind::Add, OpKind::Div})
    checkAgainstCpu({op,
                     json::object(),
                     {randomTensor(a, rng), randomTensor(b, rng, 0.5, 2.0)},
                     {typeOf(c)}},
                    kElementwiseTol);
  checkAgainstCpu({OpKind::Transpose,
                   {{"permutation", {7, 6, 5, 4, 3, 2, 1, 0}}},
                   {randomTensor({2, 1, 3, 1, 2, 2, 1, 3}, rng)},
                   {typeOf({3, 1, 2, 2, 1, 3, 1, 2})}},
                  0);
  checkAgainstCpu({OpKind::BroadcastTo,
                   json::object(),
                   {randomTensor(b, rng)},
                   {typeOf(c)}},
                  0);
  checkAgainstCpu(
      {OpKind::SumTo, json::object(), {randomTensor(c, rng)}, {typeOf(a)}}, 0);
}

TEST_CASE("cuda rejects plans past its dtype and rank limits naming the "
          "buffer",
          "[cuda]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(35);
  CudaBackend gpu;
  json halfPlan = opPlanJson({OpKind::Relu,
                              json::object(),
                              {randomTensor({4, 8}, rng)},
                              {typeOf({4, 8})}});
  for (json &b : halfPlan["buffers"])
    if (b["name"] == "in0" || b["name"] == "out0") {
      b["dtype"] = "f16";
      b["bytes"] = 4 * 8 * 2;
    }
  LoadedPlan half = loadPlanText(halfPlan.dump(), "half.plan");
  CHECK_THROWS_WITH(gpu.checkSupport(half),
                    Catch::Contains("dtype f16 is not supported by the cuda "
                                    "backend"));
  Shape rank9 = {1, 1, 1, 1, 1, 1, 1, 2, 3};
  LoadedPlan deep = loadPlanText(opPlanJson({OpKind::Relu,
                                             json::object(),
                                             {randomTensor(rank9, rng)},
                                             {typeOf(rank9)}})
                                     .dump(),
                                 "deep.plan");
  CHECK_THROWS_WITH(gpu.checkSupport(deep),
                    Catch::Contains("rank 9 exceeds the cuda backend's limit "
                                    "of 8"));
}

TEST_CASE("cuda row kernels match the cpu on rows wider than a block and "
          "rows of one",
          "[cuda]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(36);
  // 1000 classes: 256 threads, four columns each; the label at the edge.
  for (DType dtype : {DType::I32, DType::I64}) {
    HostTensor logits = randomTensor({3, 1000}, rng, -4, 4);
    HostTensor labels = tensorOf({3}, {0, 999, 517}, dtype);
    checkAgainstCpu(
        {OpKind::CrossEntropy, json::object(), {logits, labels}, {typeOf({})}},
        kReductionTol);
    checkAgainstCpu({OpKind::CrossEntropyGrad,
                     json::object(),
                     {logits, labels, tensorOf({}, {0.75})},
                     {typeOf({3, 1000})}},
                    kReductionTol);
  }
  // Width 1: zero variance, and 70 rows (> 64) sum dgamma in 3 chunks.
  Shape s = {70, 1};
  json attrs = {{"epsilon", 1e-5}};
  checkAgainstCpu(
      {OpKind::LayerNorm,
       attrs,
       {randomTensor(s, rng), randomTensor({1}, rng), randomTensor({1}, rng)},
       {typeOf(s)}},
      kReductionTol);
  checkAgainstCpu(
      {OpKind::LayerNormGrad,
       attrs,
       {randomTensor(s, rng), randomTensor({1}, rng), randomTensor(s, rng)},
       {typeOf(s), typeOf({1}), typeOf({1})}},
      kReductionTol);
}

TEST_CASE("cuda mse past the partial-sum grid's 1024 blocks matches the cpu",
          "[cuda]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(37);
  // 263000 elements > 1024 blocks x 256 threads: threads take two each.
  HostTensor a = randomTensor({263000}, rng), b = randomTensor({263000}, rng);
  checkAgainstCpu({OpKind::Mse, json::object(), {a, b}, {typeOf({})}},
                  kReductionTol);
}

TEST_CASE("cuda attention matches the cpu on rows wider than a block",
          "[cuda]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(38);
  Shape s = {1, 1, 260, 4}; // 260 > 256 threads: causal rows end mid-loop
  for (bool causal : {false, true}) {
    json attrs = {{"causal", causal}, {"scale", 0.5}};
    checkAttentionAgainstCpu(s, attrs, rng);
  }
}

TEST_CASE("cuda attention in uneven scratch chunks matches the cpu", "[cuda]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(39);
  Shape s = {1, 5, 16, 4}; // 5 slices in chunks of 2, 2 and 1
  json attrs = {{"causal", true}, {"scale", 0.5}};
  HostTensor q = randomTensor(s, rng), k = randomTensor(s, rng),
             v = randomTensor(s, rng), dout = randomTensor(s, rng);
  {
    ScopedEnv cap("REMAT_CUDA_ATTENTION_SCRATCH_BYTES", "2048"); // 16*16*4*2
    checkAgainstCpu({OpKind::Attention, attrs, {q, k, v}, {typeOf(s)}},
                    kReductionTol);
  }
  ScopedEnv cap("REMAT_CUDA_ATTENTION_SCRATCH_BYTES", "4096"); // 16*16*4*2*2
  checkAgainstCpu({OpKind::AttentionGrad,
                   attrs,
                   {q, k, v, dout},
                   {typeOf(s), typeOf(s), typeOf(s)}},
                  kReductionTol);
}

TEST_CASE("cuda embedding_grad leaves rows no position names at zero, over "
          "several blocks of rows",
          "[cuda]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(41);
  for (DType dtype : {DType::I32, DType::I64}) {
    // 600 rows, 10 positions: most segments are empty; 601 segment starts
    // take three blocks.
    HostTensor idx = indices({2, 5}, 600, rng, dtype);
    checkAgainstCpu({OpKind::EmbeddingGrad,
                     json::object(),
                     {idx, randomTensor({2, 5, 8}, rng)},
                     {typeOf({600, 8})}},
                    0);
  }
}

TEST_CASE("cuda optimizer variants match the cpu", "[cuda]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(42);
  Shape s = {300, 3};
  // sgd_update with momentum 0, and sgd_plain_update (no state at all).
  checkAgainstCpu(
      {OpKind::SgdUpdate,
       {{"lr", 0.05}, {"momentum", 0.0}, {"weight_decay", 0.0}},
       {randomTensor(s, rng), randomTensor(s, rng), randomTensor(s, rng)},
       {typeOf(s), typeOf(s)}},
      kElementwiseTol);
  checkAgainstCpu({OpKind::SgdPlainUpdate,
                   {{"lr", 0.05}, {"weight_decay", 0.01}},
                   {randomTensor(s, rng), randomTensor(s, rng)},
                   {typeOf(s)}},
                  kElementwiseTol);
  // adamw late in training (bias corrections near 1), no weight decay.
  checkAgainstCpu({OpKind::AdamwUpdate,
                   {{"lr", 0.001},
                    {"beta1", 0.8},
                    {"beta2", 0.99},
                    {"eps", 1e-6},
                    {"weight_decay", 0.0}},
                   {randomTensor(s, rng), randomTensor(s, rng),
                    randomTensor(s, rng), randomTensor(s, rng, 0, 1)},
                   {typeOf(s), typeOf(s), typeOf(s)},
                   999},
                  kReductionTol);
}

//===----------------------------------------------------------------------===//
// Index errors
//===----------------------------------------------------------------------===//

TEST_CASE("cuda reports negative embedding indices and bad embedding_grad "
          "indices at synchronize",
          "[cuda]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(43);
  {
    CudaBackend gpu;
    CHECK_THROWS_WITH(
        runOnBackend(gpu, {OpKind::Embedding,
                           json::object(),
                           {randomTensor({5, 4}, rng),
                            tensorOf({3}, {1, 2, -7}, DType::I64)},
                           {typeOf({3, 4})}}),
        Catch::Contains("index -7 at position 2 is outside [0, 5)"));
  }
  for (int64_t bad : {-1, 13}) {
    CudaBackend gpu;
    CHECK_THROWS_WITH(
        runOnBackend(gpu, {OpKind::EmbeddingGrad,
                           json::object(),
                           {tensorOf({4}, {0, 12, double(bad), 3}, DType::I32),
                            randomTensor({4, 6}, rng)},
                           {typeOf({13, 6})}}),
        Catch::Contains("/steps/0 'embedding_grad'") &&
            Catch::Contains("index " + std::to_string(bad) +
                            " at position 2 is outside [0, 13)"));
    CHECK_NOTHROW(gpu.synchronize()); // reported once
  }
}

TEST_CASE("cuda reports a cross_entropy label equal to the class count",
          "[cuda]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(44);
  for (OpKind op : {OpKind::CrossEntropy, OpKind::CrossEntropyGrad}) {
    std::vector<HostTensor> ins = {randomTensor({3, 6}, rng),
                                   tensorOf({3}, {5, 6, 0}, DType::I32)};
    std::vector<TensorType> outs = {typeOf({})};
    if (op == OpKind::CrossEntropyGrad) {
      ins.push_back(tensorOf({}, {1.0}));
      outs = {typeOf({3, 6})};
    }
    CudaBackend gpu;
    CHECK_THROWS_WITH(
        runOnBackend(gpu, {op, json::object(), ins, outs}),
        Catch::Contains("label 6 at position 1 is outside [0, 6)"));
  }
}

TEST_CASE("several bad indices in one step are reported once, naming one of "
          "them",
          "[cuda]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(45);
  CudaBackend gpu;
  try {
    runOnBackend(gpu, {OpKind::Embedding,
                       json::object(),
                       {randomTensor({5, 4}, rng),
                        tensorOf({5}, {1, 9, 2, -4, 5}, DType::I32)},
                       {typeOf({5, 4})}});
    FAIL("no error");
  } catch (const std::runtime_error &e) {
    std::string msg = e.what();
    INFO(msg);
    // Which thread wins the record is up to the device.
    CHECK((contains(msg, "index 9 at position 1 ") ||
           contains(msg, "index -4 at position 3 ") ||
           contains(msg, "index 5 at position 4 ")));
  }
  CHECK_NOTHROW(gpu.synchronize());
}

TEST_CASE("synchronize while an exception unwinds neither throws nor loses "
          "the device error",
          "[cuda]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(46);
  CudaBackend gpu;
  OpSession s(
      gpu, {OpKind::Embedding,
            json::object(),
            {randomTensor({5, 4}, rng), tensorOf({3}, {1, 9, 2}, DType::I32)},
            {typeOf({3, 4})}});
  s.run(0, 0);
  // An executor destroyed because a step threw synchronizes in its
  // destructor; a second exception there would terminate the program.
  struct SynchronizeOnExit {
    Backend &backend;
    ~SynchronizeOnExit() { backend.synchronize(); }
  };
  try {
    SynchronizeOnExit guard{gpu};
    throw std::runtime_error("the step failed");
  } catch (const std::runtime_error &e) {
    CHECK(std::string(e.what()) == "the step failed");
  }
  CHECK_THROWS_WITH(gpu.synchronize(),
                    Catch::Contains("index 9 at position 1 is outside [0, 5)"));
  CHECK_NOTHROW(gpu.synchronize());
}

//===----------------------------------------------------------------------===//
// Training steps and CUDA graphs
//===----------------------------------------------------------------------===//

TEST_CASE("an eager cuda backend gives each call its own training step",
          "[cuda]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  CudaBackend gpu;
  OpSession s(gpu, dropoutCase());
  for (int64_t t : {3, 3, 0, 5}) {
    s.run(0, t);
    INFO("training step " << t);
    CHECK(s.output().values == cpuDropout(t).values);
  }
}

TEST_CASE("a host read during a captured step ends the capture and sees the "
          "step's earlier calls",
          "[cuda]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  // Without the read, step 1 is captured (the control).
  {
    CudaBackend gpu;
    OpSession s(gpu, dropoutCase());
    s.trainingStep(0);
    s.trainingStep(1);
    CHECK(gpu.graphsCaptured() == 1);
  }
  CudaBackend gpu;
  OpSession s(gpu, dropoutCase());
  s.trainingStep(0);
  gpu.beginTrainingStep(1); // captures: step 0 had no host access
  s.run(0, 1);
  HostTensor mid = s.output(); // the recorded dropout must run first
  s.run(1, 1);
  gpu.endTrainingStep(1);
  CHECK(mid.values == cpuDropout(1).values);
  CHECK(gpu.graphsCaptured() == 0);
  s.trainingStep(2); // eager: step 1 touched the host
  CHECK(s.output().values == cpuDropout(2).values);
}

TEST_CASE("a replayed step that departs from the captured calls runs them "
          "eagerly and ends graph replay",
          "[cuda]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  CudaBackend gpu;
  OpSession s(gpu, dropoutCase());
  s.trainingStep(0);
  s.trainingStep(1); // captured
  s.trainingStep(2); // replayed
  REQUIRE(gpu.graphsCaptured() == 1);
  REQUIRE(gpu.graphReplays() == 1);
  CHECK(s.output().values == cpuDropout(2).values);
  gpu.beginTrainingStep(3);
  SECTION("another call where the graph has the constant") {
    s.run(0, 3);
    s.run(0, 3); // queued dropout runs, then this one, eagerly
    gpu.endTrainingStep(3);
  }
  SECTION("fewer calls than the graph") {
    s.run(0, 3);
    gpu.endTrainingStep(3); // the queued dropout runs eagerly
  }
  CHECK(s.output().values == cpuDropout(3).values);
  CHECK(gpu.graphReplays() == 1);
  s.trainingStep(4); // eager from now on
  s.trainingStep(5);
  CHECK(s.output().values == cpuDropout(5).values);
  CHECK(gpu.graphReplays() == 1);
  CHECK(gpu.graphsCaptured() == 1);
}

TEST_CASE("cuda graphs are given up after three interrupted captures",
          "[cuda]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  CudaBackend gpu;
  OpSession s(gpu, dropoutCase());
  // Odd steps 1, 3, 5 start a capture (the step before was clean) and a
  // host read interrupts it; even steps are clean. Step 7 would capture
  // and step 8 replay but for the limit of three attempts.
  for (int64_t t = 0; t <= 8; ++t) {
    gpu.beginTrainingStep(t);
    s.run(0, t);
    if (t % 2 == 1 && t <= 5) {
      INFO("training step " << t);
      CHECK(s.output().values == cpuDropout(t).values);
    }
    s.run(1, t);
    gpu.endTrainingStep(t);
  }
  CHECK(gpu.graphsCaptured() == 0);
  CHECK(gpu.graphReplays() == 0);
  CHECK(s.output().values == cpuDropout(8).values);
}

TEST_CASE("a capture a failed step left open is dropped and graphs stay off",
          "[cuda]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  CudaBackend gpu;
  OpSession s(gpu, dropoutCase());
  s.trainingStep(0);
  gpu.beginTrainingStep(1); // captures
  s.run(0, 1);
  // No endTrainingStep: the step threw. The next step starts over.
  s.trainingStep(2);
  CHECK(s.output().values == cpuDropout(2).values);
  s.trainingStep(3);
  s.trainingStep(4);
  CHECK(s.output().values == cpuDropout(4).values);
  CHECK(gpu.graphsCaptured() == 0);
}

TEST_CASE("freeing the arena during a capture drops the capture; the backend "
          "runs the next plan eagerly",
          "[cuda]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  CudaBackend gpu;
  {
    OpSession s(gpu, dropoutCase());
    s.trainingStep(0);
    gpu.beginTrainingStep(1); // captures
    s.run(0, 1);
  }                                // freeArena while capturing
  OpSession s(gpu, dropoutCase()); // prepare: stream work outside a capture
  for (int64_t t = 0; t <= 3; ++t)
    s.trainingStep(t);
  CHECK(s.output().values == cpuDropout(3).values);
  CHECK(gpu.graphsCaptured() == 0);
}

TEST_CASE("a call that throws during a capture runs the step's earlier calls, "
          "then throws again eagerly",
          "[cuda]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  CudaBackend gpu;
  OpSession s(gpu, dropoutCase());
  // An attention call this plan did not prepare for: its workspace has no
  // scratch, so the launcher refuses before touching memory. (A real
  // capture failure, a call the driver cannot capture, takes the same path.)
  std::vector<TensorRef> qkvo(4,
                              TensorRef{s.base, DType::F32, {1, 1, 4, 2}, 8});
  OpAttrs attrs;
  KernelCall attention;
  attention.op = OpKind::Attention;
  attention.attrs = &attrs;
  attention.inputs = qkvo.data();
  attention.numInputs = 3;
  attention.outputs = qkvo.data() + 3;
  attention.numOutputs = 1;
  attention.trainingStep = 1;
  const char *refusal =
      "attention needs 64 B of scratch per (batch, head) but the workspace "
      "reserved 0 B";
  CHECK_THROWS_WITH(gpu.runStep(attention), Catch::Contains(refusal));
  s.trainingStep(0);
  gpu.beginTrainingStep(1); // captures
  s.run(0, 1);
  CHECK_THROWS_WITH(gpu.runStep(attention), Catch::Contains(refusal));
  gpu.endTrainingStep(1);
  CHECK(s.output().values == cpuDropout(1).values);
  s.trainingStep(2);
  s.trainingStep(3);
  CHECK(gpu.graphsCaptured() == 0); // graphs stay off
  CHECK(s.output().values == cpuDropout(3).values);
}

//===----------------------------------------------------------------------===//
// Arena, workspace, lifetime
//===----------------------------------------------------------------------===//

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
