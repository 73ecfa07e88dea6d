//===- GradientOpsTest.cpp - Every gradient op against finite differences -===//
//
// For a forward op f and random weights w, L = sum(w * f(inputs)). The
// gradient op runs in f32 (the backend's kernel) with dy = w; the reference
// is a central difference of L with the SAME forward code instantiated in
// f64, eps = 1e-6. The f64 difference is accurate to ~1e-9 (truncation
// eps^2 * f''' ~ 1e-12, rounding 1e-16 / eps ~ 1e-10), so the error left is
// the f32 kernel's rounding, ~1e-6 relative. Tolerance: normalized error
// (max abs error / max(1, max |reference|)) below 1e-3, which a wrong term
// (error O(1)) cannot pass. The check is GradCheck.h's; conv2d's and the
// pools' gradients are ConvPoolGradTest.cpp's.
//
//===----------------------------------------------------------------------===//
#include "GradCheck.h"
#include "TestUtil.h"

#include <catch2/catch.hpp>

#include <cmath>

using namespace remat::runtime;
using namespace remat::runtime::test;

namespace {

/// x with every |value| >= 0.1 (away from relu's kink).
HostTensor awayFromZero(const Shape &shape, std::mt19937 &rng) {
  HostTensor x = randomTensor(shape, rng, 0.1, 1.0);
  std::bernoulli_distribution sign(0.5);
  for (double &v : x.values)
    if (sign(rng))
      v = -v;
  return x;
}

} // namespace

TEST_CASE("relu_grad matches finite differences of relu", "[runtime]") {
  std::mt19937 rng(21);
  HostTensor x = awayFromZero({3, 5}, rng), w = randomTensor({3, 5}, rng);
  // relu_grad takes relu's output y, not x.
  HostTensor y = runOp<float>(OpKind::Relu, {}, {x}, {typeOf({3, 5})})[0];
  HostTensor dx =
      runOp<float>(OpKind::ReluGrad, {}, {y, w}, {typeOf({3, 5})})[0];
  checkAgainstFD(dx, OpKind::Relu, {}, {x}, {typeOf({3, 5})}, {w}, 0);
}

TEST_CASE("gelu_grad matches finite differences of gelu", "[runtime]") {
  std::mt19937 rng(22);
  HostTensor x = randomTensor({4, 6}, rng, -3, 3),
             w = randomTensor({4, 6}, rng);
  HostTensor dx =
      runOp<float>(OpKind::GeluGrad, {}, {x, w}, {typeOf({4, 6})})[0];
  checkAgainstFD(dx, OpKind::Gelu, {}, {x}, {typeOf({4, 6})}, {w}, 0);
}

TEST_CASE("gelu_exact_grad matches finite differences of gelu_exact",
          "[runtime]") {
  std::mt19937 rng(23);
  HostTensor x = randomTensor({4, 6}, rng, -4, 4),
             w = randomTensor({4, 6}, rng);
  HostTensor dx =
      runOp<float>(OpKind::GeluExactGrad, {}, {x, w}, {typeOf({4, 6})})[0];
  checkAgainstFD(dx, OpKind::GeluExact, {}, {x}, {typeOf({4, 6})}, {w}, 0);
}

TEST_CASE("silu_grad matches finite differences of silu", "[runtime]") {
  std::mt19937 rng(28);
  HostTensor x = randomTensor({4, 6}, rng, -6, 6),
             w = randomTensor({4, 6}, rng);
  HostTensor dx =
      runOp<float>(OpKind::SiluGrad, {}, {x, w}, {typeOf({4, 6})})[0];
  checkAgainstFD(dx, OpKind::Silu, {}, {x}, {typeOf({4, 6})}, {w}, 0);
}

TEST_CASE("tanh_grad from the output matches finite differences of tanh",
          "[runtime]") {
  std::mt19937 rng(23);
  HostTensor x = randomTensor({4, 6}, rng, -2, 2),
             w = randomTensor({4, 6}, rng);
  HostTensor y = runOp<float>(OpKind::Tanh, {}, {x}, {typeOf({4, 6})})[0];
  HostTensor dx =
      runOp<float>(OpKind::TanhGrad, {}, {y, w}, {typeOf({4, 6})})[0];
  checkAgainstFD(dx, OpKind::Tanh, {}, {x}, {typeOf({4, 6})}, {w}, 0);
}

