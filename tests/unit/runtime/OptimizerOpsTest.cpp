//===- OptimizerOpsTest.cpp - the optimizer updates, closed form ---------===//
#include "TestUtil.h"

#include <catch2/catch.hpp>

#include <cmath>

using namespace remat::runtime;
using namespace remat::runtime::test;

TEST_CASE("sgd_update applies weight decay, momentum and the step",
          "[runtime]") {
  HostTensor param = tensorOf({3}, {1.0, -2.0, 0.5});
  HostTensor grad = tensorOf({3}, {0.1, 0.2, -0.3});
  HostTensor mom = tensorOf({3}, {0.5, 0.0, -1.0});
  OpAttrs attrs;
  attrs.lr = 0.1f;
  attrs.momentum = 0.9f;
  attrs.weightDecay = 0.01f;
  auto out = runOp<float>(OpKind::SgdUpdate, attrs, {param, grad, mom},
                          {typeOf({3}), typeOf({3})});
  for (int i = 0; i < 3; ++i) {
    double g = grad.values[i] + 0.01 * param.values[i];
    double m = 0.9 * mom.values[i] + g;
    CHECK(out[1].values[i] == Approx(m).epsilon(1e-6));
    CHECK(out[0].values[i] == Approx(param.values[i] - 0.1 * m).epsilon(1e-6));
  }
}

TEST_CASE("sgd_plain_update steps without state, as sgd_update with "
          "momentum 0 does, bitwise",
          "[runtime]") {
  HostTensor param = tensorOf({3}, {1.0, -2.0, 0.5});
  HostTensor grad = tensorOf({3}, {0.1, 0.2, -0.3});
  HostTensor mom = tensorOf({3}, {0.5, -7.0, -1.0});
  OpAttrs attrs;
  attrs.lr = 0.1f;
  attrs.momentum = 0.0f;
  attrs.weightDecay = 0.01f;
  auto plain = runOp<float>(OpKind::SgdPlainUpdate, attrs, {param, grad},
                            {typeOf({3})});
  auto withState = runOp<float>(OpKind::SgdUpdate, attrs, {param, grad, mom},
                                {typeOf({3}), typeOf({3})});
  REQUIRE(plain.size() == 1);
  for (int i = 0; i < 3; ++i) {
    double g = grad.values[i] + 0.01 * param.values[i];
    CHECK(plain[0].values[i] ==
          Approx(param.values[i] - 0.1 * g).epsilon(1e-6));
    CHECK(plain[0].values[i] == withState[0].values[i]);
  }
}

TEST_CASE("adamw_update matches the closed form at steps 1 and 2",
          "[runtime]") {
  HostTensor param = tensorOf({2}, {1.0, -0.5});
  HostTensor grad = tensorOf({2}, {0.2, -0.4});
  HostTensor m = tensorOf({2}, {0.01, 0.02});
  HostTensor v = tensorOf({2}, {0.001, 0.0});
  OpAttrs attrs;
  attrs.lr = 0.01f;
  attrs.beta1 = 0.9f;
  attrs.beta2 = 0.999f;
  attrs.eps = 1e-8f;
  attrs.weightDecay = 0.1f;
  for (int64_t step : {0, 1}) {
    INFO("0-based training step " << step);
    auto out = runOp<float>(OpKind::AdamwUpdate, attrs, {param, grad, m, v},
                            {typeOf({2}), typeOf({2}), typeOf({2})}, step);
    double t = double(step + 1);
    double b1 = double(0.9f), b2 = double(0.999f);
    for (int i = 0; i < 2; ++i) {
      double g = grad.values[i];
      double p = param.values[i] * (1 - double(0.01f) * double(0.1f));
      double mNew = b1 * m.values[i] + (1 - b1) * g;
      double vNew = b2 * v.values[i] + (1 - b2) * g * g;
      double mHat = mNew / (1 - std::pow(b1, t));
      double vHat = vNew / (1 - std::pow(b2, t));
      double pNew = p - double(0.01f) * mHat / (std::sqrt(vHat) + 1e-8);
      CHECK(out[1].values[i] == Approx(mNew).epsilon(1e-5));
      CHECK(out[2].values[i] == Approx(vNew).epsilon(1e-5));
      CHECK(out[0].values[i] == Approx(pNew).epsilon(1e-5));
    }
  }
}

TEST_CASE("grad_accumulate overwrites in micro-batch 0 and adds after it",
          "[runtime]") {
  HostTensor acc = tensorOf({3}, {5.0, -1.0, 2.0});
  HostTensor grad = tensorOf({3}, {0.4, 0.8, -1.2});
  OpAttrs attrs;
  attrs.scale = 0.25f;
  // Micro-batch 0: whatever the accumulator held from the last step goes.
  auto first = runOp<float>(OpKind::GradAccumulate, attrs, {acc, grad},
                            {typeOf({3})}, 0, 0);
  auto later = runOp<float>(OpKind::GradAccumulate, attrs, {acc, grad},
                            {typeOf({3})}, 0, 3);
  for (int i = 0; i < 3; ++i) {
    CHECK(first[0].values[i] == Approx(0.25 * grad.values[i]).epsilon(1e-7));
    CHECK(later[0].values[i] ==
          Approx(acc.values[i] + 0.25 * grad.values[i]).epsilon(1e-7));
  }
}
