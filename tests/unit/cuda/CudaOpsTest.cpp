//===- CudaOpsTest.cpp - Every CUDA kernel against its CPU twin -----------===//
//
// Each case runs one op on random inputs through the CPU backend (the
// oracle) and the CUDA backend and compares by normalized error (max abs
// error / max(1, max |cpu|)). Tolerances: 1e-6 for elementwise ops (the
// CUDA kernels are built without FMA contraction and mirror the CPU's
// operation order; only expf/tanhf may differ by an ulp), 1e-5 for row
// reductions and GEMMs (cuBLAS sums in a different order than OpenBLAS),
// and 0 (bitwise) where the kernel reproduces the CPU's exact order:
// dropout masks, single-pass sum_to / reduce_sum, embedding and
// embedding_grad, transpose, broadcast_to, reshape, constant.
//
//===----------------------------------------------------------------------===//
#include "CudaTestUtil.h"

#include "runtime/backends/cuda/CudaBackend.h"

#include <cstdlib>

using namespace remat::runtime;
using namespace remat::runtime::test;
using nlohmann::json;

TEST_CASE("cuda matmul matches the cpu for every transpose and batch form",
          "[cuda]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(1);
  checkMatmulFormsAgainstCpu(DType::F32, kReductionTol, rng);
}

TEST_CASE("cuda losses leave a micro-batch's padding sample out; dropout "
          "continues the batch's mask",
          "[cuda]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  checkPaddedSlice(*createCudaBackend());
}

TEST_CASE("cuda binary ops match the cpu under every broadcast form",
          "[cuda]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(2);
  struct Form {
    Shape a, b, c;
  };
  // Same shapes, scalar / bias-style b, the same with a broadcasting
  // instead (1 - x, bias + x), and general strided broadcasts.
  std::vector<Form> forms = {
      {{5, 7}, {5, 7}, {5, 7}},          {{5, 7}, {}, {5, 7}},
      {{5, 7}, {1, 1}, {5, 7}},          {{4, 5, 7}, {7}, {4, 5, 7}},
      {{4, 5, 7}, {1, 5, 7}, {4, 5, 7}}, {{}, {5, 7}, {5, 7}},
      {{7}, {4, 5, 7}, {4, 5, 7}},       {{4, 1, 7}, {5, 1}, {4, 5, 7}},
      {{1, 7}, {6, 1}, {6, 7}},          {{1, 5, 7}, {4, 1, 1}, {4, 5, 7}}};
  for (OpKind op : {OpKind::Add, OpKind::Sub, OpKind::Mul, OpKind::Div})
    for (const Form &f : forms) {
      HostTensor b = randomTensor(f.b, rng, 0.5, 2.0); // away from 0 for div
      checkAgainstCpu(
          {op, json::object(), {randomTensor(f.a, rng), b}, {typeOf(f.c)}},
          kElementwiseTol);
    }
}

TEST_CASE("cuda activations and their gradients match the cpu", "[cuda]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(3);
  Shape s = {33, 65};
  for (OpKind op : {OpKind::Relu, OpKind::Gelu, OpKind::Tanh, OpKind::Exp})
    checkAgainstCpu(
        {op, json::object(), {randomTensor(s, rng, -3, 3)}, {typeOf(s)}},
        kElementwiseTol);
  for (OpKind op : {OpKind::ReluGrad, OpKind::GeluGrad, OpKind::TanhGrad})
    checkAgainstCpu({op,
                     json::object(),
                     {randomTensor(s, rng, -3, 3), randomTensor(s, rng)},
                     {typeOf(s)}},
                    kElementwiseTol);
}

TEST_CASE("cuda softmax and softmax_grad match the cpu", "[cuda]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(4);
  for (Shape s : {Shape{7, 300}, Shape{2, 3, 5}, Shape{4, 1025}}) {
    checkAgainstCpu({OpKind::Softmax,
                     json::object(),
                     {randomTensor(s, rng, -5, 5)},
                     {typeOf(s)}},
                    kReductionTol);
    checkAgainstCpu({OpKind::SoftmaxGrad,
                     json::object(),
                     {randomTensor(s, rng, 0, 1), randomTensor(s, rng)},
                     {typeOf(s)}},
                    kReductionTol);
  }
}

