//===- ShapeRules.cpp - The type rule of every op --------------------------===//
#include "ops/ShapeRules.h"
#include "ops/Shards.h"

#include <algorithm>
#include <climits>
#include <cstdio>

namespace remat::ops {

namespace {

/// A result type and, for messages, why it must be so ("the broadcast
/// shape"); empty when obvious.
struct Expected {
  TensorType type;
  std::string why;
};

/// One rule application: the inputs with their labels, the given result
/// types, and helpers that word the errors.
class Rule {
public:
  Rule(OpKind op, const OpAttrs &attrs, const LabeledTypes &ins,
       const std::vector<TensorType> &given,
       const std::vector<std::string> &givenLabels)
      : op(op), attrs(attrs), ins(ins), given(given),
        givenLabels(givenLabels) {}

  std::vector<Expected> apply();

private:
  const TensorType &in(size_t i) const { return ins.types[i]; }
  std::string inLabel(size_t i) const {
    return i < ins.labels.size() ? ins.labels[i]
                                 : "input " + std::to_string(i);
  }
  [[noreturn]] void fail(const std::string &message) const {
    throw TypeRuleError(message);
  }
  void expectFloat(size_t i) const {
    if (!isFloatDType(in(i).dtype))
      fail(inLabel(i) + " has dtype " + dtypeName(in(i).dtype) +
           " but expects a float dtype (f32|f16|bf16)");
  }
  void expectIndex(size_t i) const {
    if (!isIndexDType(in(i).dtype))
      fail(inLabel(i) + " has dtype " + dtypeName(in(i).dtype) +
           " but expects an index dtype (i32|i64)");
  }
  void expectDType(size_t i, DType d) const {
    if (in(i).dtype != d)
      fail(inLabel(i) + " has dtype " + dtypeName(in(i).dtype) +
           " but expects " + dtypeName(d));
  }
  void expectShape(size_t i, const Shape &s, const std::string &why = "") const {
    if (in(i).shape != s)
      fail(inLabel(i) + " has shape " + formatShape(in(i).shape) +
           " but expects " + formatShape(s) +
           (why.empty() ? "" : " (" + why + ")"));
  }
  void expectRankAtLeast(size_t i, size_t rank) const {
    if (in(i).shape.size() < rank)
      fail(inLabel(i) + " has shape " + formatShape(in(i).shape) +
           " but expects rank >= " + std::to_string(rank));
  }
  /// The given result type `i`, with its element count checked.
  const TensorType &givenType(size_t i) const {
    if (i >= given.size())
      fail(std::string("'") + opName(op) + "' needs its result type given");
    if (!checkedNumElements(given[i].shape))
      fail("result shape " + formatShape(given[i].shape) +
           " has a negative dim or too many elements");
    return given[i];
  }

  std::vector<Expected> gemm();
  std::vector<Expected> broadcast();
  std::vector<Expected> elementwise(bool rowWise);
  std::vector<Expected> normalize(bool grad);
  std::vector<Expected> gather();
  std::vector<Expected> gatherGrad();
  std::vector<Expected> reshape();
  std::vector<Expected> permute();
  std::vector<Expected> reduce();
  std::vector<Expected> broadcastTo();
  std::vector<Expected> unbroadcast();
  std::vector<Expected> classLoss(bool grad);
  std::vector<Expected> pairLoss(bool grad);
  std::vector<Expected> attention();
  std::vector<Expected> fill();
  Shape sliceShape(const Shape &x) const;
  std::vector<Expected> slice(bool grad);
  std::vector<Expected> concat();
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
  std::vector<Expected> runningStat();

  OpKind op;
  const OpAttrs &attrs;
  const LabeledTypes &ins;
  const std::vector<TensorType> &given;
  const std::vector<std::string> &givenLabels;

