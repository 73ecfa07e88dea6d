//===- GraphDialect.h - the graph dialect -----------------------*- C++ -*-===//
//
// Declares remat::graph::GraphDialect (generated from GraphDialect.td).
//
//===----------------------------------------------------------------------===//

#ifndef REMAT_IR_GRAPHDIALECT_H
#define REMAT_IR_GRAPHDIALECT_H

#include "mlir/IR/Dialect.h"

#include "ir/GraphDialect.h.inc"

namespace remat::graph {
/// The discardable attribute naming the block repetition a graph op belongs
/// to ("h.3": repetition 3 of the model's block call `h`). The importer sets
/// it on forward ops, autodiff copies it to the ops of their gradients, and
/// the planner groups by it (per-block checkpointing, chains of blocks).
inline constexpr const char *kBlockAttr = "remat.block";
} // namespace remat::graph

#endif // REMAT_IR_GRAPHDIALECT_H