TEST_CASE("cuda layer_norm and layer_norm_grad match the cpu", "[cuda]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(5);
  for (Shape s : {Shape{3, 10}, Shape{2, 150, 50}, Shape{8, 777}}) {
    Shape d = {s.back()};
    json attrs = {{"epsilon", 1e-5}};
    checkAgainstCpu(
        {OpKind::LayerNorm,
         attrs,
         {randomTensor(s, rng), randomTensor(d, rng), randomTensor(d, rng)},
         {typeOf(s)}},
        kReductionTol);
    checkAgainstCpu(
        {OpKind::LayerNormGrad,
         attrs,
         {randomTensor(s, rng), randomTensor(d, rng), randomTensor(s, rng)},
         {typeOf(s), typeOf(d), typeOf(d)}},
        kReductionTol);
  }
}

TEST_CASE("cuda embedding and embedding_grad are bitwise equal to the cpu",
          "[cuda]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(6);
  for (DType dtype : {DType::I32, DType::I64}) {
    HostTensor idx = indices({4, 50}, 13, rng, dtype);
    checkAgainstCpu({OpKind::Embedding,
                     json::object(),
                     {randomTensor({13, 24}, rng), idx},
                     {typeOf({4, 50, 24})}},
                    0);
    // Many repeats per row: the segmented sum must add in position order.
    checkAgainstCpu({OpKind::EmbeddingGrad,
                     json::object(),
                     {idx, randomTensor({4, 50, 24}, rng)},
                     {typeOf({13, 24})}},
                    0);
  }
}

TEST_CASE("cuda layout ops are bitwise equal to the cpu", "[cuda]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(7);
  checkAgainstCpu({OpKind::Reshape,
                   json::object(),
                   {randomTensor({6, 10}, rng)},
                   {typeOf({3, 20})}},
                  0);
  checkAgainstCpu({OpKind::Transpose,
                   {{"permutation", {2, 0, 1}}},
                   {randomTensor({3, 5, 7}, rng)},
                   {typeOf({7, 3, 5})}},
                  0);
  checkAgainstCpu({OpKind::Transpose,
                   {{"permutation", {0, 2, 1, 3}}},
                   {randomTensor({2, 3, 4, 5}, rng)},
                   {typeOf({2, 4, 3, 5})}},
                  0);
  checkAgainstCpu({OpKind::BroadcastTo,
                   json::object(),
                   {randomTensor({3, 1, 5}, rng)},
                   {typeOf({2, 3, 4, 5})}},
                  0);
  checkAgainstCpu({OpKind::Constant, {{"value", 2.5}}, {}, {typeOf({9, 3})}},
                  0);
}

TEST_CASE("cuda reductions match the cpu, bitwise when single pass", "[cuda]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(8);
  // Short reductions take the one-pass path: the CPU's exact order.
  checkAgainstCpu({OpKind::SumTo,
                   json::object(),
                   {randomTensor({4, 6, 5}, rng)},
                   {typeOf({6, 1})}},
                  0);
  checkAgainstCpu({OpKind::ReduceSum,
                   {{"axes", {0, 2}}, {"keep_dims", true}},
                   {randomTensor({4, 6, 5}, rng)},
                   {typeOf({1, 6, 1})}},
                  0);
  checkAgainstCpu({OpKind::ReduceMean,
                   {{"axes", {1}}},
                   {randomTensor({4, 6, 5}, rng)},
                   {typeOf({4, 5})}},
                  0);
  // Long reductions to few outputs take the two-pass path.
  checkAgainstCpu({OpKind::SumTo,
                   json::object(),
                   {randomTensor({4096, 3}, rng)},
                   {typeOf({3})}},
                  kReductionTol);
  checkAgainstCpu({OpKind::ReduceSum,
                   {{"axes", {0, 1}}},
                   {randomTensor({300, 200}, rng)},
                   {typeOf({})}},
                  kReductionTol);
  checkAgainstCpu({OpKind::ReduceMean,
                   {{"axes", {0}}, {"keep_dims", true}},
                   {randomTensor({5000, 7}, rng)},
                   {typeOf({1, 7})}},
                  kReductionTol);
}

