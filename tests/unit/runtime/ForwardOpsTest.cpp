//===- ForwardOpsTest.cpp - Every forward op against a reference ---------===//
//
// Each CPU kernel (f32) against hand-computed values or a naive loop written
// here independently of the kernel. Tolerance: 1e-5 normalized, a few f32
// ulps of the O(1) values used.
//
//===----------------------------------------------------------------------===//
#include "BackendRun.h"
#include "TestUtil.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <stdexcept>

using namespace remat::runtime;
using namespace remat::runtime::test;

namespace {

constexpr double kTol = 1e-5;

HostTensor run1(OpKind op, const OpAttrs &attrs,
                const std::vector<HostTensor> &ins, const Shape &outShape) {
  return runOp<float>(op, attrs, ins, {typeOf(outShape)})[0];
}

/// Naive reference of matmul: c[b,i,j] = sum_k A(b,i,k) B(b,k,j).
HostTensor naiveMatmul(const HostTensor &a, const HostTensor &b, bool ta,
                       bool tb) {
  size_t ra = a.shape.size(), rb = b.shape.size();
  int64_t m = ta ? a.shape[ra - 1] : a.shape[ra - 2];
  int64_t k = ta ? a.shape[ra - 2] : a.shape[ra - 1];
  int64_t n = tb ? b.shape[rb - 2] : b.shape[rb - 1];
  int64_t batch = a.size() / (m * k);
  Shape cs(a.shape.begin(), a.shape.end() - 2);
  cs.push_back(m);
  cs.push_back(n);
  HostTensor c{DType::F32, cs, std::vector<double>(size_t(batch * m * n))};
  for (int64_t bi = 0; bi < batch; ++bi)
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double s = 0;
        for (int64_t p = 0; p < k; ++p) {
          double av = ta ? a.values[bi * m * k + p * m + i]
                         : a.values[bi * m * k + i * k + p];
          int64_t bb = rb == 2 ? 0 : bi * k * n;
          double bv = tb ? b.values[bb + j * k + p] : b.values[bb + p * n + j];
          s += av * bv;
        }
        c.values[bi * m * n + i * n + j] = s;
      }
  return c;
}

} // namespace

TEST_CASE("matmul matches a naive triple loop for every transpose and batch "
          "form",
          "[runtime]") {
  std::mt19937 rng(11);
  for (bool ta : {false, true})
    for (bool tb : {false, true})
      for (bool shared : {false, true}) {
        INFO("transpose_a " << ta << " transpose_b " << tb << " shared b "
                            << shared);
        int64_t batch = 3, m = 4, k = 5, n = 6;
        Shape as = {batch, ta ? k : m, ta ? m : k};
        Shape bs = {tb ? n : k, tb ? k : n};
        if (!shared)
          bs.insert(bs.begin(), batch);
        HostTensor a = randomTensor(as, rng), b = randomTensor(bs, rng);
        OpAttrs attrs;
        attrs.transposeA = ta;
        attrs.transposeB = tb;
        HostTensor c = run1(OpKind::Matmul, attrs, {a, b}, {batch, m, n});
        CHECK(normalizedError(c, naiveMatmul(a, b, ta, tb)) < kTol);
      }
}

TEST_CASE("matmul with sum_batch is the sum of the batches' products",
          "[runtime]") {
  std::mt19937 rng(12);
  int64_t m = 4, k = 5, n = 6;
  for (Shape batch : {Shape{3}, Shape{2, 3}}) {
    Shape as = batch, bs = batch;
    as.insert(as.end(), {k, m});
    bs.insert(bs.end(), {k, n});
    HostTensor a = randomTensor(as, rng), b = randomTensor(bs, rng);
    HostTensor perBatch = naiveMatmul(a, b, true, false);
    HostTensor want{DType::F32, {m, n}, std::vector<double>(size_t(m * n))};
    for (size_t i = 0; i < perBatch.values.size(); ++i)
      want.values[i % size_t(m * n)] += perBatch.values[i];
    OpAttrs attrs;
    attrs.transposeA = true;
    attrs.sumBatch = true;
    HostTensor c = run1(OpKind::Matmul, attrs, {a, b}, {m, n});
    CHECK(normalizedError(c, want) < kTol);
  }
}

