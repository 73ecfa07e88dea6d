//===- GraphDialect.cpp - the graph dialect ---------------------*- C++ -*-===//
//
// Registers the ops of the graph dialect.
//
//===----------------------------------------------------------------------===//

#include "ir/GraphDialect.h"

#include "ir/GraphOps.h"

#include "ir/GraphDialect.cpp.inc"

namespace remat::graph {

void GraphDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "ir/GraphOps.cpp.inc"
      >();
}

} // namespace remat::graph
