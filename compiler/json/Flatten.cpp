//===- Flatten.cpp - A model's ops and blocks as one op list --------------===//
//
// Step 3 of the model reader, second part: each scope's ops topologically
// sorted (cycles and undefined names reported with the op's JSON pointer),
// block calls expanded `repeat` times, and each op's attributes typed and
// defaulted and its result type inferred by its type rule
// (ops/ShapeRules.h), so that a shape error names the op that caused it.
//
//===----------------------------------------------------------------------===//

#include "compiler/json/ModelReader.h"

#include "ops/ShapeRules.h"
#include "ops/Suggest.h"

#include <algorithm>
#include <cmath>
#include <set>

namespace remat::model::json_reader {

namespace {

/// One named definition inside a scope, for duplicate and order checks.
struct Definition {
  std::string pointer;
  int opIndex; ///< index in the scope's op list; -1 for inputs/params
};

/// The op a model file may use under this name, or nullopt.
std::optional<ops::OpKind> modelOpKind(const std::string &name) {
  auto kind = ops::parseOpKind(name);
  if (kind && ops::opInfo(*kind).inModelFormat)
    return kind;
  return std::nullopt;
}

/// Attributes whose default depends on the op's operands or name rather than
/// being a constant of the op's definition.
bool hasDerivedDefault(ops::OpKind op, const std::string &attr) {
  return (op == ops::OpKind::Attention && attr == "scale") ||
         (op == ops::OpKind::Dropout && attr == "seed");
}

uint64_t fnv1a(const std::string &s, uint64_t h = 1469598103934665603ull) {
  for (unsigned char c : s)
    h = (h ^ c) * 1099511628211ull;
  return h;
}

} // namespace

void ModelReader::flattenScope(const json &ops, const std::string &pointer,
                               std::map<std::string, int> scope,
                               const std::string &prefix, int depth,
                               std::map<std::string, int> &exported) {
  if (!ops.is_array())
    fail(pointer, "expected an array of ops, got " + jsonKind(ops));
  if (depth > 16)
    fail(pointer, "blocks nest deeper than 16 (a block that calls itself?)");

  // Definitions made by this scope's ops, with duplicate checks.
  std::map<std::string, Definition> defined;
  std::vector<std::vector<std::string>> outputsOf(ops.size());
  for (size_t i = 0; i < ops.size(); ++i) {
    std::string p = pointer + "/" + std::to_string(i);
    const json &op = ops[i];
    if (!op.is_object())
      fail(p, "expected an op object, got " + jsonKind(op));
    std::string kind = requireString(op, p, "op");
    if (kind == "block") {
      checkKeys(op, p, {"name", "op", "block", "inputs", "outputs", "repeat",
                        "description"});
    } else {
      checkKeys(op, p, {"name", "op", "inputs", "attrs", "shape",
                        "description"});
    }
    std::string name = requireString(op, p, "name");
    if (op.contains("outputs")) {
      const json &outs = op["outputs"];
      if (!outs.is_array() || outs.empty())
        fail(p + "/outputs", "expected a non-empty array of names");
      for (const json &o : outs) {
        if (!o.is_string())
          fail(p + "/outputs", "expected names");
        outputsOf[i].push_back(o);
      }
    } else {
      outputsOf[i].push_back(name);
    }
    for (const std::string &n : outputsOf[i]) {
      auto it = defined.find(n);
      if (it != defined.end())
        fail(p + " '" + name + "'", "'" + n + "' is defined twice (first at " +
                                       it->second.pointer + ")");
      if (scope.count(n))
        fail(p + " '" + name + "'",
             "'" + n + "' is defined twice (it is already an input or param)");
      defined[n] = Definition{p, static_cast<int>(i)};
    }
  }

  // Dependencies between this scope's ops, then a stable topological order.
  std::vector<std::vector<std::string>> inputNames(ops.size());
  std::vector<std::vector<int>> users(ops.size());
  std::vector<int> pending(ops.size(), 0);
  for (size_t i = 0; i < ops.size(); ++i) {
    std::string p = pointer + "/" + std::to_string(i);
    std::string where = p + " '" + ops[i]["name"].get<std::string>() + "'";
    const json &ins = ops[i].value("inputs", json::array());
    if (!ins.is_array())
      fail(where, "'inputs' must be an array of names");
    for (const json &in : ins) {
      if (!in.is_string())
        fail(where, "'inputs' must be an array of names, got " + in.dump());
      std::string n = in;
      inputNames[i].push_back(n);
      auto it = defined.find(n);
      if (it != defined.end()) {
        if (it->second.opIndex == (int)i)
          fail(where, "'" + n + "' uses itself (a cycle)");
        users[it->second.opIndex].push_back(static_cast<int>(i));
        ++pending[i];
      } else if (!scope.count(n)) {
        std::vector<std::string> known = keysOf(defined);
        for (const auto &entry : scope)
          known.push_back(entry.first);
        fail(where, "'" + n + "' is not defined" + didYouMean(n, known));
      }
    }
  }
  std::vector<int> order, ready;
  for (size_t i = 0; i < ops.size(); ++i)
    if (!pending[i])
      ready.push_back(static_cast<int>(i));
  while (!ready.empty()) {
    std::sort(ready.begin(), ready.end(), std::greater<int>());
    int i = ready.back();
    ready.pop_back();
    order.push_back(i);
    for (int u : users[i])
      if (--pending[u] == 0)
        ready.push_back(u);
  }
  if (order.size() != ops.size()) {
    // Walk unfinished ops along their unfinished inputs until one repeats.
    int start = 0;
    while (!pending[start])
      ++start;
    std::vector<int> path;
    std::vector<int> seenAt(ops.size(), -1);
    int cur = start;
    while (seenAt[cur] < 0) {
      seenAt[cur] = static_cast<int>(path.size());
      path.push_back(cur);
      for (const std::string &n : inputNames[cur]) {
        auto it = defined.find(n);
        if (it != defined.end() && pending[it->second.opIndex]) {
          cur = it->second.opIndex;
          break;
        }
      }
    }
    std::string cycle;
    for (size_t k = seenAt[cur]; k < path.size(); ++k)
      cycle += ops[path[k]]["name"].get<std::string>() + " -> ";
    cycle += ops[cur]["name"].get<std::string>();
    fail(pointer + "/" + std::to_string(cur) + " '" +
             ops[cur]["name"].get<std::string>() + "'",
         "cycle: " + cycle);
  }

  // Emit in order.
  for (int i : order) {
    std::string p = pointer + "/" + std::to_string(i);
    const json &op = ops[i];
    std::vector<int> operands;
    for (const std::string &n : inputNames[i])
      operands.push_back(scope.at(n));
    std::string name = op["name"];
    if (op["op"] == "block") {
      std::vector<int> outputs;
      expandBlock(op, p, prefix + name, operands, depth, outputs);
      if (outputs.size() != outputsOf[i].size())
        fail(p + " '" + name + "'",
             "block has " + std::to_string(outputs.size()) +
                 " outputs but the call names " +
                 std::to_string(outputsOf[i].size()));
      for (size_t k = 0; k < outputs.size(); ++k)
        scope[outputsOf[i][k]] = outputs[k];
    } else {
      scope[name] = emitOp(op, p, prefix + name, operands);
    }
  }
  exported = std::move(scope);
}

int ModelReader::emitOp(const json &op, const std::string &pointer,
                        const std::string &opName,
                        const std::vector<int> &operands) {
  std::string kind = op["op"];
  std::string where = pointer + " '" + op["name"].get<std::string>() + "'";
  std::optional<ops::OpKind> opKind = modelOpKind(kind);
  if (!opKind) {
    std::vector<std::string> names = modelOpNames();
    names.push_back("block");
    std::string suggestion = didYouMean(kind, names);
    std::string list;
    for (const std::string &name : names)
      list += (list.empty() ? "" : ", ") + name;
    fail(where, "unknown op '" + kind + "'" +
                    (suggestion.empty() ? " (expected one of: " + list + ")"
                                        : suggestion + " (ops: docs/ops.md)"));
  }
  const ops::OpInfo &info = ops::opInfo(*opKind);
  if ((int)operands.size() != info.numInputs)
    fail(where, kind + " takes " + std::to_string(info.numInputs) +
                    " operand" + (info.numInputs == 1 ? "" : "s") + ", got " +
                    std::to_string(operands.size()));

  // Attributes: only known ones, each typed and evaluated, defaults filled.
  json attrs = json::object();
  const json &given = op.value("attrs", json::object());
  if (!given.is_object())
    fail(where, "'attrs' must be an object");
  for (auto it = given.begin(); it != given.end(); ++it) {
    bool known = false;
    for (const ops::AttrInfo &a : info.attrs)
      known |= it.key() == a.name;
    if (!known) {
      std::string list;
      std::vector<std::string> names;
      for (const ops::AttrInfo &a : info.attrs) {
        list += std::string(list.empty() ? "" : ", ") + a.name;
        names.push_back(a.name);
      }
      fail(where,
           kind + " has no attribute '" + it.key() + "'" +
               didYouMean(it.key(), names) +
               (list.empty() ? "" : " (it takes: " + list + ")"),
           pointer + "/attrs/" + it.key());
    }
  }
  for (const ops::AttrInfo &a : info.attrs) {
    std::string ap = pointer + "/attrs/" + a.name;
    auto it = given.find(a.name);
    if (it == given.end()) {
      if (a.required && !hasDerivedDefault(*opKind, a.name))
        fail(where, kind + " needs attribute '" + a.name + "'");
      continue;
    }
    switch (a.type) {
    case ops::AttrType::Bool:
      if (!it->is_boolean())
        fail(ap, "expected true or false, got " + jsonKind(*it));
      attrs[a.name] = it->get<bool>();
      break;
    case ops::AttrType::F32:
      attrs[a.name] = number(*it, ap);
      break;
    case ops::AttrType::I64:
      attrs[a.name] = integer(*it, ap);
      break;
    case ops::AttrType::I64Array: {
      if (!it->is_array())
        fail(ap, "expected an array of integers");
      std::vector<int64_t> values;
      for (size_t k = 0; k < it->size(); ++k)
        values.push_back(integer((*it)[k], ap + "/" + std::to_string(k)));
      attrs[a.name] = values;
      break;
    }
    }
  }
  if (info.resultTypeGiven)
    attrs["shape"] = shape(require(op, where, "shape"), pointer + "/shape");
  else if (op.contains("shape"))
    fail(where, kind + " takes no 'shape' (its result shape is inferred)");

  std::vector<ValueType> types;
  for (int id : operands)
    types.push_back(graph.values[id].type);
  // Negative reduction axes count from the end, as in NumPy.
  if (attrs.contains("axes") && !types.empty())
    for (auto &axis : attrs["axes"])
      if (axis.get<int64_t>() < 0)
        axis = axis.get<int64_t>() + (int64_t)types[0].shape.size();

  // Defaults: those of the op's definition, and those that depend on the
  // operands or the op's name.
  for (const ops::AttrInfo &a : info.attrs) {
    if (attrs.contains(a.name))
      continue;
    if (*opKind == ops::OpKind::Attention && std::string(a.name) == "scale")
      attrs["scale"] =
          1.0 / std::sqrt(types[0].shape.empty()
                              ? 1.0
                              : (double)std::max<int64_t>(
                                    1, types[0].shape.back()));
    else if (*opKind == ops::OpKind::Dropout && std::string(a.name) == "seed")
      attrs["seed"] = static_cast<int64_t>(
          fnv1a(opName, fnv1a(std::to_string(graph.seed))) >> 1);
    else
      setDefinedDefault(attrs, a);
  }

  // The result type, by the op's type rule.
  ValueType result;
  bool typing = false; ///< past the attributes: a type error of the operands
  try {
    json typed = attrs;
    typed.erase("shape");
    ops::OpAttrs parsed = ops::parseAttrs(*opKind, typed);
    std::vector<int64_t> given;
    if (info.resultTypeGiven)
      given = attrs["shape"].get<std::vector<int64_t>>();
    typing = true;
    result = inferResultType(graph, *opKind, parsed, operands,
                             info.resultTypeGiven ? &given : nullptr);
  } catch (const ops::TypeRuleError &e) {
    fail(where, kind + ": " + e.what() +
                    (typing ? declarationNotes(operands) : std::string()));
  } catch (const std::exception &e) {
    fail(where, kind + ": " + e.what());
  }

  Op flat;
  flat.name = opName;
  flat.kind = kind;
  flat.pointer = pointer;
  SourcePosition at = sourceMap ? sourceMap->find(pointer) : SourcePosition{};
  flat.line = at.line;
  flat.column = at.column;
  flat.operands = operands;
  flat.attrs = std::move(attrs);
  flat.block = blockInstance;
  return graph.appendOp(std::move(flat), result);
}

std::string ModelReader::declarationNotes(const std::vector<int> &operands) {
  // A type error is reported at the op; the operand whose shape is wrong
  // may be a parameter or input declared elsewhere, so say where each is
  // declared and with which shape.
  std::string notes;
  std::set<int> seen;
  for (int id : operands) {
    const Value &v = graph.values[size_t(id)];
    if (v.kind == ValueKind::Op || v.pointer.empty() || !seen.insert(id).second)
      continue;
    std::string shapePointer = v.pointer + "/shape";
    notes += std::string("; ") +
             (v.kind == ValueKind::Param ? "param" : "input") + " '" + v.name +
             "' is declared with shape " + ops::formatShape(v.type.shape) +
             " at " + locate(shapePointer) + " (" + shapePointer + ")";
  }
  return notes;
}

void ModelReader::expandBlock(const json &call, const std::string &pointer,
                              const std::string &callName,
                              const std::vector<int> &operands, int depth,
                              std::vector<int> &outputs) {
  std::string where = pointer + " '" + call["name"].get<std::string>() + "'";
  std::string blockName = requireString(call, pointer, "block");
  auto it = blocks.find(blockName);
  if (it == blocks.end())
    fail(where, "unknown block '" + blockName + "'" +
                    didYouMean(blockName, keysOf(blocks)));
  const json &block = *it->second;
  std::string bp = "/blocks/" + blockName;
  int64_t repeat = call.contains("repeat")
                       ? integer(call["repeat"], pointer + "/repeat")
                       : 1;
  if (repeat < 1 || repeat > 100000)
    fail(pointer + "/repeat", "repeat must be in 1..100000, got " +
                                  std::to_string(repeat));

  std::vector<std::string> formals, results;
  for (const char *key : {"inputs", "outputs"}) {
    const json &list = require(block, bp, key);
    if (!list.is_array())
      fail(bp + "/" + key, "expected an array of names");
    for (const json &n : list) {
      if (!n.is_string())
        fail(bp + "/" + key, "expected names, got " + n.dump());
      (std::string(key) == "inputs" ? formals : results).push_back(n);
    }
  }
  if (formals.size() != operands.size())
    fail(where, "block '" + blockName + "' takes " +
                    std::to_string(formals.size()) + " inputs, got " +
                    std::to_string(operands.size()));
  if (repeat > 1 && results.size() != formals.size())
    fail(where, "a repeated block must have as many outputs as inputs (its "
                "outputs feed the next repetition); '" +
                    blockName + "' has " + std::to_string(formals.size()) +
                    " and " + std::to_string(results.size()));

  std::vector<int> current = operands;
  for (int64_t layer = 0; layer < repeat; ++layer) {
    std::string prefix = callName + "." + std::to_string(layer) + ".";
    std::map<std::string, int> scope = globals;
    std::map<std::string, std::string> localPointers;
    for (size_t k = 0; k < formals.size(); ++k) {
      if (scope.count(formals[k]) && !globals.count(formals[k]))
        fail(bp + "/inputs", "'" + formals[k] + "' is defined twice");
      scope[formals[k]] = current[k];
      localPointers[formals[k]] = bp + "/inputs";
    }
    if (block.contains("params")) {
      const json &params = block["params"];
      if (!params.is_array())
        fail(bp + "/params", "expected an array");
      for (size_t k = 0; k < params.size(); ++k) {
        std::string pp = bp + "/params/" + std::to_string(k);
        int id = defineParam(params[k], pp, prefix);
        std::string local = params[k]["name"];
        if (localPointers.count(local))
          fail(pp, "'" + local + "' is defined twice (first at " +
                       localPointers[local] + ")");
        localPointers[local] = pp;
        scope[local] = id;
      }
    }
    std::map<std::string, int> exported;
    bool outermost = blockInstance.empty();
    if (outermost)
      blockInstance = callName + "." + std::to_string(layer);
    flattenScope(require(block, bp, "ops"), bp + "/ops", scope, prefix,
                 depth + 1, exported);
    if (outermost)
      blockInstance.clear();
    current.clear();
    for (const std::string &r : results) {
      auto found = exported.find(r);
      if (found == exported.end())
        fail(bp + "/outputs", "output '" + r + "' is not defined in block '" +
                                  blockName + "'");
      current.push_back(found->second);
    }
  }
  outputs = current;
}

} // namespace remat::model::json_reader
