//===- TensorShapeRules.cpp - Type rules of tensor ops --------------------===//
//
// The type rules of matmul, elementwise ops, normalization over the last
// dim, gather, reshape and transpose, reductions and broadcasts, losses,
// attention, fill, slices and joins.
//
//===----------------------------------------------------------------------===//
#include "ops/ShapeRuleBase.h"
#include "ops/Shards.h"

#include <algorithm>

namespace remat::ops::shaperules {

namespace {

class TensorRule : public Rule {
public:
  explicit TensorRule(const Rule &rule) : Rule(rule) {}

  /// The result types, or nullopt when the op's rule is of another family.
  std::optional<std::vector<Expected>> tryApply();

private:
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
  std::vector<Expected> retype();
};

std::optional<std::vector<Expected>> TensorRule::tryApply() {
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
  case ShapeRule::Retype:
    return retype();
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
  default:
    return std::nullopt;
  }
}

/// a [..., M, K] (or [..., K, M] transposed) times b [..., K, N] or [K, N];
/// with sum_batch, [M, N] summed over the batch.
std::vector<Expected> TensorRule::gemm() {
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
  if (attrs.sumBatch && (!attrs.transposeA || attrs.transposeB || rb == 2))
    fail("sum_batch needs transpose_a, no transpose_b and " + inLabel(1) +
         " with the batch dims of " + inLabel(0) + " " + formatShape(a));
  Shape c = attrs.sumBatch ? Shape{} : batch;
  c.push_back(m);
  c.push_back(n);
  // bf16 products summed into a float32 result, where one is given (a
  // parameter's gradient under --precision bf16: the autodiff's conversion
  // of it to float32 fused into its GEMM).
  bool wide = in(0).dtype == DType::BF16 && given.size() == 1 &&
              given[0].dtype == DType::F32;
  return {{{wide ? DType::F32 : in(0).dtype, c}, ""}};
}

std::vector<Expected> TensorRule::broadcast() {
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
std::vector<Expected> TensorRule::elementwise(bool rowWise) {
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
std::vector<Expected> TensorRule::normalize(bool grad) {
  expectFloat(0);
  expectRankAtLeast(0, 1);
  const TensorType &x = in(0);
  Shape d = {x.shape.back()};
  // bf16 x (--precision bf16) takes float32 gamma and beta.
  DType params = x.dtype == DType::BF16 ? DType::F32 : x.dtype;
  expectDType(1, params);
  expectShape(1, d, "[D], D the last dim of " + inLabel(0));
  expectDType(2, grad ? x.dtype : params);
  if (!grad) {
    expectShape(2, d, "[D], D the last dim of " + inLabel(0));
    return {{x, ""}};
  }
  expectShape(2, x.shape, "like " + inLabel(0));
  return {{x, ""}, {{params, d}, "[D]"}, {{params, d}, "[D]"}};
}

/// table [V, D] (float), indices [...] (i32|i64) -> [..., D].
std::vector<Expected> TensorRule::gather() {
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
std::vector<Expected> TensorRule::gatherGrad() {
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

std::vector<Expected> TensorRule::reshape() {
  const TensorType &y = givenType(0);
  if (checkedNumElements(y.shape) != checkedNumElements(in(0).shape))
    fail("the result shape " + formatShape(y.shape) +
         " does not have the element count of " + inLabel(0) + " " +
         formatShape(in(0).shape));
  return {{{in(0).dtype, y.shape}, ""}};
}

/// x float -> the given type: x's shape, another (or the same) float dtype.
std::vector<Expected> TensorRule::retype() {
  expectFloat(0);
  const TensorType &y = givenType(0);
  if (!isFloatDType(y.dtype))
    fail("the result dtype " + std::string(dtypeName(y.dtype)) +
         " is not a float dtype (f32|f16|bf16|f64)");
  if (y.shape != in(0).shape)
    fail("the result shape " + formatShape(y.shape) + " is not the shape " +
         formatShape(in(0).shape) + " of " + inLabel(0));
  return {{y, ""}};
}

std::vector<Expected> TensorRule::permute() {
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

std::vector<Expected> TensorRule::reduce() {
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

std::vector<Expected> TensorRule::broadcastTo() {
  expectFloat(0);
  const TensorType &y = givenType(0);
  auto b = broadcastShapes(in(0).shape, y.shape);
  if (!b || *b != y.shape)
    fail(inLabel(0) + " has shape " + formatShape(in(0).shape) +
         " which does not broadcast to the result shape " +
         formatShape(y.shape));
  return {{{in(0).dtype, y.shape}, ""}};
}

std::vector<Expected> TensorRule::unbroadcast() {
  expectFloat(0);
  const TensorType &y = givenType(0);
  auto b = broadcastShapes(y.shape, in(0).shape);
  if (!b || *b != in(0).shape || y.shape.size() > in(0).shape.size())
    fail("the result shape " + formatShape(y.shape) +
         " does not broadcast to " + inLabel(0) + " shape " +
         formatShape(in(0).shape));
  return {{{in(0).dtype, y.shape}, ""}};
}

/// logits [..., C] float, labels [...] index -> a scalar loss (float32 for
/// bf16 logits); the gradient also takes the scalar dloss and returns
/// dlogits like the logits.
std::vector<Expected> TensorRule::classLoss(bool grad) {
  expectFloat(0);
  expectRankAtLeast(0, 1);
  expectIndex(1);
  const Shape &logits = in(0).shape;
  expectShape(1, Shape(logits.begin(), logits.end() - 1),
              inLabel(0) + " shape without the last dim");
  // bf16 logits (--precision bf16) give a float32 loss.
  DType loss = in(0).dtype == DType::BF16 ? DType::F32 : in(0).dtype;
  if (!grad)
    return {{{loss, {}}, "a scalar loss"}};
  expectDType(2, loss);
  expectShape(2, {}, "a scalar dloss");
  return {{in(0), ""}};
}

/// a, b of one type -> a scalar loss; the gradient also takes the scalar
/// dloss and returns da like a.
std::vector<Expected> TensorRule::pairLoss(bool grad) {
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
std::vector<Expected> TensorRule::attention() {
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

std::vector<Expected> TensorRule::fill() {
  const TensorType &y = givenType(0);
  if (!isFloatDType(y.dtype))
    fail(outLabel(0) + " has dtype " + dtypeName(y.dtype) +
         " but expects a float dtype (f32|f16|bf16)");
  return {{y, ""}};
}

/// The shape `starts`, `ends` and `steps` select from a tensor of shape
/// `x`: one entry per dim, 0 <= start <= end <= dim, step >= 1; each dim
/// has ceil((end - start) / step) elements.
Shape TensorRule::sliceShape(const Shape &x) const {
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

/// slice: x -> the selected box; slice_grad: dy (the box) -> the given
/// type of x.
std::vector<Expected> TensorRule::slice(bool grad) {
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
std::vector<Expected> TensorRule::concat() {
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

} // namespace

std::optional<std::vector<Expected>> applyTensorRule(const Rule &rule) {
  return TensorRule(rule).tryApply();
}

} // namespace remat::ops::shaperules
