//===- GraphOps.cpp - verifiers and costs of the graph ops ------*- C++ -*-===//
//
// The verifier every graph op shares (its type rule from ops/ShapeRules.h,
// the one implementation the model reader and the plan loader use too) and
// the helpers of the FLOP counts that the ops' records state (`flops` in
// ir/Graph*Ops.td) where they are not one operation per output element.
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
           << label << " must be a tensor of f32, f16, bf16, i32, i64 or f64, got "
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
  if (element.isF64())
    return ops::DType::F64;
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

/// Whether an update is sharded (ZeRO-1): `shards` > 1 (the optimizer pass
/// leaves the attribute out when it is 1). Its FLOPs are then per rank,
/// over its slice of the state.
template <typename UpdateOp> bool isSharded(UpdateOp op) {
  mlir::IntegerAttr shards = op.getShardsAttr();
  return shards && shards.getInt() > 1;
}

} // namespace remat::graph

#define GET_OP_CLASSES
#include "ir/GraphOps.cpp.inc"
