//===- OpTable.cpp - The generated op table and dtype helpers ------------===//
#include "ops/OpTable.h"

#include <iterator>
#include <limits>

namespace remat::ops {

namespace {

constexpr const char *kDTypeNames[] = {"f32", "f16", "bf16", "i32", "i64",
                                       "f64"};

std::vector<OpInfo> buildTable() {
  std::vector<OpInfo> table;
#define REMAT_OP(Kind, name, inputs, outputs, rule, family, inPlace,           \
                 inModelFormat, resultTypeGiven, updatesParam, updatesState,   \
                 averages, autocast, bf16Native)                               \
  table.push_back(OpInfo{OpKind::Kind,                                         \
                         name,                                                 \
                         inputs,                                               \
                         outputs,                                              \
                         ShapeRule::rule,                                      \
                         KernelFamily::family,                                 \
                         inPlace,                                              \
                         inModelFormat,                                        \
                         resultTypeGiven,                                      \
                         updatesParam,                                         \
                         updatesState,                                         \
                         averages,                                             \
                         Autocast::autocast,                                   \
                         bf16Native,                                           \
                         {},                                                   \
                         {},                                                   \
                         {}});
#include "ops/generated/OpTable.inc"
#define REMAT_OP_OPERAND(Kind, index, name)                                    \
  table[size_t(OpKind::Kind)].operandNames.push_back(name);
#include "ops/generated/OpTable.inc"
#define REMAT_OP_RESULT(Kind, index, name)                                     \
  table[size_t(OpKind::Kind)].resultNames.push_back(name);
#include "ops/generated/OpTable.inc"
#define REMAT_OP_ATTR(Kind, name, field, type, required, defaultValue)         \
  table[size_t(OpKind::Kind)].attrs.push_back(                                 \
      AttrInfo{name, AttrType::type, required, #defaultValue});
#include "ops/generated/OpTable.inc"
  return table;
}

} // namespace

const OpInfo &opInfo(OpKind op) {
  static const std::vector<OpInfo> table = buildTable();
  return table[size_t(op)];
}

const char *opName(OpKind op) { return opInfo(op).name; }

std::optional<OpKind> parseOpKind(const std::string &name) {
  for (int k = 0; k < kNumOpKinds; ++k)
    if (name == opInfo(OpKind(k)).name)
      return OpKind(k);
  return std::nullopt;
}

const char *kernelFamilyName(KernelFamily family) {
  switch (family) {
#define REMAT_KERNEL_FAMILY(Family)                                            \
  case KernelFamily::Family:                                                   \
    return #Family;
#include "ops/generated/OpTable.inc"
  }
  return "?";
}

void setDefaultAttrs(OpKind op, OpAttrs &attrs) {
#define REMAT_OP_ATTR(Kind, name, field, type, required, defaultValue)         \
  if (op == OpKind::Kind && !required)                                         \
    attrs.field = defaultValue;
#include "ops/generated/OpTable.inc"
}

const char *dtypeName(DType dtype) { return kDTypeNames[int(dtype)]; }

std::optional<DType> parseDType(const std::string &name) {
  for (size_t i = 0; i < std::size(kDTypeNames); ++i)
    if (name == kDTypeNames[i])
      return DType(i);
  return std::nullopt;
}

std::string dtypeNames() {
  std::string names;
  for (const char *name : kDTypeNames)
    names += (names.empty() ? "" : "|") + std::string(name);
  return names;
}

uint64_t dtypeSize(DType dtype) {
  switch (dtype) {
  case DType::F32:
  case DType::I32:
    return 4;
  case DType::F16:
  case DType::BF16:
    return 2;
  case DType::I64:
  case DType::F64:
    return 8;
  }
  return 0;
}

bool isFloatDType(DType d) {
  return d == DType::F32 || d == DType::F16 || d == DType::BF16 ||
         d == DType::F64;
}
bool isIndexDType(DType d) { return d == DType::I32 || d == DType::I64; }

std::string formatShape(const Shape &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? "," : "") + std::to_string(shape[i]);
  return s + "]";
}

std::optional<uint64_t> checkedNumElements(const Shape &shape) {
  uint64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0)
      return std::nullopt;
    if (d != 0 && n > std::numeric_limits<uint64_t>::max() / uint64_t(d))
      return std::nullopt;
    n *= uint64_t(d);
  }
  return n;
}

} // namespace remat::ops