TEST_CASE("matmul of rank-2 operands is a plain GEMM", "[runtime]") {
  HostTensor a = tensorOf({2, 2}, {1, 2, 3, 4});
  HostTensor b = tensorOf({2, 2}, {5, 6, 7, 8});
  HostTensor c = run1(OpKind::Matmul, {}, {a, b}, {2, 2});
  CHECK(c.values == std::vector<double>{19, 22, 43, 50});
}

TEST_CASE("binary ops broadcast like NumPy", "[runtime]") {
  HostTensor a = tensorOf({2, 3}, {1, 2, 3, 4, 5, 6});
  HostTensor row = tensorOf({3}, {10, 20, 30});
  HostTensor col = tensorOf({2, 1}, {2, 4});
  HostTensor scalar = tensorOf({}, {2});
  CHECK(run1(OpKind::Add, {}, {a, row}, {2, 3}).values ==
        std::vector<double>{11, 22, 33, 14, 25, 36});
  CHECK(run1(OpKind::Sub, {}, {a, col}, {2, 3}).values ==
        std::vector<double>{-1, 0, 1, 0, 1, 2});
  CHECK(run1(OpKind::Mul, {}, {a, scalar}, {2, 3}).values ==
        std::vector<double>{2, 4, 6, 8, 10, 12});
  CHECK(run1(OpKind::Div, {}, {a, col}, {2, 3}).values ==
        std::vector<double>{0.5, 1, 1.5, 1, 1.25, 1.5});
  // Both operands broadcast: [2,1] + [3] -> [2,3].
  CHECK(run1(OpKind::Add, {}, {col, row}, {2, 3}).values ==
        std::vector<double>{12, 22, 32, 14, 24, 34});
}

TEST_CASE("unary ops match their closed forms", "[runtime]") {
  HostTensor x = tensorOf({4}, {-2, -0.5, 0.5, 1});
  CHECK(run1(OpKind::Relu, {}, {x}, {4}).values ==
        std::vector<double>{0, 0, 0.5, 1});
  HostTensor g = run1(OpKind::Gelu, {}, {x}, {4});
  // gelu(1) = 0.841192, gelu(-2) = -0.045402 (tanh form).
  CHECK(g.values[3] == Approx(0.8411920).epsilon(1e-5));
  CHECK(g.values[0] == Approx(-0.0454023).epsilon(1e-4));
  // gelu_exact(x) = x·Φ(x): Φ(1) = 0.8413447461, Φ(-2) = 0.0227501319.
  HostTensor ge = run1(OpKind::GeluExact, {}, {x}, {4});
  CHECK(ge.values[3] == Approx(0.8413447461).epsilon(1e-6));
  CHECK(ge.values[0] == Approx(-2 * 0.0227501319).epsilon(1e-6));
  HostTensor t = run1(OpKind::Tanh, {}, {x}, {4});
  HostTensor e = run1(OpKind::Exp, {}, {x}, {4});
  for (int i = 0; i < 4; ++i) {
    CHECK(t.values[i] == Approx(std::tanh(x.values[i])).epsilon(1e-6));
    CHECK(e.values[i] == Approx(std::exp(x.values[i])).epsilon(1e-6));
  }
}

TEST_CASE("softmax normalizes the last dimension", "[runtime]") {
  HostTensor x = tensorOf({2, 3}, {1, 2, 3, 1000, 1000, 1000});
  HostTensor y = run1(OpKind::Softmax, {}, {x}, {2, 3});
  CHECK(y.values[0] == Approx(0.0900306).epsilon(1e-5));
  CHECK(y.values[1] == Approx(0.2447285).epsilon(1e-5));
  CHECK(y.values[2] == Approx(0.6652410).epsilon(1e-5));
  // Max-subtracted: large logits do not overflow.
  CHECK(y.values[3] == Approx(1.0 / 3).epsilon(1e-6));
}

