//===- ModelGraph.cpp - The flattened model's types and queries -----------===//
//
// The element types and value types of the model format, the graph's
// queries (values reaching the loss, result types by the type rules, the
// flat JSON form) and loadModel, which runs the reader of
// compiler/json/ModelReader.h.
//
//===----------------------------------------------------------------------===//

#include "compiler/ModelGraph.h"

#include "compiler/json/ModelReader.h"
#include "ops/ShapeRules.h"

#include <algorithm>

using nlohmann::json;

namespace remat::model {

//===----------------------------------------------------------------------===//
// Types
//===----------------------------------------------------------------------===//

bool isFloatDType(const std::string &d) {
  auto dtype = ops::parseDType(d);
  return dtype && ops::isFloatDType(*dtype);
}
bool isIndexDType(const std::string &d) {
  auto dtype = ops::parseDType(d);
  return dtype && ops::isIndexDType(*dtype);
}

int64_t dtypeBytes(const std::string &d) {
  auto dtype = ops::parseDType(d);
  return dtype ? int64_t(ops::dtypeSize(*dtype)) : 0;
}

/// Products stay below 2^62 so that byte counts and sums of a few of them
/// never overflow int64.
static constexpr int64_t kMaxElements = int64_t(1) << 62;

int64_t ValueType::numElements() const {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d <= 0)
      throw std::overflow_error("dimension " + std::to_string(d) +
                                " is not positive");
    if (n > kMaxElements / d)
      throw std::overflow_error("shape " + str() +
                                " has more than 2^62 elements");
    n *= d;
  }
  return n;
}

int64_t ValueType::bytes() const {
  int64_t n = numElements();
  int64_t b = dtypeBytes(dtype);
  if (n > kMaxElements / std::max<int64_t>(b, 1))
    throw std::overflow_error("shape " + str() + " has more than 2^62 bytes");
  return n * b;
}

static std::string shapeStr(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

std::string ValueType::str() const { return dtype + shapeStr(shape); }

int ModelGraph::findValue(const std::string &name) const {
  for (size_t i = 0; i < values.size(); ++i)
    if (values[i].name == name)
      return static_cast<int>(i);
  return -1;
}

int ModelGraph::appendOp(Op op, const ValueType &type) {
  Value v;
  v.name = op.name;
  v.kind = ValueKind::Op;
  v.type = type;
  values.push_back(std::move(v));
  op.result = static_cast<int>(values.size()) - 1;
  ops.push_back(std::move(op));
  return ops.back().result;
}

//===----------------------------------------------------------------------===//
// Queries
//===----------------------------------------------------------------------===//

namespace {

ops::TensorType toOpsType(const ValueType &t) {
  return ops::TensorType{*ops::parseDType(t.dtype), t.shape};
}

ValueType fromOpsType(const ops::TensorType &t) {
  return ValueType{ops::dtypeName(t.dtype), t.shape};
}

} // namespace

json toJson(const ModelGraph &graph) {
  json out;
  out["format"] = "remat-flat-model";
  out["version"] = 1;
  out["name"] = graph.name;
  out["seed"] = graph.seed;
  out["config"] = graph.config;
  json values = json::array();
  for (const Value &v : graph.values) {
    json j{{"name", v.name},
           {"kind", v.kind == ValueKind::Input   ? "input"
                    : v.kind == ValueKind::Param ? "param"
                    : v.kind == ValueKind::State ? "state"
                                                 : "op"},
           {"dtype", v.type.dtype},
           {"shape", v.type.shape}};
    if (!v.init.is_null())
      j["init"] = v.init;
    if (!v.data.is_null())
      j["data"] = v.data;
    values.push_back(j);
  }
  out["values"] = values;
  json ops = json::array();
  for (const Op &op : graph.ops) {
    json operands = json::array();
    for (int id : op.operands)
      operands.push_back(graph.values[id].name);
    ops.push_back({{"name", op.name},
                   {"op", op.kind},
                   {"inputs", operands},
                   {"attrs", op.attrs}});
  }
  out["ops"] = ops;
  out["loss"] = graph.values[graph.loss].name;
  out["optimizer"] = graph.optimizer;
  return out;
}

const std::vector<std::string> &modelOpNames() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n;
    for (int k = 0; k < ops::kNumOpKinds; ++k)
      if (ops::opInfo(ops::OpKind(k)).inModelFormat)
        n.push_back(ops::opName(ops::OpKind(k)));
    return n;
  }();
  return names;
}

void setDefinedDefault(json &attrs, const ops::AttrInfo &attr) {
  if (attr.type == ops::AttrType::Bool)
    attrs[attr.name] = std::string(attr.defaultText) == "true";
  else if (attr.type == ops::AttrType::I64)
    attrs[attr.name] = std::strtoll(attr.defaultText, nullptr, 10);
  else
    attrs[attr.name] = std::strtod(attr.defaultText, nullptr);
}

ValueType inferResultType(const ModelGraph &graph, ops::OpKind kind,
                          const ops::OpAttrs &attrs,
                          const std::vector<int> &operands,
                          const std::vector<int64_t> *given) {
  const ops::OpInfo &info = ops::opInfo(kind);
  ops::LabeledTypes inputs;
  for (size_t i = 0; i < operands.size(); ++i) {
    const Value &v = graph.values[size_t(operands[i])];
    inputs.types.push_back(toOpsType(v.type));
    inputs.labels.push_back(std::string("operand ") + info.operandNames[i] +
                            " '" + v.name + "'");
  }
  std::vector<ops::TensorType> givenTypes;
  if (given) {
    ValueType r{operands.empty() ? "f32"
                                 : graph.values[size_t(operands[0])].type.dtype,
                *given};
    r.numElements();
    givenTypes.push_back(toOpsType(r));
  }
  ValueType result =
      fromOpsType(ops::inferResultTypes(kind, attrs, inputs, givenTypes).at(0));
  result.bytes();
  return result;
}

std::vector<char> valuesReachingLoss(const ModelGraph &graph) {
  std::vector<char> needed(graph.values.size(), 0);
  needed[size_t(graph.loss)] = 1;
  for (auto it = graph.ops.rbegin(); it != graph.ops.rend(); ++it)
    if (needed[size_t(it->result)])
      for (int v : it->operands)
        needed[size_t(v)] = 1;
  // A state update has no readers; it runs when what it reads is computed.
  for (const Op &op : graph.ops) {
    std::optional<ops::OpKind> kind = ops::parseOpKind(op.kind);
    if (!kind || !ops::opInfo(*kind).updatesState)
      continue;
    bool reads = true;
    for (size_t i = 1; i < op.operands.size(); ++i)
      reads &= needed[size_t(op.operands[i])] != 0;
    if (reads)
      needed[size_t(op.result)] = needed[size_t(op.operands[0])] = 1;
  }
  return needed;
}

std::string ModelOptions::splitFlags() const {
  std::string flags;
  if (ranks > 1)
    flags = "--ranks " + std::to_string(ranks);
  if (microbatches > 1)
    flags += (flags.empty() ? "" : " ") + std::string("--microbatches ") +
             std::to_string(microbatches);
  return flags;
}

ModelGraph loadModel(const std::string &text, const std::string &sourceName,
                     const ModelOptions &options) {
  return json_reader::ModelReader(sourceName, options).read(text);
}

} // namespace remat::model
