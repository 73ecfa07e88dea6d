//===- Ops.cpp - Checking a plan step against its op's definition ----===//
#include "runtime/Ops.h"

namespace remat::runtime {

using nlohmann::json;

namespace {

const char *attrTypeName(ops::AttrType t) {
  switch (t) {
  case ops::AttrType::Bool:
    return "a boolean";
  case ops::AttrType::F32:
    return "a number";
  case ops::AttrType::I64:
    return "an integer";
  case ops::AttrType::I64Array:
    return "an array of integers";
  }
  return "?";
}

bool hasType(const json &v, ops::AttrType t) {
  switch (t) {
  case ops::AttrType::Bool:
    return v.is_boolean();
  case ops::AttrType::F32:
    return v.is_number();
  case ops::AttrType::I64:
    return v.is_number_integer();
  case ops::AttrType::I64Array:
    if (!v.is_array())
      return false;
    for (const json &e : v)
      if (!e.is_number_integer())
        return false;
    return true;
  }
  return false;
}

[[noreturn]] void fail(const std::string &where, const std::string &msg) {
  throw PlanError(where + ": " + msg);
}

// Readers of one attribute value by its C++ field type.
void read(const json &v, bool &out) { out = v.get<bool>(); }
void read(const json &v, float &out) { out = v.get<float>(); }
void read(const json &v, uint64_t &out) {
  out = v.is_number_unsigned() ? v.get<uint64_t>() : uint64_t(v.get<int64_t>());
}
void read(const json &v, std::vector<int64_t> &out) {
  out = v.get<std::vector<int64_t>>();
}

} // namespace

OpArity opArity(OpKind op) {
  const ops::OpInfo &info = ops::opInfo(op);
  return {info.numInputs, info.numOutputs};
}

bool isOptimizerOp(OpKind op) {
  return op == OpKind::SgdUpdate || op == OpKind::AdamwUpdate;
}

OpAttrs parseOpAttrs(OpKind op, const json &attrs, const std::string &where) {
  const ops::OpInfo &info = ops::opInfo(op);
  if (!attrs.is_null() && !attrs.is_object())
    fail(where, "attrs must be an object");
  if (attrs.is_object())
    for (auto it = attrs.begin(); it != attrs.end(); ++it) {
      bool known = false;
      for (const ops::AttrInfo &a : info.attrs)
        known |= it.key() == a.name;
      if (!known)
        fail(where, "unknown attribute '" + it.key() + "' for op '" +
                        info.name + "'");
    }
  for (const ops::AttrInfo &a : info.attrs) {
    bool present = attrs.is_object() && attrs.contains(a.name);
    if (!present && a.required)
      fail(where, std::string("missing attribute '") + a.name + "' (" +
                      attrTypeName(a.type) + ")");
    if (present && !hasType(attrs[a.name], a.type))
      fail(where, std::string("attribute '") + a.name + "' must be " +
                      attrTypeName(a.type) + ", got " + attrs[a.name].dump());
  }
  OpAttrs parsed;
  ops::setDefaultAttrs(op, parsed);
  if (attrs.is_object()) {
#define REMAT_OP_ATTR(Kind, name, field, type, required, defaultValue)         \
  if (op == OpKind::Kind && attrs.contains(name))                              \
    read(attrs[name], parsed.field);
#include "ops/generated/OpTable.inc"
  }
  try {
    ops::checkAttrValues(op, parsed);
  } catch (const ops::TypeRuleError &e) {
    fail(where, e.what());
  }
  return parsed;
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
