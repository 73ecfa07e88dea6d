//===- Ops.cpp - Checking a plan step against its op's definition ----===//
#include "runtime/plan/Ops.h"

namespace remat::runtime {

using nlohmann::json;

namespace {

[[noreturn]] void fail(const std::string &where, const std::string &msg) {
  throw PlanError(where + ": " + msg);
}

} // namespace

OpArity opArity(OpKind op) {
  const ops::OpInfo &info = ops::opInfo(op);
  return {info.numInputs, info.numOutputs};
}

bool isOptimizerOp(OpKind op) { return ops::opInfo(op).updatesParam; }

OpAttrs parseOpAttrs(OpKind op, const json &attrs, const std::string &where) {
  try {
    return ops::parseAttrs(op, attrs);
  } catch (const ops::TypeRuleError &e) {
    fail(where, e.what());
  }
}

void checkOpTypes(OpKind op, const OpAttrs &attrs,
                  const std::vector<TensorType> &ins,
                  const std::vector<TensorType> &outs,
                  const std::string &where) {
  try {
    ops::checkTypes(op, attrs, {ins, {}}, {outs, {}});
  } catch (const ops::TypeRuleError &e) {
    fail(where, e.what());
  }
}

} // namespace remat::runtime
