//===- GraphDialect.h - the graph dialect -----------------------*- C++ -*-===//
//
// Declares remat::graph::GraphDialect (generated from GraphDialect.td).
//
//===----------------------------------------------------------------------===//

#ifndef REMAT_IR_GRAPHDIALECT_H
#define REMAT_IR_GRAPHDIALECT_H

#include "mlir/IR/Dialect.h"

#include "ir/GraphDialect.h.inc"

#endif // REMAT_IR_GRAPHDIALECT_H
