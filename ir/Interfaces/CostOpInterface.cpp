//===- CostOpInterface.cpp - FLOPs and bytes of a graph op ------*- C++ -*-===//

#include "ir/Interfaces/CostOpInterface.h"

#include "ir/ShapeUtils.h"

#include "mlir/IR/BuiltinTypes.h"

namespace remat::graph {

int64_t elementByteSize(mlir::Type elementType) {
  if (!elementType || !elementType.isIntOrFloat())
    return 0;
  return (static_cast<int64_t>(elementType.getIntOrFloatBitWidth()) + 7) / 8;
}

int64_t tensorElements(mlir::Type type) {
  auto tensor = llvm::dyn_cast_or_null<mlir::RankedTensorType>(type);
  if (!tensor || !tensor.hasStaticShape())
    return 0;
  return shape::saturatingElementCount(tensor.getShape());
}

int64_t tensorBytes(mlir::Type type) {
  auto tensor = llvm::dyn_cast_or_null<mlir::RankedTensorType>(type);
  if (!tensor)
    return 0;
  return shape::saturatingMul(tensorElements(type),
                              elementByteSize(tensor.getElementType()));
}

int64_t operandBytes(mlir::Operation *op) {
  int64_t total = 0;
  for (mlir::Type type : op->getOperandTypes())
    total = shape::saturatingAdd(total, tensorBytes(type));
  return total;
}

int64_t resultBytes(mlir::Operation *op) {
  int64_t total = 0;
  for (mlir::Type type : op->getResultTypes())
    total = shape::saturatingAdd(total, tensorBytes(type));
  return total;
}

int64_t firstResultElements(mlir::Operation *op) {
  if (op->getNumResults() == 0)
    return 0;
  return tensorElements(op->getResult(0).getType());
}

} // namespace remat::graph

#include "ir/Interfaces/CostOpInterface.cpp.inc"
