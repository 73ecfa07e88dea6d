//===- TrainStep.cpp - @train_step as plain data, and its plan ------------===//
//
// Extraction works in three steps:
//   1. arguments become argument values (input / param / optimizer) with
//      their data or init objects;
//   2. each op becomes a StepOp in IR order; its phase is forward when the
//      loss depends on it or it updates state (running statistics),
//      optimizer for optimizer updates, backward otherwise; update results
//      are in place of their argument, an optimizer update's gradient
//      operand is the parameter's final gradient (role grad);
//   3. the returned values become the step's outputs.
//
//===----------------------------------------------------------------------===//

#include "passes/TrainStep.h"

#include "ir/GraphOps.h"
#include "ops/CostKey.h"
#include "ops/OpTable.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/DenseMap.h"

#include <map>
#include <set>
#include <stdexcept>

using nlohmann::json;

namespace remat {

void setDeviceProfile(mlir::ModuleOp module, const DeviceProfile &profile) {
  mlir::Builder b(module.getContext());
  module->setAttr(
      kDeviceProfileAttr,
      b.getDictionaryAttr(
          {b.getNamedAttr("name", b.getStringAttr(profile.name)),
           b.getNamedAttr("flops_per_second",
                          b.getF64FloatAttr(profile.flopsPerSecond)),
           b.getNamedAttr("bytes_per_second",
                          b.getF64FloatAttr(profile.bytesPerSecond)),
           b.getNamedAttr("launch_seconds",
                          b.getF64FloatAttr(profile.launchSeconds)),
           b.getNamedAttr("bf16_flops_per_second",
                          b.getF64FloatAttr(profile.bf16FlopsPerSecond))}));
  auto attr = module->getAttrOfType<mlir::DictionaryAttr>(kDeviceProfileAttr);
  llvm::SmallVector<mlir::NamedAttribute> fields(attr.begin(), attr.end());
  for (auto [name, measured] :
       {std::pair{"ops", &profile.measured},
        std::pair{"recompute_ops", &profile.recomputeMeasured}}) {
    if (measured->empty())
      continue;
    llvm::SmallVector<mlir::NamedAttribute> table;
    for (const auto &[key, seconds] : *measured)
      table.push_back(b.getNamedAttr(key, b.getF64FloatAttr(seconds)));
    fields.push_back(b.getNamedAttr(name, b.getDictionaryAttr(table)));
  }
  module->setAttr(kDeviceProfileAttr, b.getDictionaryAttr(fields));
}

double TrainStep::totalSeconds() const {
  double total = 0;
  for (size_t k = 0; k < ops.size(); ++k)
    total +=
        ops[k].seconds * double(graph.ops[k].phase == memory::Phase::Optimizer
                                    ? 1
                                    : microbatches);
  return total;
}

double TrainStep::recomputeOverhead(double seconds) const {
  return seconds * double(microbatches) / totalSeconds();
}

namespace {

/// The model-level name in a location made by the importer
/// ("/ops/3 'h.0.qk'" -> "h.0.qk"), or empty.
std::string nameFromLoc(mlir::Location loc) {
  if (auto fused = mlir::dyn_cast<mlir::FusedLoc>(loc))
    for (mlir::Location l : fused.getLocations())
      if (std::string n = nameFromLoc(l); !n.empty())
        return n;
  if (auto named = mlir::dyn_cast<mlir::NameLoc>(loc)) {
    std::string text = named.getName().str();
    auto open = text.find('\'');
    auto close = text.rfind('\'');
    if (open != std::string::npos && close > open)
      return text.substr(open + 1, close - open - 1);
    return text;
  }
  return "";
}

/// Whether the single result of an op of this kind may take the bytes of
/// an operand of its type that dies there: the op table's in-place ops
/// whose type rule is elementwise (ops/OpTable.h).
bool isElementwiseInPlace(const std::string &kind) {
  auto op = ops::parseOpKind(kind);
  if (!op)
    return false;
  const ops::OpInfo &info = ops::opInfo(*op);
  return info.inPlace && (info.shapeRule == ops::ShapeRule::Elementwise ||
                          info.shapeRule == ops::ShapeRule::Broadcast);
}

[[noreturn]] void fail(mlir::Operation *op, const std::string &why) {
  std::string where;
  if (op)
    where = "'" + op->getName().getStringRef().str() + "' (" +
            nameFromLoc(op->getLoc()) + "): ";
  throw std::runtime_error("train_step: " + where + why);
}

/// One result of an op as the step records it.
struct ResultInfo {
  ValueInfo info;
  int64_t bytes = 0;
};

/// Numbers, names and classifies a step's values and ops in program order:
/// the rules extractTrainStep and replayTrainStep share, so that a step
/// replayed in a new order equals the one read back from the reordered IR.
class StepAssembler {
public:
  explicit StepAssembler(TrainStep &step) : step(step) {}