TEST_CASE("exp's gradient mul(dy, y) matches finite differences of exp",
          "[runtime]") {
  std::mt19937 rng(24);
  HostTensor x = randomTensor({7}, rng), w = randomTensor({7}, rng);
  HostTensor y = runOp<float>(OpKind::Exp, {}, {x}, {typeOf({7})})[0];
  HostTensor dx = runOp<float>(OpKind::Mul, {}, {w, y}, {typeOf({7})})[0];
  checkAgainstFD(dx, OpKind::Exp, {}, {x}, {typeOf({7})}, {w}, 0);
}

TEST_CASE("softmax_grad from the output matches finite differences of "
          "softmax",
          "[runtime]") {
  std::mt19937 rng(25);
  HostTensor x = randomTensor({3, 7}, rng, -2, 2),
             w = randomTensor({3, 7}, rng);
  HostTensor y = runOp<float>(OpKind::Softmax, {}, {x}, {typeOf({3, 7})})[0];
  HostTensor dx =
      runOp<float>(OpKind::SoftmaxGrad, {}, {y, w}, {typeOf({3, 7})})[0];
  checkAgainstFD(dx, OpKind::Softmax, {}, {x}, {typeOf({3, 7})}, {w}, 0);
}

TEST_CASE("layer_norm_grad matches finite differences for x, gamma and beta",
          "[runtime]") {
  std::mt19937 rng(26);
  Shape xs = {2, 3, 8};
  HostTensor x = randomTensor(xs, rng, -2, 2);
  HostTensor gamma = randomTensor({8}, rng, 0.5, 1.5);
  HostTensor beta = randomTensor({8}, rng);
  HostTensor w = randomTensor(xs, rng);
  OpAttrs attrs;
  attrs.epsilon = 1e-5f;
  auto grads = runOp<float>(OpKind::LayerNormGrad, attrs, {x, gamma, w},
                            {typeOf(xs), typeOf({8}), typeOf({8})});
  std::vector<HostTensor> ins = {x, gamma, beta};
  for (size_t i = 0; i < 3; ++i)
    checkAgainstFD(grads[i], OpKind::LayerNorm, attrs, ins, {typeOf(xs)}, {w},
                   i);
}

TEST_CASE("embedding_grad scatter-adds and matches finite differences",
          "[runtime]") {
  std::mt19937 rng(27);
  HostTensor table = randomTensor({5, 3}, rng);
  // Index 1 repeats, index 4 never appears (its gradient must be 0).
  HostTensor idx = tensorOf({2, 3}, {1, 0, 1, 3, 2, 1}, DType::I32);
  HostTensor w = randomTensor({2, 3, 3}, rng);
  HostTensor dtable =
      runOp<float>(OpKind::EmbeddingGrad, {}, {idx, w}, {typeOf({5, 3})})[0];
  checkAgainstFD(dtable, OpKind::Embedding, {}, {table, idx},
                 {typeOf({2, 3, 3})}, {w}, 0);
  for (int j = 0; j < 3; ++j)
    CHECK(dtable.values[4 * 3 + j] == 0.0);
}

TEST_CASE("cross_entropy_grad matches finite differences of cross_entropy",
          "[runtime]") {
  std::mt19937 rng(28);
  HostTensor logits = randomTensor({2, 3, 5}, rng, -2, 2);
  HostTensor labels = tensorOf({2, 3}, {0, 4, 2, 2, 1, 3}, DType::I64);
  HostTensor dloss = tensorOf({}, {0.75});
  HostTensor dlogits =
      runOp<float>(OpKind::CrossEntropyGrad, {}, {logits, labels, dloss},
                   {typeOf({2, 3, 5})})[0];
  checkAgainstFD(dlogits, OpKind::CrossEntropy, {}, {logits, labels},
                 {typeOf({})}, {dloss}, 0);
}

TEST_CASE("mse_grad matches finite differences for a, and db is -da",
          "[runtime]") {
  std::mt19937 rng(29);
  HostTensor a = randomTensor({3, 4}, rng), b = randomTensor({3, 4}, rng);
  HostTensor dloss = tensorOf({}, {1.5});
  HostTensor da =
      runOp<float>(OpKind::MseGrad, {}, {a, b, dloss}, {typeOf({3, 4})})[0];
  checkAgainstFD(da, OpKind::Mse, {}, {a, b}, {typeOf({})}, {dloss}, 0);
  HostTensor db =
      numericGradient(OpKind::Mse, {}, {a, b}, {typeOf({})}, {dloss}, 1);
  for (double &v : db.values)
    v = -v;
  CHECK(normalizedError(da, db) < kGradTol);
}

