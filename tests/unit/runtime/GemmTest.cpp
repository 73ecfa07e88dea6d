//===- GemmTest.cpp - float GEMMs on oneDNN and on OpenBLAS ---------------===//
#include "BackendRun.h"

#include "ops/BFloat16.h"

#include "runtime/backends/cpu/CpuWorkspace.h"
#include "runtime/backends/cpu/DnnlMatmul.h"
#include "runtime/backends/cpu/Gemm.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

using namespace remat::runtime;
using namespace remat::runtime::test;
using cpu::GemmShape;

namespace {

/// Checks gemm<float>(g) on random operands against the product in double,
/// entry by entry, within float32's rounding of a k-term dot product:
/// k * eps * sum |alpha a b| + eps * |beta c|.
void checkGemm(const GemmShape &g, std::mt19937 &rng) {
  int64_t rowsA = g.transA ? g.k : g.m, rowsB = g.transB ? g.n : g.k;
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> a(size_t(rowsA * g.lda)), b(size_t(rowsB * g.ldb)),
      c(size_t(g.m * g.ldc));
  for (float &v : a)
    v = u(rng);
  for (float &v : b)
    v = u(rng);
  for (float &v : c)
    v = u(rng);
  std::vector<float> before = c;
  std::vector<char> scratch(
      size_t(cpu::dnnlMatmulScratchBytes(g).value_or(0) +
             cpu::kGemmScratchAlignment));
  cpu::gemm<float>(g.transA, g.transB, g.m, g.n, g.k, g.alpha, a.data(), g.lda,
                   b.data(), g.ldb, g.beta, c.data(), g.ldc, scratch.data(),
                   scratch.size());
  const double eps = std::numeric_limits<float>::epsilon();
  double worst = 0;
  for (int64_t i = 0; i < g.m; ++i)
    for (int64_t j = 0; j < g.n; ++j) {
      double sum = 0, magnitude = 0;
      for (int64_t p = 0; p < g.k; ++p) {
        double x = g.transA ? a[size_t(p * g.lda + i)] : a[size_t(i * g.lda + p)];
        double y = g.transB ? b[size_t(j * g.ldb + p)] : b[size_t(p * g.ldb + j)];
        sum += x * y;
        magnitude += std::abs(x * y);
      }
      double old = before[size_t(i * g.ldc + j)];
      double expected = g.alpha * sum + g.beta * old;
      double bound = double(g.k) * eps * std::abs(g.alpha) * magnitude +
                     eps * std::abs(g.beta * old) + eps * std::abs(expected);
      worst = std::max(worst,
                       std::abs(c[size_t(i * g.ldc + j)] - expected) / bound);
    }
  INFO("m " << g.m << " n " << g.n << " k " << g.k << " transA " << g.transA
            << " transB " << g.transB << " alpha " << g.alpha << " beta "
            << g.beta);
  CHECK(worst <= 1.0);
  // Columns beyond n in a padded C are left alone.
  for (int64_t i = 0; i < g.m; ++i)
    for (int64_t j = g.n; j < g.ldc; ++j)
      CHECK(c[size_t(i * g.ldc + j)] == before[size_t(i * g.ldc + j)]);
}

std::vector<GemmShape> gemmCases() {
  std::vector<GemmShape> cases;
  for (bool ta : {false, true})
    for (bool tb : {false, true})
      for (auto [alpha, beta] : {std::pair{1.0f, 0.0f}, {0.125f, 0.0f},
                                 {1.0f, 1.0f}, {-0.5f, 0.75f}}) {
        int64_t m = 37, n = 29, k = 53;
        // Leading dimensions wider than the rows they hold.
        int64_t lda = (ta ? m : k) + 3, ldb = (tb ? k : n) + 5, ldc = n + 2;
        cases.push_back({ta, tb, m, n, k, lda, ldb, ldc, alpha, beta});
      }
  cases.push_back({false, true, 4100, 24, 16, 16, 16, 24, 1, 0}); // tall
  cases.push_back({true, false, 64, 48, 2048, 64, 48, 48, 1, 0}); // deep
  return cases;
}

} // namespace

