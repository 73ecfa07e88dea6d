//===- GraphOps.cpp - verifiers and costs of the graph ops ------*- C++ -*-===//
//
// The C++ verifier of every graph op (shape and element-type rules of
// docs/ops.md, with messages that name the dims) and the FLOP counts of the
// ops that are not one operation per output element.
//
//===----------------------------------------------------------------------===//

#include "ir/GraphOps.h"

#include "ir/ShapeUtils.h"

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
// Verifier helpers
//
// A `label` names a value in messages: an operand as "'a'", the only result
// as "result", one of several results as "result 'dgamma'".
//===----------------------------------------------------------------------===//

/// Which element types a tensor may have.
enum class ElementKind { Float, Index, FloatOrIndex };

bool isFloatElement(Type type) {
  return type.isF32() || type.isF16() || type.isBF16();
}

bool isIndexElement(Type type) {
  return type.isSignlessInteger(32) || type.isSignlessInteger(64);
}

RankedTensorType tensorType(Value value) {
  return llvm::cast<RankedTensorType>(value.getType());
}

std::string formatFloat(float value) {
  char text[32];
  std::snprintf(text, sizeof(text), "%g", static_cast<double>(value));
  return text;
}

/// A statically shaped tensor whose element type is of `kind` and whose
/// element count fits in int64_t.
LogicalResult checkTensor(Operation *op, Value value, StringRef label,
                          ElementKind kind) {
  RankedTensorType type = tensorType(value);
  if (!type.hasStaticShape())
    return op->emitOpError() << label << " must have a static shape, got "
                             << type;
  if (!shape::elementCount(type.getShape()))
    return op->emitOpError() << label << " has more than 2^63-1 elements: "
                             << type;
  Type element = type.getElementType();
  switch (kind) {
  case ElementKind::Float:
    if (!isFloatElement(element))
      return op->emitOpError()
             << label << " must be a tensor of f32, f16 or bf16, got " << type;
    break;
  case ElementKind::Index:
    if (!isIndexElement(element))
      return op->emitOpError()
             << label << " must be a tensor of i32 or i64, got " << type;
    break;
  case ElementKind::FloatOrIndex:
    if (!isFloatElement(element) && !isIndexElement(element))
      return op->emitOpError()
             << label << " must be a tensor of f32, f16, bf16, i32 or i64, got "
             << type;
    break;
  }
  return success();
}

LogicalResult checkFloat(Operation *op, Value value, StringRef label) {
  return checkTensor(op, value, label, ElementKind::Float);
}

LogicalResult checkIndex(Operation *op, Value value, StringRef label) {
  return checkTensor(op, value, label, ElementKind::Index);
}

/// `value` has the element type of `reference`.
LogicalResult checkSameElementType(Operation *op, Value value, StringRef label,
                                   Value reference, StringRef referenceLabel) {
  Type element = tensorType(value).getElementType();
  Type expected = tensorType(reference).getElementType();
  if (element != expected)
    return op->emitOpError() << label << " element type " << element
                             << " does not match " << referenceLabel
                             << " element type " << expected;
  return success();
}

/// `value` has exactly the type of `reference`.
LogicalResult checkSameType(Operation *op, Value value, StringRef label,
                            Value reference, StringRef referenceLabel) {
  if (value.getType() != reference.getType())
    return op->emitOpError() << label << " type " << value.getType()
                             << " does not match " << referenceLabel
                             << " type " << reference.getType();
  return success();
}

/// `value` has the shape `expected`.
LogicalResult checkShape(Operation *op, Value value, StringRef label,
                         ArrayRef<int64_t> expected) {
  ArrayRef<int64_t> actual = tensorType(value).getShape();
  if (actual != expected)
    return op->emitOpError()
           << label << " shape " << shape::formatShape(actual)
           << " does not match expected " << shape::formatShape(expected);
  return success();
}

