//===- CudaBf16Test.cpp - bf16 operands on the CUDA backend ---------------===//
//
// --precision bf16 plans on the CUDA backend (runtime/backends/cuda/
// CudaBf16.cpp): an all-bf16 matmul through cuBLAS's GemmEx, every other op
// on float copies of its bf16 tensors. Each case runs on the CPU backend
// (the oracle, which widens bf16 the same way and computes in float) and
// on the CUDA backend; the results, rounded to bf16 by both, may differ by
// a bf16 rounding step where the float sums differ in order: normalized
// error at most 1e-2 (bf16 keeps 8 significant bits, 2^-8 = 3.9e-3).
//
//===----------------------------------------------------------------------===//
#include "CudaTestUtil.h"
#include "OpSamples.h"

#include "ops/OpTable.h"
#include "ops/ShapeRules.h"
#include "runtime/backends/cpu/DnnlMatmul.h"

#include <set>
#include <string>

using namespace remat::runtime;
using namespace remat::runtime::test;
using nlohmann::json;

namespace {

constexpr double kBf16Tol = 1e-2;

} // namespace

TEST_CASE("every op of the table on bf16 operands runs on the cuda backend "
          "and matches the cpu",
          "[cuda]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(16);
  std::set<std::string> covered = forEachBf16Case(
      rng, [](OpKind) { return false; },
      [](const OpCase &c) { checkAgainstCpu(c, kBf16Tol); });
  // The ops a --precision bf16 step computes on bf16 tensors are among
  // those run (the list guards against a sample change leaving them out).
  for (const char *name : {"matmul",
                           "attention",
                           "attention_grad",
                           "conv2d",
                           "conv2d_grad_input",
                           "add",
                           "mul",
                           "gelu",
                           "gelu_grad",
                           "relu",
                           "layer_norm",
                           "layer_norm_grad",
                           "batch_norm",
                           "softmax",
                           "cross_entropy",
                           "cross_entropy_grad",
                           "dropout",
                           "reshape",
                           "transpose",
                           "convert",
                           "sum_to"}) {
    INFO("op '" << name << "' has no bf16 case");
    CHECK(covered.count(name) == 1);
  }
}

TEST_CASE("cuda bf16 matmul (GemmEx) matches the cpu for every transpose and "
          "batch form",
          "[cuda]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(17);
  checkMatmulFormsAgainstCpu(DType::BF16, kBf16Tol, rng);
  // A long sum: float accumulation keeps it within a bf16 step of the
  // cpu's (bf16 accumulation would drift by percents over 1024 terms).
  checkAgainstCpu({OpKind::Matmul,
                   json::object(),
                   {asBf16(randomTensor({16, 1024}, rng, 0.0, 1.0)),
                    asBf16(randomTensor({1024, 8}, rng, 0.0, 1.0))},
                   {typeOf({16, 8}, DType::BF16)}},
                  kBf16Tol);
  // Into a float32 result (a parameter's gradient, GemmEx with a float C):
  // the float sums of exact products, as the cpu's up to their order.
  checkAgainstCpu({OpKind::Matmul,
                   json{{"transpose_a", true}, {"sum_batch", true}},
                   {asBf16(randomTensor({3, 64, 37}, rng)),
                    asBf16(randomTensor({3, 64, 29}, rng))},
                   {typeOf({37, 29}, DType::F32)}},
                  kReductionTol);
  checkAgainstCpu({OpKind::Matmul,
                   json{{"transpose_a", true}},
                   {asBf16(randomTensor({40, 4100}, rng)),
                    asBf16(randomTensor({40, 16}, rng))},
                   {typeOf({4100, 16}, DType::F32)}},
                  kReductionTol);
}

