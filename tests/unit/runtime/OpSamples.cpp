//===- OpSamples.cpp - One valid call of every op ------------------------===//
#include "OpSamples.h"

namespace remat::runtime::test {

using nlohmann::json;
using ops::ShapeRule;

namespace {

/// A value for each required attribute, by name.
json attrValue(const std::string &name) {
  static const json values = {
      {"rate", 0.25},     {"seed", 7},        {"lr", 0.1},
      {"momentum", 0.9},  {"weight_decay", 0.01}, {"beta1", 0.9},
      {"beta2", 0.999},   {"eps", 1e-8},      {"scale", 0.5},
      {"value", 0.5},     {"permutation", {2, 0, 1}},
      {"axes", {0, 2}},   {"exponent", 3.0},  {"axis", 1},
      {"starts", {1, 0, 2}}, {"ends", {4, 6, 5}}, {"steps", {2, 1, 2}},
      {"strides", {2, 1}}, {"pads", {1, 0, 0, 1}}, {"dilations", {1, 2}},
      {"kernel_shape", {3, 2}}, {"min", -1.0}, {"max", 1.5},
      {"scales", {1, 2, 1, 3}}, {"size", {5, 7}}};
  return values.value(name, json());
}

HostTensor indices(const Shape &shape, int64_t limit, DType dtype,
                   std::mt19937 &rng) {
  std::uniform_int_distribution<int64_t> pick(0, limit - 1);
  HostTensor t{dtype, shape, {}};
  int64_t n = int64_t(*checkedNumElements(shape));
  for (int64_t i = 0; i < n; ++i)
    t.values.push_back(double(pick(rng)));
  return t;
}

} // namespace

std::optional<OpSample> sampleFor(OpKind op, std::mt19937 &rng) {
  const ops::OpInfo &info = ops::opInfo(op);
  OpSample s;
  for (const ops::AttrInfo &a : info.attrs)
    if (a.required) {
      json v = attrValue(a.name);
      if (v.is_null())
        return std::nullopt;
      s.attrs[a.name] = v;
    }
  if (info.shapeRule == ShapeRule::Reduce)
    s.attrs["keep_dims"] = true;
  std::vector<ops::TensorType> given;
  auto random = [&](const Shape &shape, double low = -1.0, double high = 1.0) {
    s.inputs.push_back(randomTensor(shape, rng, low, high));
  };
  switch (info.shapeRule) {
  case ShapeRule::Gemm:
    random({3, 5, 7});
    random({7, 4});
    break;
  case ShapeRule::Broadcast:
    random({4, 5, 7});
    random({5, 1}, 0.5, 2.0); // away from 0 for div
    break;
  case ShapeRule::Elementwise:
  case ShapeRule::RowWise:
    for (int i = 0; i < info.numInputs; ++i)
      // adamw's second moment (its last operand) is non-negative.
      random({5, 7}, info.numInputs == 4 && i == 3 ? 0.0 : -3.0, 3.0);
    break;
  case ShapeRule::Normalize:
  case ShapeRule::NormalizeGrad:
    random({4, 8});
    random({8});
    random(info.shapeRule == ShapeRule::Normalize ? Shape{8} : Shape{4, 8});
    break;
  case ShapeRule::Gather:
    random({10, 6});
    s.inputs.push_back(indices({2, 3}, 10, DType::I64, rng));
    break;
  case ShapeRule::GatherGrad:
    s.inputs.push_back(indices({2, 3}, 10, DType::I64, rng));
    random({2, 3, 6});
    given.push_back({DType::F32, {10, 6}});
    break;
  case ShapeRule::Reshape:
    random({4, 6});
    given.push_back({DType::F32, {3, 8}});
    break;
  case ShapeRule::Retype:
    random({4, 6});
    given.push_back({DType::BF16, {4, 6}});
    break;
  case ShapeRule::Permute:
  case ShapeRule::Reduce:
    random({3, 4, 5});
    break;
  case ShapeRule::BroadcastTo:
    random({4, 1});
    given.push_back({DType::F32, {3, 4, 5}});
    break;
  case ShapeRule::Unbroadcast:
    random({3, 4, 5});
    given.push_back({DType::F32, {4, 1}});
    break;
  case ShapeRule::ClassLoss:
  case ShapeRule::ClassLossGrad:
    random({6, 5}, -3.0, 3.0);
    s.inputs.push_back(indices({6}, 5, DType::I32, rng));
    if (info.shapeRule == ShapeRule::ClassLossGrad)
      random({});
    break;
  case ShapeRule::PairLoss:
  case ShapeRule::PairLossGrad:
    random({6, 3});
    random({6, 3});
    if (info.shapeRule == ShapeRule::PairLossGrad)
      random({});
    break;
  case ShapeRule::Attention:
  case ShapeRule::AttentionGrad:
    for (int i = 0; i < info.numInputs; ++i)
      random({1, 2, 5, 4});
    break;
  case ShapeRule::Fill:
    given.push_back({DType::F32, {3, 4}});
    break;
  case ShapeRule::Slice: // starts 1,0,2, ends 4,6,5, steps 2,1,2: [2,6,2]
    random({4, 6, 5});
    break;
  case ShapeRule::SliceGrad:
    random({2, 6, 2});
    given.push_back({DType::F32, {4, 6, 5}});
    break;
  case ShapeRule::Concat: // along axis 1
    random({3, 2, 5});
    random({3, 4, 5});
    break;
  // Two groups; x [2,4,7,6] * w [6,2,3,2] -> y [2,6,3,5] (strides 2,1,
  // pads 1,0,0,1, dilations 1,2).
  case ShapeRule::Conv:
    s.attrs["groups"] = 2;
    random({2, 4, 7, 6});
    random({6, 2, 3, 2});
    break;
  case ShapeRule::ConvGradInput:
    s.attrs["groups"] = 2;
    random({6, 2, 3, 2});
    random({2, 6, 3, 5});
    given.push_back({DType::F32, {2, 4, 7, 6}});
    break;
  case ShapeRule::ConvGradWeight:
    s.attrs["groups"] = 2;
    random({2, 4, 7, 6});
    random({2, 6, 3, 5});
    given.push_back({DType::F32, {6, 2, 3, 2}});
    break;
  // A 3x2 window: [2,3,7,6] -> [2,3,3,5] (dilations 1,2) or [2,3,3,6].
  case ShapeRule::Pool:
    random({2, 3, 7, 6});
    break;
  case ShapeRule::PoolGrad:
    random({2, 3, 7, 6});
    random({2, 3, 3, 5});
    break;
  case ShapeRule::PoolGradGiven:
    s.attrs["count_include_pad"] = true;
    random({2, 3, 3, 6});
    given.push_back({DType::F32, {2, 3, 7, 6}});
    break;
  case ShapeRule::ChannelNormalize:
  case ShapeRule::ChannelNormalizeGrad:
    random({4, 3, 2, 5}, -2.0, 3.0);
    random({3});
    random(info.shapeRule == ShapeRule::ChannelNormalize ? Shape{3}
                                                         : Shape{4, 3, 2, 5});
    break;
  case ShapeRule::Upsample:
    random({2, 3, 2, 3});
    break;
  case ShapeRule::UpsampleGrad:
    random({2, 6, 2, 9});
    break;
  case ShapeRule::ResizeLinear:
    random({2, 3, 3, 4});
    break;
  case ShapeRule::RunningStat:
    random({3}, 0.0, 2.0);
    random({4, 3, 5}, -2.0, 3.0);
    break;
  }
  ops::LabeledTypes ins;
  for (const HostTensor &t : s.inputs)
    ins.types.push_back({t.dtype, t.shape});
  OpAttrs attrs = parseOpAttrs(op, s.attrs, "sample");
  s.outputs = ops::inferResultTypes(op, attrs, ins, given);
  return s;
}

double backendTolerance(OpKind op) {
  switch (ops::opInfo(op).shapeRule) {
  case ShapeRule::Broadcast:
  case ShapeRule::Elementwise:
  case ShapeRule::Gather:
  case ShapeRule::Reshape:
  case ShapeRule::Retype:
  case ShapeRule::Permute:
  case ShapeRule::BroadcastTo:
  case ShapeRule::Fill:
  case ShapeRule::Slice:
  case ShapeRule::SliceGrad:
  case ShapeRule::Concat:
    return 2e-6;
  default:
    return 1e-5;
  }
}

} // namespace remat::runtime::test