TEST_CASE("layer_norm normalizes rows and applies gamma and beta",
          "[runtime]") {
  HostTensor x = tensorOf({2, 4}, {1, 2, 3, 4, 2, 2, 2, 2});
  HostTensor gamma = tensorOf({4}, {1, 2, 1, 1});
  HostTensor beta = tensorOf({4}, {0, 0, 0, 1});
  OpAttrs attrs;
  attrs.epsilon = 1e-5f;
  HostTensor y = run1(OpKind::LayerNorm, attrs, {x, gamma, beta}, {2, 4});
  double rstd = 1 / std::sqrt(1.25 + 1e-5);
  CHECK(y.values[0] == Approx(-1.5 * rstd).epsilon(1e-5));
  CHECK(y.values[1] == Approx(2 * -0.5 * rstd).epsilon(1e-5));
  CHECK(y.values[3] == Approx(1.5 * rstd + 1).epsilon(1e-5));
  // A constant row normalizes to beta.
  CHECK(y.values[4] == Approx(0).margin(1e-6));
  CHECK(y.values[7] == Approx(1).margin(1e-6));
}

TEST_CASE("embedding gathers rows and rejects an index outside the table",
          "[runtime]") {
  HostTensor table = tensorOf({3, 2}, {0, 1, 10, 11, 20, 21});
  for (DType dt : {DType::I32, DType::I64}) {
    HostTensor idx = tensorOf({2, 2}, {2, 0, 1, 2}, dt);
    CHECK(run1(OpKind::Embedding, {}, {table, idx}, {2, 2, 2}).values ==
          std::vector<double>{20, 21, 0, 1, 10, 11, 20, 21});
  }
  HostTensor bad = tensorOf({2}, {1, 3}, DType::I32);
  CHECK_THROWS_WITH(run1(OpKind::Embedding, {}, {table, bad}, {2, 2}),
                    Catch::Contains("index 3") &&
                        Catch::Contains("outside [0, 3)"));
}

TEST_CASE("reshape copies and transpose permutes dims", "[runtime]") {
  HostTensor x = tensorOf({2, 3}, {1, 2, 3, 4, 5, 6});
  CHECK(run1(OpKind::Reshape, {}, {x}, {3, 2}).values == x.values);
  OpAttrs perm;
  perm.permutation = {1, 0};
  CHECK(run1(OpKind::Transpose, perm, {x}, {3, 2}).values ==
        std::vector<double>{1, 4, 2, 5, 3, 6});
  // Rank 3: y[i,j,k] = x[j,k,i] for permutation [2,0,1].
  std::mt19937 rng(3);
  HostTensor x3 = randomTensor({2, 3, 4}, rng);
  perm.permutation = {2, 0, 1};
  HostTensor y3 = run1(OpKind::Transpose, perm, {x3}, {4, 2, 3});
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 2; ++j)
      for (int k = 0; k < 3; ++k)
        CHECK(y3.values[i * 6 + j * 3 + k] == x3.values[j * 12 + k * 4 + i]);
}

TEST_CASE("reduce_sum and reduce_mean reduce the given axes", "[runtime]") {
  HostTensor x = tensorOf({2, 3}, {1, 2, 3, 4, 5, 6});
  OpAttrs attrs;
  attrs.axes = {0};
  CHECK(run1(OpKind::ReduceSum, attrs, {x}, {3}).values ==
        std::vector<double>{5, 7, 9});
  attrs.axes = {1};
  attrs.keepDims = true;
  CHECK(run1(OpKind::ReduceMean, attrs, {x}, {2, 1}).values ==
        std::vector<double>{2, 5});
  attrs.axes = {0, 1};
  attrs.keepDims = false;
  CHECK(run1(OpKind::ReduceSum, attrs, {x}, {}).values ==
        std::vector<double>{21});
  std::mt19937 rng(5);
  HostTensor x3 = randomTensor({2, 3, 4}, rng);
  attrs.axes = {0, 2};
  HostTensor y = run1(OpKind::ReduceSum, attrs, {x3}, {3});
  for (int j = 0; j < 3; ++j) {
    double s = 0;
    for (int i = 0; i < 2; ++i)
      for (int k = 0; k < 4; ++k)
        s += x3.values[i * 12 + j * 4 + k];
    CHECK(y.values[j] == Approx(s).epsilon(1e-6));
  }
}

