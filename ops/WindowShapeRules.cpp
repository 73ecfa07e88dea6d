//===- WindowShapeRules.cpp - Type rules of window ops --------------------===//
//
// The type rules of convolution and pooling (NCHW windows), per-channel
// normalization, nearest-neighbour upsampling, bilinear resizing and
// running statistics.
//
//===----------------------------------------------------------------------===//
#include "ops/ShapeRuleBase.h"

#include <climits>

namespace remat::ops::shaperules {

namespace {

class WindowRule : public Rule {
public:
  explicit WindowRule(const Rule &rule) : Rule(rule) {}

  /// The result types, or nullopt when the op's rule is of another family.
  std::optional<std::vector<Expected>> tryApply();

private:
  std::vector<Expected> conv();
  std::vector<Expected> convGradInput();
  std::vector<Expected> convGradWeight();
  std::vector<Expected> pool();
  std::vector<Expected> poolGrad(bool given);

  // Convolution and pooling geometry (NCHW).
  void expectRank4(size_t i, const char *dims) const;
  void checkWindowAttrs(bool pool) const;
  Shape convOutput(const Shape &x, const Shape &w) const;
  Shape poolOutput(const Shape &x) const;
  std::vector<Expected> channelNormalize(bool grad);
  std::vector<Expected> upsample(bool grad);
  std::vector<Expected> resizeLinear();
  std::vector<Expected> runningStat();
};

std::optional<std::vector<Expected>> WindowRule::tryApply() {
  switch (opInfo(op).shapeRule) {
  case ShapeRule::Conv:
    return conv();
  case ShapeRule::ConvGradInput:
    return convGradInput();
  case ShapeRule::ConvGradWeight:
    return convGradWeight();
  case ShapeRule::Pool:
    return pool();
  case ShapeRule::PoolGrad:
    return poolGrad(false);
  case ShapeRule::PoolGradGiven:
    return poolGrad(true);
  case ShapeRule::ChannelNormalize:
    return channelNormalize(false);
  case ShapeRule::ChannelNormalizeGrad:
    return channelNormalize(true);
  case ShapeRule::Upsample:
    return upsample(false);
  case ShapeRule::UpsampleGrad:
    return upsample(true);
  case ShapeRule::ResizeLinear:
    return resizeLinear();
  case ShapeRule::RunningStat:
    return runningStat();
  default:
    return std::nullopt;
  }
}

void WindowRule::expectRank4(size_t i, const char *dims) const {
  if (in(i).shape.size() != 4)
    fail(inLabel(i) + " has shape " + formatShape(in(i).shape) +
         " but expects rank 4 " + dims);
}

/// strides [2] >= 1, pads [4] >= 0, dilations [2] >= 1 (pools without the
/// attribute: 1), kernel_shape [2] >= 1 with every pad at most half its
/// kernel dim (pools), groups >= 1 (convolutions).
void WindowRule::checkWindowAttrs(bool pool) const {
  auto expectSize = [&](const char *name, const std::vector<int64_t> &v,
                        size_t size, int64_t least) {
    bool ok = v.size() == size;
    for (int64_t e : v)
      ok &= e >= least;
    if (!ok)
      fail(std::string("attribute '") + name + "' " + formatShape(v) +
           " must have " + std::to_string(size) +
           " entries, each >= " + std::to_string(least));
  };
  expectSize("strides", attrs.strides, 2, 1);
  expectSize("pads", attrs.pads, 4, 0);
  bool hasDilations = false;
  for (const AttrInfo &a : opInfo(op).attrs)
    hasDilations |= std::string(a.name) == "dilations";
  if (hasDilations)
    expectSize("dilations", attrs.dilations, 2, 1);
  if (!pool) {
    if (attrs.groups < 1 || attrs.groups > uint64_t(INT64_MAX))
      fail("attribute 'groups' must be >= 1");
    return;
  }
  expectSize("kernel_shape", attrs.kernelShape, 2, 1);
  for (size_t i = 0; i < 4; ++i)
    if (attrs.pads[i] > attrs.kernelShape[i % 2] / 2)
      fail("attribute 'pads' " + formatShape(attrs.pads) +
           " has a pad larger than half of kernel_shape " +
           formatShape(attrs.kernelShape));
}

/// One output dim of a window: floor (or ceil, PyTorch's rule: the last
/// window starts inside the input or its begin padding) of
/// (in + padBegin + padEnd - dilation·(k - 1) - 1) / stride, plus 1; 0 or
/// less when no window fits. Saturated against overflow.
int64_t windowOutputSize(int64_t in, int64_t k, int64_t stride,
                         int64_t padBegin, int64_t padEnd, int64_t dilation,
                         bool ceilMode) {
  const int64_t limit = int64_t(1) << 30;
  if (in > (int64_t(1) << 61) || k > limit || stride > limit ||
      padBegin > limit || padEnd > limit || dilation > limit)
    return 0;
  int64_t span = in + padBegin + padEnd - dilation * (k - 1) - 1;
  if (span < 0)
    return 0;
  int64_t out = (ceilMode ? (span + stride - 1) / stride : span / stride) + 1;
  if (ceilMode && (out - 1) * stride >= in + padBegin)
    --out;
  return out;
}

Shape WindowRule::convOutput(const Shape &x, const Shape &w) const {
  Shape y = {x[0], w[0], 0, 0};
  for (size_t d = 0; d < 2; ++d) {
    y[2 + d] =
        windowOutputSize(x[2 + d], w[2 + d], attrs.strides[d], attrs.pads[d],
                         attrs.pads[2 + d], attrs.dilations[d], false);
    if (y[2 + d] < 1)
      fail("the window " + formatShape({w[2], w[3]}) + " (dilations " +
           formatShape(attrs.dilations) + ") does not fit the input " +
           formatShape(x) + " with pads " + formatShape(attrs.pads));
  }
  return y;
}

Shape WindowRule::poolOutput(const Shape &x) const {
  Shape y = {x[0], x[1], 0, 0};
  for (size_t d = 0; d < 2; ++d) {
    int64_t dilation = attrs.dilations.empty() ? 1 : attrs.dilations[d];
    y[2 + d] = windowOutputSize(x[2 + d], attrs.kernelShape[d],
                                attrs.strides[d], attrs.pads[d],
                                attrs.pads[2 + d], dilation, attrs.ceilMode);
    if (y[2 + d] < 1)
      fail("the window " + formatShape(attrs.kernelShape) +
           " does not fit the input " + formatShape(x) + " with pads " +
           formatShape(attrs.pads));
  }
  return y;
}

/// Whether a convolution on `x` takes float32 weights `w` (or gives their
/// float32 gradient): under --precision bf16 a bf16 x reads the float32
/// master weights, which its kernel rounds to bf16 as it reads them
/// (docs/precision.md).
bool floatWeights(const TensorType &x, const TensorType &w) {
  return x.dtype == DType::BF16 && w.dtype == DType::F32;
}

/// x [N, C, H, W], w [O, C/groups, kh, kw] -> y [N, O, OH, OW].
std::vector<Expected> WindowRule::conv() {
  checkWindowAttrs(false);
  expectFloat(0);
  if (!floatWeights(in(0), in(1)))
    expectDType(1, in(0).dtype);
  expectRank4(0, "[N,C,H,W]");
  expectRank4(1, "[O,C/groups,kh,kw]");
  const Shape &x = in(0).shape, &w = in(1).shape;
  int64_t groups = int64_t(attrs.groups);
  if (x[1] % groups || w[0] % groups || w[1] * groups != x[1])
    fail(inLabel(1) + " has shape " + formatShape(w) + " but expects [O," +
         std::to_string(x[1] / groups) + ",kh,kw] with O divisible by " +
         std::to_string(groups) + " (groups " + std::to_string(groups) + ", " +
         inLabel(0) + " " + formatShape(x) + ")");
  return {{{in(0).dtype, convOutput(x, w)}, ""}};
}

/// w, dy -> the given dx [N, C, H, W] with conv2d(dx, w) shaped like dy.
std::vector<Expected> WindowRule::convGradInput() {
  checkWindowAttrs(false);
  expectFloat(0);
  if (!floatWeights(in(1), in(0)))
    expectDType(1, in(0).dtype);
  expectRank4(0, "[O,C/groups,kh,kw]");
  expectRank4(1, "[N,O,OH,OW]");
  const TensorType &dx = givenType(0);
  if (dx.shape.size() != 4)
    fail(outLabel(0) + " has shape " + formatShape(dx.shape) +
         " but expects rank 4 [N,C,H,W]");
  const Shape &w = in(0).shape;
  int64_t groups = int64_t(attrs.groups);
  if (w[0] % groups || w[1] * groups != dx.shape[1])
    fail(inLabel(0) + " has shape " + formatShape(w) + " but expects [O," +
         std::to_string(dx.shape[1] / groups) + ",kh,kw] with O divisible by " +
         std::to_string(groups));
  expectShape(1, convOutput(dx.shape, w), "the conv2d output");
  return {{{in(1).dtype, dx.shape}, ""}};
}

/// x, dy -> the given dw [O, C/groups, kh, kw] with conv2d(x, dw) shaped
/// like dy.
std::vector<Expected> WindowRule::convGradWeight() {
  checkWindowAttrs(false);
  expectFloat(0);
  expectDType(1, in(0).dtype);
  expectRank4(0, "[N,C,H,W]");
  expectRank4(1, "[N,O,OH,OW]");
  const TensorType &dw = givenType(0);
  if (dw.shape.size() != 4)
    fail(outLabel(0) + " has shape " + formatShape(dw.shape) +
         " but expects rank 4 [O,C/groups,kh,kw]");
  const Shape &x = in(0).shape;
  int64_t groups = int64_t(attrs.groups);
  if (dw.shape[0] % groups || dw.shape[1] * groups != x[1])
    fail(outLabel(0) + " has shape " + formatShape(dw.shape) +
         " but expects [O," + std::to_string(x[1] / groups) +
         ",kh,kw] with O divisible by " + std::to_string(groups));
  expectShape(1, convOutput(x, dw.shape), "the conv2d output");
  return {{{floatWeights(in(0), dw) ? DType::F32 : in(0).dtype, dw.shape}, ""}};
}

/// x [N, C, H, W] -> y [N, C, OH, OW].
std::vector<Expected> WindowRule::pool() {
  checkWindowAttrs(true);
  expectFloat(0);
  expectRank4(0, "[N,C,H,W]");
  return {{{in(0).dtype, poolOutput(in(0).shape)}, ""}};
}

/// max: x, dy -> dx like x; avg (given): dy -> the given dx. dy has the
/// pool's output shape.
std::vector<Expected> WindowRule::poolGrad(bool given) {
  checkWindowAttrs(true);
  expectFloat(0);
  TensorType x;
  if (given) {
    x = {in(0).dtype, givenType(0).shape};
    if (x.shape.size() != 4)
      fail(outLabel(0) + " has shape " + formatShape(x.shape) +
           " but expects rank 4 [N,C,H,W]");
  } else {
    expectRank4(0, "[N,C,H,W]");
    expectDType(1, in(0).dtype);
    x = in(0);
  }
  expectShape(given ? 0 : 1, poolOutput(x.shape), "the pool's output");
  return {{x, ""}};
}

/// Per-channel normalization over dim 1: x [N, C, ...], gamma [C], beta [C]
/// -> y; its gradient: x, gamma, dy -> dx, dgamma [C], dbeta [C].
std::vector<Expected> WindowRule::channelNormalize(bool grad) {
  expectFloat(0);
  expectRankAtLeast(0, 2);
  const TensorType &x = in(0);
  Shape c = {x.shape[1]};
  std::string why = "[C], C dim 1 of " + inLabel(0);
  // bf16 x (--precision bf16) takes float32 gamma and beta.
  DType params = x.dtype == DType::BF16 ? DType::F32 : x.dtype;
  expectDType(1, params);
  expectShape(1, c, why);
  expectDType(2, grad ? x.dtype : params);
  if (!grad) {
    expectShape(2, c, why);
    return {{x, ""}};
  }
  expectShape(2, x.shape, "like " + inLabel(0));
  return {{x, ""}, {{params, c}, "[C]"}, {{params, c}, "[C]"}};
}

/// x -> y with y.shape[d] = x.shape[d]·scales[d]; the gradient divides.
std::vector<Expected> WindowRule::upsample(bool grad) {
  expectFloat(0);
  const Shape &x = in(0).shape;
  const std::vector<int64_t> &scales = attrs.scales;
  if (scales.size() != x.size())
    fail("attribute 'scales' has " + std::to_string(scales.size()) +
         " entries but " + inLabel(0) + " has rank " +
         std::to_string(x.size()));
  Shape y;
  for (size_t d = 0; d < x.size(); ++d) {
    if (scales[d] < 1)
      fail("attribute 'scales' " + formatShape(scales) +
           " has a factor below 1");
    if (grad && x[d] % scales[d] != 0)
      fail(inLabel(0) + " has shape " + formatShape(x) + " whose dim " +
           std::to_string(d) + " is not a multiple of its scale " +
           std::to_string(scales[d]));
    if (!grad && x[d] > (int64_t(1) << 40) / scales[d])
      fail("attribute 'scales' " + formatShape(scales) + " makes dim " +
           std::to_string(d) + " of " + inLabel(0) + " too large");
    y.push_back(grad ? x[d] / scales[d] : x[d] * scales[d]);
  }
  return {{{in(0).dtype, y}, grad ? "dy's shape divided by the scales"
                                  : "x's shape times the scales"}};
}

/// x [N, C, H, W] -> [N, C, size[0], size[1]] (resize_linear, and its
/// gradient from dy to x's size).
std::vector<Expected> WindowRule::resizeLinear() {
  expectFloat(0);
  expectRank4(0, "[N, C, H, W]");
  const std::vector<int64_t> &size = attrs.size;
  if (size.size() != 2 || size[0] < 1 || size[1] < 1 ||
      size[0] > (int64_t(1) << 30) || size[1] > (int64_t(1) << 30))
    fail("attribute 'size' " + formatShape(size) +
         " must be two dims in [1, 2^30]");
  const Shape &x = in(0).shape;
  return {{{in(0).dtype, {x[0], x[1], size[0], size[1]}},
           "[N, C] of " + inLabel(0) + " and the two dims of 'size'"}};
}

/// running [C], x [N, C, ...] -> running' [C].
std::vector<Expected> WindowRule::runningStat() {
  expectFloat(0);
  // A float32 statistic may follow a bf16 x (--precision bf16).
  if (!(in(0).dtype == DType::F32 && in(1).dtype == DType::BF16))
    expectDType(1, in(0).dtype);
  expectRankAtLeast(1, 2);
  expectShape(0, {in(1).shape[1]}, "[C], C dim 1 of " + inLabel(1));
  const Shape &x = in(1).shape;
  if (checkedNumElements(x).value_or(0) / uint64_t(x[1]) < 2)
    fail(inLabel(1) + " " + formatShape(x) +
         " has one value per channel; running statistics need two (the "
         "unbiased variance divides by count - 1; PyTorch refuses such a "
         "batch in training too)");
  return {{in(0), "like " + inLabel(0)}};
}

} // namespace

std::optional<std::vector<Expected>> applyWindowRule(const Rule &rule) {
  return WindowRule(rule).tryApply();
}

} // namespace remat::ops::shaperules