TEST_CASE("attention_grad matches finite differences for q, k and v",
          "[runtime]") {
  std::mt19937 rng(30);
  Shape s = {2, 2, 4, 3};
  HostTensor q = randomTensor(s, rng), k = randomTensor(s, rng),
             v = randomTensor(s, rng), w = randomTensor(s, rng);
  for (bool causal : {false, true}) {
    INFO("causal " << causal);
    OpAttrs attrs;
    attrs.causal = causal;
    attrs.scale = 0.7f;
    auto grads = runOp<float>(OpKind::AttentionGrad, attrs, {q, k, v, w},
                              {typeOf(s), typeOf(s), typeOf(s)});
    for (size_t i = 0; i < 3; ++i)
      checkAgainstFD(grads[i], OpKind::Attention, attrs, {q, k, v}, {typeOf(s)},
                     {w}, i);
  }
}

TEST_CASE("matmul's gradient is two transposed matmuls, plus sum_to for a "
          "shared b",
          "[runtime]") {
  std::mt19937 rng(31);
  for (bool ta : {false, true})
    for (bool tb : {false, true})
      for (bool shared : {false, true}) {
        INFO("transpose_a " << ta << " transpose_b " << tb << " shared "
                            << shared);
        int64_t batch = 2, m = 3, k = 4, n = 5;
        Shape as = {batch, ta ? k : m, ta ? m : k};
        Shape bs = {tb ? n : k, tb ? k : n};
        Shape bBatched = bs;
        bBatched.insert(bBatched.begin(), batch);
        if (!shared)
          bs = bBatched;
        HostTensor a = randomTensor(as, rng), b = randomTensor(bs, rng);
        HostTensor dy = randomTensor({batch, m, n}, rng);
        OpAttrs fwd;
        fwd.transposeA = ta;
        fwd.transposeB = tb;
        // da = dy b^T (or b dy^T when a is transposed).
        OpAttrs gradA;
        HostTensor da;
        if (!ta) {
          gradA.transposeB = !tb;
          da = runOp<float>(OpKind::Matmul, gradA, {dy, b}, {typeOf(as)})[0];
        } else {
          // da = op(b) dy^T: [K,M] = op(b)[K,N] x dy^T[N,M]. For a shared
          // b, op(b) comes first, so broadcast it to the batch.
          HostTensor bb = shared ? runOp<float>(OpKind::BroadcastTo, {}, {b},
                                                {typeOf(bBatched)})[0]
                                 : b;
          gradA.transposeA = tb;
          gradA.transposeB = true;
          da = runOp<float>(OpKind::Matmul, gradA, {bb, dy}, {typeOf(as)})[0];
        }
        checkAgainstFD(da, OpKind::Matmul, fwd, {a, b}, {typeOf({batch, m, n})},
                       {dy}, 0);
        // db = op(a)^T dy, transposed back when b is transposed.
        OpAttrs gradB;
        HostTensor dbBatched;
        if (!tb) {
          gradB.transposeA = !ta;
          dbBatched = runOp<float>(OpKind::Matmul, gradB, {a, dy},
                                   {typeOf(bBatched)})[0];
        } else {
          gradB.transposeA = true;
          gradB.transposeB = ta;
          dbBatched = runOp<float>(OpKind::Matmul, gradB, {dy, a},
                                   {typeOf(bBatched)})[0];
        }
        HostTensor db = shared ? runOp<float>(OpKind::SumTo, {}, {dbBatched},
                                              {typeOf(bs)})[0]
                               : dbBatched;
        checkAgainstFD(db, OpKind::Matmul, fwd, {a, b}, {typeOf({batch, m, n})},
                       {dy}, 1);
      }
}