TEST_CASE("float GEMMs through oneDNN and through OpenBLAS are both within "
          "float32's rounding of the product, for every transpose, alpha, "
          "beta and leading dimension",
          "[runtime]") {
  std::mt19937 rng(5);
  for (bool dnnl : {true, false}) {
    cpu::DnnlMatmulSwitch path(dnnl);
    if (dnnl && !cpu::dnnlMatmulEnabled()) {
      WARN("built without oneDNN: only the OpenBLAS path is checked");
      continue;
    }
    cpu::DnnlMatmulCounts before = cpu::dnnlMatmulCounts();
    std::vector<GemmShape> cases = gemmCases();
    size_t onDnnl = 0;
    for (const GemmShape &g : cases) {
      onDnnl += cpu::dnnlMatmulScratchBytes(g).has_value();
      checkGemm(g, rng);
    }
    cpu::DnnlMatmulCounts after = cpu::dnnlMatmulCounts();
    // Every case ran where the switch says: on oneDNN where it takes the
    // shape (on this project's AVX2 CPUs, all of them).
    CHECK(after.run - before.run == (dnnl ? onDnnl : 0));
    CHECK(after.scratchTooSmall == before.scratchTooSmall);
  }
}

TEST_CASE("the workspace the CPU backend reserves for matmul and attention "
          "holds every GEMM's oneDNN scratchpad",
          "[runtime]") {
  if (!cpu::dnnlMatmulEnabled()) {
    WARN("built without oneDNN, or REMAT_CPU_GEMM=blas: nothing to check");
    return;
  }
  std::mt19937 rng(9);
  cpu::DnnlMatmulCounts before = cpu::dnnlMatmulCounts();
  OpAttrs plain, transB, sum;
  transB.transposeB = true;
  sum.transposeA = true;
  sum.sumBatch = true;
  runOp<float>(OpKind::Matmul, plain,
               {randomTensor({4, 96, 64}, rng), randomTensor({64, 80}, rng)},
               {typeOf({4, 96, 80})});
  runOp<float>(OpKind::Matmul, transB,
               {randomTensor({3, 40, 64}, rng), randomTensor({3, 50, 64}, rng)},
               {typeOf({3, 40, 50})});
  runOp<float>(OpKind::Matmul, sum,
               {randomTensor({4, 96, 64}, rng), randomTensor({4, 96, 80}, rng)},
               {typeOf({64, 80})});
  OpAttrs attention;
  attention.scale = 0.125f;
  attention.causal = true;
  Shape qkv = {2, 3, 48, 16};
  runOp<float>(OpKind::AttentionGrad, attention,
               {randomTensor(qkv, rng), randomTensor(qkv, rng),
                randomTensor(qkv, rng), randomTensor(qkv, rng)},
               {typeOf(qkv), typeOf(qkv), typeOf(qkv)});
  cpu::DnnlMatmulCounts after = cpu::dnnlMatmulCounts();
  // At most 1 + 3 + 1 matmul GEMMs and 5 per (batch, head) of
  // attention_grad on oneDNN (those it takes), none short of scratch.
  CHECK(after.run - before.run <= 5 + 6 * 5);
  CHECK(after.scratchTooSmall == before.scratchTooSmall);
}