TEST_CASE("broadcast_to expands and sum_to folds back", "[runtime]") {
  HostTensor col = tensorOf({2, 1}, {1, 2});
  CHECK(run1(OpKind::BroadcastTo, {}, {col}, {3, 2, 2}).values ==
        std::vector<double>{1, 1, 2, 2, 1, 1, 2, 2, 1, 1, 2, 2});
  HostTensor x = tensorOf({2, 2, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12});
  CHECK(run1(OpKind::SumTo, {}, {x}, {3}).values ==
        std::vector<double>{22, 26, 30});
  CHECK(run1(OpKind::SumTo, {}, {x}, {2, 1}).values ==
        std::vector<double>{1 + 2 + 3 + 7 + 8 + 9, 4 + 5 + 6 + 10 + 11 + 12});
  CHECK(run1(OpKind::SumTo, {}, {x}, {}).values == std::vector<double>{78});
}

TEST_CASE("cross_entropy is the mean negative log-likelihood", "[runtime]") {
  HostTensor logits = tensorOf({2, 2}, {0, 0, 3, 1});
  HostTensor labels = tensorOf({2}, {0, 1}, DType::I64);
  HostTensor loss = run1(OpKind::CrossEntropy, {}, {logits, labels}, {});
  double second = std::log(std::exp(3.0) + std::exp(1.0)) - 1.0;
  CHECK(loss.values[0] == Approx((std::log(2.0) + second) / 2).epsilon(1e-6));
  HostTensor bad = tensorOf({2}, {0, 2}, DType::I32);
  CHECK_THROWS_WITH(run1(OpKind::CrossEntropy, {}, {logits, bad}, {}),
                    Catch::Contains("label 2"));
}

TEST_CASE("the losses leave a micro-batch's padding sample out; dropout "
          "continues the batch's mask",
          "[runtime]") {
  checkPaddedSlice(*createCpuBackend());
}

TEST_CASE("mse is the mean squared difference", "[runtime]") {
  HostTensor a = tensorOf({2, 2}, {1, 2, 3, 4});
  HostTensor b = tensorOf({2, 2}, {1, 0, 0, 4});
  CHECK(run1(OpKind::Mse, {}, {a, b}, {}).values[0] == Approx((4.0 + 9.0) / 4));
}

TEST_CASE("attention matches a naive softmax(q k^T) v, causal or not",
          "[runtime]") {
  std::mt19937 rng(9);
  int64_t b = 2, h = 2, s = 5, dh = 3;
  HostTensor q = randomTensor({b, h, s, dh}, rng);
  HostTensor k = randomTensor({b, h, s, dh}, rng);
  HostTensor v = randomTensor({b, h, s, dh}, rng);
  for (bool causal : {false, true}) {
    INFO("causal " << causal);
    OpAttrs attrs;
    attrs.causal = causal;
    attrs.scale = 0.5f;
    HostTensor o = run1(OpKind::Attention, attrs, {q, k, v}, {b, h, s, dh});
    HostTensor ref = o;
    for (int64_t bh = 0; bh < b * h; ++bh)
      for (int64_t i = 0; i < s; ++i) {
        std::vector<double> p(size_t(s), 0.0);
        double denom = 0;
        for (int64_t j = 0; j < s; ++j) {
          if (causal && j > i)
            continue;
          double dot = 0;
          for (int64_t d = 0; d < dh; ++d)
            dot += q.values[(bh * s + i) * dh + d] *
                   k.values[(bh * s + j) * dh + d];
          p[j] = std::exp(0.5 * dot);
          denom += p[j];
        }
        for (int64_t d = 0; d < dh; ++d) {
          double acc = 0;
          for (int64_t j = 0; j < s; ++j)
            acc += p[j] / denom * v.values[(bh * s + j) * dh + d];
          ref.values[(bh * s + i) * dh + d] = acc;
        }
      }
    CHECK(normalizedError(o, ref) < kTol);
  }
}