TEST_CASE("sum_to is the gradient of broadcasting add, sub, mul and div",
          "[runtime]") {
  std::mt19937 rng(32);
  HostTensor a = randomTensor({3, 4}, rng, 0.5, 1.5);
  HostTensor b = randomTensor({4}, rng, 0.5, 1.5);
  HostTensor w = randomTensor({3, 4}, rng);
  // add: db = sum_to(dy); mul: db = sum_to(dy * a); div: db = sum_to(-dy a /
  // b^2)
  HostTensor dbAdd = runOp<float>(OpKind::SumTo, {}, {w}, {typeOf({4})})[0];
  checkAgainstFD(dbAdd, OpKind::Add, {}, {a, b}, {typeOf({3, 4})}, {w}, 1);
  HostTensor wa = runOp<float>(OpKind::Mul, {}, {w, a}, {typeOf({3, 4})})[0];
  HostTensor dbMul = runOp<float>(OpKind::SumTo, {}, {wa}, {typeOf({4})})[0];
  checkAgainstFD(dbMul, OpKind::Mul, {}, {a, b}, {typeOf({3, 4})}, {w}, 1);
  HostTensor dbSub = dbAdd;
  for (double &v : dbSub.values)
    v = -v;
  checkAgainstFD(dbSub, OpKind::Sub, {}, {a, b}, {typeOf({3, 4})}, {w}, 1);
  HostTensor b2 = runOp<float>(OpKind::Mul, {}, {b, b}, {typeOf({4})})[0];
  HostTensor q = runOp<float>(OpKind::Div, {}, {wa, b2}, {typeOf({3, 4})})[0];
  HostTensor dbDiv = runOp<float>(OpKind::SumTo, {}, {q}, {typeOf({4})})[0];
  for (double &v : dbDiv.values)
    v = -v;
  checkAgainstFD(dbDiv, OpKind::Div, {}, {a, b}, {typeOf({3, 4})}, {w}, 1);
}

TEST_CASE("broadcast_to and reduce ops are adjoint to sum_to and "
          "broadcast_to",
          "[runtime]") {
  std::mt19937 rng(33);
  HostTensor x = randomTensor({3, 1}, rng);
  HostTensor w = randomTensor({2, 3, 4}, rng);
  HostTensor dx = runOp<float>(OpKind::SumTo, {}, {w}, {typeOf({3, 1})})[0];
  checkAgainstFD(dx, OpKind::BroadcastTo, {}, {x}, {typeOf({2, 3, 4})}, {w}, 0);
  // reduce_mean over axis 1 with keep_dims: dx = broadcast_to(dy) / 3.
  HostTensor y = randomTensor({2, 3, 4}, rng),
             wy = randomTensor({2, 1, 4}, rng);
  OpAttrs attrs;
  attrs.axes = {1};
  attrs.keepDims = true;
  HostTensor g =
      runOp<float>(OpKind::BroadcastTo, {}, {wy}, {typeOf({2, 3, 4})})[0];
  for (double &v : g.values)
    v /= 3;
  checkAgainstFD(g, OpKind::ReduceMean, attrs, {y}, {typeOf({2, 1, 4})}, {wy},
                 0);
}

TEST_CASE("dropout's gradient is dropout of dy with the same seed and step",
          "[runtime]") {
  std::mt19937 rng(34);
  HostTensor x = randomTensor({64}, rng), w = randomTensor({64}, rng);
  OpAttrs attrs;
  attrs.rate = 0.25f;
  attrs.seed = 99;
  HostTensor dx =
      runOp<float>(OpKind::Dropout, attrs, {w}, {typeOf({64})}, 3)[0];
  HostTensor fd = x;
  // The forward at step 3, differentiated numerically (it is linear).
  for (int64_t i = 0; i < x.size(); ++i) {
    auto at = [&](double delta) {
      HostTensor p = x;
      p.values[i] += delta;
      HostTensor y =
          runOp<double>(OpKind::Dropout, attrs, {p}, {typeOf({64})}, 3)[0];
      double s = 0;
      for (int64_t j = 0; j < y.size(); ++j)
        s += w.values[j] * y.values[j];
      return s;
    };
    fd.values[i] = (at(1e-6) - at(-1e-6)) / 2e-6;
  }
  CHECK(normalizedError(dx, fd) < kGradTol);
}

TEST_CASE("erf_grad matches finite differences of erf", "[runtime]") {
  std::mt19937 rng(35);
  HostTensor x = randomTensor({4, 6}, rng, -2.5, 2.5),
             w = randomTensor({4, 6}, rng);
  HostTensor dx =
      runOp<float>(OpKind::ErfGrad, {}, {x, w}, {typeOf({4, 6})})[0];
  checkAgainstFD(dx, OpKind::Erf, {}, {x}, {typeOf({4, 6})}, {w}, 0);
}