LogicalResult checkMinRank(Operation *op, Value value, StringRef label,
                           int64_t minRank) {
  int64_t rank = tensorType(value).getRank();
  if (rank < minRank)
    return op->emitOpError() << label << " must have rank >= " << minRank
                             << ", got " << rank;
  return success();
}

LogicalResult checkRank(Operation *op, Value value, StringRef label,
                        int64_t expectedRank) {
  int64_t rank = tensorType(value).getRank();
  if (rank != expectedRank)
    return op->emitOpError() << label << " must have rank " << expectedRank
                             << ", got " << rank;
  return success();
}

/// A probability-like attribute (dropout rate, Adam betas) in [0, 1).
LogicalResult checkUnitInterval(Operation *op, StringRef name, float value) {
  if (!(value >= 0.0f && value < 1.0f))
    return op->emitOpError() << name << " " << formatFloat(value)
                             << " is outside [0, 1)";
  return success();
}

LogicalResult checkEpsilon(Operation *op, float epsilon) {
  if (!(epsilon > 0.0f))
    return op->emitOpError() << "epsilon must be positive, got "
                             << formatFloat(epsilon);
  return success();
}

/// `x` (float, rank >= 1) and a `[D]` parameter with its element type, D
/// being the last dim of `x` (layer_norm's gamma and beta).
LogicalResult checkLastDimParam(Operation *op, Value x, Value param,
                                StringRef label) {
  if (failed(checkFloat(op, param, label)) ||
      failed(checkSameElementType(op, param, label, x, "'x'")))
    return failure();
  return checkShape(op, param, label, tensorType(x).getShape().back());
}

/// The shape of `x` without its last dim.
SmallVector<int64_t> withoutLastDim(Value x) {
  ArrayRef<int64_t> dims = tensorType(x).getShape();
  return SmallVector<int64_t>(dims.drop_back());
}

/// An elementwise op of one float input: `y` has the type of `x`.
LogicalResult verifyUnary(Operation *op, Value x, Value y) {
  if (failed(checkFloat(op, x, "'x'")))
    return failure();
  return checkSameType(op, y, "result", x, "'x'");
}

/// A gradient op `(input, dy) -> dx` where all three have one float type.
LogicalResult verifyUnaryGrad(Operation *op, Value input, StringRef inputLabel,
                              Value dy, Value dx) {
  if (failed(checkFloat(op, input, inputLabel)) ||
      failed(checkSameType(op, dy, "'dy'", input, inputLabel)))
    return failure();
  return checkSameType(op, dx, "result", input, inputLabel);
}

/// A binary elementwise op with NumPy broadcasting.
LogicalResult verifyBinary(Operation *op, Value a, Value b, Value c) {
  if (failed(checkFloat(op, a, "'a'")) || failed(checkFloat(op, b, "'b'")) ||
      failed(checkSameElementType(op, b, "'b'", a, "'a'")) ||
      failed(checkFloat(op, c, "result")) ||
      failed(checkSameElementType(op, c, "result", a, "'a'")))
    return failure();
  ArrayRef<int64_t> shapeA = tensorType(a).getShape();
  ArrayRef<int64_t> shapeB = tensorType(b).getShape();
  std::vector<int64_t> expected;
  std::string error = shape::broadcastShapes(shapeA, shapeB, expected);
  if (!error.empty())
    return op->emitOpError()
           << "broadcast: " << error << " (shapes " << shape::formatShape(shapeA)
           << " and " << shape::formatShape(shapeB) << ")";
  return checkShape(op, c, "result", expected);
}