TEST_CASE("bf16 matmuls on oneDNN's bf16 kernels and on float copies are "
          "both within bf16's rounding of the product, in every transpose "
          "and batch form, and a float32 result is the sum they round",
          "[runtime]") {
  std::mt19937 rng(23);
  // A bf16 tensor of uniform values, each exactly a bf16.
  auto bf16 = [&](const Shape &s) {
    HostTensor t = bf16Rounded(randomTensor(s, rng));
    t.dtype = DType::BF16;
    return t;
  };
  struct Case {
    nlohmann::json attrs;
    Shape a, b, c;
  };
  nlohmann::json plain = nlohmann::json::object(), ta = {{"transpose_a", true}},
                 tb = {{"transpose_b", true}},
                 tab = {{"transpose_a", true}, {"transpose_b", true}},
                 sum = {{"transpose_a", true}, {"sum_batch", true}};
  std::vector<Case> cases = {
      {plain, {37, 53}, {53, 29}, {37, 29}},
      {ta, {53, 37}, {53, 29}, {37, 29}},
      {tb, {37, 53}, {29, 53}, {37, 29}},
      {tab, {53, 37}, {29, 53}, {37, 29}},
      {plain, {3, 37, 53}, {53, 29}, {3, 37, 29}},          // one GEMM, 2-D B
      {tb, {2, 3, 37, 53}, {2, 3, 29, 53}, {2, 3, 37, 29}}, // per batch
      {sum, {3, 53, 37}, {3, 53, 29}, {37, 29}},            // summed batches
      // C with over 8 times more rows than columns: on oneDNN, C^T in
      // pieces of kTransposedPieceRows rows of C, the last one short.
      {ta, {40, 4100}, {40, 16}, {4100, 16}},
      {sum, {2, 40, 4100}, {2, 40, 16}, {4100, 16}},
  };
  const double eps = std::numeric_limits<float>::epsilon();
  for (bool dnnl : {true, false}) {
    cpu::DnnlMatmulSwitch path(dnnl);
    for (const Case &c : cases) {
      HostTensor a = bf16(c.a), b = bf16(c.b);
      OpAttrs attrs = remat::ops::parseAttrs(OpKind::Matmul, c.attrs);
      const cpu::GemmShape g = cpu::matmulGemms(attrs, c.a, c.b);
      // A bf16 result, and a float32 one (a parameter's gradient): the
      // float32 sum the bf16 result is rounded from.
      std::map<DType, HostTensor> outs;
      for (DType cType : {DType::BF16, DType::F32}) {
        std::vector<remat::ops::TensorType> ins = {{DType::BF16, c.a},
                                                   {DType::BF16, c.b}},
                                            types = {{cType, c.c}};
        cpu::GemmTypes gemmTypes = cType == DType::BF16
                                       ? cpu::GemmTypes::Bf16
                                       : cpu::GemmTypes::Bf16F32;
        CHECK(cpu::bf16GemmTypes(OpKind::Matmul, ins, types) == gemmTypes);
        bool native =
            cpu::cpuBf16Staging(OpKind::Matmul, attrs, ins, types).kind ==
            cpu::Bf16Staging::Kind::Dnnl;
        // oneDNN runs them where it has a bf16 kernel on this CPU, and only
        // while it is on.
        CHECK(native ==
              (dnnl && cpu::dnnlMatmulScratchBytes(cpu::oneGemm(g), gemmTypes)
                           .has_value()));
        cpu::DnnlMatmulCounts before = cpu::dnnlMatmulCounts();
        HostTensor out = runOnBackend(
            *createCpuBackend(),
            {OpKind::Matmul, c.attrs, {a, b}, {typeOf(c.c, cType)}})[0];
        cpu::DnnlMatmulCounts after = cpu::dnnlMatmulCounts();
        INFO("oneDNN " << dnnl << " native " << native << " A "
                       << formatShape(c.a) << " B " << formatShape(c.b)
                       << " attrs " << c.attrs.dump() << " C "
                       << remat::ops::dtypeName(cType));
        int64_t pieceRows = cpu::transposedPieceRows(cpu::oneGemm(g));
        if (native)
          CHECK(after.run - before.run ==
                uint64_t(pieceRows > 0 ? (g.m + pieceRows - 1) / pieceRows
                                       : g.batch));
        if (native && c.c[0] == 4100)
          CHECK(pieceRows == cpu::kTransposedPieceRows);
        // The product of the bf16 operands in double, per GEMM of g.
        double worst = 0;
        for (int64_t i = 0; i < g.batch; ++i)
          for (int64_t r = 0; r < g.m; ++r)
            for (int64_t col = 0; col < g.n; ++col) {
              double exact = 0, magnitude = 0;
              for (int64_t p = 0; p < g.k; ++p) {
                double x = a.values[size_t(
                    i * g.strideA +
                    (g.transA ? p * g.lda + r : r * g.lda + p))];
                double y = b.values[size_t(
                    i * g.strideB +
                    (g.transB ? col * g.ldb + p : p * g.ldb + col))];
                exact += x * y;
                magnitude += std::abs(x * y);
              }
              // Summed in float32 (and, into bf16, rounded once: 8
              // significant bits, half a unit in the last place 2^-8
              // relative).
              double bound =
                  double(g.k) * eps * magnitude +
                  (cType == DType::BF16 ? std::ldexp(std::abs(exact), -8)
                                        : 0.0) +
                  1e-30;
              double got = out.values[size_t(i * g.strideC + r * g.ldc + col)];
              worst = std::max(worst, std::abs(got - exact) / bound);
            }
        CHECK(worst <= 1.0);
        outs[cType] = out;
      }
      // The bf16 result is the float32 one rounded, on either path.
      const HostTensor &wide = outs[DType::F32];
      CHECK(bf16Rounded(wide).values == outs[DType::BF16].values);
      // The float32 results are not all bf16 values.
      CHECK(bf16Rounded(wide).values != wide.values);
    }
  }
  if (!cpu::dnnlMatmulScratchBytes({false, false, 8, 8, 8, 8, 8, 8},
                                   cpu::GemmTypes::Bf16))
    WARN("no oneDNN bf16 matmul on this CPU (or build): only the float "
         "copies were checked");
}
