//===- ShapeRulesTest.cpp - The type rules and their messages ------------===//
#include "ops/ShapeRules.h"

#include <catch2/catch.hpp>

using namespace remat::ops;

namespace {

/// The message of the TypeRuleError that inferring `op` throws, or "".
std::string inferError(OpKind op, const OpAttrs &attrs,
                       const LabeledTypes &inputs,
                       const std::vector<TensorType> &given = {}) {
  try {
    inferResultTypes(op, attrs, inputs, given);
  } catch (const TypeRuleError &e) {
    return e.what();
  }
  return "";
}

TensorType f32(Shape shape) { return {DType::F32, std::move(shape)}; }

} // namespace

TEST_CASE("broadcastShapes aligns on the right", "[runtime]") {
  CHECK(broadcastShapes({2, 1, 3}, {4, 1}) == Shape{2, 4, 3});
  CHECK(broadcastShapes({}, {5}) == Shape{5});
  CHECK_FALSE(broadcastShapes({5, 2, 3}, {4, 3}));
}

TEST_CASE("the matmul rule infers [..., M, N] and names both operands when K "
          "differs",
          "[runtime]") {
  OpAttrs attrs;
  LabeledTypes ins{{f32({8, 2, 3}), f32({3, 4})}, {"'a'", "'b'"}};
  CHECK(inferResultTypes(OpKind::Matmul, attrs, ins, {})[0].shape ==
        Shape{8, 2, 4});
  ins.types[1] = f32({5, 4});
  CHECK(inferError(OpKind::Matmul, attrs, ins) ==
        "'b' has shape [5,4] but expects K=3 (the first of its last two dims) "
        "to match 'a' [8,2,3]");
}

TEST_CASE("the broadcast rule names the operands, their shapes and the dim",
          "[runtime]") {
  LabeledTypes ins{{f32({2, 3}), f32({4})}, {}};
  CHECK(inferError(OpKind::Add, {}, ins) ==
        "input 0 [2,3] and input 1 [4] do not broadcast: dim 1 of the "
        "broadcast shape is 3 vs 4 (dims aligned on the right must be equal "
        "or 1)");
}

TEST_CASE("given result types are checked: reshape keeps the element count",
          "[runtime]") {
  LabeledTypes ins{{f32({2, 3})}, {}};
  CHECK(inferResultTypes(OpKind::Reshape, {}, ins, {f32({3, 2})})[0].shape ==
        Shape{3, 2});
  CHECK(inferError(OpKind::Reshape, {}, ins, {f32({4})}) ==
        "the result shape [4] does not have the element count of input 0 "
        "[2,3]");
}

TEST_CASE("checkTypes compares results with the inferred types", "[runtime]") {
  OpAttrs attrs;
  attrs.axes = {1};
  attrs.keepDims = true;
  LabeledTypes ins{{f32({2, 3})}, {}};
  CHECK_NOTHROW(checkTypes(OpKind::ReduceSum, attrs, ins, {{f32({2, 1})}, {}}));
  CHECK_THROWS_WITH(
      checkTypes(OpKind::ReduceSum, attrs, ins, {{f32({2})}, {}}),
      "output 0 has shape [2] but expects [2,1]");
  attrs.axes = {1, 0};
  CHECK_THROWS_WITH(
      checkTypes(OpKind::ReduceSum, attrs, ins, {{f32({2, 1})}, {}}),
      "attribute 'axes' [1,0] must be sorted and unique");
}

TEST_CASE("a convolution of bf16 activations takes float32 weights and "
          "gives their float32 gradient; no other mix",
          "[runtime]") {
  OpAttrs attrs;
  attrs.strides = {1, 1};
  attrs.pads = {0, 0, 0, 0};
  attrs.dilations = {1, 1};
  attrs.groups = 1;
  auto bf16 = [](Shape shape) {
    return TensorType{DType::BF16, std::move(shape)};
  };
  auto same = [](const TensorType &a, const TensorType &b) {
    return a.dtype == b.dtype && a.shape == b.shape;
  };
  Shape x = {2, 3, 5, 5}, w = {4, 3, 3, 3}, y = {2, 4, 3, 3};
  CHECK(same(
      inferResultTypes(OpKind::Conv2d, attrs, {{bf16(x), f32(w)}, {}}, {})[0],
      bf16(y)));
  CHECK(inferError(OpKind::Conv2d, attrs, {{f32(x), bf16(w)}, {}}) ==
        "input 1 has dtype bf16 but expects f32");
  CHECK(same(inferResultTypes(OpKind::Conv2dGradInput, attrs,
                              {{f32(w), bf16(y)}, {}}, {bf16(x)})[0],
             bf16(x)));
  CHECK(same(inferResultTypes(OpKind::Conv2dGradInput, attrs,
                              {{bf16(w), bf16(y)}, {}}, {bf16(x)})[0],
             bf16(x)));
  CHECK(inferError(OpKind::Conv2dGradInput, attrs, {{bf16(w), f32(y)}, {}},
                   {f32(x)}) == "input 1 has dtype f32 but expects bf16");
  // The weights gradient: float32 where given so, else the operands' type.
  CHECK(same(inferResultTypes(OpKind::Conv2dGradWeight, attrs,
                              {{bf16(x), bf16(y)}, {}}, {f32(w)})[0],
             f32(w)));
  CHECK(same(inferResultTypes(OpKind::Conv2dGradWeight, attrs,
                              {{bf16(x), bf16(y)}, {}}, {bf16(w)})[0],
             bf16(w)));
  CHECK_THROWS_WITH(checkTypes(OpKind::Conv2dGradWeight, attrs,
                               {{f32(x), f32(y)}, {}}, {{bf16(w)}, {}}),
                    "output 0 has dtype bf16 but expects f32");
  CHECK(roundedWeightsOperand(OpKind::Conv2d, DType::BF16, DType::F32,
                              DType::BF16) == 1);
  CHECK(roundedWeightsOperand(OpKind::Conv2dGradInput, DType::F32, DType::BF16,
                              DType::BF16) == 0);
  CHECK(roundedWeightsOperand(OpKind::Conv2d, DType::BF16, DType::BF16,
                              DType::BF16) == -1);
  CHECK(roundedWeightsOperand(OpKind::Conv2dGradWeight, DType::BF16,
                              DType::BF16, DType::F32) == -1);
}