TEST_CASE("constant fills its result", "[runtime]") {
  OpAttrs attrs;
  attrs.value = 2.5f;
  CHECK(run1(OpKind::Constant, attrs, {}, {2, 2}).values ==
        std::vector<double>(4, 2.5));
}

TEST_CASE("batch_norm normalizes each channel over the batch and the "
          "spatial dims",
          "[runtime]") {
  // x [2, 2, 2]: channel 0 holds 1, 2 (n=0) and 3, 4 (n=1): mean 2.5,
  // biased variance 1.25; channel 1 holds 10 everywhere (variance 0).
  HostTensor x = tensorOf({2, 2, 2}, {1, 2, 10, 10, 3, 4, 10, 10});
  HostTensor gamma = tensorOf({2}, {2.0, 1.0});
  HostTensor beta = tensorOf({2}, {0.5, -1.0});
  OpAttrs attrs;
  attrs.epsilon = 1e-5f;
  HostTensor y = run1(OpKind::BatchNorm, attrs, {x, gamma, beta}, {2, 2, 2});
  double rstd = 1.0 / std::sqrt(1.25 + 1e-5);
  std::vector<double> want = {2 * -1.5 * rstd + 0.5, 2 * -0.5 * rstd + 0.5,
                              -1.0, -1.0,
                              2 * 0.5 * rstd + 0.5,  2 * 1.5 * rstd + 0.5,
                              -1.0, -1.0};
  CHECK(normalizedError(y, tensorOf({2, 2, 2}, want)) < kTol);
}

TEST_CASE("running_mean_update and running_var_update follow ONNX's "
          "momentum and PyTorch's unbiased variance",
          "[runtime]") {
  // Channel 0: 1, 2, 3, 4 (mean 2.5, unbiased variance 5/3); channel 1:
  // 10, 10, 10, 10.
  HostTensor x = tensorOf({2, 2, 2}, {1, 2, 10, 10, 3, 4, 10, 10});
  HostTensor running = tensorOf({2}, {0.5, 2.0});
  OpAttrs attrs;
  attrs.momentum = 0.9f; // PyTorch's momentum 0.1
  HostTensor mean = run1(OpKind::RunningMeanUpdate, attrs, {running, x}, {2});
  HostTensor var = run1(OpKind::RunningVarUpdate, attrs, {running, x}, {2});
  CHECK(normalizedError(mean, tensorOf({2}, {0.5 * 0.9 + 2.5 * 0.1,
                                             2.0 * 0.9 + 10 * 0.1})) < kTol);
  CHECK(normalizedError(var, tensorOf({2}, {0.5 * 0.9 + (5.0 / 3) * 0.1,
                                            2.0 * 0.9 + 0.0})) < kTol);
}

TEST_CASE("clip clamps to [min, max] and resize_nearest copies by integer "
          "factors",
          "[runtime]") {
  OpAttrs clip;
  clip.min = 0.0f;
  clip.max = 6.0f;
  HostTensor y = run1(OpKind::Clip, clip, {tensorOf({4}, {-1, 0.5, 6, 7.25})},
                      {4});
  CHECK(y.values == std::vector<double>{0, 0.5, 6, 6});

  OpAttrs resize;
  resize.scales = {1, 2, 3};
  HostTensor r = run1(OpKind::ResizeNearest, resize,
                      {tensorOf({1, 2, 1}, {4, 5})}, {1, 4, 3});
  CHECK(r.values ==
        std::vector<double>{4, 4, 4, 4, 4, 4, 5, 5, 5, 5, 5, 5});
}