/// reduce_sum / reduce_mean: sorted unique in-range axes; the result drops
/// the reduced dims, or keeps them as 1 with keep_dims.
LogicalResult verifyReduce(Operation *op, Value x, Value y,
                           ArrayRef<int64_t> axes, bool keepDims) {
  if (failed(checkFloat(op, x, "'x'")) || failed(checkFloat(op, y, "result")) ||
      failed(checkSameElementType(op, y, "result", x, "'x'")))
    return failure();
  ArrayRef<int64_t> dims = tensorType(x).getShape();
  int64_t rank = static_cast<int64_t>(dims.size());
  for (int64_t axis : axes) {
    if (axis < 0 || axis >= rank)
      return op->emitOpError() << "axis " << axis
                               << " is out of range for rank " << rank;
  }
  for (size_t i = 1; i < axes.size(); ++i) {
    if (axes[i - 1] >= axes[i])
      return op->emitOpError()
             << "axes " << shape::formatShape(axes)
             << " must be sorted and unique";
  }
  SmallVector<int64_t> expected;
  for (int64_t i = 0; i < rank; ++i) {
    if (!llvm::is_contained(axes, i))
      expected.push_back(dims[i]);
    else if (keepDims)
      expected.push_back(1);
  }
  return checkShape(op, y, "result", expected);
}

/// attention / attention_grad: every operand a float [B, H, S, Dh] tensor of
/// the type of q.
LogicalResult verifyAttentionOperands(Operation *op, Value q, Value k,
                                      Value v) {
  if (failed(checkFloat(op, q, "'q'")) || failed(checkRank(op, q, "'q'", 4)) ||
      failed(checkSameType(op, k, "'k'", q, "'q'")) ||
      failed(checkSameType(op, v, "'v'", q, "'q'")))
    return failure();
  return success();
}

//===----------------------------------------------------------------------===//
// Cost helpers
//===----------------------------------------------------------------------===//

int64_t elements(Value value) { return tensorElements(value.getType()); }

int64_t mul(int64_t a, int64_t b) { return shape::saturatingMul(a, b); }
int64_t add(int64_t a, int64_t b) { return shape::saturatingAdd(a, b); }

/// B·H·S·S and B·H·S·S·Dh of a [B, H, S, Dh] tensor; false for another rank.
bool attentionSizes(Value q, int64_t &scores, int64_t &scoresTimesHead) {
  auto type = llvm::dyn_cast<RankedTensorType>(q.getType());
  if (!type || type.getRank() != 4 || !type.hasStaticShape())
    return false;
  ArrayRef<int64_t> dims = type.getShape();
  scores = mul(mul(mul(dims[0], dims[1]), dims[2]), dims[2]);
  scoresTimesHead = mul(scores, dims[3]);
  return true;
}

} // namespace

//===----------------------------------------------------------------------===//
// Forward ops
//===----------------------------------------------------------------------===//

LogicalResult MatmulOp::verify() {
  Operation *op = getOperation();
  Value a = getA(), b = getB(), c = getC();
  if (failed(checkFloat(op, a, "'a'")) || failed(checkMinRank(op, a, "'a'", 2)) ||
      failed(checkFloat(op, b, "'b'")) || failed(checkMinRank(op, b, "'b'", 2)) ||
      failed(checkSameElementType(op, b, "'b'", a, "'a'")) ||
      failed(checkFloat(op, c, "result")) ||
      failed(checkSameElementType(op, c, "result", a, "'a'")))
    return failure();
  ArrayRef<int64_t> shapeA = tensorType(a).getShape();
  ArrayRef<int64_t> shapeB = tensorType(b).getShape();
  size_t rankA = shapeA.size(), rankB = shapeB.size();
  if (rankB != 2 && rankB != rankA)
    return emitOpError() << "'b' must have rank 2 or the rank of 'a' ("
                         << rankA << "), got " << rankB;
  ArrayRef<int64_t> batchA = shapeA.drop_back(2);
  if (rankB == rankA && batchA != shapeB.drop_back(2))
    return emitOpError() << "batch dims " << shape::formatShape(batchA)
                         << " vs " << shape::formatShape(shapeB.drop_back(2));
  int64_t m = getTransposeA() ? shapeA[rankA - 1] : shapeA[rankA - 2];
  int64_t k = getTransposeA() ? shapeA[rankA - 2] : shapeA[rankA - 1];
  int64_t kB = getTransposeB() ? shapeB[rankB - 1] : shapeB[rankB - 2];
  int64_t n = getTransposeB() ? shapeB[rankB - 2] : shapeB[rankB - 1];
  if (k != kB)
    return emitOpError() << "inner dims " << k << " vs " << kB;
  SmallVector<int64_t> expected(batchA);
  expected.append({m, n});
  return checkShape(op, c, "result", expected);
}

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
  return mul(mul(mul(mul(2, batch), m), n), k);
}

