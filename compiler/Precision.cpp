//===- Precision.cpp - bf16 compute under autocast's rules ----------------===//
#include "compiler/Precision.h"

#include "ops/ShapeRules.h"

#include <map>
#include <set>

namespace remat::model {

namespace {

/// Whether op `op` computes in bf16 (true) or float32 (false) by its
/// record's rule, given the rules its operands' producers ran under.
bool computesInBf16(const ModelGraph &graph, const Op &op,
                    const std::vector<ops::Autocast> &producers) {
  std::optional<ops::OpKind> kind = ops::parseOpKind(op.kind);
  ops::Autocast rule =
      kind ? ops::opInfo(*kind).autocast : ops::Autocast::Float32;
  // A parameter added to a GEMM's or convolution's result: nn.Linear's and
  // nn.Conv2d's bias, which autocast adds inside the bf16 op.
  if (rule == ops::Autocast::BiasAdd && op.operands.size() == 2 &&
      graph.values[size_t(op.operands[0])].kind == ValueKind::Op &&
      graph.values[size_t(op.operands[1])].kind == ValueKind::Param &&
      producers[size_t(op.operands[0])] == ops::Autocast::Bf16)
    return true;
  if (rule == ops::Autocast::Bf16)
    return true;
  if (rule == ops::Autocast::Float32 || rule == ops::Autocast::Float32Compute)
    return false;
  bool anyFloat = false;
  for (int v : op.operands) {
    const std::string &d = graph.values[size_t(v)].type.dtype;
    if (!isFloatDType(d))
      continue;
    anyFloat = true;
    if (d != "bf16")
      return false;
  }
  return anyFloat;
}

} // namespace

ModelGraph withBf16Compute(ModelGraph graph) {
  std::vector<Op> ops = std::move(graph.ops);
  graph.ops.clear();
  std::set<std::string> names;
  for (const Value &v : graph.values)
    names.insert(v.name);
  // The rule each value's producer ran under (inputs and params: Float32).
  std::vector<ops::Autocast> producers(graph.values.size(),
                                       ops::Autocast::Float32);
  std::map<std::pair<int, std::string>, int> casts;
  // Value `v` in `dtype`: itself, or its conversion (made once, before its
  // first reader).
  auto as = [&](int v, const std::string &dtype, const Op &user) {
    if (graph.values[size_t(v)].type.dtype == dtype)
      return v;
    auto key = std::make_pair(v, dtype);
    if (auto it = casts.find(key); it != casts.end())
      return it->second;
    Op to;
    std::string base = graph.values[size_t(v)].name + "." + dtype;
    to.name = base;
    for (int k = 1; names.count(to.name); ++k)
      to.name = base + "." + std::to_string(k);
    names.insert(to.name);
    to.kind = "convert";
    to.pointer = user.pointer;
    to.line = user.line;
    to.column = user.column;
    to.block = user.block;
    to.operands = {v};
    ValueType type = graph.values[size_t(v)].type;
    type.dtype = dtype;
    to.attrs["shape"] = type.shape;
    int id = graph.appendOp(std::move(to), type);
    producers.push_back(ops::Autocast::Promote);
    return casts[key] = id;
  };
  for (Op &op : ops) {
    std::optional<ops::OpKind> kind = ops::parseOpKind(op.kind);
    std::string want = computesInBf16(graph, op, producers) ? "bf16" : "f32";
    // A float32 op whose kernel reads bf16 itself (the loss on bf16
    // logits), and normalization (float32 arithmetic on a bf16 x, its
    // result bf16), take their bf16 operands as they are.
    bool readsBf16 =
        want == "f32" && kind &&
        (ops::opInfo(*kind).bf16Native ||
         ops::opInfo(*kind).autocast == ops::Autocast::Float32Compute);
    // A bf16 convolution reads float32 weights as they are: its kernel
    // rounds them to bf16 in the reorder into its own layout, which it
    // makes anyway, so no bf16 copy of them is stored, and their gradient
    // is float32 without a conversion (docs/precision.md).
    bool floatWeights = want == "bf16" && kind == ops::OpKind::Conv2d &&
                        op.operands.size() == 2;
    for (size_t i = 0; i < op.operands.size(); ++i) {
      int &v = op.operands[i];
      const std::string &d = graph.values[size_t(v)].type.dtype;
      if (isFloatDType(d) && !(readsBf16 && d == "bf16") &&
          !(floatWeights && i == 1 && d == "f32"))
        v = as(v, want, op);
    }
    Value &result = graph.values[size_t(op.result)];
    if (kind && isFloatDType(result.type.dtype)) {
      // (A given result type is the attribute `shape`, not an op
      // attribute: compiler/json/Flatten.cpp.)
      nlohmann::json typed = op.attrs;
      typed.erase("shape");
      std::vector<int64_t> given = result.type.shape;
      try {
        graph.values[size_t(op.result)].type = inferResultType(
            graph, *kind, ops::parseAttrs(*kind, typed), op.operands,
            ops::opInfo(*kind).resultTypeGiven ? &given : nullptr);
      } catch (const std::exception &e) {
        throw ModelError(graph.sourceName + ": " + op.where() +
                         ": under --precision bf16: " + e.what());
      }
    }
    // The rule of the op that made the value (a bias add's is BiasAdd, so
    // a second add of a parameter after it is not a bias).
    producers[size_t(op.result)] =
        kind ? ops::opInfo(*kind).autocast : ops::Autocast::Float32;
    graph.ops.push_back(std::move(op));
  }
  return graph;
}

} // namespace remat::model
