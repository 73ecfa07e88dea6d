//===- GraphGradients.cpp - VJPs of the forward graph ops -------*- C++ -*-===//
//
// GradientOpInterface::buildGradient of every forward op: the backward of one
// op in terms of the gradient ops of docs/ops.md. The autodiff pass calls it
// in reverse order and accumulates fan-out gradients itself.
//
// Conventions: one gradient per operand is appended, in operand order; a null
// Value stands for "no gradient" (indices, labels, integer tensors, or a
// result that received no gradient). Broadcasting ops reduce their operand
// gradients with sum_to; negation is a multiply by a 0-d constant -1.
//
//===----------------------------------------------------------------------===//

#include "ir/GraphOps.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/SmallVector.h"

using namespace mlir;

namespace remat::graph {
namespace {

RankedTensorType tensorType(Value value) {
  return llvm::cast<RankedTensorType>(value.getType());
}

bool isFloatTensor(Value value) {
  return llvm::isa<FloatType>(tensorType(value).getElementType());
}

/// The gradients of an op whose result got no gradient: none.
LogicalResult noGradients(Operation *op,
                          SmallVectorImpl<Value> &operandGrads) {
  operandGrads.append(op->getNumOperands(), Value());
  return success();
}

/// A 0-d constant of `like`'s element type.
Value scalar(OpBuilder &b, Location loc, Value like, float value) {
  auto type = RankedTensorType::get({}, tensorType(like).getElementType());
  return b.create<ConstantOp>(loc, type, value);
}

Value negate(OpBuilder &b, Location loc, Value x) {
  return b.create<MulOp>(loc, x.getType(), x, scalar(b, loc, x, -1.0f));
}

/// Sums `grad` down to `operand`'s shape when broadcasting expanded it.
Value sumTo(OpBuilder &b, Location loc, Value grad, Value operand) {
  if (grad.getType() == operand.getType())
    return grad;
  return b.create<SumToOp>(loc, operand.getType(), grad);
}

/// The result type of matmul(a, b) with the given flags (a's batch dims).
RankedTensorType matmulType(Value a, Value b, bool transposeA,
                            bool transposeB) {
  ArrayRef<int64_t> shapeA = tensorType(a).getShape();
  ArrayRef<int64_t> shapeB = tensorType(b).getShape();
  size_t rankA = shapeA.size(), rankB = shapeB.size();
  SmallVector<int64_t> shape(shapeA.drop_back(2));
  shape.push_back(transposeA ? shapeA[rankA - 1] : shapeA[rankA - 2]);
  shape.push_back(transposeB ? shapeB[rankB - 2] : shapeB[rankB - 1]);
  return RankedTensorType::get(shape, tensorType(a).getElementType());
}

Value matmul(OpBuilder &b, Location loc, Value lhs, Value rhs,
             bool transposeA, bool transposeB) {
  return b.create<MatmulOp>(loc, matmulType(lhs, rhs, transposeA, transposeB),
                            lhs, rhs, transposeA, transposeB);
}

/// Σ over the batch of lhs_iᵀ·rhs_i, lhs [..., K, M] and rhs [..., K, N]:
/// [M, N], one GEMM over the flattened rows (matmul's sum_batch).
Value sumBatchMatmul(OpBuilder &b, Location loc, Value lhs, Value rhs) {
  ArrayRef<int64_t> shapeA = tensorType(lhs).getShape();
  ArrayRef<int64_t> shapeB = tensorType(rhs).getShape();
  auto type = RankedTensorType::get({shapeA.back(), shapeB.back()},
                                    tensorType(lhs).getElementType());
  auto product = b.create<MatmulOp>(loc, type, lhs, rhs, /*transposeA=*/true,
                                    /*transposeB=*/false);
  product.setSumBatch(true);
  return product;
}

/// Swaps the last two dims of `x`.
Value transposeLastTwo(OpBuilder &b, Location loc, Value x) {
  RankedTensorType type = tensorType(x);
  int64_t rank = type.getRank();
  SmallVector<int64_t> permutation, shape;
  for (int64_t i = 0; i < rank; ++i)
    permutation.push_back(i);
  std::swap(permutation[rank - 2], permutation[rank - 1]);
  for (int64_t source : permutation)
    shape.push_back(type.getShape()[source]);
  return b.create<TransposeOp>(
      loc, RankedTensorType::get(shape, type.getElementType()), x,
      permutation);
}

/// reduce_sum / reduce_mean: dx is dy with the reduced dims restored as 1,
/// scaled by `scale`, broadcast back to x's shape.
Value reduceGradient(OpBuilder &b, Location loc, Value x, Value dy,
                     ArrayRef<int64_t> axes, float scale) {
  RankedTensorType typeX = tensorType(x);
  SmallVector<int64_t> keptShape(typeX.getShape());
  for (int64_t axis : axes)
    keptShape[axis] = 1;
  auto keptType = RankedTensorType::get(keptShape, typeX.getElementType());
  Value kept = dy;
  if (dy.getType() != keptType)
    kept = b.create<ReshapeOp>(loc, keptType, dy);
  if (scale != 1.0f)
    kept = b.create<MulOp>(loc, keptType, kept, scalar(b, loc, kept, scale));
  if (keptType == typeX)
    return kept;
  return b.create<BroadcastToOp>(loc, typeX, kept);
}

} // namespace

//===----------------------------------------------------------------------===//
// Forward ops
//===----------------------------------------------------------------------===//

/// c = op(a)·op(b) with op = identity or transpose of the last two dims:
///   (F,F) da = dc·bᵀ          db = aᵀ·dc
///   (F,T) da = dc·b           db = dcᵀ·a
///   (T,F) da = b·dcᵀ          db = a·dc
///   (T,T) da = bᵀ·dcᵀ         db = dcᵀ·aᵀ
/// A shared rank-2 b (a linear layer on activations of any rank) gets db as
/// one GEMM over the rows of a and dc (sum_batch), so no temporary grows with
/// the batch; when a is transposed and b is shared, db is the batched product
/// summed with sum_to, and da is computed as (…)ᵀ with a transpose, since a
/// rank-2 first operand cannot take a batched second one.
LogicalResult MatmulOp::buildGradient(OpBuilder &b, ArrayRef<Value> resultGrads,
                                      SmallVectorImpl<Value> &operandGrads) {
  Value dc = resultGrads[0];
  if (!dc)
    return noGradients(getOperation(), operandGrads);
  if (getSumBatch())
    return emitOpError("with sum_batch has no gradient (it is a gradient's "
                       "product itself)");
  Location loc = getLoc();
  Value lhs = getA(), rhs = getB();
  bool ta = getTransposeA(), tb = getTransposeB();
  bool sharedB = tensorType(rhs).getRank() != tensorType(lhs).getRank();

  Value da;
  if (!ta)
    da = matmul(b, loc, dc, rhs, false, !tb);
  else if (!sharedB)
    da = tb ? matmul(b, loc, rhs, dc, true, true)
            : matmul(b, loc, rhs, dc, false, true);
  else // daᵀ = dc·op(b)ᵀ, then transpose.
    da = transposeLastTwo(b, loc, matmul(b, loc, dc, rhs, false, !tb));

  Value db;
  if (sharedB && !ta && tensorType(rhs).getRank() == 2) {
    // A shared weight applied to every row of a: one GEMM over a and dc's
    // rows (sum_batch), not a batched product [batch..., k, n] summed
    // afterwards, which grows with the batch.
    db = tb ? sumBatchMatmul(b, loc, dc, lhs) : sumBatchMatmul(b, loc, lhs, dc);
  } else if (!tb)
    db = ta ? matmul(b, loc, lhs, dc, false, false)
            : matmul(b, loc, lhs, dc, true, false);
  else
    db = ta ? matmul(b, loc, dc, lhs, true, true)
            : matmul(b, loc, dc, lhs, true, false);
  operandGrads.push_back(da);
  operandGrads.push_back(sumTo(b, loc, db, rhs));
  return success();
}

LogicalResult AddOp::buildGradient(OpBuilder &b, ArrayRef<Value> resultGrads,
                                   SmallVectorImpl<Value> &operandGrads) {
  Value dc = resultGrads[0];
  if (!dc)
    return noGradients(getOperation(), operandGrads);
  operandGrads.push_back(sumTo(b, getLoc(), dc, getA()));
  operandGrads.push_back(sumTo(b, getLoc(), dc, getB()));
  return success();
}

LogicalResult SubOp::buildGradient(OpBuilder &b, ArrayRef<Value> resultGrads,
                                   SmallVectorImpl<Value> &operandGrads) {
  Value dc = resultGrads[0];
  if (!dc)
    return noGradients(getOperation(), operandGrads);
  operandGrads.push_back(sumTo(b, getLoc(), dc, getA()));
  operandGrads.push_back(negate(b, getLoc(), sumTo(b, getLoc(), dc, getB())));
  return success();
}

/// da = sum_to(dc·b), db = sum_to(dc·a).
LogicalResult MulOp::buildGradient(OpBuilder &b, ArrayRef<Value> resultGrads,
                                   SmallVectorImpl<Value> &operandGrads) {
  Value dc = resultGrads[0];
  if (!dc)
    return noGradients(getOperation(), operandGrads);
  Location loc = getLoc();
  Value da = b.create<MulOp>(loc, dc.getType(), dc, getB());
  Value db = b.create<MulOp>(loc, dc.getType(), dc, getA());
  operandGrads.push_back(sumTo(b, loc, da, getA()));
  operandGrads.push_back(sumTo(b, loc, db, getB()));
  return success();
}

/// da = sum_to(dc/b), db = -sum_to(dc·c/b) (= -dc·a/b²).
LogicalResult DivOp::buildGradient(OpBuilder &b, ArrayRef<Value> resultGrads,
                                   SmallVectorImpl<Value> &operandGrads) {
  Value dc = resultGrads[0];
  if (!dc)
    return noGradients(getOperation(), operandGrads);
  Location loc = getLoc();
  Value da = b.create<DivOp>(loc, dc.getType(), dc, getB());
  Value dcTimesC = b.create<MulOp>(loc, dc.getType(), dc, getC());
  Value db = b.create<DivOp>(loc, dc.getType(), dcTimesC, getB());
  operandGrads.push_back(sumTo(b, loc, da, getA()));
  operandGrads.push_back(negate(b, loc, sumTo(b, loc, db, getB())));
  return success();
}

LogicalResult ReluOp::buildGradient(OpBuilder &b, ArrayRef<Value> resultGrads,
                                    SmallVectorImpl<Value> &operandGrads) {
  if (!resultGrads[0])
    return noGradients(getOperation(), operandGrads);
  // From the output: relu's input is then dead after relu (which may run in
  // place), and only y, which the next op usually reads anyway, is kept.
  operandGrads.push_back(b.create<ReluGradOp>(getLoc(), getX().getType(),
                                              getY(), resultGrads[0]));
  return success();
}

LogicalResult GeluOp::buildGradient(OpBuilder &b, ArrayRef<Value> resultGrads,
                                    SmallVectorImpl<Value> &operandGrads) {
  if (!resultGrads[0])
    return noGradients(getOperation(), operandGrads);
  operandGrads.push_back(b.create<GeluGradOp>(getLoc(), getX().getType(),
                                              getX(), resultGrads[0]));
  return success();
}

LogicalResult GeluExactOp::buildGradient(OpBuilder &b,
                                         ArrayRef<Value> resultGrads,
                                         SmallVectorImpl<Value> &operandGrads) {
  if (!resultGrads[0])
    return noGradients(getOperation(), operandGrads);
  operandGrads.push_back(b.create<GeluExactGradOp>(
      getLoc(), getX().getType(), getX(), resultGrads[0]));
  return success();
}

LogicalResult SiluOp::buildGradient(OpBuilder &b, ArrayRef<Value> resultGrads,
                                    SmallVectorImpl<Value> &operandGrads) {
  if (!resultGrads[0])
    return noGradients(getOperation(), operandGrads);
  operandGrads.push_back(b.create<SiluGradOp>(getLoc(), getX().getType(),
                                              getX(), resultGrads[0]));
  return success();
}

/// From the output: dx = tanh_grad(y, dy).
LogicalResult TanhOp::buildGradient(OpBuilder &b, ArrayRef<Value> resultGrads,
                                    SmallVectorImpl<Value> &operandGrads) {
  if (!resultGrads[0])
    return noGradients(getOperation(), operandGrads);
  operandGrads.push_back(b.create<TanhGradOp>(getLoc(), getX().getType(),
                                              getY(), resultGrads[0]));
  return success();
}

/// dx = dy·y.
LogicalResult ExpOp::buildGradient(OpBuilder &b, ArrayRef<Value> resultGrads,
                                   SmallVectorImpl<Value> &operandGrads) {
  if (!resultGrads[0])
    return noGradients(getOperation(), operandGrads);
  operandGrads.push_back(b.create<MulOp>(getLoc(), getX().getType(),
                                         resultGrads[0], getY()));
  return success();
}

/// From the output: dx = softmax_grad(y, dy).
LogicalResult SoftmaxOp::buildGradient(OpBuilder &b,
                                       ArrayRef<Value> resultGrads,
                                       SmallVectorImpl<Value> &operandGrads) {
  if (!resultGrads[0])
    return noGradients(getOperation(), operandGrads);
  operandGrads.push_back(b.create<SoftmaxGradOp>(getLoc(), getX().getType(),
                                                 getY(), resultGrads[0]));
  return success();
}

LogicalResult LayerNormOp::buildGradient(OpBuilder &b,
                                         ArrayRef<Value> resultGrads,
                                         SmallVectorImpl<Value> &operandGrads) {
  if (!resultGrads[0])
    return noGradients(getOperation(), operandGrads);
  Type typeGamma = getGamma().getType();
  auto grad = b.create<LayerNormGradOp>(
      getLoc(), getX().getType(), typeGamma, typeGamma, getX(), getGamma(),
      resultGrads[0], getEpsilon());
  operandGrads.push_back(grad.getDx());
  operandGrads.push_back(grad.getDgamma());
  operandGrads.push_back(grad.getDbeta());
  return success();
}

/// dx, dgamma, dbeta = batch_norm_grad(x, gamma, dy): the batch
/// statistics are recomputed from x, so the backward keeps x and gamma
/// alive, not y or saved statistics.
LogicalResult BatchNormOp::buildGradient(OpBuilder &b,
                                         ArrayRef<Value> resultGrads,
                                         SmallVectorImpl<Value> &operandGrads) {
  if (!resultGrads[0])
    return noGradients(getOperation(), operandGrads);
  Type typeGamma = getGamma().getType();
  auto grad = b.create<BatchNormGradOp>(
      getLoc(), getX().getType(), typeGamma, typeGamma, getX(), getGamma(),
      resultGrads[0], getEpsilon());
  operandGrads.push_back(grad.getDx());
  operandGrads.push_back(grad.getDgamma());
  operandGrads.push_back(grad.getDbeta());
  return success();
}

/// dx = clip_grad(y, dy): zero where x is at or beyond a bound, read off the
/// output y = clip(x), which is at a bound exactly there.
LogicalResult ClipOp::buildGradient(OpBuilder &b, ArrayRef<Value> resultGrads,
                                    SmallVectorImpl<Value> &operandGrads) {
  if (!resultGrads[0])
    return noGradients(getOperation(), operandGrads);
  operandGrads.push_back(b.create<ClipGradOp>(getLoc(), getX().getType(),
                                              getY(), resultGrads[0], getMin(),
                                              getMax()));
  return success();
}

/// dx = resize_nearest_grad(dy): the sum over the copies of each element.
LogicalResult ResizeNearestOp::buildGradient(
    OpBuilder &b, ArrayRef<Value> resultGrads,
    SmallVectorImpl<Value> &operandGrads) {
  if (!resultGrads[0])
    return noGradients(getOperation(), operandGrads);
  operandGrads.push_back(b.create<ResizeNearestGradOp>(
      getLoc(), getX().getType(), resultGrads[0], getScales()));
  return success();
}

/// dx = resize_linear_grad(dy): each dy element's weighted shares back
/// to the four x elements it blends.
LogicalResult ResizeLinearOp::buildGradient(
    OpBuilder &b, ArrayRef<Value> resultGrads,
    SmallVectorImpl<Value> &operandGrads) {
  if (!resultGrads[0])
    return noGradients(getOperation(), operandGrads);
  auto x = llvm::cast<RankedTensorType>(getX().getType());
  operandGrads.push_back(b.create<ResizeLinearGradOp>(
      getLoc(), x, resultGrads[0],
      b.getDenseI64ArrayAttr({x.getShape()[2], x.getShape()[3]}),
      getAlignCornersAttr()));
  return success();
}

/// dtable = embedding_grad(indices, dy); indices get none.
LogicalResult EmbeddingOp::buildGradient(OpBuilder &b,
                                         ArrayRef<Value> resultGrads,
                                         SmallVectorImpl<Value> &operandGrads) {
  if (!resultGrads[0])
    return noGradients(getOperation(), operandGrads);
  operandGrads.push_back(b.create<EmbeddingGradOp>(
      getLoc(), getTable().getType(), getIndices(), resultGrads[0]));
  operandGrads.push_back(Value());
  return success();
}

LogicalResult ReshapeOp::buildGradient(OpBuilder &b,
                                       ArrayRef<Value> resultGrads,
                                       SmallVectorImpl<Value> &operandGrads) {
  if (!resultGrads[0] || !isFloatTensor(getX()))
    return noGradients(getOperation(), operandGrads);
  operandGrads.push_back(
      b.create<ReshapeOp>(getLoc(), getX().getType(), resultGrads[0]));
  return success();
}

/// dx = convert(dy) back to x's type.
LogicalResult ConvertOp::buildGradient(OpBuilder &b,
                                       ArrayRef<Value> resultGrads,
                                       SmallVectorImpl<Value> &operandGrads) {
  Value dy = resultGrads[0];
  if (!dy || !isFloatTensor(getX()))
    return noGradients(getOperation(), operandGrads);
  // A float32 parameter's bf16 copy read by one GEMM (a weight under
  // --precision bf16): the GEMM that makes the copy's gradient, read by
  // nothing else, sums its bf16 products into the parameter's float32
  // gradient itself rather than rounding them to bf16 for this conversion
  // to widen. (Gradients of activations stay bf16, as autocast's.)
  auto gemm = dy.getDefiningOp<MatmulOp>();
  if (gemm && dy.use_empty() && isa<BlockArgument>(getX()) &&
      tensorType(dy).getElementType().isBF16() &&
      tensorType(getX()).getElementType().isF32()) {
    dy.setType(getX().getType());
    operandGrads.push_back(dy);
    return success();
  }
  operandGrads.push_back(b.create<ConvertOp>(getLoc(), getX().getType(), dy));
  return success();
}

/// dx = transpose(dy) with the inverse permutation.
LogicalResult TransposeOp::buildGradient(OpBuilder &b,
                                         ArrayRef<Value> resultGrads,
                                         SmallVectorImpl<Value> &operandGrads) {
  if (!resultGrads[0] || !isFloatTensor(getX()))
    return noGradients(getOperation(), operandGrads);
  ArrayRef<int64_t> permutation = getPermutation();
  SmallVector<int64_t> inverse(permutation.size());
  for (size_t i = 0; i < permutation.size(); ++i)
    inverse[permutation[i]] = static_cast<int64_t>(i);
  operandGrads.push_back(b.create<TransposeOp>(getLoc(), getX().getType(),
                                               resultGrads[0], inverse));
  return success();
}

LogicalResult ReduceSumOp::buildGradient(OpBuilder &b,
                                         ArrayRef<Value> resultGrads,
                                         SmallVectorImpl<Value> &operandGrads) {
  if (!resultGrads[0])
    return noGradients(getOperation(), operandGrads);
  operandGrads.push_back(
      reduceGradient(b, getLoc(), getX(), resultGrads[0], getAxes(), 1.0f));
  return success();
}

/// As reduce_sum, scaled by 1/count, count being the reduced element count.
LogicalResult ReduceMeanOp::buildGradient(OpBuilder &b,
                                          ArrayRef<Value> resultGrads,
                                          SmallVectorImpl<Value> &operandGrads) {
  if (!resultGrads[0])
    return noGradients(getOperation(), operandGrads);
  int64_t count = 1;
  for (int64_t axis : getAxes())
    count *= tensorType(getX()).getShape()[axis];
  float scale = count > 0 ? 1.0f / static_cast<float>(count) : 0.0f;
  operandGrads.push_back(
      reduceGradient(b, getLoc(), getX(), resultGrads[0], getAxes(), scale));
  return success();
}

LogicalResult BroadcastToOp::buildGradient(
    OpBuilder &b, ArrayRef<Value> resultGrads,
    SmallVectorImpl<Value> &operandGrads) {
  if (!resultGrads[0] || !isFloatTensor(getX()))
    return noGradients(getOperation(), operandGrads);
  operandGrads.push_back(sumTo(b, getLoc(), resultGrads[0], getX()));
  return success();
}

LogicalResult SumToOp::buildGradient(OpBuilder &b, ArrayRef<Value> resultGrads,
                                     SmallVectorImpl<Value> &operandGrads) {
  if (!resultGrads[0])
    return noGradients(getOperation(), operandGrads);
  Value dy = resultGrads[0];
  if (dy.getType() == getX().getType())
    operandGrads.push_back(dy);
  else
    operandGrads.push_back(
        b.create<BroadcastToOp>(getLoc(), getX().getType(), dy));
  return success();
}

/// dlogits = cross_entropy_grad(logits, labels, dloss); labels get none.
LogicalResult CrossEntropyOp::buildGradient(
    OpBuilder &b, ArrayRef<Value> resultGrads,
    SmallVectorImpl<Value> &operandGrads) {
  if (!resultGrads[0])
    return noGradients(getOperation(), operandGrads);
  operandGrads.push_back(b.create<CrossEntropyGradOp>(
      getLoc(), getLogits().getType(), getLogits(), getLabels(),
      resultGrads[0]));
  operandGrads.push_back(Value());
  return success();
}

/// da = mse_grad(a, b, dloss); db = -da.
LogicalResult MseOp::buildGradient(OpBuilder &b, ArrayRef<Value> resultGrads,
                                   SmallVectorImpl<Value> &operandGrads) {
  if (!resultGrads[0])
    return noGradients(getOperation(), operandGrads);
  Value da = b.create<MseGradOp>(getLoc(), getA().getType(), getA(), getB(),
                                 resultGrads[0]);
  operandGrads.push_back(da);
  operandGrads.push_back(negate(b, getLoc(), da));
  return success();
}

/// dx = dropout(dy) with the same rate and seed: the same mask.
LogicalResult DropoutOp::buildGradient(OpBuilder &b,
                                       ArrayRef<Value> resultGrads,
                                       SmallVectorImpl<Value> &operandGrads) {
  if (!resultGrads[0])
    return noGradients(getOperation(), operandGrads);
  operandGrads.push_back(b.create<DropoutOp>(getLoc(), getX().getType(),
                                             resultGrads[0], getRateAttr(),
                                             getSeedAttr()));
  return success();
}

LogicalResult AttentionOp::buildGradient(OpBuilder &b,
                                         ArrayRef<Value> resultGrads,
                                         SmallVectorImpl<Value> &operandGrads) {
  if (!resultGrads[0])
    return noGradients(getOperation(), operandGrads);
  Type type = getQ().getType();
  auto grad = b.create<AttentionGradOp>(getLoc(), type, type, type, getQ(),
                                        getK(), getV(), resultGrads[0],
                                        getCausalAttr(), getScaleAttr());
  operandGrads.push_back(grad.getDq());
  operandGrads.push_back(grad.getDk());
  operandGrads.push_back(grad.getDv());
  return success();
}

/// dx = erf_grad(x, dy) = dy·(2/√π)·exp(-x²).
LogicalResult ErfOp::buildGradient(OpBuilder &b, ArrayRef<Value> resultGrads,
                                   SmallVectorImpl<Value> &operandGrads) {
  if (!resultGrads[0])
    return noGradients(getOperation(), operandGrads);
  operandGrads.push_back(b.create<ErfGradOp>(getLoc(), getX().getType(),
                                             getX(), resultGrads[0]));
  return success();
}

/// dx = dy·(p·x^(p-1)), PyTorch's formula; for p = 1, dx = dy.
LogicalResult PowOp::buildGradient(OpBuilder &b, ArrayRef<Value> resultGrads,
                                   SmallVectorImpl<Value> &operandGrads) {
  Value dy = resultGrads[0];
  if (!dy)
    return noGradients(getOperation(), operandGrads);
  Location loc = getLoc();
  Type type = getX().getType();
  float p = getExponent();
  if (p == 1.0f) {
    operandGrads.push_back(dy);
    return success();
  }
  Value power = p == 2.0f ? getX()
                          : b.create<PowOp>(loc, type, getX(), p - 1.0f)
                                .getResult();
  Value derivative = b.create<MulOp>(loc, type, power, scalar(b, loc, power, p));
  operandGrads.push_back(b.create<MulOp>(loc, type, dy, derivative));
  return success();
}

/// dx = slice_grad(dy): dy placed in zeros of x's shape.
LogicalResult SliceOp::buildGradient(OpBuilder &b, ArrayRef<Value> resultGrads,
                                     SmallVectorImpl<Value> &operandGrads) {
  if (!resultGrads[0])
    return noGradients(getOperation(), operandGrads);
  operandGrads.push_back(b.create<SliceGradOp>(
      getLoc(), getX().getType(), resultGrads[0], getStarts(), getEnds(),
      getSteps()));
  return success();
}

/// da and db: the two parts of dc, as slices along the axis.
LogicalResult ConcatOp::buildGradient(OpBuilder &b, ArrayRef<Value> resultGrads,
                                      SmallVectorImpl<Value> &operandGrads) {
  Value dc = resultGrads[0];
  if (!dc)
    return noGradients(getOperation(), operandGrads);
  ArrayRef<int64_t> shape = tensorType(dc).getShape();
  uint64_t axis = getAxis();
  int64_t split = tensorType(getA()).getShape()[axis];
  SmallVector<int64_t> starts(shape.size(), 0), ends(shape), steps(shape.size(), 1);
  ends[axis] = split;
  operandGrads.push_back(b.create<SliceOp>(getLoc(), getA().getType(), dc,
                                           starts, ends, steps));
  starts[axis] = split;
  ends[axis] = shape[axis];
  operandGrads.push_back(b.create<SliceOp>(getLoc(), getB().getType(), dc,
                                           starts, ends, steps));
  return success();
}

/// dx = conv2d_grad_input(w, dy), dw = conv2d_grad_weight(x, dy).
LogicalResult Conv2dOp::buildGradient(OpBuilder &b, ArrayRef<Value> resultGrads,
                                      SmallVectorImpl<Value> &operandGrads) {
  Value dy = resultGrads[0];
  if (!dy)
    return noGradients(getOperation(), operandGrads);
  operandGrads.push_back(b.create<Conv2dGradInputOp>(
      getLoc(), getX().getType(), getW(), dy, getStridesAttr(), getPadsAttr(),
      getDilationsAttr(), getGroupsAttr()));
  operandGrads.push_back(b.create<Conv2dGradWeightOp>(
      getLoc(), getW().getType(), getX(), dy, getStridesAttr(), getPadsAttr(),
      getDilationsAttr(), getGroupsAttr()));
  return success();
}

/// dx = max_pool2d_grad(x, dy): the argmax is recomputed from x.
LogicalResult MaxPool2dOp::buildGradient(OpBuilder &b,
                                         ArrayRef<Value> resultGrads,
                                         SmallVectorImpl<Value> &operandGrads) {
  if (!resultGrads[0])
    return noGradients(getOperation(), operandGrads);
  operandGrads.push_back(b.create<MaxPool2dGradOp>(
      getLoc(), getX().getType(), getX(), resultGrads[0], getKernelShapeAttr(),
      getStridesAttr(), getPadsAttr(), getDilationsAttr(), getCeilModeAttr()));
  return success();
}

/// dx = avg_pool2d_grad(dy), x's type given.
LogicalResult AvgPool2dOp::buildGradient(OpBuilder &b,
                                         ArrayRef<Value> resultGrads,
                                         SmallVectorImpl<Value> &operandGrads) {
  if (!resultGrads[0])
    return noGradients(getOperation(), operandGrads);
  operandGrads.push_back(b.create<AvgPool2dGradOp>(
      getLoc(), getX().getType(), resultGrads[0], getKernelShapeAttr(),
      getStridesAttr(), getPadsAttr(), getCeilModeAttr(),
      getCountIncludePadAttr()));
  return success();
}

} // namespace remat::graph
