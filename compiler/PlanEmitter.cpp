//===- PlanEmitter.cpp - TrainStep to the runtime's Plan ------------------===//

#include "compiler/PlanEmitter.h"

#include <map>

using nlohmann::json;

namespace remat::compiler {

json memoryReport(const TrainStep &step, const memory::Liveness &liveness,
                  const memory::ArenaLayout &layout,
                  std::optional<int64_t> budgetBytes, double recomputeOverhead,
                  const std::string &solver, double solveSeconds) {
  using memory::Role;
  auto at = [&](Role r) {
    return liveness.peakBreakdown[static_cast<int>(r)];
  };
  json report;
  report["budget_bytes"] = budgetBytes ? json(*budgetBytes) : json(nullptr);
  report["planned_peak_bytes"] = liveness.peakBytes;
  report["arena_bytes"] = layout.arenaBytes;
  report["live_lower_bound_bytes"] = liveness.peakBytes;
  report["breakdown"] = {{"params", at(Role::Param)},
                         {"grads", at(Role::Grad)},
                         {"optimizer", at(Role::Optimizer)},
                         {"inputs", at(Role::Input)},
                         {"activations",
                          at(Role::Activation) + at(Role::Temporary)},
                         {"workspace", 0}};
  report["recompute_overhead"] = recomputeOverhead;
  report["solver"] = solver;
  report["solve_seconds"] = solveSeconds;
  report["peak_op"] = liveness.peakOp >= 0
                          ? json(step.graph.ops[liveness.peakOp].name)
                          : json(nullptr);
  report["modeled_step_seconds"] = step.totalSeconds();
  return report;
}

runtime::Plan emitPlan(const TrainStep &step, const memory::Liveness &liveness,
                       const memory::ArenaLayout &layout, int64_t alignment,
                       const json &report) {
  runtime::Plan plan;
  plan.model = step.model;
  plan.seed = static_cast<uint64_t>(step.seed);
  plan.alignment = static_cast<uint64_t>(alignment);
  plan.arenaBytes = static_cast<uint64_t>(layout.arenaBytes);
  plan.batch = step.batch;
  plan.tokensPerSample = step.tokensPerSample;
  plan.report = report;

  const auto &values = step.graph.values;
  std::vector<int64_t> bufferIndex(values.size(), -1);
  std::map<std::string, int64_t> byName;
  for (size_t v = 0; v < values.size(); ++v) {
    if (values[v].inPlaceOf >= 0)
      continue;
    runtime::BufferDesc b;
    b.name = values[v].name;
    switch (values[v].role) {
    case memory::Role::Param: b.role = runtime::BufferRole::Param; break;
    case memory::Role::Optimizer: b.role = runtime::BufferRole::Optimizer; break;
    case memory::Role::Input: b.role = runtime::BufferRole::Input; break;
    case memory::Role::Grad: b.role = runtime::BufferRole::Grad; break;
    case memory::Role::Activation: b.role = runtime::BufferRole::Activation; break;
    case memory::Role::Temporary: b.role = runtime::BufferRole::Temporary; break;
    }
    b.dtype = *runtime::parseDType(step.values[v].dtype);
    b.shape = step.values[v].shape;
    b.offset = static_cast<uint64_t>(layout.offsets[v]);
    b.bytes = static_cast<uint64_t>(values[v].bytes);
    const json &init = step.values[v].init;
    if (init.is_object()) {
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
      b.init = spec;
    } else if (b.role == runtime::BufferRole::Param ||
               b.role == runtime::BufferRole::Optimizer) {
      b.init = runtime::InitSpec{};
    }
    bufferIndex[v] = static_cast<int64_t>(plan.buffers.size());
    byName[b.name] = bufferIndex[v];
    plan.buffers.push_back(b);
  }
  for (size_t v = 0; v < values.size(); ++v)
    if (values[v].inPlaceOf >= 0)
      bufferIndex[v] = bufferIndex[values[v].inPlaceOf];

  // Inputs' data generators (labels_of refers to another buffer by index).
  for (size_t v = 0; v < values.size(); ++v) {
    const json &data = step.values[v].data;
    if (!data.is_object() || bufferIndex[v] < 0)
      continue;
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
    } else if (kind == "labels_of") {
      spec.kind = runtime::DataSpec::Kind::LabelsOf;
      auto it = byName.find(data.value("of", std::string()));
      if (it == byName.end())
        throw std::runtime_error("labels_of names an unknown input");
      spec.of = it->second;
      spec.shift = data.value("shift", int64_t(1));
    }
    plan.buffers[bufferIndex[v]].data = spec;
  }

  for (size_t k = 0; k < step.graph.ops.size(); ++k) {
    const memory::StepOp &op = step.graph.ops[k];
    runtime::StepDesc s;
    s.op = step.ops[k].kind;
    for (int v : op.operands)
      s.inputs.push_back(bufferIndex[v]);
    for (int v : op.results)
      s.outputs.push_back(bufferIndex[v]);
    s.attrs = step.ops[k].attrs;
    s.phase = op.phase == memory::Phase::Forward    ? runtime::Phase::Forward
              : op.phase == memory::Phase::Backward ? runtime::Phase::Backward
                                                    : runtime::Phase::Optimizer;
    s.recompute = step.ops[k].recompute;
    plan.steps.push_back(std::move(s));
  }
  plan.loss = bufferIndex[step.loss];
  (void)liveness;
  return plan;
}

} // namespace remat::compiler