LogicalResult AddOp::verify() {
  return verifyBinary(getOperation(), getA(), getB(), getC());
}
LogicalResult SubOp::verify() {
  return verifyBinary(getOperation(), getA(), getB(), getC());
}
LogicalResult MulOp::verify() {
  return verifyBinary(getOperation(), getA(), getB(), getC());
}
LogicalResult DivOp::verify() {
  return verifyBinary(getOperation(), getA(), getB(), getC());
}

LogicalResult ReluOp::verify() {
  return verifyUnary(getOperation(), getX(), getY());
}
LogicalResult GeluOp::verify() {
  return verifyUnary(getOperation(), getX(), getY());
}
LogicalResult TanhOp::verify() {
  return verifyUnary(getOperation(), getX(), getY());
}
LogicalResult ExpOp::verify() {
  return verifyUnary(getOperation(), getX(), getY());
}

/// 8 per element, an estimate of the tanh form: x³ (2), 0.044715·x³ + x (2),
/// ·√(2/π) (1), tanh (1, counted as one op), 1 + t (1), 0.5·x·(…) (1, with
/// 0.5·x hoisted).
int64_t GeluOp::getFlops() { return mul(8, elements(getX())); }

LogicalResult SoftmaxOp::verify() {
  if (failed(verifyUnary(getOperation(), getX(), getY())))
    return failure();
  return checkMinRank(getOperation(), getX(), "'x'", 1);
}

/// 5 per element: row max, subtract, exp, row sum, divide.
int64_t SoftmaxOp::getFlops() { return mul(5, elements(getX())); }

LogicalResult LayerNormOp::verify() {
  Operation *op = getOperation();
  Value x = getX();
  if (failed(checkFloat(op, x, "'x'")) || failed(checkMinRank(op, x, "'x'", 1)) ||
      failed(checkLastDimParam(op, x, getGamma(), "'gamma'")) ||
      failed(checkLastDimParam(op, x, getBeta(), "'beta'")) ||
      failed(checkSameType(op, getY(), "result", x, "'x'")))
    return failure();
  return checkEpsilon(op, getEpsilon());
}

/// 8 per element of x: sum for the mean (1), subtract the mean (1), square
/// (1), sum of squares (1), multiply by rstd (1), by gamma (1), add beta (1),
/// and 1 for the per-row mean, rsqrt and division, bounded by one per element.
int64_t LayerNormOp::getFlops() { return mul(8, elements(getX())); }

LogicalResult EmbeddingOp::verify() {
  Operation *op = getOperation();
  Value table = getTable(), indices = getIndices(), y = getY();
  if (failed(checkFloat(op, table, "'table'")) ||
      failed(checkRank(op, table, "'table'", 2)) ||
      failed(checkIndex(op, indices, "'indices'")) ||
      failed(checkFloat(op, y, "result")) ||
      failed(checkSameElementType(op, y, "result", table, "'table'")))
    return failure();
  SmallVector<int64_t> expected(tensorType(indices).getShape());
  expected.push_back(tensorType(table).getShape()[1]);
  return checkShape(op, y, "result", expected);
}

/// 0: a gather moves bytes only.
int64_t EmbeddingOp::getFlops() { return 0; }

