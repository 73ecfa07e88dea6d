//===- CostOpInterface.h - FLOPs and bytes of a graph op --------*- C++ -*-===//
//
// The cost-model interface and the saturating size helpers its default
// methods use.
//
//===----------------------------------------------------------------------===//

#ifndef REMAT_IR_INTERFACES_COSTOPINTERFACE_H
#define REMAT_IR_INTERFACES_COSTOPINTERFACE_H

#include "mlir/IR/OpDefinition.h"

#include <cstdint>

namespace remat::graph {

/// Bytes of one element: f32 4, f16/bf16 2, i32 4, i64 8; other integer and
/// float widths round up to whole bytes.
int64_t elementByteSize(mlir::Type elementType);

/// Elements of a statically shaped ranked tensor (saturating at INT64_MAX);
/// 0 for any other type.
int64_t tensorElements(mlir::Type type);

/// Bytes of a statically shaped ranked tensor (saturating); 0 otherwise.
int64_t tensorBytes(mlir::Type type);

/// Sum of the sizes of all operands / all results (saturating).
int64_t operandBytes(mlir::Operation *op);
int64_t resultBytes(mlir::Operation *op);

/// Elements of the first result: the FLOPs of an elementwise op.
int64_t firstResultElements(mlir::Operation *op);

} // namespace remat::graph

#include "ir/Interfaces/CostOpInterface.h.inc"

#endif // REMAT_IR_INTERFACES_COSTOPINTERFACE_H
