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

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#define GET_OP_CLASSES
#include "ir/GraphOps.h.inc"

#endif // REMAT_IR_GRAPHOPS_H