LogicalResult ReshapeOp::verify() {
  Operation *op = getOperation();
  Value x = getX(), y = getY();
  if (failed(checkTensor(op, x, "'x'", ElementKind::FloatOrIndex)) ||
      failed(checkTensor(op, y, "result", ElementKind::FloatOrIndex)) ||
      failed(checkSameElementType(op, y, "result", x, "'x'")))
    return failure();
  int64_t countX = elements(x), countY = elements(y);
  if (countX != countY)
    return emitOpError() << "result element count " << countY
                         << " does not match 'x' element count " << countX;
  return success();
}

/// 0: data movement only.
int64_t ReshapeOp::getFlops() { return 0; }

LogicalResult TransposeOp::verify() {
  Operation *op = getOperation();
  Value x = getX(), y = getY();
  if (failed(checkTensor(op, x, "'x'", ElementKind::FloatOrIndex)) ||
      failed(checkTensor(op, y, "result", ElementKind::FloatOrIndex)) ||
      failed(checkSameElementType(op, y, "result", x, "'x'")))
    return failure();
  ArrayRef<int64_t> dims = tensorType(x).getShape();
  ArrayRef<int64_t> permutation = getPermutation();
  int64_t rank = static_cast<int64_t>(dims.size());
  if (static_cast<int64_t>(permutation.size()) != rank)
    return emitOpError() << "permutation has " << permutation.size()
                         << " entries for rank " << rank;
  SmallVector<bool> seen(rank, false);
  SmallVector<int64_t> expected;
  for (int64_t source : permutation) {
    if (source < 0 || source >= rank || seen[source])
      return emitOpError() << "permutation "
                           << shape::formatShape(permutation)
                           << " is not a permutation of [0, " << rank << ")";
    seen[source] = true;
    expected.push_back(dims[source]);
  }
  return checkShape(op, y, "result", expected);
}

/// 0: data movement only.
int64_t TransposeOp::getFlops() { return 0; }

LogicalResult ReduceSumOp::verify() {
  return verifyReduce(getOperation(), getX(), getY(), getAxes(),
                      getKeepDims());
}

/// One add per element of x.
int64_t ReduceSumOp::getFlops() { return elements(getX()); }

LogicalResult ReduceMeanOp::verify() {
  return verifyReduce(getOperation(), getX(), getY(), getAxes(),
                      getKeepDims());
}

/// One add per element of x and one division per element of y.
int64_t ReduceMeanOp::getFlops() {
  return add(elements(getX()), elements(getY()));
}

LogicalResult BroadcastToOp::verify() {
  Operation *op = getOperation();
  Value x = getX(), y = getY();
  if (failed(checkTensor(op, x, "'x'", ElementKind::FloatOrIndex)) ||
      failed(checkTensor(op, y, "result", ElementKind::FloatOrIndex)) ||
      failed(checkSameElementType(op, y, "result", x, "'x'")))
    return failure();
  ArrayRef<int64_t> from = tensorType(x).getShape();
  ArrayRef<int64_t> to = tensorType(y).getShape();
  std::string error = shape::checkBroadcastsTo(from, to);
  if (!error.empty())
    return emitOpError() << "cannot broadcast 'x' shape "
                         << shape::formatShape(from) << " to result shape "
                         << shape::formatShape(to) << ": " << error;
  return success();
}

/// 0: data movement only.
int64_t BroadcastToOp::getFlops() { return 0; }

LogicalResult SumToOp::verify() {
  Operation *op = getOperation();
  Value x = getX(), y = getY();
  if (failed(checkFloat(op, x, "'x'")) || failed(checkFloat(op, y, "result")) ||
      failed(checkSameElementType(op, y, "result", x, "'x'")))
    return failure();
  ArrayRef<int64_t> from = tensorType(y).getShape();
  ArrayRef<int64_t> to = tensorType(x).getShape();
  std::string error = shape::checkBroadcastsTo(from, to);
  if (!error.empty())
    return emitOpError() << "result shape " << shape::formatShape(from)
                         << " does not broadcast to 'x' shape "
                         << shape::formatShape(to) << ": " << error;
  return success();
}

