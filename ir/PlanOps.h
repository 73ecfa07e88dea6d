//===- PlanOps.h - ops of the plan dialect ----------------------*- C++ -*-===//
//
// Declares plan.arena, plan.buffer, plan.step and plan.free (generated from
// PlanOps.td). docs/plan-format.md is the file these ops serialize to.
//
//===----------------------------------------------------------------------===//

#ifndef REMAT_IR_PLANOPS_H
#define REMAT_IR_PLANOPS_H

#include "ir/PlanDialect.h"

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/RegionKindInterface.h"
#include "mlir/IR/SymbolTable.h"

#define GET_OP_CLASSES
#include "ir/PlanOps.h.inc"

#endif // REMAT_IR_PLANOPS_H
