//===- Driver.cpp - The compile pipeline behind the CLI -------------------===//

#include "compiler/Driver.h"

#include "compiler/Importer.h"
#include "ops/Suggest.h"
#include "passes/AssignBuffers.h"
#include "passes/Passes.h"
#include "runtime/plan/Ops.h"

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassManager.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <stdexcept>
#include <utility>

namespace remat::compiler {

const std::vector<std::string> &stageNames() {
  static const std::vector<std::string> names = {
      "flat", "graph", "grad", "train", "scheduled", "planned", "plan"};
  return names;
}

std::optional<Stage> parseStage(const std::string &name) {
  const std::vector<std::string> &names = stageNames();
  auto it = std::find(names.begin(), names.end(), name);
  if (it == names.end())
    return std::nullopt;
  return Stage(it - names.begin());
}

const std::vector<std::string> &backendNames() {
  static const std::vector<std::string> names = {"cpu", "cuda"};
  return names;
}

int64_t workspaceReserve(const CompileOptions &options) {
  if (!options.budgetBytes)
    return 0;
  return options.workspaceReserveBytes.value_or(0);
}

int64_t arenaBudget(const CompileOptions &options, int64_t reserve) {
  int64_t budget = *options.budgetBytes;
  if (reserve < 0 || reserve >= budget)
    throw std::runtime_error(
        "the workspace reserve of " + std::to_string(reserve) +
        " bytes leaves nothing of the budget of " + std::to_string(budget) +
        " bytes for the arena");
  return budget - reserve;
}

namespace {

/// The diagnostics emitted while it lives, one per line as "LOC: message",
/// LOC as describeLocation gives it. Module-level diagnostics carry the
/// model file's location (line 0): the message alone says it better.
class DiagnosticText {
public:
  explicit DiagnosticText(mlir::MLIRContext &context)
      : handler(&context, [this](mlir::Diagnostic &d) {
          llvm::raw_string_ostream os(messages);
          if (!messages.empty())
            os << "\n";
          auto file = mlir::dyn_cast<mlir::FileLineColLoc>(d.getLocation());
          if (!file || file.getLine() != 0) {
            std::string where = describeLocation(d.getLocation());
            if (where.empty())
              os << d.getLocation();
            else
              os << where;
            os << ": ";
          }
          os << d.str();
          return mlir::success();
        }) {}

