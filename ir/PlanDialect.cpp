//===- PlanDialect.cpp - the plan dialect -----------------------*- C++ -*-===//
//
// Registers the ops of the plan dialect.
//
//===----------------------------------------------------------------------===//

#include "ir/PlanDialect.h"

#include "ir/GraphDialect.h"
#include "ir/PlanOps.h"

#include "ir/PlanDialect.cpp.inc"

namespace remat::plan {

void PlanDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "ir/PlanOps.cpp.inc"
      >();
}

} // namespace remat::plan