TEST_CASE("pow's gradient dy·p·x^(p-1) matches finite differences",
          "[runtime]") {
  std::mt19937 rng(36);
  HostTensor x = randomTensor({5, 3}, rng, 0.5, 3.0),
             w = randomTensor({5, 3}, rng);
  OpAttrs attrs;
  attrs.exponent = 2.5f;
  OpAttrs lower;
  lower.exponent = 1.5f;
  HostTensor power =
      runOp<float>(OpKind::Pow, lower, {x}, {typeOf({5, 3})})[0];
  HostTensor dpow = power;
  for (int64_t i = 0; i < dpow.size(); ++i)
    dpow.values[i] *= 2.5 * w.values[i];
  checkAgainstFD(dpow, OpKind::Pow, attrs, {x}, {typeOf({5, 3})}, {w}, 0);
}

TEST_CASE("slice_grad places dy in zeros and matches finite differences of "
          "slice",
          "[runtime]") {
  std::mt19937 rng(37);
  OpAttrs attrs;
  attrs.starts = {1, 0, 2};
  attrs.ends = {4, 6, 5};
  attrs.steps = {2, 1, 2};
  HostTensor x = randomTensor({4, 6, 5}, rng),
             w = randomTensor({2, 6, 2}, rng);
  HostTensor dx =
      runOp<float>(OpKind::SliceGrad, attrs, {w}, {typeOf({4, 6, 5})})[0];
  checkAgainstFD(dx, OpKind::Slice, attrs, {x}, {typeOf({2, 6, 2})}, {w}, 0);
  // Rows 0, 2 of dim 0 and columns 0, 1, 3 of dim 2 are not read: zero.
  CHECK(dx.values[0] == 0.0);
  CHECK(dx.values[size_t(1 * 30 + 0 * 5 + 2)] == w.values[0]);
}

TEST_CASE("concat's gradient, two slices of dc, matches finite differences",
          "[runtime]") {
  std::mt19937 rng(38);
  OpAttrs attrs;
  attrs.axis = 1;
  HostTensor a = randomTensor({3, 2, 4}, rng), b = randomTensor({3, 5, 4}, rng);
  HostTensor w = randomTensor({3, 7, 4}, rng);
  OpAttrs first, second;
  first.starts = {0, 0, 0};
  first.ends = {3, 2, 4};
  first.steps = {1, 1, 1};
  second.starts = {0, 2, 0};
  second.ends = {3, 7, 4};
  second.steps = {1, 1, 1};
  HostTensor da = runOp<float>(OpKind::Slice, first, {w}, {typeOf({3, 2, 4})})[0];
  HostTensor db = runOp<float>(OpKind::Slice, second, {w}, {typeOf({3, 5, 4})})[0];
  checkAgainstFD(da, OpKind::Concat, attrs, {a, b}, {typeOf({3, 7, 4})}, {w}, 0);
  checkAgainstFD(db, OpKind::Concat, attrs, {a, b}, {typeOf({3, 7, 4})}, {w}, 1);
}

TEST_CASE("batch_norm_grad matches finite differences for x, gamma and beta",
          "[runtime]") {
  std::mt19937 rng(41);
  for (Shape xs : {Shape{5, 3}, Shape{2, 3, 2, 3}}) {
    HostTensor x = randomTensor(xs, rng, -2, 2);
    HostTensor gamma = randomTensor({3}, rng, 0.5, 1.5);
    HostTensor beta = randomTensor({3}, rng);
    HostTensor w = randomTensor(xs, rng);
    OpAttrs attrs;
    attrs.epsilon = 1e-5f;
    auto grads = runOp<float>(OpKind::BatchNormGrad, attrs, {x, gamma, w},
                              {typeOf(xs), typeOf({3}), typeOf({3})});
    std::vector<HostTensor> ins = {x, gamma, beta};
    for (size_t i = 0; i < 3; ++i)
      checkAgainstFD(grads[i], OpKind::BatchNorm, attrs, ins, {typeOf(xs)},
                     {w}, i);
  }
}