TEST_CASE("cuda bf16 elementwise kernels round as the cpu does: bitwise equal "
          "where the float math is exact",
          "[cuda]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(18);
  auto bf16 = [&](const Shape &s) { return asBf16(randomTensor(s, rng)); };
  TensorType c = typeOf({6, 40}, DType::BF16);
  // IEEE +, -, * and / round once in float on both backends, then once to
  // bf16 (to nearest, ties to even): the same bits. A bias-style operand
  // takes the modulo path, a column the strided one.
  for (OpKind op : {OpKind::Add, OpKind::Sub, OpKind::Mul, OpKind::Div}) {
    INFO(opName(op));
    checkAgainstCpu({op, json::object(), {bf16({6, 40}), bf16({6, 40})}, {c}},
                    0);
    checkAgainstCpu({op, json::object(), {bf16({6, 40}), bf16({40})}, {c}}, 0);
    checkAgainstCpu({op, json::object(), {bf16({6, 1}), bf16({6, 40})}, {c}},
                    0);
  }
  checkAgainstCpu({OpKind::Relu, json::object(), {bf16({6, 40})}, {c}}, 0);
  checkAgainstCpu(
      {OpKind::ReluGrad, json::object(), {bf16({6, 40}), bf16({6, 40})}, {c}},
      0);
  // The kept values times 1 / (1 - rate), rounded: the masks are the cpu's.
  checkAgainstCpu({OpKind::Dropout,
                   json{{"rate", 0.3}, {"seed", 7}},
                   {bf16({6, 40})},
                   {c},
                   2},
                  0);
}

TEST_CASE("the cpu's bf16 GEMMs in more than one piece of each kind match "
          "cuda's GemmEx",
          "[cuda]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  // On float copies, not oneDNN's bf16 kernels (which a CPU with bf16
  // instructions would run them on).
  cpu::DnnlMatmulSwitch blas(false);
  std::mt19937 rng(19);
  auto bf16 = [&](const Shape &s) { return asBf16(randomTensor(s, rng)); };
  // The cpu backend stages a bf16 GEMM in pieces of 2^18 floats
  // (cpu/Bf16Staging.cpp); 100000 rows, columns or depth make two pieces.
  // Each kind copies its smallest operand or result whole. Rows: B whole,
  // blocks of A's and C's rows.
  checkAgainstCpu({OpKind::Matmul,
                   json::object(),
                   {bf16({100000, 2}), bf16({2, 3})},
                   {typeOf({100000, 3}, DType::BF16)}},
                  kBf16Tol);
  // Columns: A whole, blocks of op(B)'s and C's columns, B as stored and
  // transposed.
  checkAgainstCpu({OpKind::Matmul,
                   json::object(),
                   {bf16({2, 2}), bf16({2, 100000})},
                   {typeOf({2, 100000}, DType::BF16)}},
                  kBf16Tol);
  checkAgainstCpu({OpKind::Matmul,
                   json{{"transpose_b", true}},
                   {bf16({2, 2}), bf16({100000, 2})},
                   {typeOf({2, 100000}, DType::BF16)}},
                  kBf16Tol);
  // Sum: C whole, blocks of the summed dimension, B as stored and
  // transposed.
  checkAgainstCpu({OpKind::Matmul,
                   json::object(),
                   {bf16({2, 100000}), bf16({100000, 3})},
                   {typeOf({2, 3}, DType::BF16)}},
                  kBf16Tol);
  checkAgainstCpu({OpKind::Matmul,
                   json{{"transpose_b", true}},
                   {bf16({2, 100000}), bf16({3, 100000})},
                   {typeOf({2, 3}, DType::BF16)}},
                  kBf16Tol);
  // Depth: A^T B with m <= k, blocks of the summed rows.
  checkAgainstCpu({OpKind::Matmul,
                   json{{"transpose_a", true}},
                   {bf16({100000, 2}), bf16({100000, 3})},
                   {typeOf({2, 3}, DType::BF16)}},
                  kBf16Tol);
  // Depth by rows: A^T B with m > k, blocks of C's rows.
  checkAgainstCpu({OpKind::Matmul,
                   json{{"transpose_a", true}},
                   {bf16({2, 100000}), bf16({2, 3})},
                   {typeOf({100000, 3}, DType::BF16)}},
                  kBf16Tol);
}