  int appendArgument(memory::Role role, const std::string &name, int64_t bytes,
                  ValueInfo info) {
    return addValue(role, name, bytes, -1, std::move(info));
  }

  /// Adds `op` (its operands set, and its reusable operand and scratch);
  /// `feedsLoss`: the loss depends on it, or it comes before the loss.
  /// Returns its results' ids.
  std::vector<int> appendOp(OpInfo info, memory::StepOp op,
                         std::vector<ResultInfo> results, bool feedsLoss) {
    std::optional<ops::OpKind> opKind = ops::parseOpKind(info.kind);
    bool isUpdate = opKind && ops::opInfo(*opKind).updatesParam;
    // A state update (running statistics) belongs to the forward pass,
    // though the loss does not depend on it; it is never recomputed. An op
    // before the loss belongs to the forward pass too, though the loss may
    // not depend on it: in a planned step, a forward op whose result the
    // planner evicted and recomputed (the clone feeding the forward
    // consumers) may feed only the backward with its other results.
    bool isStateUpdate = opKind && ops::opInfo(*opKind).updatesState;
    // A micro-batch's gradient summed into its accumulator is backward work.
    bool accumulates = opKind == ops::OpKind::GradAccumulate;
    op.phase = isUpdate      ? memory::Phase::Optimizer
               : accumulates ? memory::Phase::Backward
               : feedsLoss || info.recompute || isStateUpdate
                   ? memory::Phase::Forward
                   : memory::Phase::Backward;
    int k = static_cast<int>(step.graph.ops.size());
    std::string base = info.base;
    if (accumulates) { // "accumulate:w1", into accum:w1
      const std::string &acc = step.graph.values[size_t(op.operands[0])].name;
      base = "accumulate:" + acc.substr(acc.find(':') + 1);
    } else if (op.phase == memory::Phase::Backward)
      base = "d/" + (base.empty() ? info.kind : base) + ":" + info.kind;
    else if (base.empty())
      base = info.kind;
    op.name = base;
    for (size_t r = 0; r < results.size(); ++r) {
      memory::Role role = op.phase == memory::Phase::Forward
                              ? memory::Role::Activation
                              : memory::Role::Temporary;
      std::string name =
          base + (results.size() > 1 ? "." + std::to_string(r) : std::string());
      int inPlaceOf = -1;
      if (isUpdate) {
        // Results are in place of operands 0 (param), 2 (state), 3 (state).
        int operandIndex = r == 0 ? 0 : int(r) + 1;
        inPlaceOf = op.operands[size_t(operandIndex)];
      } else if (isStateUpdate) {
        inPlaceOf = op.operands[0]; // the new state, in place of the state
      }
      if (inPlaceOf >= 0) {
        role = step.graph.values[size_t(inPlaceOf)].role;
        name = step.graph.values[size_t(inPlaceOf)].name + "'";
      }
      int id = addValue(role, name, results[r].bytes, k,
                        std::move(results[r].info));
      step.graph.values[size_t(id)].inPlaceOf = inPlaceOf;
      op.results.push_back(id);
    }
    if (isUpdate) {
      // The gradient operand is the parameter's final gradient; in a split
      // step it is the accumulator, and the micro-batch's gradient is what
      // grad_accumulate adds into it.
      int grad = op.operands[1];
      const memory::StepValue &read = step.graph.values[size_t(grad)];
      if (read.role == memory::Role::Accumulator && read.producer >= 0)
        grad = step.graph.ops[size_t(read.producer)].operands[1];
      memory::StepValue &g = step.graph.values[size_t(grad)];
      if (!g.isArgument()) {
        usedNames.erase(g.name);
        // The naming convention of docs/plan-format.md.
        g.name = uniqueName(
            "grad:" + step.graph.values[size_t(op.operands[0])].name);
        g.role = memory::Role::Grad;
      }
    }
    std::vector<int> ids = op.results;
    step.graph.ops.push_back(std::move(op));
    step.ops.push_back(std::move(info));
    return ids;
  }

