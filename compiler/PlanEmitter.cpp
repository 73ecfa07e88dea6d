//===- PlanEmitter.cpp - TrainStep to the runtime's Plan ------------------===//

#include "compiler/PlanEmitter.h"

#include "ir/GraphOps.h"

#include <map>

using nlohmann::json;

namespace remat::compiler {

json memoryReport(const TrainStep &step, const memory::Liveness &liveness,
                  const memory::ArenaLayout &layout,
                  std::optional<int64_t> budgetBytes,
                  const RematOutcome &planned) {
  using memory::Role;
  auto at = [&](Role r) {
    return liveness.peakBreakdown[static_cast<int>(r)];
  };
  json report;
  report["budget_bytes"] = budgetBytes ? json(*budgetBytes) : json(nullptr);
  report["planned_peak_bytes"] = liveness.peakBytes;
  report["arena_bytes"] = layout.arenaBytes;
  report["live_lower_bound_bytes"] = liveness.peakBytes;
  report["breakdown"] = {
      {"params", at(Role::Param)},
      {"grads", at(Role::Grad)},
      {"optimizer", at(Role::Optimizer)},
      {"inputs", at(Role::Input)},
      {"activations", at(Role::Activation) + at(Role::Temporary)},
      {"workspace", liveness.peakScratchBytes}};
  // Running statistics, for the models that have them.
  if (at(Role::State) > 0)
    report["breakdown"]["state"] = at(Role::State);
  // A split step's gradient sums (--microbatches).
  if (at(Role::Accumulator) > 0)
    report["breakdown"]["accumulators"] = at(Role::Accumulator);
  // --shard-optimizer: the optimizer bytes above are this rank's slices.
  if (step.optimizerShards > 1)
    report["optimizer_shards"] = step.optimizerShards;
  report["recompute_overhead"] = planned.recomputeOverhead;
  report["solver"] = planned.solver;
  report["solve_seconds"] = planned.solveSeconds;
  report["optimality_gap"] =
      planned.optimalityGap ? json(*planned.optimalityGap) : json(nullptr);
  report["min_feasible_bytes"] =
      planned.minFeasibleBytes ? json(*planned.minFeasibleBytes) : json(nullptr);
  report["min_feasible_gap"] = planned.minFeasibleGap;
  report["lower_bound_bytes"] = planned.lowerBoundBytes;
  report["lower_bound_reason"] = planned.lowerBoundReason;
  report["order"] = planned.order;
  report["peak_op"] = liveness.peakOp >= 0
                          ? json(step.graph.ops[liveness.peakOp].name)
                          : json(nullptr);
  report["modeled_step_seconds"] = step.totalSeconds();
  if (step.microbatches > 1) { // a split step (--microbatches)
    report["microbatches"] = step.microbatches;
    report["microbatch_samples"] = step.batch;
    report["step_samples"] = step.stepSamples > 0
                                 ? step.stepSamples
                                 : step.batch * step.microbatches;
  }
  return report;
}

namespace {

runtime::InitSpec initSpec(const json &init) {
  runtime::InitSpec spec;
  std::string kind = init.value("kind", "zeros");
  spec.kind = kind == "normal"    ? runtime::InitSpec::Kind::Normal
              : kind == "uniform" ? runtime::InitSpec::Kind::Uniform
              : kind == "ones"    ? runtime::InitSpec::Kind::Ones
                                  : runtime::InitSpec::Kind::Zeros;
  spec.mean = init.value("mean", 0.0);
  spec.std = init.value("std", 1.0);
  spec.low = init.value("low", 0.0);
  spec.high = init.value("high", 1.0);
  return spec;
}

/// A data generator; labels_of and teacher name their source buffer,
/// looked up in `indexOf`.
runtime::DataSpec dataSpec(const json &data,
                           const std::map<std::string, int64_t> &indexOf) {
  runtime::DataSpec spec;
  std::string kind = data.value("kind", "randn");
  if (kind == "randn") {
    spec.kind = runtime::DataSpec::Kind::Randn;
    spec.std = data.value("std", 1.0);
  } else if (kind == "randint") {
    spec.kind = runtime::DataSpec::Kind::Randint;
    spec.low = data.value("low", int64_t(0));
    spec.high = data.value("high", int64_t(2));
  } else if (kind == "sequence") {
    spec.kind = runtime::DataSpec::Kind::Sequence;
    spec.vocab = data.value("vocab", int64_t(2));
    spec.a = data.value("a", int64_t(5));
    spec.c = data.value("c", int64_t(3));
  } else if (kind == "sample_mask") {
    spec.kind = runtime::DataSpec::Kind::SampleMask;
  } else if (kind == "labels_of" || kind == "teacher") {
    auto it = indexOf.find(data.value("of", std::string()));
    if (it == indexOf.end())
      throw std::runtime_error(kind + " names an unknown input");
    spec.of = it->second;
    if (kind == "labels_of") {
      spec.kind = runtime::DataSpec::Kind::LabelsOf;
      spec.shift = data.value("shift", int64_t(1));
    } else {
      spec.kind = runtime::DataSpec::Kind::Teacher;
      spec.classes = data.value("classes", int64_t(0));
    }
  }
  return spec;
}

} // namespace

runtime::Plan emitPlan(plan::ArenaOp arena, const TrainStep &step,
                       const json &report) {
  runtime::Plan plan;
  plan.model = step.model;
  plan.seed = static_cast<uint64_t>(step.seed);
  plan.alignment = static_cast<uint64_t>(arena.getAlignmentValue());
  plan.arenaBytes = static_cast<uint64_t>(arena.getBytesValue());
  plan.batch = step.batch;
  plan.ranks = step.ranks;
  plan.microbatches = step.microbatches;
  plan.stepSamples = step.stepSamples;
  plan.tokensPerSample = step.tokensPerSample;
  // What depends on the wall clock stays in the report file: the solve
  // time and the optimality gap (how far the time-limited MILP got). The
  // same model, options and budget give a byte-identical plan file.
  plan.report = report;
  plan.report.erase("solve_seconds");
  plan.report.erase("optimality_gap");

  // Buffers in arena order; inputs' data generators once every buffer has
  // its index (labels_of refers to another buffer).
  std::map<std::string, int64_t> indexOf;
  std::vector<std::pair<size_t, json>> data;
  for (plan::BufferOp buffer : arena.getBodyBlock().getOps<plan::BufferOp>()) {
    runtime::BufferDesc b;
    b.name = buffer.getSymName().str();
    b.role = *runtime::parseRole(buffer.getRole().str());
    b.dtype = *graph::dtypeOf(buffer.getDtype());
    b.shape.assign(buffer.getShape().begin(), buffer.getShape().end());
    b.offset = static_cast<uint64_t>(buffer.getOffsetValue());
    b.bytes = static_cast<uint64_t>(buffer.getBytesValue());
    if (auto init = buffer.getInitAttr())
      b.init = initSpec(attributeToJson(init));
    else if (runtime::isPersistent(b.role))
      b.init = runtime::InitSpec{};
    if (auto spec = buffer.getDataAttr())
      data.push_back({plan.buffers.size(), attributeToJson(spec)});
    indexOf[b.name] = static_cast<int64_t>(plan.buffers.size());
    plan.buffers.push_back(std::move(b));
  }
  for (const auto &[index, spec] : data)
    plan.buffers[index].data = dataSpec(spec, indexOf);

  auto indices = [&](mlir::ArrayAttr refs) {
    std::vector<int64_t> out;
    for (mlir::Attribute ref : refs)
      out.push_back(
          indexOf.at(llvm::cast<mlir::FlatSymbolRefAttr>(ref).getValue().str()));
    return out;
  };
  for (plan::StepOp op : arena.getBodyBlock().getOps<plan::StepOp>()) {
    runtime::StepDesc s;
    s.op = op.getOpName().str();
    s.inputs = indices(op.getInputs());
    s.outputs = indices(op.getOutputs());
    if (auto attrs = op.getKernelAttrsAttr())
      s.attrs = attributeToJson(attrs);
    s.phase = *runtime::parsePhase(op.getPhase().str());
    s.recompute = op.getRecompute();
    plan.steps.push_back(std::move(s));
  }
  plan.loss = indexOf.at(arena.getLoss()->str());
  return plan;
}

} // namespace remat::compiler
