//===- ShapeRules.cpp - The type rule of every op -------------------------===//
//
// The entry points of ops/ShapeRules.h: each op's rule by its family
// (ShapeRuleBase.h), the result checks and the attribute ranges.
//
//===----------------------------------------------------------------------===//
#include "ops/ShapeRules.h"
#include "ops/ShapeRuleBase.h"

#include <algorithm>
#include <cstdio>

namespace remat::ops {

namespace shaperules {

std::vector<Expected> Rule::apply() {
  if (std::optional<std::vector<Expected>> expected = applyTensorRule(*this))
    return std::move(*expected);
  if (std::optional<std::vector<Expected>> expected = applyWindowRule(*this))
    return std::move(*expected);
  fail("no type rule");
}

} // namespace shaperules

namespace {

using shaperules::Expected;
using shaperules::Rule;

void checkCount(OpKind op, const LabeledTypes &inputs) {
  const OpInfo &info = opInfo(op);
  if (int(inputs.types.size()) != info.numInputs)
    throw TypeRuleError(std::string("'") + info.name + "' takes " +
                        std::to_string(info.numInputs) + " operands, got " +
                        std::to_string(inputs.types.size()));
}

} // namespace

std::vector<TensorType> inferResultTypes(OpKind op, const OpAttrs &attrs,
                                         const LabeledTypes &inputs,
                                         const std::vector<TensorType> &given) {
  checkCount(op, inputs);
  std::vector<TensorType> out;
  for (Expected &e : Rule(op, attrs, inputs, given, {}).apply())
    out.push_back(std::move(e.type));
  return out;
}

void checkTypes(OpKind op, const OpAttrs &attrs, const LabeledTypes &inputs,
                const LabeledTypes &outputs) {
  checkCount(op, inputs);
  std::vector<Expected> expected =
      Rule(op, attrs, inputs, outputs.types, outputs.labels).apply();
  for (size_t i = 0; i < expected.size() && i < outputs.types.size(); ++i) {
    std::string label = i < outputs.labels.size()
                            ? outputs.labels[i]
                            : "output " + std::to_string(i);
    const TensorType &got = outputs.types[i], &want = expected[i].type;
    if (got.dtype != want.dtype)
      throw TypeRuleError(label + " has dtype " + dtypeName(got.dtype) +
                          " but expects " + dtypeName(want.dtype));
    if (got.shape != want.shape)
      throw TypeRuleError(label + " has shape " + formatShape(got.shape) +
                          " but expects " + formatShape(want.shape) +
                          (expected[i].why.empty()
                               ? ""
                               : " (" + expected[i].why + ")"));
  }
}

void checkAttrValues(OpKind op, const OpAttrs &attrs) {
  auto format = [](float v) {
    char text[32];
    std::snprintf(text, sizeof text, "%g", double(v));
    return std::string(text);
  };
  for (const AttrInfo &a : opInfo(op).attrs) {
    std::string name = a.name;
    float value = name == "rate"    ? attrs.rate
                  : name == "beta1" ? attrs.beta1
                  : name == "beta2" ? attrs.beta2
                                    : 0.0f;
    if ((name == "rate" || name == "beta1" || name == "beta2") &&
        !(value >= 0.0f && value < 1.0f))
      throw TypeRuleError("attribute '" + name + "' must be in [0, 1), got " +
                          format(value));
    if (name == "min" && !(attrs.min <= attrs.max))
      throw TypeRuleError("attribute 'min' (" + format(attrs.min) +
                          ") must not exceed 'max' (" + format(attrs.max) +
                          ")");
    if (name == "momentum" && opInfo(op).updatesState &&
        !(attrs.momentum >= 0.0f && attrs.momentum <= 1.0f))
      throw TypeRuleError("attribute 'momentum' must be in [0, 1], got " +
                          format(attrs.momentum));
    if (name == "shards" && !(attrs.shards >= 1 && attrs.shards <= (1u << 20)))
      throw TypeRuleError("attribute 'shards' must be in [1, 2^20], got " +
                          std::to_string(int64_t(attrs.shards)));
    if (name == "epsilon" && !(attrs.epsilon > 0.0f))
      throw TypeRuleError("attribute 'epsilon' must be positive, got " +
                          format(attrs.epsilon));
  }
}

std::optional<Shape> broadcastShapes(const Shape &a, const Shape &b) {
  size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1)
      return std::nullopt;
    out[i] = da == 1 ? db : da;
  }
  return out;
}

int roundedWeightsOperand(OpKind op, DType in0, DType in1, DType out) {
  if (out != DType::BF16)
    return -1;
  if (op == OpKind::Conv2d && in0 == DType::BF16 && in1 == DType::F32)
    return 1;
  if (op == OpKind::Conv2dGradInput && in0 == DType::F32 && in1 == DType::BF16)
    return 0;
  return -1;
}

int roundedWeightsOperand(OpKind op, const std::vector<TensorType> &inputs,
                          const std::vector<TensorType> &outputs) {
  if (inputs.size() != 2 || outputs.size() != 1)
    return -1;
  return roundedWeightsOperand(op, inputs[0].dtype, inputs[1].dtype,
                               outputs[0].dtype);
}

} // namespace remat::ops