TEST_CASE("clip_grad matches finite differences of clip and is zero at the "
          "bounds, as PyTorch's hardtanh",
          "[runtime]") {
  std::mt19937 rng(42);
  OpAttrs attrs;
  attrs.min = 0.0f;
  attrs.max = 6.0f;
  // Away from the bounds (the kinks): inside, below and above.
  HostTensor x = randomTensor({4, 6}, rng, 0.2, 5.8);
  for (size_t i = 0; i < x.values.size(); i += 5)
    x.values[i] = i % 2 ? -1.5 : 7.5;
  HostTensor w = randomTensor({4, 6}, rng);
  // clip_grad takes clip's output y, not x.
  HostTensor y =
      runOp<float>(OpKind::Clip, attrs, {x}, {typeOf({4, 6})})[0];
  HostTensor dx =
      runOp<float>(OpKind::ClipGrad, attrs, {y, w}, {typeOf({4, 6})})[0];
  checkAgainstFD(dx, OpKind::Clip, attrs, {x}, {typeOf({4, 6})}, {w}, 0);
  // torch.nn.functional.hardtanh(x, 0, 6) (ReLU6) passes no gradient at
  // x = 0 or x = 6 exactly, nor beyond the bounds.
  HostTensor edge = tensorOf({6}, {0.0, 6.0, 3.0, -0.0, -2.0, 9.0});
  HostTensor ones = tensorOf({6}, {1.0, 1.0, 1.0, 1.0, 1.0, 1.0});
  HostTensor yEdge =
      runOp<float>(OpKind::Clip, attrs, {edge}, {typeOf({6})})[0];
  HostTensor dEdge =
      runOp<float>(OpKind::ClipGrad, attrs, {yEdge, ones}, {typeOf({6})})[0];
  CHECK(dEdge.values == std::vector<double>{0.0, 0.0, 1.0, 0.0, 0.0, 0.0});
}

TEST_CASE("resize_nearest_grad sums the copies and matches finite "
          "differences",
          "[runtime]") {
  std::mt19937 rng(43);
  OpAttrs attrs;
  attrs.scales = {1, 2, 3, 2};
  HostTensor x = randomTensor({2, 2, 2, 3}, rng);
  Shape ys = {2, 4, 6, 6};
  HostTensor w = randomTensor(ys, rng);
  HostTensor dx = runOp<float>(OpKind::ResizeNearestGrad, attrs, {w},
                               {typeOf({2, 2, 2, 3})})[0];
  checkAgainstFD(dx, OpKind::ResizeNearest, attrs, {x}, {typeOf(ys)}, {w}, 0);
}

TEST_CASE("resize_linear_grad matches finite differences, up and down, "
          "with and without align_corners",
          "[runtime]") {
  std::mt19937 rng(44);
  for (bool align : {false, true})
    for (Shape ys : {Shape{2, 3, 7, 5}, Shape{2, 3, 2, 3}, Shape{2, 3, 1, 4}}) {
      INFO("align_corners " << align << ", y " << formatShape(ys));
      OpAttrs attrs;
      attrs.size = {ys[2], ys[3]};
      attrs.alignCorners = align;
      HostTensor x = randomTensor({2, 3, 3, 4}, rng);
      HostTensor w = randomTensor(ys, rng);
      OpAttrs back = attrs;
      back.size = {3, 4};
      HostTensor dx = runOp<float>(OpKind::ResizeLinearGrad, back, {w},
                                   {typeOf({2, 3, 3, 4})})[0];
      checkAgainstFD(dx, OpKind::ResizeLinear, attrs, {x}, {typeOf(ys)}, {w},
                     0);
    }
}

TEST_CASE("resize_linear blends as torch's bilinear interpolation",
          "[runtime]") {
  // x = [[0, 1], [2, 3]] to 4 x 4: half-pixel sources -0.25 (clamped to
  // 0), 0.25, 0.75, 1.25 (the last row itself past the edge).
  OpAttrs attrs;
  attrs.size = {4, 4};
  HostTensor x = tensorOf({1, 1, 2, 2}, {0, 1, 2, 3});
  HostTensor y = runOp<double>(OpKind::ResizeLinear, attrs, {x},
                               {typeOf({1, 1, 4, 4})})[0];
  CHECK(y.values == std::vector<double>{0, 0.25, 0.75, 1,   0.5, 0.75,
                                        1.25, 1.5, 1.5, 1.75, 2.25, 2.5,
                                        2, 2.25, 2.75, 3});
  attrs.alignCorners = true;
  attrs.size = {3, 3};
  y = runOp<double>(OpKind::ResizeLinear, attrs, {x}, {typeOf({1, 1, 3, 3})})[0];
  CHECK(y.values ==
        std::vector<double>{0, 0.5, 1, 1, 1.5, 2, 2, 2.5, 3});
}
