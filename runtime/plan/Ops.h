//===- Ops.h - Checking a plan step against its op's definition -*- C++ -*-===//
//
// The loader's view of every op: operand and result counts, typed
// attributes with their defaults, and the type rule, all from the op table
// generated from ir/GraphOps.td (ops/OpTable.h, ops/ShapeRules.h). The
// loader runs these checks on every step before anything executes, so a
// kernel can trust its shapes.
//
//===----------------------------------------------------------------------===//
#ifndef REMAT_RUNTIME_OPS_H
#define REMAT_RUNTIME_OPS_H

#include "ops/ShapeRules.h"
#include "runtime/plan/PlanFormat.h"

#include <string>
#include <vector>

namespace remat::runtime {

using ops::OpAttrs;
using ops::TensorType;

/// Number of operands and results of `op`.
struct OpArity {
  int numInputs;
  int numOutputs;
};
OpArity opArity(OpKind op);

/// True for the optimizer updates, whose results must be their state
/// operands' buffers (in place).
bool isOptimizerOp(OpKind op);

/// Parses and type-checks the attributes of `op`: unknown names, missing
/// required attributes and wrong types are errors; attributes not given
/// take their ODS defaults. Throws PlanError with `where` as the message
/// prefix.
OpAttrs parseOpAttrs(OpKind op, const nlohmann::json &attrs,
                     const std::string &where);

/// Checks dtypes and shapes of operands and results against the op's type
/// rule. Counts must already match opArity. Throws PlanError with `where`
/// as the prefix, e.g. "input 1 has shape [64,32] but expects K=64".
void checkOpTypes(OpKind op, const OpAttrs &attrs,
                  const std::vector<TensorType> &inputs,
                  const std::vector<TensorType> &outputs,
                  const std::string &where);

using ops::broadcastShapes;

} // namespace remat::runtime

#endif // REMAT_RUNTIME_OPS_H
