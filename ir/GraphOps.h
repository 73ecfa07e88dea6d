//===- GraphOps.h - ops of the graph dialect --------------------*- C++ -*-===//
//
// Declares the graph ops (generated from GraphOps.td) with their cost and
// gradient interfaces. docs/ops.md is the contract for every op.
//
//===----------------------------------------------------------------------===//

#ifndef REMAT_IR_GRAPHOPS_H
#define REMAT_IR_GRAPHOPS_H

#include "ir/GraphDialect.h"
#include "ir/Interfaces/CostOpInterface.h"
#include "ir/Interfaces/GradientOpInterface.h"
#include "ops/OpTable.h"

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace remat::graph {
/// The dtype of a tensor's element type (f32, f16, bf16, i32, i64), or
/// nullopt for a type remat does not compute.
std::optional<ops::DType> dtypeOf(mlir::Type element);

/// The verifier of every graph op: operand and result types against the
/// op's type rule (ops/ShapeRules.h) and attribute ranges, with messages
/// that name the operands ("'b' has shape [5,3] but expects K=4 ...").
mlir::LogicalResult verifyByTypeRule(mlir::Operation *op);
} // namespace remat::graph

#define GET_OP_CLASSES
#include "ir/GraphOps.h.inc"

#endif // REMAT_IR_GRAPHOPS_H
