//===- GraphOps.cpp - verifiers and costs of the graph ops ------*- C++ -*-===//
//
// The verifier every graph op shares (its type rule from ops/ShapeRules.h,
// the one implementation the model reader and the plan loader use too) and
// the FLOP counts of the ops that are not one operation per output element.
//
//===----------------------------------------------------------------------===//

#include "ir/GraphOps.h"

#include "ir/ShapeUtils.h"
#include "ops/ShapeRules.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"

#include <cstdio>
#include <string>

using namespace mlir;

namespace remat::graph {
namespace {

//===----------------------------------------------------------------------===//
// Cost helpers
//===----------------------------------------------------------------------===//

int64_t elements(Value value) { return tensorElements(value.getType()); }

int64_t times(int64_t a, int64_t b) { return shape::saturatingMul(a, b); }
int64_t plus(int64_t a, int64_t b) { return shape::saturatingAdd(a, b); }

/// B·H·S·S and B·H·S·S·Dh of a [B, H, S, Dh] tensor; false for another rank.
bool attentionSizes(Value q, int64_t &scores, int64_t &scoresTimesHead) {
  auto type = llvm::dyn_cast<RankedTensorType>(q.getType());
  if (!type || type.getRank() != 4 || !type.hasStaticShape())
    return false;
  ArrayRef<int64_t> dims = type.getShape();
  scores = times(times(times(dims[0], dims[1]), dims[2]), dims[2]);
  scoresTimesHead = times(scores, dims[3]);
  return true;
}

/// 2·N·O·OH·OW·(C/groups)·kh·kw of a conv2d given y [N, O, OH, OW] and
/// w [O, C/groups, kh, kw]; 0 for other ranks.
int64_t convFlops(Value y, Value w) {
  auto typeY = llvm::dyn_cast<RankedTensorType>(y.getType());
  auto typeW = llvm::dyn_cast<RankedTensorType>(w.getType());
  if (!typeY || !typeW || typeY.getRank() != 4 || typeW.getRank() != 4 ||
      !typeY.hasStaticShape() || !typeW.hasStaticShape())
    return 0;
  ArrayRef<int64_t> dims = typeW.getShape();
  int64_t window = times(times(dims[1], dims[2]), dims[3]);
  return times(times(2, elements(y)), window);
}

/// One per window element of y [N, C, OH, OW] with a kh x kw window.
int64_t poolFlops(Value y, ArrayRef<int64_t> kernelShape) {
  if (kernelShape.size() != 2)
    return 0;
  return times(elements(y), times(kernelShape[0], kernelShape[1]));
}

} // namespace

//===----------------------------------------------------------------------===//
// The verifier of every op
//===----------------------------------------------------------------------===//

namespace {

/// Appends `value`'s type to `types`: a statically shaped tensor of a dtype
/// remat computes whose element count fits in int64_t.
LogicalResult addType(Operation *op, Value value, const std::string &label,
                      ops::LabeledTypes &types) {
  auto type = llvm::cast<RankedTensorType>(value.getType());
  if (!type.hasStaticShape())
    return op->emitOpError() << label << " must have a static shape, got "
                             << type;
  if (!shape::elementCount(type.getShape()))
    return op->emitOpError() << label << " has more than 2^63-1 elements: "
                             << type;
  std::optional<ops::DType> dtype = dtypeOf(type.getElementType());
  if (!dtype)
    return op->emitOpError()
           << label << " must be a tensor of f32, f16, bf16, i32 or i64, got "
           << type;
  types.types.push_back({*dtype, ops::Shape(type.getShape())});
  types.labels.push_back(label);
  return success();
}

// Readers of one attribute into its OpAttrs field, by the field's type.
void read(Attribute attr, bool &out) {
  out = llvm::cast<BoolAttr>(attr).getValue();
}
void read(Attribute attr, float &out) {
  out = static_cast<float>(llvm::cast<FloatAttr>(attr).getValueAsDouble());
}
void read(Attribute attr, uint64_t &out) {
  out = static_cast<uint64_t>(llvm::cast<IntegerAttr>(attr).getInt());
}
void read(Attribute attr, std::vector<int64_t> &out) {
  ArrayRef<int64_t> values = llvm::cast<DenseI64ArrayAttr>(attr).asArrayRef();
  out.assign(values.begin(), values.end());
}

} // namespace

std::optional<ops::DType> dtypeOf(Type element) {
  if (element.isF32())
    return ops::DType::F32;
  if (element.isF16())
    return ops::DType::F16;
  if (element.isBF16())
    return ops::DType::BF16;
  if (element.isSignlessInteger(32))
    return ops::DType::I32;
  if (element.isSignlessInteger(64))
    return ops::DType::I64;
  return std::nullopt;
}

LogicalResult verifyByTypeRule(Operation *op) {
  std::optional<ops::OpKind> kind =
      ops::parseOpKind(op->getName().stripDialect().str());
  if (!kind)
    return op->emitOpError() << "is missing from the op table "
                                "(ops/generated/OpTable.inc)";
  const ops::OpInfo &info = ops::opInfo(*kind);
  ops::LabeledTypes inputs, outputs;
  for (auto [i, operand] : llvm::enumerate(op->getOperands()))
    if (failed(addType(op, operand, std::string("'") + info.operandNames[i] + "'",
                       inputs)))
      return failure();
  for (auto [i, result] : llvm::enumerate(op->getResults()))
    if (failed(addType(op, result,
                       op->getNumResults() == 1
                           ? std::string("result")
                           : std::string("result '") + info.resultNames[i] + "'",
                       outputs)))
      return failure();
  ops::OpAttrs attrs;
  ops::setDefaultAttrs(*kind, attrs);
#define REMAT_OP_ATTR(Kind, name, field, type, required, defaultValue)         \
  if (*kind == ops::OpKind::Kind)                                              \
    if (Attribute attr = op->getAttr(name))                                    \
      read(attr, attrs.field);
#include "ops/generated/OpTable.inc"
  try {
    ops::checkAttrValues(*kind, attrs);
    ops::checkTypes(*kind, attrs, inputs, outputs);
  } catch (const ops::TypeRuleError &e) {
    return op->emitOpError() << e.what();
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Forward ops
//===----------------------------------------------------------------------===//

/// 2·batch·M·N·K, batch being the product of a's leading dims.
int64_t MatmulOp::getFlops() {
  auto typeA = llvm::dyn_cast<RankedTensorType>(getA().getType());
  auto typeB = llvm::dyn_cast<RankedTensorType>(getB().getType());
  if (!typeA || !typeB || typeA.getRank() < 2 || typeB.getRank() < 2 ||
      !typeA.hasStaticShape() || !typeB.hasStaticShape())
    return 0;
  ArrayRef<int64_t> shapeA = typeA.getShape(), shapeB = typeB.getShape();
  size_t rankA = shapeA.size(), rankB = shapeB.size();
  int64_t batch = shape::saturatingElementCount(shapeA.drop_back(2));
  int64_t m = getTransposeA() ? shapeA[rankA - 1] : shapeA[rankA - 2];
  int64_t k = getTransposeA() ? shapeA[rankA - 2] : shapeA[rankA - 1];
  int64_t n = getTransposeB() ? shapeB[rankB - 2] : shapeB[rankB - 1];
  return times(times(times(times(2, batch), m), n), k);
}

/// 8 per element, an estimate of the tanh form: x³ (2), 0.044715·x³ + x (2),
/// ·√(2/π) (1), tanh (1, counted as one op), 1 + t (1), 0.5·x·(…) (1, with
/// 0.5·x hoisted).
int64_t GeluOp::getFlops() { return times(8, elements(getX())); }

/// 4 per element: σ(x) = 1/(1 + exp(-x)) (exp counted as one) and x·σ.
int64_t SiluOp::getFlops() { return times(4, elements(getX())); }

/// 5 per element: row max, subtract, exp, row sum, divide.
int64_t SoftmaxOp::getFlops() { return times(5, elements(getX())); }

/// 8 per element of x: sum for the mean (1), subtract the mean (1), square
/// (1), sum of squares (1), multiply by rstd (1), by gamma (1), add beta (1),
/// and 1 for the per-row mean, rsqrt and division, bounded by one per element.
int64_t LayerNormOp::getFlops() { return times(8, elements(getX())); }

/// 0: a gather moves bytes only.
int64_t EmbeddingOp::getFlops() { return 0; }

/// 0: data movement only.
int64_t ReshapeOp::getFlops() { return 0; }

/// 0: data movement only.
int64_t TransposeOp::getFlops() { return 0; }

/// One add per element of x.
int64_t ReduceSumOp::getFlops() { return elements(getX()); }

/// One add per element of x and one division per element of y.
int64_t ReduceMeanOp::getFlops() {
  return plus(elements(getX()), elements(getY()));
}

/// 0: data movement only.
int64_t BroadcastToOp::getFlops() { return 0; }

/// One add per element of x.
int64_t SumToOp::getFlops() { return elements(getX()); }

/// 5 per logit: row max, subtract, exp, row sum, pick the label's term; the
/// log and the mean over positions (a few per row) are not counted.
int64_t CrossEntropyOp::getFlops() { return times(5, elements(getLogits())); }

/// 3 per element: subtract, square, sum.
int64_t MseOp::getFlops() { return times(3, elements(getA())); }

/// 2 per element: compare with the rate, multiply by keep/(1-rate). The
/// Philox rounds are not counted.
int64_t DropoutOp::getFlops() { return times(2, elements(getX())); }

/// 4·B·H·S·S·Dh for the two GEMMs (q·kᵀ and p·v) plus 5·B·H·S·S for the
/// softmax. The full S×S square is counted even when causal: the masked half
/// is what kernels skip at best, and the planner wants an upper bound.
int64_t AttentionOp::getFlops() {
  int64_t scores = 0, scoresTimesHead = 0;
  if (!attentionSizes(getQ(), scores, scoresTimesHead))
    return 0;
  return plus(times(4, scoresTimesHead), times(5, scores));
}

/// 0: the fill is counted as bytes written.
/// Copies only.
int64_t SliceOp::getFlops() { return 0; }
int64_t ConcatOp::getFlops() { return 0; }

int64_t ConstantOp::getFlops() { return 0; }

/// 2·N·O·OH·OW·(C/groups)·kh·kw.
int64_t Conv2dOp::getFlops() { return convFlops(getY(), getW()); }

/// One comparison per window element.
int64_t MaxPool2dOp::getFlops() { return poolFlops(getY(), getKernelShape()); }

/// One add per window element (the division is not counted).
int64_t AvgPool2dOp::getFlops() { return poolFlops(getY(), getKernelShape()); }

//===----------------------------------------------------------------------===//
// Gradient ops
//===----------------------------------------------------------------------===//

/// 1 per element: a select.
int64_t ReluGradOp::getFlops() { return elements(getY()); }

/// 16 per element, an estimate: the forward's inner polynomial and tanh (6)
/// plus the derivative 0.5·(1+t) + 0.5·x·(1-t²)·√(2/π)·(1+3·0.044715·x²) (9)
/// and the product with dy (1).
int64_t GeluGradOp::getFlops() { return times(16, elements(getX())); }

/// 4 per element: x², exp(-x²) (counted as one), ·2/√π, ·dy.
int64_t ErfGradOp::getFlops() { return times(4, elements(getX())); }

/// A fill and a copy only.
int64_t SliceGradOp::getFlops() { return 0; }

/// 3 per element: y², 1 - y², product with dy.
int64_t TanhGradOp::getFlops() { return times(3, elements(getY())); }

/// 8 per element: σ(x) (4), 1 - σ, x·(1 - σ), 1 + that, ·σ, ·dy.
int64_t SiluGradOp::getFlops() { return times(8, elements(getX())); }

/// 4 per element: dy·y, row sum, subtract, multiply by y.
int64_t SoftmaxGradOp::getFlops() { return times(4, elements(getY())); }

/// 16 per element of x, an estimate: recompute mean and rstd (4), x̂ (2),
/// dgamma and dbeta accumulation (3), dx = rstd·(g - mean(g) - x̂·mean(g·x̂))
/// with g = dy·gamma (7).
int64_t LayerNormGradOp::getFlops() { return times(16, elements(getX())); }

/// One add per element of dy (the scatter-add).
int64_t EmbeddingGradOp::getFlops() { return elements(getDy()); }

/// 7 per logit: the softmax (5), subtract the one-hot, scale by
/// dloss/positions.
int64_t CrossEntropyGradOp::getFlops() {
  return times(7, elements(getLogits()));
}

/// 2 per element: subtract, multiply by 2·dloss/numel.
int64_t MseGradOp::getFlops() { return times(2, elements(getA())); }

/// 10·B·H·S·S·Dh for five GEMMs (scores, dv, dp, dq, dk) plus 9·B·H·S·S
/// (softmax recompute 5, softmax backward 4); the full square even if causal.
int64_t AttentionGradOp::getFlops() {
  int64_t scores = 0, scoresTimesHead = 0;
  if (!attentionSizes(getQ(), scores, scoresTimesHead))
    return 0;
  return plus(times(10, scoresTimesHead), times(9, scores));
}

/// The conv2d's FLOPs: dy [N, O, OH, OW] against w.
int64_t Conv2dGradInputOp::getFlops() { return convFlops(getDy(), getW()); }

/// The conv2d's FLOPs: dy [N, O, OH, OW] against dw.
int64_t Conv2dGradWeightOp::getFlops() { return convFlops(getDy(), getDw()); }

/// The argmax recomputed (one comparison per window element) and one add
/// per dy element.
int64_t MaxPool2dGradOp::getFlops() {
  return plus(poolFlops(getDy(), getKernelShape()), elements(getDy()));
}

/// One add per window element.
int64_t AvgPool2dGradOp::getFlops() {
  return poolFlops(getDy(), getKernelShape());
}

//===----------------------------------------------------------------------===//
// Optimizer ops
//===----------------------------------------------------------------------===//

/// Whether an update is sharded (ZeRO-1): `shards` > 1. The optimizer
/// pass leaves the attribute out when it is 1 (unsharded plans stay as
/// before), so it may be absent.
template <typename UpdateOp> bool isSharded(UpdateOp op) {
  mlir::IntegerAttr shards = op.getShardsAttr();
  return shards && shards.getInt() > 1;
}

/// 6 per element: grad + wd·param (2), μ·m + g (2), param - lr·m' (2).
/// Sharded (ZeRO-1): per rank, over its slice (the state's elements).
int64_t SgdUpdateOp::getFlops() {
  return times(6, elements(isSharded(*this) ? getMomentumBuffer()
                                            : getParam()));
}
int64_t SgdPlainUpdateOp::getFlops() {
  return times(4, elements(getParam()));
}

/// 15 per element: decay (1), m' (3), v' (4), two bias corrections (2),
/// sqrt (1), + eps (1), divide (1), lr· and subtract (2).
/// Sharded (ZeRO-1): per rank, over its slice (the state's elements).
int64_t AdamwUpdateOp::getFlops() {
  return times(15, elements(isSharded(*this) ? getM() : getParam()));
}

//===----------------------------------------------------------------------===//
// Batch normalization, clipping and resizing
//===----------------------------------------------------------------------===//

/// 8 per element of x, as layer_norm: the statistics are per channel
/// instead of per row.
int64_t BatchNormOp::getFlops() { return times(8, elements(getX())); }

/// 0: a gather of copies moves bytes only.
int64_t ResizeNearestOp::getFlops() { return 0; }

/// 16 per element of x, as layer_norm_grad.
int64_t BatchNormGradOp::getFlops() { return times(16, elements(getX())); }

/// One add per element of dy.
int64_t ResizeNearestGradOp::getFlops() { return elements(getDy()); }

/// 3 per element of x: the sum (mean) or the deviation, its square and the
/// sum (variance; the mean pass counted in the same 3).
int64_t RunningMeanUpdateOp::getFlops() { return times(3, elements(getX())); }
int64_t RunningVarUpdateOp::getFlops() { return times(3, elements(getX())); }

} // namespace remat::graph

#define GET_OP_CLASSES
#include "ir/GraphOps.cpp.inc"