/// One add per element of x.
int64_t SumToOp::getFlops() { return elements(getX()); }

LogicalResult CrossEntropyOp::verify() {
  Operation *op = getOperation();
  Value logits = getLogits(), labels = getLabels(), loss = getLoss();
  if (failed(checkFloat(op, logits, "'logits'")) ||
      failed(checkMinRank(op, logits, "'logits'", 1)) ||
      failed(checkIndex(op, labels, "'labels'")) ||
      failed(checkShape(op, labels, "'labels'", withoutLastDim(logits))) ||
      failed(checkFloat(op, loss, "result")) ||
      failed(checkSameElementType(op, loss, "result", logits, "'logits'")))
    return failure();
  return checkShape(op, loss, "result", {});
}

/// 5 per logit: row max, subtract, exp, row sum, pick the label's term; the
/// log and the mean over positions (a few per row) are not counted.
int64_t CrossEntropyOp::getFlops() { return mul(5, elements(getLogits())); }

LogicalResult MseOp::verify() {
  Operation *op = getOperation();
  Value a = getA(), loss = getLoss();
  if (failed(checkFloat(op, a, "'a'")) ||
      failed(checkSameType(op, getB(), "'b'", a, "'a'")) ||
      failed(checkFloat(op, loss, "result")) ||
      failed(checkSameElementType(op, loss, "result", a, "'a'")))
    return failure();
  return checkShape(op, loss, "result", {});
}

/// 3 per element: subtract, square, sum.
int64_t MseOp::getFlops() { return mul(3, elements(getA())); }

LogicalResult DropoutOp::verify() {
  if (failed(verifyUnary(getOperation(), getX(), getY())))
    return failure();
  return checkUnitInterval(getOperation(), "rate", getRate());
}

/// 2 per element: compare with the rate, multiply by keep/(1-rate). The
/// Philox rounds are not counted.
int64_t DropoutOp::getFlops() { return mul(2, elements(getX())); }

LogicalResult AttentionOp::verify() {
  Operation *op = getOperation();
  if (failed(verifyAttentionOperands(op, getQ(), getK(), getV())))
    return failure();
  return checkSameType(op, getO(), "result", getQ(), "'q'");
}

/// 4·B·H·S·S·Dh for the two GEMMs (q·kᵀ and p·v) plus 5·B·H·S·S for the
/// softmax. The full S×S square is counted even when causal: the masked half
/// is what kernels skip at best, and the planner wants an upper bound.
int64_t AttentionOp::getFlops() {
  int64_t scores = 0, scoresTimesHead = 0;
  if (!attentionSizes(getQ(), scores, scoresTimesHead))
    return 0;
  return add(mul(4, scoresTimesHead), mul(5, scores));
}

LogicalResult ConstantOp::verify() {
  return checkFloat(getOperation(), getY(), "result");
}

/// 0: the fill is counted as bytes written.
int64_t ConstantOp::getFlops() { return 0; }

//===----------------------------------------------------------------------===//
// Gradient ops
//===----------------------------------------------------------------------===//

LogicalResult ReluGradOp::verify() {
  return verifyUnaryGrad(getOperation(), getX(), "'x'", getDy(), getDx());
}

/// 1 per element: a select.
int64_t ReluGradOp::getFlops() { return elements(getX()); }

LogicalResult GeluGradOp::verify() {
  return verifyUnaryGrad(getOperation(), getX(), "'x'", getDy(), getDx());
}

/// 16 per element, an estimate: the forward's inner polynomial and tanh (6)
/// plus the derivative 0.5·(1+t) + 0.5·x·(1-t²)·√(2/π)·(1+3·0.044715·x²) (9)
/// and the product with dy (1).
int64_t GeluGradOp::getFlops() { return mul(16, elements(getX())); }