  void finish(const std::vector<int> &outputs) {
    step.graph.outputs = outputs;
    step.loss = step.graph.outputs.front();
    if (std::string problem = step.graph.validate(); !problem.empty())
      fail(nullptr, problem);
  }

private:
  std::string uniqueName(std::string name) {
    if (name.empty())
      name = "v";
    std::string candidate = name;
    for (int i = 1; usedNames.count(candidate); ++i)
      candidate = name + "#" + std::to_string(i);
    usedNames.insert(candidate);
    return candidate;
  }

  int addValue(memory::Role role, const std::string &name, int64_t bytes,
               int producer, ValueInfo info) {
    memory::StepValue v;
    v.name = uniqueName(name);
    v.role = role;
    v.bytes = bytes;
    v.producer = producer;
    int id = static_cast<int>(step.graph.values.size());
    step.graph.values.push_back(v);
    step.values.push_back(std::move(info));
    return id;
  }

  TrainStep &step;
  std::set<std::string> usedNames;
};

} // namespace

nlohmann::json opAttributes(mlir::Operation &op) {
  json attrs = json::object();
  for (mlir::NamedAttribute attr : op.getAttrs()) {
    std::string name = attr.getName().str();
    if (name.rfind("remat.", 0) != 0)
      attrs[name] = attributeToJson(attr.getValue());
  }
  return attrs;
}

std::vector<ops::TensorType> typesOf(mlir::ValueRange values) {
  std::vector<ops::TensorType> types;
  for (mlir::Value v : values) {
    ops::TensorType t;
    if (auto type = mlir::dyn_cast<mlir::RankedTensorType>(v.getType())) {
      t.shape.assign(type.getShape().begin(), type.getShape().end());
      t.dtype = graph::dtypeOf(type.getElementType()).value_or(ops::DType::F32);
    }
    types.push_back(std::move(t));
  }
  return types;
}

json attributeToJson(mlir::Attribute attr) {
  if (auto b = mlir::dyn_cast<mlir::BoolAttr>(attr))
    return b.getValue();
  if (auto i = mlir::dyn_cast<mlir::IntegerAttr>(attr))
    return i.getInt();
  if (auto f = mlir::dyn_cast<mlir::FloatAttr>(attr))
    return f.getValueAsDouble();
  if (auto s = mlir::dyn_cast<mlir::StringAttr>(attr))
    return s.str();
  if (auto a = mlir::dyn_cast<mlir::DenseI64ArrayAttr>(attr))
    return std::vector<int64_t>(a.asArrayRef().begin(), a.asArrayRef().end());
  if (auto d = mlir::dyn_cast<mlir::DictionaryAttr>(attr)) {
    json out = json::object();
    for (mlir::NamedAttribute n : d)
      out[n.getName().str()] = attributeToJson(n.getValue());
    return out;
  }
  if (auto a = mlir::dyn_cast<mlir::ArrayAttr>(attr)) {
    json out = json::array();
    for (mlir::Attribute e : a)
      out.push_back(attributeToJson(e));
    return out;
  }
  return nullptr;
}

StageCounters &stageCounters() {
  static StageCounters counters;
  return counters;
}

TrainStep extractTrainStep(mlir::ModuleOp module,
                           const DeviceProfile &defaultProfile) {
  stageCounters().extractions++;
  TrainStep step;
  // A profile the driver put on the module wins over the argument.
  DeviceProfile profile = defaultProfile;
  if (auto attr = module->getAttrOfType<mlir::DictionaryAttr>(
          kDeviceProfileAttr)) {
    auto number = [&](const char *key, double fallback) {
      auto f = attr.getAs<mlir::FloatAttr>(key);
      return f ? f.getValueAsDouble() : fallback;
    };
    if (auto n = attr.getAs<mlir::StringAttr>("name"))
      profile.name = n.str();
    profile.flopsPerSecond = number("flops_per_second", profile.flopsPerSecond);
    profile.bf16FlopsPerSecond =
        number("bf16_flops_per_second", profile.bf16FlopsPerSecond);
    profile.bytesPerSecond = number("bytes_per_second", profile.bytesPerSecond);
    profile.launchSeconds = number("launch_seconds", profile.launchSeconds);
    for (auto [name, measured] :
         {std::pair{"ops", &profile.measured},
          std::pair{"recompute_ops", &profile.recomputeMeasured}})
      if (auto table = attr.getAs<mlir::DictionaryAttr>(name))
        for (mlir::NamedAttribute entry : table)
          if (auto f = mlir::dyn_cast<mlir::FloatAttr>(entry.getValue()))
            (*measured)[entry.getName().str()] = f.getValueAsDouble();
  }
  step.profile = profile;
  auto func = module.lookupSymbol<mlir::func::FuncOp>("train_step");
  if (!func) {
    bool laidOut = false;
    for (mlir::Operation &op : module.getBody()->getOperations())
      laidOut |= op.getName().getStringRef() == "plan.arena";
    if (laidOut)
      fail(nullptr, "no func.func @train_step: the module is already laid out "
                    "as a plan.arena (-remat-assign-buffers ran); run this "
                    "pass before -remat-assign-buffers");
    fail(nullptr, "no func.func @train_step (run -remat-autodiff "
                  "-remat-optimizer first)");
  }
  mlir::Operation *moduleOp = module.getOperation();
  if (auto a = moduleOp->getAttrOfType<mlir::StringAttr>("graph.model"))
    step.model = a.str();
  if (auto a = moduleOp->getAttrOfType<mlir::IntegerAttr>("graph.seed"))
    step.seed = a.getInt();
  if (auto a = moduleOp->getAttrOfType<mlir::IntegerAttr>("graph.batch"))
    step.batch = std::max<int64_t>(a.getInt(), 1);
  if (auto a = moduleOp->getAttrOfType<mlir::IntegerAttr>("graph.ranks"))
    step.ranks = std::max<int64_t>(a.getInt(), 1);
  if (auto a = moduleOp->getAttrOfType<mlir::IntegerAttr>("graph.microbatches"))
    step.microbatches = std::max<int64_t>(a.getInt(), 1);
  if (auto a = moduleOp->getAttrOfType<mlir::IntegerAttr>("graph.step_samples"))
    step.stepSamples = a.getInt();
  if (auto a = moduleOp->getAttrOfType<mlir::IntegerAttr>(
          "graph.optimizer_shards"))
    step.optimizerShards = std::max<int64_t>(a.getInt(), 1);
  if (auto a = moduleOp->getAttrOfType<mlir::IntegerAttr>(
          "graph.tokens_per_sample"))
    step.tokensPerSample = std::max<int64_t>(a.getInt(), 1);

  StepAssembler assembler(step);
  llvm::DenseMap<mlir::Value, int> ids;
  auto valueInfo = [&](mlir::Value value, int64_t &bytes) {
    auto type = mlir::dyn_cast<mlir::RankedTensorType>(value.getType());
    if (!type || !type.hasStaticShape())
      fail(value.getDefiningOp(), "a value is not a static tensor");
    std::optional<ops::DType> dtype = graph::dtypeOf(type.getElementType());
    if (!dtype)
      fail(value.getDefiningOp(), "a value has an element type remat does "
                                  "not compute");
    ValueInfo info;
    info.dtype = ops::dtypeName(*dtype);
    info.shape.assign(type.getShape().begin(), type.getShape().end());
    bytes = int64_t(ops::dtypeSize(*dtype));
    for (int64_t d : info.shape) {
      if (d <= 0 || bytes > (int64_t(1) << 62) / d)
        fail(value.getDefiningOp(), "a tensor size overflows 2^62 bytes");
      bytes *= d;
    }
    if (info.dtype.empty())
      fail(value.getDefiningOp(), "unsupported element type");
    return info;
  };

  // 1. Arguments.
  mlir::Block &body = func.getBody().front();
  for (unsigned a = 0; a < func.getNumArguments(); ++a) {
    auto roleAttr = func.getArgAttrOfType<mlir::StringAttr>(a, "graph.role");
    auto nameAttr = func.getArgAttrOfType<mlir::StringAttr>(a, "graph.name");
    if (!roleAttr || !nameAttr)
      fail(nullptr, "argument " + std::to_string(a) +
                        " lacks graph.role or graph.name");
    std::string role = roleAttr.str();
    memory::Role r = role == "input"         ? memory::Role::Input
                     : role == "param"       ? memory::Role::Param
                     : role == "optimizer"   ? memory::Role::Optimizer
                     : role == "state"       ? memory::Role::State
                     : role == "accumulator" ? memory::Role::Accumulator
                                             : memory::Role::Temporary;
    if (r == memory::Role::Temporary)
      fail(nullptr, "argument " + std::to_string(a) + " has unknown role '" +
                        role + "'");
    int64_t bytes = 0;
    ValueInfo info = valueInfo(body.getArgument(a), bytes);
    if (auto init = func.getArgAttrOfType<mlir::DictionaryAttr>(a, "graph.init"))
      info.init = attributeToJson(init);
    if (auto data = func.getArgAttrOfType<mlir::DictionaryAttr>(a, "graph.data"))
      info.data = attributeToJson(data);
    ids[body.getArgument(a)] =
        assembler.appendArgument(r, nameAttr.str(), bytes, std::move(info));
  }

  // The loss is the first result; the forward ops are those it depends on.
  auto ret = mlir::cast<mlir::func::ReturnOp>(body.getTerminator());
  if (ret.getNumOperands() == 0)
    fail(ret, "@train_step returns nothing (the loss comes first)");
  std::set<mlir::Operation *> forward;
  {
    std::vector<mlir::Value> work{ret.getOperand(0)};
    while (!work.empty()) {
      mlir::Value v = work.back();
      work.pop_back();
      mlir::Operation *def = v.getDefiningOp();
      if (!def || !forward.insert(def).second)
        continue;
      for (mlir::Value operand : def->getOperands())
        work.push_back(operand);
    }
  }

  // 2. Ops.
  mlir::Operation *lossDef = ret.getOperand(0).getDefiningOp();
  bool beforeLoss = lossDef != nullptr;
  for (mlir::Operation &op : body.without_terminator()) {
    if (&op == lossDef)
      beforeLoss = false;
    std::string full = op.getName().getStringRef().str();
    if (full.rfind("graph.", 0) != 0)
      fail(&op, "only graph ops may appear in @train_step");
    OpInfo info;
    info.kind = full.substr(6);
    info.base = nameFromLoc(op.getLoc());
    info.attrs = opAttributes(op);
    info.recompute = op.hasAttr("remat.recompute");
    if (auto block = op.getAttrOfType<mlir::StringAttr>(graph::kBlockAttr))
      info.block = block.str();
    if (auto cost = mlir::dyn_cast<graph::CostOpInterface>(&op)) {
      info.flops = cost.getFlops();
      info.bytes = cost.getBytesRead() + cost.getBytesWritten();
    }
    // An op whose float operands are all bf16 computes at the bf16 rate.
    std::vector<ops::TensorType> operandTypes = typesOf(op.getOperands());
    bool bf16 = false, allBf16 = true;
    for (const ops::TensorType &t : operandTypes) {
      bf16 |= t.dtype == ops::DType::BF16;
      allBf16 &= t.dtype != ops::DType::F32 && t.dtype != ops::DType::F64;
    }
    info.seconds = profile.opSeconds(info.flops, info.bytes, bf16 && allBf16);
    info.recomputeSeconds = info.seconds;
    if (!profile.measured.empty() || !profile.recomputeMeasured.empty()) {
      std::string key = ops::opCostKey(info.kind, info.attrs, operandTypes,
                                       typesOf(op.getResults()));
      if (auto it = profile.measured.find(key); it != profile.measured.end())
        info.recomputeSeconds = info.seconds = it->second;
      if (auto it = profile.recomputeMeasured.find(key);
          it != profile.recomputeMeasured.end())
        info.recomputeSeconds = it->second;
    }
    // A planned step's recomputation costs what recomputing costs.
    if (info.recompute)
      info.seconds = info.recomputeSeconds;

    memory::StepOp stepOp;
    for (mlir::Value operand : op.getOperands()) {
      auto it = ids.find(operand);
      if (it == ids.end())
        fail(&op, "an operand is defined outside @train_step's body");
      stepOp.operands.push_back(it->second);
    }
    // cross_entropy_grad writes each row of dlogits after reading that
    // row of logits (both kernels: softmax in place, then the label and the
    // scale), so dlogits may take the bytes of logits dying there: for a
    // language model that is the largest tensor of the step.
    if (info.kind == "reshape" || info.kind == "cross_entropy_grad")
      stepOp.reusableOperand = 0;
    else if (isElementwiseInPlace(info.kind))
      for (size_t i = 0; i < op.getNumOperands(); ++i)
        if (op.getNumResults() == 1 &&
            op.getOperand(i).getType() == op.getResult(0).getType()) {
          stepOp.reusableOperand = static_cast<int>(i);
          break;
        }
    if (auto scratch = op.getAttrOfType<mlir::IntegerAttr>(kScratchBytesAttr))
      stepOp.scratchBytes = scratch.getInt();
    std::vector<ResultInfo> results;
    for (mlir::Value result : op.getResults()) {
      ResultInfo r;
      r.info = valueInfo(result, r.bytes);
      results.push_back(std::move(r));
    }
    std::vector<int> resultIds =
        assembler.appendOp(std::move(info), std::move(stepOp), std::move(results),
                        forward.count(&op) || beforeLoss);
    for (unsigned r = 0; r < op.getNumResults(); ++r)
      ids[op.getResult(r)] = resultIds[r];
  }

  // 3. Outputs.
  std::vector<int> outputs;
  for (mlir::Value v : ret.getOperands())
    outputs.push_back(ids.lookup(v));
  assembler.finish(outputs);
  return step;
}

TrainStep replayTrainStep(const TrainStep &step,
                          const memory::RecomputedStep &applied) {
  stageCounters().replays++;
  const memory::StepGraph &g = applied.graph;
  TrainStep out;
  out.model = step.model;
  out.seed = step.seed;
  out.batch = step.batch;
  out.ranks = step.ranks;
  out.microbatches = step.microbatches;
  out.stepSamples = step.stepSamples;
  out.optimizerShards = step.optimizerShards;
  out.tokensPerSample = step.tokensPerSample;
  out.profile = step.profile;
  StepAssembler assembler(out);
  std::vector<int> id(g.values.size(), -1);
  for (size_t v = 0; v < g.values.size(); ++v)
    if (g.values[v].isArgument() && v < step.values.size())
      id[v] = assembler.appendArgument(g.values[v].role, g.values[v].name,
                                    g.values[v].bytes, step.values[v]);
  // The ops the loss depends on, and those before it, are forward ops
  // (extractTrainStep's rule, over positions in the new order).
  int lossAt = g.outputs.empty() ? -1 : g.values[g.outputs[0]].producer;
  std::vector<char> feedsLoss(g.ops.size(), 0);
  std::vector<int> work;
  if (lossAt >= 0)
    work.push_back(lossAt);
  while (!work.empty()) {
    int k = work.back();
    work.pop_back();
    if (feedsLoss[size_t(k)])
      continue;
    feedsLoss[size_t(k)] = 1;
    for (int v : g.ops[size_t(k)].operands)
      if (g.values[size_t(v)].producer >= 0)
        work.push_back(g.values[size_t(v)].producer);
  }
  for (size_t k = 0; k < g.ops.size(); ++k) {
    int origin = applied.origin[k];
    const memory::StepOp &was = step.graph.ops[size_t(origin)];
    OpInfo info = step.ops[size_t(origin)];
    if (applied.recompute[k]) {
      info.recompute = true;
      info.seconds = info.recomputeSeconds;
    }
    memory::StepOp op;
    op.reusableOperand = was.reusableOperand;
    op.scratchBytes = was.scratchBytes;
    for (int v : g.ops[k].operands)
      op.operands.push_back(id[size_t(v)]);
    std::vector<ResultInfo> results;
    for (int r : was.results)
      results.push_back({step.values[size_t(r)], step.graph.values[size_t(r)].bytes});
    for (ResultInfo &r : results)
      r.info.init = r.info.data = nullptr;
    std::vector<int> ids =
        assembler.appendOp(std::move(info), std::move(op), std::move(results),
                        feedsLoss[k] || int(k) < lossAt);
    for (size_t r = 0; r < ids.size(); ++r)
      id[size_t(g.ops[k].results[r])] = ids[r];
  }
  std::vector<int> outputs;
  for (int v : g.outputs)
    outputs.push_back(id[size_t(v)]);
  assembler.finish(outputs);
  return out;
}

void reorderTrainStep(mlir::ModuleOp module, TrainStep &step,
                      const std::vector<int> &order) {
  mlir::Operation *terminator = nullptr;
  std::vector<mlir::Operation *> ops = trainStepOps(module, &terminator);
  for (int k : order)
    ops[size_t(k)]->moveBefore(terminator);
  memory::RecomputedStep moved;
  moved.graph = memory::reorder(step.graph, order);
  moved.origin = order;
  moved.recompute.assign(order.size(), 0);
  step = replayTrainStep(step, moved);
}

std::vector<mlir::Operation *> trainStepOps(mlir::ModuleOp module,
                                           mlir::Operation **terminator) {
  auto func = module.lookupSymbol<mlir::func::FuncOp>("train_step");
  mlir::Block &body = func.getBody().front();
  std::vector<mlir::Operation *> ops;
  for (mlir::Operation &op : body.without_terminator())
    ops.push_back(&op);
  if (terminator)
    *terminator = body.getTerminator();
  return ops;
}

std::optional<TrainStep> extractTrainStepOrEmit(mlir::ModuleOp module) {
  try {
    return extractTrainStep(module);
  } catch (const std::exception &e) {
    module.emitError(e.what());
    return std::nullopt;
  }
}

} // namespace remat
