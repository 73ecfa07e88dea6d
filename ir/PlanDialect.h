//===- PlanDialect.h - the plan dialect -------------------------*- C++ -*-===//
//
// Declares remat::plan::PlanDialect (generated from PlanDialect.td).
//
//===----------------------------------------------------------------------===//

#ifndef REMAT_IR_PLANDIALECT_H
#define REMAT_IR_PLANDIALECT_H

#include "mlir/IR/Dialect.h"

#include "ir/PlanDialect.h.inc"

#endif // REMAT_IR_PLANDIALECT_H
