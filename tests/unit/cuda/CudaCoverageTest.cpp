//===- CudaCoverageTest.cpp - Kernel branches and index errors, covered --===//
//
// Cases found by measuring which lines of kernels/*.cu and the backend's
// host code (Cuda*.cpp) the other [cuda] tests never execute. Here: size-1
// and empty reductions, the one-pass reduction of many long outputs,
// index-dtype layout ops, rank 8 (kMaxRank), rows wider than a block,
// uneven attention chunks and every index error branch. Kernel results are
// compared with the CPU backend by normalized error with CudaOpsTest.cpp's
// tolerances (0 = bitwise). The CUDA-graph fallbacks are CudaGraphTest.cpp's;
// arena alignment, workspace knobs and errors CudaArenaTest.cpp's.
//
// Not covered, and why: the int64_t-index kernel instances and gridFor's
// 2^20-block cap need more than 2^31 (2^28) elements; the cuBLAS 32-bit
// limit, embedding_grad's 32-bit sort keys, rank > kMaxRank in a kernel
// (checkSupport rejects it first) and zero-sized GEMMs (the loader rejects
// dims <= 0) cannot be reached through a valid plan; a failing launch,
// graph instantiate or graph launch needs a device or driver fault.
//
//===----------------------------------------------------------------------===//
#include "CudaOpSession.h"
#include "CudaTestUtil.h"

#include "runtime/backends/cuda/CudaBackend.h"
#include "runtime/plan/Loader.h"

#include <cstdint>
#include <stdexcept>
#include <string>

using namespace remat::runtime;
using namespace remat::runtime::test;
using nlohmann::json;

namespace {

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
