//===- OpAttrs.cpp - An op's attributes from JSON ------------------------===//
#include "ops/ShapeRules.h"

namespace remat::ops {

using nlohmann::json;

namespace {

[[noreturn]] void fail(const std::string &message) {
  throw TypeRuleError(message);
}

const char *attrTypeName(AttrType t) {
  switch (t) {
  case AttrType::Bool:
    return "a boolean";
  case AttrType::F32:
    return "a number";
  case AttrType::I64:
    return "an integer";
  case AttrType::I64Array:
    return "an array of integers";
  }
  return "?";
}

bool hasType(const json &v, AttrType t) {
  switch (t) {
  case AttrType::Bool:
    return v.is_boolean();
  case AttrType::F32:
    return v.is_number();
  case AttrType::I64:
    return v.is_number_integer();
  case AttrType::I64Array:
    if (!v.is_array())
      return false;
    for (const json &e : v)
      if (!e.is_number_integer())
        return false;
    return true;
  }
  return false;
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

OpAttrs parseAttrs(OpKind op, const json &attrs) {
  const OpInfo &info = opInfo(op);
  if (!attrs.is_null() && !attrs.is_object())
    fail("attrs must be an object");
  if (attrs.is_object())
    for (auto it = attrs.begin(); it != attrs.end(); ++it) {
      bool known = false;
      for (const AttrInfo &a : info.attrs)
        known |= it.key() == a.name;
      if (!known)
        fail("unknown attribute '" + it.key() + "' for op '" + info.name +
             "'");
    }
  for (const AttrInfo &a : info.attrs) {
    bool present = attrs.is_object() && attrs.contains(a.name);
    if (!present && a.required)
      fail(std::string("missing attribute '") + a.name + "' (" +
           attrTypeName(a.type) + ")");
    if (present && !hasType(attrs[a.name], a.type))
      fail(std::string("attribute '") + a.name + "' must be " +
           attrTypeName(a.type) + ", got " + attrs[a.name].dump());
  }
  OpAttrs parsed;
  setDefaultAttrs(op, parsed);
  if (attrs.is_object()) {
#define REMAT_OP_ATTR(Kind, name, field, type, required, defaultValue)         \
  if (op == OpKind::Kind && attrs.contains(name))                              \
    read(attrs[name], parsed.field);
#include "ops/generated/OpTable.inc"
  }
  checkAttrValues(op, parsed);
  return parsed;
}

} // namespace remat::ops