TEST_CASE("cuda losses and their gradients match the cpu", "[cuda]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(9);
  for (DType dtype : {DType::I32, DType::I64}) {
    HostTensor logits = randomTensor({3, 7, 11}, rng, -4, 4);
    HostTensor labels = indices({3, 7}, 11, rng, dtype);
    checkAgainstCpu(
        {OpKind::CrossEntropy, json::object(), {logits, labels}, {typeOf({})}},
        kReductionTol);
    checkAgainstCpu({OpKind::CrossEntropyGrad,
                     json::object(),
                     {logits, labels, tensorOf({}, {1.5})},
                     {typeOf({3, 7, 11})}},
                    kReductionTol);
  }
  HostTensor a = randomTensor({1000, 3}, rng), b = randomTensor({1000, 3}, rng);
  checkAgainstCpu({OpKind::Mse, json::object(), {a, b}, {typeOf({})}},
                  kReductionTol);
  checkAgainstCpu({OpKind::MseGrad,
                   json::object(),
                   {a, b, tensorOf({}, {0.5})},
                   {typeOf({1000, 3})}},
                  kElementwiseTol);
}

TEST_CASE("cuda dropout masks are bitwise equal to the cpu", "[cuda]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(10);
  // An odd element count exercises the partial last Philox block; a seed
  // above 2^32 exercises the key's high word.
  for (int64_t step : {0, 3})
    for (double rate : {0.1, 0.5})
      checkAgainstCpu({OpKind::Dropout,
                       {{"rate", rate}, {"seed", int64_t(0x1234567890LL)}},
                       {randomTensor({37, 41}, rng)},
                       {typeOf({37, 41})},
                       step},
                      0);
}

TEST_CASE("cuda attention and attention_grad match the cpu", "[cuda]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(11);
  Shape s = {2, 3, 17, 8};
  for (bool causal : {false, true}) {
    json attrs = {{"causal", causal}, {"scale", 0.35}};
    checkAttentionAgainstCpu(s, attrs, rng);
  }
}

TEST_CASE("cuda attention in several scratch chunks matches one chunk",
          "[cuda]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(12);
  Shape s = {2, 2, 64, 16};
  json attrs = {{"causal", true}, {"scale", 0.25}};
  OpCase c{OpKind::AttentionGrad,
           attrs,
           {randomTensor(s, rng), randomTensor(s, rng), randomTensor(s, rng),
            randomTensor(s, rng)},
           {typeOf(s), typeOf(s), typeOf(s)}};
  auto whole = runOnBackend(*createCudaBackend(), c);
  // One (batch, head) slice per chunk: 64*64*4*2 bytes.
  setenv("REMAT_CUDA_ATTENTION_SCRATCH_BYTES", "32768", 1);
  auto chunked = runOnBackend(*createCudaBackend(), c);
  unsetenv("REMAT_CUDA_ATTENTION_SCRATCH_BYTES");
  for (size_t i = 0; i < whole.size(); ++i)
    CHECK(normalizedError(chunked[i], whole[i]) <= kReductionTol);
}

TEST_CASE("cuda optimizer updates match the cpu", "[cuda]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(13);
  Shape s = {31, 17};
  // A split step's gradient sum: micro-batch 0 overwrites, later ones add.
  for (int64_t microbatch : {0, 1}) {
    OpCase accumulate{OpKind::GradAccumulate,
                      {{"scale", 0.25}},
                      {randomTensor(s, rng), randomTensor(s, rng)},
                      {typeOf(s)}};
    accumulate.microbatch = microbatch;
    checkAgainstCpu(accumulate, kElementwiseTol);
  }
  checkAgainstCpu(
      {OpKind::SgdUpdate,
       {{"lr", 0.1}, {"momentum", 0.9}, {"weight_decay", 0.01}},
       {randomTensor(s, rng), randomTensor(s, rng), randomTensor(s, rng)},
       {typeOf(s), typeOf(s)}},
      kElementwiseTol);
  for (int64_t step : {0, 4})
    checkAgainstCpu({OpKind::AdamwUpdate,
                     {{"lr", 0.01},
                      {"beta1", 0.9},
                      {"beta2", 0.999},
                      {"eps", 1e-8},
                      {"weight_decay", 0.1}},
                     {randomTensor(s, rng), randomTensor(s, rng),
                      randomTensor(s, rng), randomTensor(s, rng, 0, 1)},
                     {typeOf(s), typeOf(s), typeOf(s)},
                     step},
                    kReductionTol); // bias corrections: device vs host pow
}