LogicalResult TanhGradOp::verify() {
  return verifyUnaryGrad(getOperation(), getY(), "'y'", getDy(), getDx());
}

/// 3 per element: y², 1 - y², product with dy.
int64_t TanhGradOp::getFlops() { return mul(3, elements(getY())); }

LogicalResult SoftmaxGradOp::verify() {
  if (failed(verifyUnaryGrad(getOperation(), getY(), "'y'", getDy(), getDx())))
    return failure();
  return checkMinRank(getOperation(), getY(), "'y'", 1);
}

/// 4 per element: dy·y, row sum, subtract, multiply by y.
int64_t SoftmaxGradOp::getFlops() { return mul(4, elements(getY())); }

LogicalResult LayerNormGradOp::verify() {
  Operation *op = getOperation();
  Value x = getX(), gamma = getGamma();
  if (failed(checkFloat(op, x, "'x'")) || failed(checkMinRank(op, x, "'x'", 1)) ||
      failed(checkLastDimParam(op, x, gamma, "'gamma'")) ||
      failed(checkSameType(op, getDy(), "'dy'", x, "'x'")) ||
      failed(checkSameType(op, getDx(), "result 'dx'", x, "'x'")) ||
      failed(checkSameType(op, getDgamma(), "result 'dgamma'", gamma,
                           "'gamma'")) ||
      failed(checkSameType(op, getDbeta(), "result 'dbeta'", gamma, "'gamma'")))
    return failure();
  return checkEpsilon(op, getEpsilon());
}

/// 16 per element of x, an estimate: recompute mean and rstd (4), x̂ (2),
/// dgamma and dbeta accumulation (3), dx = rstd·(g - mean(g) - x̂·mean(g·x̂))
/// with g = dy·gamma (7).
int64_t LayerNormGradOp::getFlops() { return mul(16, elements(getX())); }

LogicalResult EmbeddingGradOp::verify() {
  Operation *op = getOperation();
  Value indices = getIndices(), dy = getDy(), dtable = getDtable();
  if (failed(checkIndex(op, indices, "'indices'")) ||
      failed(checkFloat(op, dy, "'dy'")) ||
      failed(checkFloat(op, dtable, "result")) ||
      failed(checkRank(op, dtable, "result", 2)) ||
      failed(checkSameElementType(op, dtable, "result", dy, "'dy'")))
    return failure();
  SmallVector<int64_t> expected(tensorType(indices).getShape());
  expected.push_back(tensorType(dtable).getShape()[1]);
  return checkShape(op, dy, "'dy'", expected);
}

/// One add per element of dy (the scatter-add).
int64_t EmbeddingGradOp::getFlops() { return elements(getDy()); }

LogicalResult CrossEntropyGradOp::verify() {
  Operation *op = getOperation();
  Value logits = getLogits(), labels = getLabels(), dloss = getDloss();
  if (failed(checkFloat(op, logits, "'logits'")) ||
      failed(checkMinRank(op, logits, "'logits'", 1)) ||
      failed(checkIndex(op, labels, "'labels'")) ||
      failed(checkShape(op, labels, "'labels'", withoutLastDim(logits))) ||
      failed(checkFloat(op, dloss, "'dloss'")) ||
      failed(checkSameElementType(op, dloss, "'dloss'", logits, "'logits'")) ||
      failed(checkShape(op, dloss, "'dloss'", {})))
    return failure();
  return checkSameType(op, getDlogits(), "result", logits, "'logits'");
}

/// 7 per logit: the softmax (5), subtract the one-hot, scale by
/// dloss/positions.
int64_t CrossEntropyGradOp::getFlops() {
  return mul(7, elements(getLogits()));
}