TEST_CASE("a matmul of bf16 operands gives a bf16 result, or a float32 one "
          "where one is given",
          "[runtime]") {
  TensorType a{DType::BF16, {4, 3}}, b{DType::BF16, {3, 2}};
  CHECK(inferResultTypes(OpKind::Matmul, {}, {{a, b}, {}}, {})[0].dtype ==
        DType::BF16);
  CHECK_NOTHROW(checkTypes(OpKind::Matmul, {}, {{a, b}, {}},
                           {{{DType::F32, {4, 2}}}, {}}));
  CHECK_NOTHROW(checkTypes(OpKind::Matmul, {}, {{a, b}, {}},
                           {{{DType::BF16, {4, 2}}}, {}}));
  // Not the other way: float32 operands give a float32 result.
  CHECK_THROWS_WITH(checkTypes(OpKind::Matmul, {},
                               {{f32({4, 3}), f32({3, 2})}, {}},
                               {{{DType::BF16, {4, 2}}}, {}}),
                    "output 0 has dtype bf16 but expects f32");
}

TEST_CASE("attribute ranges are checked by name", "[runtime]") {
  OpAttrs attrs;
  attrs.rate = 1.0f;
  CHECK_THROWS_WITH(checkAttrValues(OpKind::Dropout, attrs),
                    Catch::Contains("attribute 'rate' must be in [0, 1)"));
  attrs = OpAttrs{};
  attrs.epsilon = 0.0f;
  CHECK_THROWS_WITH(checkAttrValues(OpKind::LayerNorm, attrs),
                    Catch::Contains("attribute 'epsilon' must be positive"));
  CHECK_NOTHROW(checkAttrValues(OpKind::Matmul, attrs));
}

TEST_CASE("a sharded optimizer update keeps one rank's slice of each state",
          "[runtime]") {
  OpAttrs attrs;
  attrs.shards = 2;
  // 5 x 3 = 15 elements over 2 ranks: slices of ceil(15/2) = 8.
  LabeledTypes ins{{f32({5, 3}), f32({5, 3}), f32({8}), f32({8})}, {}};
  std::vector<TensorType> out =
      inferResultTypes(OpKind::AdamwUpdate, attrs, ins, {});
  REQUIRE(out.size() == 3);
  CHECK(out[0].shape == Shape{5, 3});
  CHECK(out[1].shape == Shape{8});
  CHECK(out[2].shape == Shape{8});
  // The whole param's shape is wrong for a state once sharded...
  ins.types[3] = f32({5, 3});
  CHECK(inferError(OpKind::AdamwUpdate, attrs, ins) ==
        "input 3 has shape [5,3] but expects [8] (one of 2 shards of the "
        "param's 15 elements)");
  // ... and right without shards; the grad stays whole either way.
  attrs.shards = 1;
  ins.types[2] = f32({5, 3});
  CHECK(inferResultTypes(OpKind::AdamwUpdate, attrs, ins, {})[1].shape ==
        Shape{5, 3});
  attrs.shards = 3;
  LabeledTypes sgd{{f32({7}), f32({6}), f32({3})}, {}};
  CHECK(inferError(OpKind::SgdUpdate, attrs, sgd) ==
        "input 1 has shape [6] but expects [7]");
  attrs.shards = 0;
  CHECK_THROWS_WITH(checkAttrValues(OpKind::SgdUpdate, attrs),
                    Catch::Contains("attribute 'shards' must be in [1, 2^20]"));
}