  std::string outLabel(size_t i) const {
    return i < givenLabels.size() ? givenLabels[i]
                                  : "output " + std::to_string(i);
  }
};

std::vector<Expected> Rule::apply() {
  switch (opInfo(op).shapeRule) {
  case ShapeRule::Gemm:
    return gemm();
  case ShapeRule::Broadcast:
    return broadcast();
  case ShapeRule::Elementwise:
    return elementwise(false);
  case ShapeRule::RowWise:
    return elementwise(true);
  case ShapeRule::Normalize:
    return normalize(false);
  case ShapeRule::NormalizeGrad:
    return normalize(true);
  case ShapeRule::Gather:
    return gather();
  case ShapeRule::GatherGrad:
    return gatherGrad();
  case ShapeRule::Reshape:
    return reshape();
  case ShapeRule::Permute:
    return permute();
  case ShapeRule::Reduce:
    return reduce();
  case ShapeRule::BroadcastTo:
    return broadcastTo();
  case ShapeRule::Unbroadcast:
    return unbroadcast();
  case ShapeRule::ClassLoss:
    return classLoss(false);
  case ShapeRule::ClassLossGrad:
    return classLoss(true);
  case ShapeRule::PairLoss:
    return pairLoss(false);
  case ShapeRule::PairLossGrad:
    return pairLoss(true);
  case ShapeRule::Attention:
  case ShapeRule::AttentionGrad:
    return attention();
  case ShapeRule::Fill:
    return fill();
  case ShapeRule::Slice:
    return slice(false);
  case ShapeRule::SliceGrad:
    return slice(true);
  case ShapeRule::Concat:
    return concat();
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
  case ShapeRule::RunningStat:
    return runningStat();
  }
  fail("no type rule");
}

/// a [..., M, K] (or [..., K, M] transposed) times b [..., K, N] or [K, N].
std::vector<Expected> Rule::gemm() {
  expectFloat(0);
  expectDType(1, in(0).dtype);
  expectRankAtLeast(0, 2);
  expectRankAtLeast(1, 2);
  const Shape &a = in(0).shape, &b = in(1).shape;
  size_t ra = a.size(), rb = b.size();
  int64_t m = attrs.transposeA ? a[ra - 1] : a[ra - 2];
  int64_t k = attrs.transposeA ? a[ra - 2] : a[ra - 1];
  int64_t kb = attrs.transposeB ? b[rb - 1] : b[rb - 2];
  int64_t n = attrs.transposeB ? b[rb - 2] : b[rb - 1];
  Shape batch(a.begin(), a.end() - 2);
  if (rb != 2 && Shape(b.begin(), b.end() - 2) != batch)
    fail(inLabel(1) + " has shape " + formatShape(b) +
         " but expects batch dims " + formatShape(batch) + " of " +
         inLabel(0) + " " + formatShape(a) + " (or rank 2)");
  if (kb != k)
    fail(inLabel(1) + " has shape " + formatShape(b) + " but expects K=" +
         std::to_string(k) + " (the " + (attrs.transposeB ? "last" : "first") +
         " of its last two dims) to match " + inLabel(0) + " " +
         formatShape(a) + (attrs.transposeA ? " transposed" : ""));
  Shape c = batch;
  c.push_back(m);
  c.push_back(n);
  return {{{in(0).dtype, c}, ""}};
}

std::vector<Expected> Rule::broadcast() {
  expectFloat(0);
  expectDType(1, in(0).dtype);
  auto shape = broadcastShapes(in(0).shape, in(1).shape);
  if (!shape) {
    // The first pair of dims, aligned on the right, that differ and are
    // not 1.
    const Shape &a = in(0).shape, &b = in(1).shape;
    size_t rank = std::max(a.size(), b.size());
    std::string where;
    for (size_t i = 0; i < rank && where.empty(); ++i) {
      int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
      int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
      if (da != db && da != 1 && db != 1)
        where = ": dim " + std::to_string(i) + " of the broadcast shape is " +
                std::to_string(da) + " vs " + std::to_string(db);
    }
    fail(inLabel(0) + " " + formatShape(a) + " and " + inLabel(1) + " " +
         formatShape(b) + " do not broadcast" + where +
         " (dims aligned on the right must be equal or 1)");
  }
  return {{{in(0).dtype, *shape}, "the broadcast shape"}};
}

/// Every operand and result has the type of input 0, a float.
std::vector<Expected> Rule::elementwise(bool rowWise) {
  if (rowWise)
    expectRankAtLeast(0, 1);
  expectFloat(0);
  if (opInfo(op).updatesParam && attrs.shards > 1) {
    // A sharded optimizer update (ZeRO-1, docs/distributed.md): param and
    // grad whole, each state one rank's slice [ceil(numel/shards)].
    expectDType(1, in(0).dtype);
    expectShape(1, in(0).shape);
    uint64_t numel = checkedNumElements(in(0).shape).value_or(0);
    Shape slice = {int64_t(shardElements(numel, attrs.shards))};
    std::string why = "one of " + std::to_string(attrs.shards) +
                      " shards of the param's " + std::to_string(numel) +
                      " elements";
    std::vector<Expected> out = {{in(0), ""}};
    for (size_t i = 2; i < ins.types.size(); ++i) {
      expectDType(i, in(0).dtype);
      expectShape(i, slice, why);
      out.push_back({{in(0).dtype, slice}, why});
    }
    return out;
  }
  for (size_t i = 1; i < ins.types.size(); ++i) {
    expectDType(i, in(0).dtype);
    expectShape(i, in(0).shape);
  }
  return std::vector<Expected>(size_t(opInfo(op).numOutputs),
                               Expected{in(0), ""});
}

/// Normalization over the last dim: x, gamma [D], beta [D] -> y; its
/// gradient: x, gamma, dy ->
/// dx, dgamma [D], dbeta [D].
std::vector<Expected> Rule::normalize(bool grad) {
  expectFloat(0);
  expectRankAtLeast(0, 1);
  const TensorType &x = in(0);
  Shape d = {x.shape.back()};
  expectDType(1, x.dtype);
  expectShape(1, d, "[D], D the last dim of " + inLabel(0));
  expectDType(2, x.dtype);
  if (!grad) {
    expectShape(2, d, "[D], D the last dim of " + inLabel(0));
    return {{x, ""}};
  }
  expectShape(2, x.shape, "like " + inLabel(0));
  return {{x, ""}, {{x.dtype, d}, "[D]"}, {{x.dtype, d}, "[D]"}};
}

/// table [V, D] (float), indices [...] (i32|i64) -> [..., D].
std::vector<Expected> Rule::gather() {
  expectFloat(0);
  expectIndex(1);
  if (in(0).shape.size() != 2)
    fail(inLabel(0) + " has shape " + formatShape(in(0).shape) +
         " but expects rank 2 [V,D]");
  Shape y = in(1).shape;
  y.push_back(in(0).shape[1]);
  return {{{in(0).dtype, y}, "indices shape + [D]"}};
}

/// indices [...], dy [..., D] -> the given [V, D].
std::vector<Expected> Rule::gatherGrad() {
  expectIndex(0);
  expectFloat(1);
  const TensorType &table = givenType(0);
  if (table.shape.size() != 2)
    fail(outLabel(0) + " has shape " + formatShape(table.shape) +
         " but expects rank 2 [V,D]");
  Shape dy = in(0).shape;
  dy.push_back(table.shape[1]);
  expectShape(1, dy, "indices shape + [D]");
  return {{{in(1).dtype, table.shape}, ""}};
}

std::vector<Expected> Rule::reshape() {
  const TensorType &y = givenType(0);
  if (checkedNumElements(y.shape) != checkedNumElements(in(0).shape))
    fail("the result shape " + formatShape(y.shape) +
         " does not have the element count of " + inLabel(0) + " " +
         formatShape(in(0).shape));
  return {{{in(0).dtype, y.shape}, ""}};
}

std::vector<Expected> Rule::permute() {
  const Shape &x = in(0).shape;
  if (attrs.permutation.size() != x.size())
    fail("attribute 'permutation' has " +
         std::to_string(attrs.permutation.size()) + " entries but " +
         inLabel(0) + " has rank " + std::to_string(x.size()));
  std::vector<bool> seen(x.size(), false);
  Shape y;
  for (int64_t p : attrs.permutation) {
    if (p < 0 || p >= int64_t(x.size()) || seen[size_t(p)])
      fail("attribute 'permutation' " + formatShape(attrs.permutation) +
           " is not a permutation of [0, " + std::to_string(x.size()) + ")");
    seen[size_t(p)] = true;
    y.push_back(x[size_t(p)]);
  }
  return {{{in(0).dtype, y}, ""}};
}

std::vector<Expected> Rule::reduce() {
  expectFloat(0);
  int64_t rank = int64_t(in(0).shape.size());
  const std::vector<int64_t> &axes = attrs.axes;
  for (size_t i = 0; i < axes.size(); ++i) {
    if (axes[i] < 0 || axes[i] >= rank)
      fail("attribute 'axes' has axis " + std::to_string(axes[i]) +
           " outside [0, " + std::to_string(rank) + ") for " + inLabel(0) +
           " " + formatShape(in(0).shape));
    if (i > 0 && axes[i] <= axes[i - 1])
      fail("attribute 'axes' " + formatShape(axes) +
           " must be sorted and unique");
  }
  Shape y;
  for (int64_t d = 0; d < rank; ++d) {
    bool reduced = std::find(axes.begin(), axes.end(), d) != axes.end();
    if (!reduced)
      y.push_back(in(0).shape[size_t(d)]);
    else if (attrs.keepDims)
      y.push_back(1);
  }
  return {{{in(0).dtype, y}, ""}};
}

std::vector<Expected> Rule::broadcastTo() {
  expectFloat(0);
  const TensorType &y = givenType(0);
  auto b = broadcastShapes(in(0).shape, y.shape);
  if (!b || *b != y.shape)
    fail(inLabel(0) + " has shape " + formatShape(in(0).shape) +
         " which does not broadcast to the result shape " +
         formatShape(y.shape));
  return {{{in(0).dtype, y.shape}, ""}};
}

std::vector<Expected> Rule::unbroadcast() {
  expectFloat(0);
  const TensorType &y = givenType(0);
  auto b = broadcastShapes(y.shape, in(0).shape);
  if (!b || *b != in(0).shape || y.shape.size() > in(0).shape.size())
    fail("the result shape " + formatShape(y.shape) +
         " does not broadcast to " + inLabel(0) + " shape " +
         formatShape(in(0).shape));
  return {{{in(0).dtype, y.shape}, ""}};
}

/// logits [..., C], labels [...] -> a scalar loss; the gradient also takes
/// the scalar dloss and returns dlogits like logits.
std::vector<Expected> Rule::classLoss(bool grad) {
  expectFloat(0);
  expectRankAtLeast(0, 1);
  expectIndex(1);
  const Shape &logits = in(0).shape;
  expectShape(1, Shape(logits.begin(), logits.end() - 1),
              inLabel(0) + " shape without the last dim");
  if (!grad)
    return {{{in(0).dtype, {}}, "a scalar loss"}};
  expectDType(2, in(0).dtype);
  expectShape(2, {}, "a scalar dloss");
  return {{in(0), ""}};
}

/// a, b of one type -> a scalar loss; the gradient also takes the scalar
/// dloss and returns da like a.
std::vector<Expected> Rule::pairLoss(bool grad) {
  expectFloat(0);
  expectDType(1, in(0).dtype);
  expectShape(1, in(0).shape, "like " + inLabel(0));
  if (!grad)
    return {{{in(0).dtype, {}}, "a scalar loss"}};
  expectDType(2, in(0).dtype);
  expectShape(2, {}, "a scalar dloss");
  return {{in(0), ""}};
}

/// q, k, v (and dout) all [B, H, S, Dh] of one type; every result too.
std::vector<Expected> Rule::attention() {
  expectFloat(0);
  if (in(0).shape.size() != 4)
    fail(inLabel(0) + " has shape " + formatShape(in(0).shape) +
         " but expects rank 4 [B,H,S,Dh]");
  for (size_t i = 1; i < ins.types.size(); ++i) {
    expectDType(i, in(0).dtype);
    expectShape(i, in(0).shape, "like " + inLabel(0));
  }
  return std::vector<Expected>(size_t(opInfo(op).numOutputs),
                               Expected{in(0), "like " + inLabel(0)});
}

std::vector<Expected> Rule::fill() {
  const TensorType &y = givenType(0);
  if (!isFloatDType(y.dtype))
    fail(outLabel(0) + " has dtype " + dtypeName(y.dtype) +
         " but expects a float dtype (f32|f16|bf16)");
  return {{y, ""}};
}

/// The shape `starts`, `ends` and `steps` select from a tensor of shape
/// `x`: one entry per dim, 0 <= start <= end <= dim, step >= 1; each dim
/// has ceil((end - start) / step) elements.
Shape Rule::sliceShape(const Shape &x) const {
  const std::vector<int64_t> *lists[] = {&attrs.starts, &attrs.ends,
                                         &attrs.steps};
  const char *names[] = {"starts", "ends", "steps"};
  for (int k = 0; k < 3; ++k)
    if (lists[k]->size() != x.size())
      fail(std::string("attribute '") + names[k] + "' has " +
           std::to_string(lists[k]->size()) + " entries but the sliced " +
           "tensor " + formatShape(x) + " has rank " +
           std::to_string(x.size()));
  Shape y;
  for (size_t d = 0; d < x.size(); ++d) {
    int64_t start = attrs.starts[d], end = attrs.ends[d], step = attrs.steps[d];
    if (step < 1)
      fail("attribute 'steps' has " + std::to_string(step) + " at dim " +
           std::to_string(d) + " but expects steps >= 1");
    if (start < 0 || start > end || end > x[d])
      fail("dim " + std::to_string(d) + " of the sliced tensor " +
           formatShape(x) + " has start " + std::to_string(start) +
           " and end " + std::to_string(end) + " but expects 0 <= start <= "
           "end <= " + std::to_string(x[d]));
    y.push_back((end - start + step - 1) / step);
  }
  return y;
}

//===----------------------------------------------------------------------===//
// Convolution and pooling
//===----------------------------------------------------------------------===//

void Rule::expectRank4(size_t i, const char *dims) const {
  if (in(i).shape.size() != 4)
    fail(inLabel(i) + " has shape " + formatShape(in(i).shape) +
         " but expects rank 4 " + dims);
}

/// strides [2] >= 1, pads [4] >= 0, dilations [2] >= 1 (pools without the
/// attribute: 1), kernel_shape [2] >= 1 with every pad at most half its
/// kernel dim (pools), groups >= 1 (convolutions).
void Rule::checkWindowAttrs(bool pool) const {
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

namespace {
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
} // namespace

Shape Rule::convOutput(const Shape &x, const Shape &w) const {
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

/// slice: x -> the selected box; slice_grad: dy (the box) -> the given
/// type of x.
std::vector<Expected> Rule::slice(bool grad) {
  expectFloat(0);
  if (!grad)
    return {{{in(0).dtype, sliceShape(in(0).shape)}, "the sliced box"}};
  const TensorType &x = givenType(0);
  expectShape(0, sliceShape(x.shape),
              "the box starts/ends/steps select from the result shape " +
                  formatShape(x.shape));
  return {{{in(0).dtype, x.shape}, ""}};
}

/// a, b of one dtype and rank, equal dims but `axis` -> the joined tensor.
std::vector<Expected> Rule::concat() {
  expectFloat(0);
  expectDType(1, in(0).dtype);
  const Shape &a = in(0).shape, &b = in(1).shape;
  if (attrs.axis >= a.size())
    fail("attribute 'axis' is " + std::to_string(int64_t(attrs.axis)) +
         " but " + inLabel(0) + " " + formatShape(a) + " has rank " +
         std::to_string(a.size()));
  Shape c = a;
  c[attrs.axis] = 0;
  if (b.size() == a.size())
    c[attrs.axis] = a[attrs.axis] + b[attrs.axis];
  Shape bExpected = c;
  bExpected[attrs.axis] = b.size() == a.size() ? b[attrs.axis] : 0;
  expectShape(1, bExpected,
              "the dims of " + inLabel(0) + " but axis " +
                  std::to_string(attrs.axis));
  return {{{in(0).dtype, c}, ""}};
}

Shape Rule::poolOutput(const Shape &x) const {
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

/// x [N, C, H, W], w [O, C/groups, kh, kw] -> y [N, O, OH, OW].
std::vector<Expected> Rule::conv() {
  checkWindowAttrs(false);
  expectFloat(0);
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
std::vector<Expected> Rule::convGradInput() {
  checkWindowAttrs(false);
  expectFloat(0);
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
  return {{{in(0).dtype, dx.shape}, ""}};
}

/// x, dy -> the given dw [O, C/groups, kh, kw] with conv2d(x, dw) shaped
/// like dy.
std::vector<Expected> Rule::convGradWeight() {
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
  return {{{in(0).dtype, dw.shape}, ""}};
}

/// x [N, C, H, W] -> y [N, C, OH, OW].
std::vector<Expected> Rule::pool() {
  checkWindowAttrs(true);
  expectFloat(0);
  expectRank4(0, "[N,C,H,W]");
  return {{{in(0).dtype, poolOutput(in(0).shape)}, ""}};
}

/// max: x, dy -> dx like x; avg (given): dy -> the given dx. dy has the
/// pool's output shape.
std::vector<Expected> Rule::poolGrad(bool given) {
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
std::vector<Expected> Rule::channelNormalize(bool grad) {
  expectFloat(0);
  expectRankAtLeast(0, 2);
  const TensorType &x = in(0);
  Shape c = {x.shape[1]};
  std::string why = "[C], C dim 1 of " + inLabel(0);
  expectDType(1, x.dtype);
  expectShape(1, c, why);
  expectDType(2, x.dtype);
  if (!grad) {
    expectShape(2, c, why);
    return {{x, ""}};
  }
  expectShape(2, x.shape, "like " + inLabel(0));
  return {{x, ""}, {{x.dtype, c}, "[C]"}, {{x.dtype, c}, "[C]"}};
}

/// x -> y with y.shape[d] = x.shape[d]·scales[d]; the gradient divides.
std::vector<Expected> Rule::upsample(bool grad) {
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

/// running [C], x [N, C, ...] -> running' [C].
std::vector<Expected> Rule::runningStat() {
  expectFloat(0);
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

} // namespace remat::ops