LogicalResult MseGradOp::verify() {
  Operation *op = getOperation();
  Value a = getA(), dloss = getDloss();
  if (failed(checkFloat(op, a, "'a'")) ||
      failed(checkSameType(op, getB(), "'b'", a, "'a'")) ||
      failed(checkFloat(op, dloss, "'dloss'")) ||
      failed(checkSameElementType(op, dloss, "'dloss'", a, "'a'")) ||
      failed(checkShape(op, dloss, "'dloss'", {})))
    return failure();
  return checkSameType(op, getDa(), "result", a, "'a'");
}

/// 2 per element: subtract, multiply by 2·dloss/numel.
int64_t MseGradOp::getFlops() { return mul(2, elements(getA())); }

LogicalResult AttentionGradOp::verify() {
  Operation *op = getOperation();
  Value q = getQ();
  if (failed(verifyAttentionOperands(op, q, getK(), getV())) ||
      failed(checkSameType(op, getDout(), "'dout'", q, "'q'")) ||
      failed(checkSameType(op, getDq(), "result 'dq'", q, "'q'")) ||
      failed(checkSameType(op, getDk(), "result 'dk'", q, "'q'")) ||
      failed(checkSameType(op, getDv(), "result 'dv'", q, "'q'")))
    return failure();
  return success();
}

/// 10·B·H·S·S·Dh for five GEMMs (scores, dv, dp, dq, dk) plus 9·B·H·S·S
/// (softmax recompute 5, softmax backward 4); the full square even if causal.
int64_t AttentionGradOp::getFlops() {
  int64_t scores = 0, scoresTimesHead = 0;
  if (!attentionSizes(getQ(), scores, scoresTimesHead))
    return 0;
  return add(mul(10, scoresTimesHead), mul(9, scores));
}

//===----------------------------------------------------------------------===//
// Optimizer ops
//===----------------------------------------------------------------------===//

LogicalResult SgdUpdateOp::verify() {
  Operation *op = getOperation();
  Value param = getParam();
  if (failed(checkFloat(op, param, "'param'")) ||
      failed(checkSameType(op, getGrad(), "'grad'", param, "'param'")) ||
      failed(checkSameType(op, getMomentumBuffer(), "'momentum_buffer'", param,
                           "'param'")) ||
      failed(checkSameType(op, getNewParam(), "result 'new_param'", param,
                           "'param'")) ||
      failed(checkSameType(op, getNewMomentumBuffer(),
                           "result 'new_momentum_buffer'", param, "'param'")))
    return failure();
  return success();
}

/// 6 per element: grad + wd·param (2), μ·m + g (2), param - lr·m' (2).
int64_t SgdUpdateOp::getFlops() { return mul(6, elements(getParam())); }

LogicalResult AdamwUpdateOp::verify() {
  Operation *op = getOperation();
  Value param = getParam();
  if (failed(checkFloat(op, param, "'param'")) ||
      failed(checkSameType(op, getGrad(), "'grad'", param, "'param'")) ||
      failed(checkSameType(op, getM(), "'m'", param, "'param'")) ||
      failed(checkSameType(op, getV(), "'v'", param, "'param'")) ||
      failed(checkSameType(op, getNewParam(), "result 'new_param'", param,
                           "'param'")) ||
      failed(checkSameType(op, getNewM(), "result 'new_m'", param,
                           "'param'")) ||
      failed(checkSameType(op, getNewV(), "result 'new_v'", param,
                           "'param'")) ||
      failed(checkUnitInterval(op, "beta1", getBeta1())) ||
      failed(checkUnitInterval(op, "beta2", getBeta2())))
    return failure();
  return success();
}

/// 15 per element: decay (1), m' (3), v' (4), two bias corrections (2),
/// sqrt (1), + eps (1), divide (1), lr· and subtract (2).
int64_t AdamwUpdateOp::getFlops() { return mul(15, elements(getParam())); }

} // namespace remat::graph

#define GET_OP_CLASSES
#include "ir/GraphOps.cpp.inc"