  const std::string &text() const { return messages; }

private:
  std::string messages;
  mlir::ScopedDiagnosticHandler handler;
};

} // namespace

void annotateKernelScratch(mlir::ModuleOp module,
                           const runtime::KernelInfo &info) {
  mlir::Builder builder(module.getContext());
  for (mlir::Operation *op : trainStepOps(module)) {
    llvm::StringRef name = op->getName().getStringRef();
    if (!name.starts_with("graph."))
      continue;
    std::string kind = name.drop_front(6).str();
    std::optional<ops::OpKind> opKind = ops::parseOpKind(kind);
    if (!opKind)
      continue;
    ops::OpAttrs attrs =
        runtime::parseOpAttrs(*opKind, opAttributes(*op), name.str());
    int64_t bytes = info.opScratchBytes(
        *opKind, attrs, typesOf(op->getOperands()), typesOf(op->getResults()));
    if (bytes > 0)
      op->setAttr(kScratchBytesAttr, builder.getI64IntegerAttr(bytes));
  }
}

RematOptions rematOptions(const CompileOptions &options) {
  RematOptions remat;
  remat.budgetBytes = options.budgetBytes.value_or(0);
  remat.workspaceReserve = workspaceReserve(options);
  remat.solver = options.solver;
  remat.timeLimitSeconds = options.timeLimitSeconds;
  remat.alignment = options.alignment;
  remat.progress = options.progress;
  remat.reorder = options.reorder;
  remat.searchMinimum = options.searchMinimum;
  remat.explainInfeasible = options.explainInfeasible;
  return remat;
}

StepModule buildStep(const model::ModelGraph &graph,
                     mlir::MLIRContext &context, Stage stage,
                     const CompileOptions &options) {
  StepModule built;
  built.module = importModel(graph, context);
  mlir::ModuleOp module = *built.module;
  setDeviceProfile(module, options.deviceProfile);
  if (stage == Stage::Graph)
    return built;
  mlir::PassManager pm(&context);
  if (stage == Stage::Grad)
    pm.addPass(createAutodiffPass());
  else
    buildTrainStepPipeline(pm);
  DiagnosticText diagnostics(context);
  if (mlir::failed(pm.run(module))) {
    std::string messages = diagnostics.text();
    throw std::runtime_error(messages.empty() ? "pass pipeline failed"
                                              : messages);
  }
  if (stage == Stage::Grad)
    return built;
  // The kernels' scratch goes into the arena, laid out with the buffers
  // (and so within the budget).
  if (options.kernelInfo)
    annotateKernelScratch(module, *options.kernelInfo);
  if (stage < Stage::Scheduled)
    return built;
  built.step = extractTrainStep(module);
  reorderTrainStep(module, *built.step,
                   memory::memoryAwareOrder(built.step->graph));
  if (stage >= Stage::Planned) {
    built.planned =
        rematerializeTrainStep(module, *built.step, rematOptions(options));
    setPlanSummary(module, *built.planned);
    if (mlir::failed(mlir::verify(module)))
      throw std::runtime_error("internal error: the planned step failed to "
                               "verify: " + diagnostics.text());
  }
  return built;
}

mlir::OwningOpRef<mlir::ModuleOp>
buildModule(const model::ModelGraph &graph, mlir::MLIRContext &context,
            Stage stage, const CompileOptions &options) {
  return buildStep(graph, context, stage, options).module;
}

namespace {
/// The order of step's ops with each optimizer update moved `lag` ops
/// later (counting the other ops; updates that come due together keep
/// their order). An update's results are read by nothing in the step, so
/// every such move keeps the dependencies.
std::vector<int> laggedOrder(const TrainStep &step, int lag) {
  std::vector<int> order;
  std::vector<std::pair<int, int>> held; // (op, other ops still to pass)
  for (size_t k = 0; k < step.graph.ops.size(); ++k) {
    if (step.graph.ops[k].phase == runtime::Phase::Optimizer) {
      held.push_back({int(k), lag});
      continue;
    }
    order.push_back(int(k));
    for (auto &h : held)
      --h.second;
    while (!held.empty() && held.front().second <= 0) {
      order.push_back(held.front().first);
      held.erase(held.begin());
    }
  }
  for (auto &h : held)
    order.push_back(h.first);
  return order;
}
} // namespace

int lagOptimizerUpdates(mlir::ModuleOp module, TrainStep &step,
                        const CompileOptions &options, int64_t arenaLimit) {
  memory::SearchScope search;
  auto arenaOf = [&](const TrainStep &s) {
    memory::Liveness live = memory::computeLiveness(s.graph, options.alignment);
    return memory::assignOffsets(s.graph, live, options.alignment).arenaBytes;
  };
  // No budget: the lag may grow the arena of the planner's order by 1% at
  // most (a gradient kept a few ops longer, where the peak falls in the
  // backward pass).
  if (arenaLimit <= 0) {
    int64_t planned = arenaOf(step);
    arenaLimit = planned + planned / 100;
  }
  for (int lag = options.updateLag; lag > 0; lag /= 2) {
    std::vector<int> order = laggedOrder(step, lag);
    memory::RecomputedStep moved;
    moved.graph = memory::reorder(step.graph, order);
    moved.origin = order;
    moved.recompute.assign(order.size(), 0);
    if (arenaOf(replayTrainStep(step, moved)) <= arenaLimit) {
      reorderTrainStep(module, step, order);
      return lag;
    }
  }
  return 0;
}

runtime::Plan compilePlan(const model::ModelGraph &graph,
                          const CompileOptions &options,
                          nlohmann::json &report) {
  mlir::MLIRContext context;
  StepModule built = buildStep(graph, context, Stage::Plan, options);
  mlir::ModuleOp module = *built.module;
  TrainStep &step = *built.step;
  int updateLag = 0;
  if (step.ranks > 1 && options.updateLag > 0)
    updateLag = lagOptimizerUpdates(
        module, step, options,
        options.budgetBytes ? arenaBudget(options, workspaceReserve(options))
                            : 0);
  memory::Liveness liveness =
      memory::computeLiveness(step.graph, options.alignment);
  memory::ArenaLayout layout =
      memory::assignOffsets(step.graph, liveness, options.alignment);
  report = memoryReport(step, liveness, layout, options.budgetBytes,
                        *built.planned);
  int64_t reserve = workspaceReserve(options);
  report["workspace_reserve_bytes"] = reserve;
  if (step.ranks > 1)
    report["update_lag"] = updateLag;
  // The whole step on its backend: the arena plus the workspace beside it
  // (the breakdown's workspace, so that the breakdown adds up to the
  // planned peak), and the runtime's own memory, stated beside the budget.
  // cpu: the workspace is known once the plan is laid out (below); cuda's
  // depends on what the budget leaves (docs/cuda.md).
  std::optional<int64_t> workspace;
  report["backend"] = options.backend;
  auto setWorkspace = [&](nlohmann::json &r, std::optional<int64_t> bytes) {
    r["workspace_bytes"] =
        bytes ? nlohmann::json(*bytes) : nlohmann::json(nullptr);
    int64_t counted = bytes.value_or(reserve);
    // The peak op's scratch in the arena and the workspace beside it.
    r["breakdown"]["workspace"] = liveness.peakScratchBytes + counted;
    r["planned_peak_bytes"] = liveness.peakBytes + counted;
    r["step_bytes"] = layout.arenaBytes + counted;
  };
  setWorkspace(report, workspace);
  report["device_profile"] = {
      {"name", step.profile.name},
      {"flops_per_second", step.profile.flopsPerSecond},
      {"bytes_per_second", step.profile.bytesPerSecond},
      {"launch_seconds", step.profile.launchSeconds}};
  if (step.profile.bf16FlopsPerSecond > 0)
    report["device_profile"]["bf16_flops_per_second"] =
        step.profile.bf16FlopsPerSecond;
  if (!step.profile.measured.empty())
    report["device_profile"]["measured_ops"] = step.profile.measured.size();
  if (!step.profile.recomputeMeasured.empty())
    report["device_profile"]["measured_recompute_ops"] =
        step.profile.recomputeMeasured.size();
  // The contract: never an arena over the budget.
  if (options.budgetBytes &&
      layout.arenaBytes > arenaBudget(options, reserve))
    throw std::runtime_error("internal error: arena of " +
                             std::to_string(layout.arenaBytes) +
                             " bytes exceeds the arena's budget of " +
                             std::to_string(arenaBudget(options, reserve)));
  // The plan dialect on the way to the file: the arena laid out with the
  // liveness and layout of the report, verified before it is written.
  context.getOrLoadDialect<plan::PlanDialect>();
  DiagnosticText diagnostics(context);
  plan::ArenaOp arena =
      buildPlanArena(module, step, liveness, layout, options.alignment);
  if (!arena || mlir::failed(mlir::verify(module)))
    throw std::runtime_error("internal error: the plan failed to verify: " +
                             diagnostics.text());
  runtime::Plan plan = emitPlan(arena, step, report);
  // What the backend allocates beside the arena, and its own memory,
  // stated beside the budget (the CUDA backend reports its device overhead
  // when it runs: docs/cuda.md).
  nlohmann::json allowance = nullptr, fixed = nullptr;
  if (options.kernelInfo) {
    runtime::PlanKernelFacts facts = options.kernelInfo->planFacts(
        plan, uint64_t(options.budgetBytes.value_or(0)));
    workspace = facts.workspaceBytes;
    for (nlohmann::json *r : {&report, &plan.report}) {
      setWorkspace(*r, workspace);
      (*r)["arena_scratch_steps"] = facts.arenaScratchSteps;
      (*r)["arena_scratch_bytes"] = facts.arenaScratchBytes;
    }
    allowance = facts.runtimeAllowanceBytes;
    fixed = facts.runtimeFixedBytes;
  }
  for (nlohmann::json *r : {&report, &plan.report}) {
    (*r)["runtime_allowance_bytes"] = allowance;
    (*r)["runtime_fixed_bytes"] = fixed;
    // An ONNX model's initializers that are not trained, and why.
    if (!graph.frozen.empty())
      (*r)["frozen"] = graph.frozen;
  }
  return plan;
}

const char *const kByteSizeGrammar =
    "a whole or decimal number and an optional unit: B (bytes); k, M, G, T "
    "or kB, MB, GB, TB (powers of 1000); KiB, MiB, GiB, TiB (powers of "
    "1024); units in any case, b is bytes (e.g. 123456, 800MB, 0.6M, "
    "1.5GiB)";

std::optional<int64_t> parseByteSize(const std::string &text) {
  // NUMBER: digits, with an optional fraction ("1.5", ".5").
  size_t at = 0, digits = 0;
  while (at < text.size() && std::isdigit((unsigned char)text[at]))
    ++at, ++digits;
  if (at < text.size() && text[at] == '.') {
    ++at;
    while (at < text.size() && std::isdigit((unsigned char)text[at]))
      ++at, ++digits;
  }
  if (digits == 0)
    return std::nullopt;
  double value = std::strtod(text.substr(0, at).c_str(), nullptr);
  size_t unitAt = at;
  while (unitAt < text.size() && text[unitAt] == ' ')
    ++unitAt;
  std::string unit;
  for (char c : text.substr(unitAt))
    unit.push_back(char(std::tolower((unsigned char)c)));
  static const std::pair<const char *, double> kUnits[] = {
      {"", 1},       {"b", 1},
      {"k", 1e3},    {"kb", 1e3},
      {"m", 1e6},    {"mb", 1e6},
      {"g", 1e9},    {"gb", 1e9},
      {"t", 1e12},   {"tb", 1e12},
      {"kib", 1024.0},
      {"mib", 1024.0 * 1024},
      {"gib", 1024.0 * 1024 * 1024},
      {"tib", 1024.0 * 1024 * 1024 * 1024}};
  for (const auto &[name, scale] : kUnits) {
    if (unit != name)
      continue;
    if (value * scale > 9.0e18)
      return std::nullopt;
    return static_cast<int64_t>(std::llround(value * scale));
  }
  return std::nullopt;
}

int64_t parseByteSizeFlag(const std::string &flag, const std::string &value,
                          bool positive) {
  std::optional<int64_t> bytes = parseByteSize(value);
  if (!bytes)
    throw std::invalid_argument(flag + " '" + value +
                                "' is not a byte size: give " +
                                kByteSizeGrammar);
  if (positive && *bytes <= 0)
    throw std::invalid_argument(
        flag + " '" + value + "' is too small: no step fits in 0 bytes "
        "(remat plan MODEL --min-feasible finds the least budget that fits)");
  return *bytes;
}

std::string formatBytes(int64_t bytes) {
  const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  char buffer[64];
  if (u == 0)
    std::snprintf(buffer, sizeof buffer, "%lld B", (long long)bytes);
  else
    std::snprintf(buffer, sizeof buffer, "%.2f %s", v, units[u]);
  return buffer;
}

DeviceProfile parseDeviceProfile(const std::string &spec) {
  if (std::optional<DeviceProfile> builtin = builtinDeviceProfile(spec))
    return *builtin;
  std::ifstream in(spec);
  if (!in) {
    std::vector<std::string> builtins;
    std::string list = builtinDeviceProfileNames();
    for (size_t begin = 0; begin < list.size();) {
      size_t comma = std::min(list.find(", ", begin), list.size());
      builtins.push_back(list.substr(begin, comma - begin));
      begin = comma + 2;
    }
    throw std::invalid_argument(
        "--device-profile '" + spec + "' is neither a built-in profile (" +
        list + ") nor a readable JSON file" + didYouMean(spec, builtins));
  }
  nlohmann::json j = nlohmann::json::parse(in, nullptr, /*exceptions=*/false);
  if (!j.is_object())
    throw std::invalid_argument(spec + ": not a JSON object");
  DeviceProfile profile;
  profile.name = spec;
  for (const auto &[key, value] : j.items()) {
    if (key == "name" && value.is_string()) {
      profile.name = value.get<std::string>();
      continue;
    }
    if (key == "source" || key == "calls")
      continue; // remat profile's note of what it timed, per plan step
    if (key == "ops" || key == "recompute_ops") {
      // remat profile's tables: seconds by op call (ops/CostKey.h), and
      // by op call as a recomputation in a planned step.
      if (!value.is_object())
        throw std::invalid_argument(spec + ": '" + key + "' must be an "
                                    "object of op call -> seconds");
      auto &table =
          key == "ops" ? profile.measured : profile.recomputeMeasured;
      for (const auto &[call, seconds] : value.items()) {
        if (!seconds.is_number() || !std::isfinite(seconds.get<double>()) ||
            seconds.get<double>() < 0)
          throw std::invalid_argument(spec + ": " + key + "['" + call +
                                      "'] must be a non-negative number of "
                                      "seconds");
        table[call] = seconds.get<double>();
      }
      continue;
    }
    double *field = key == "flops_per_second" ? &profile.flopsPerSecond
                    : key == "bf16_flops_per_second"
                        ? &profile.bf16FlopsPerSecond
                    : key == "bytes_per_second" ? &profile.bytesPerSecond
                    : key == "launch_seconds"   ? &profile.launchSeconds
                                                : nullptr;
    if (!field)
      throw std::invalid_argument(spec + ": unknown field '" + key +
                                  "' (expected name, flops_per_second, "
                                  "bf16_flops_per_second, bytes_per_second, "
                                  "launch_seconds, ops, recompute_ops, "
                                  "source, calls)");
    bool launch = key == "launch_seconds";
    if (!value.is_number() || !std::isfinite(value.get<double>()) ||
        (launch ? value.get<double>() < 0 : !(value.get<double>() > 0)))
      throw std::invalid_argument(spec + ": '" + key + "' must be a " +
                                  (launch ? "non-negative" : "positive") +
                                  " number");
    *field = value.get<double>();
  }
  for (const char *key : {"flops_per_second", "bytes_per_second"})
    if (!j.contains(key))
      throw std::invalid_argument(spec + ": missing '" + key + "'");
  return profile;
}

} // namespace remat::compiler
