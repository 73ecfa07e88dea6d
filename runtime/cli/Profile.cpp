//===- Profile.cpp - Measured op costs of a plan (remat profile) ----------===//
#include "runtime/cli/Profile.h"

#include "ops/CostKey.h"
#include "ops/DeviceProfile.h"
#include "runtime/Backend.h"
#include "runtime/Executor.h"
#include "runtime/plan/Loader.h"
#include "runtime/plan/OutputFile.h"
#include "runtime/plan/Safetensors.h"

#include <algorithm>
#include <chrono>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>
#include <vector>

namespace remat::tools {

using namespace runtime;

double median(std::vector<double> v) {
  if (v.empty())
    return 0;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

std::string stepCostKey(const Plan &plan, const StepDesc &step) {
  std::vector<TensorType> ins, outs;
  for (int64_t b : step.inputs)
    ins.push_back(
        {plan.buffers[size_t(b)].dtype, plan.buffers[size_t(b)].shape});
  for (int64_t b : step.outputs)
    outs.push_back(
        {plan.buffers[size_t(b)].dtype, plan.buffers[size_t(b)].shape});
  return ops::opCostKey(step.op, step.attrs, ins, outs);
}

nlohmann::json measureOpCosts(const std::string &planPath,
                              const std::string &backendName, int warmup,
                              int steps, std::ostream &progress) {
  LoadedPlan plan = loadPlan(planPath);
  std::unique_ptr<Backend> backend = createBackend(backendName);
  std::optional<SafetensorsFile> weights;
  if (!plan.plan.weights.empty())
    weights = SafetensorsFile::open(
        planWeightsPath(planPath, plan.plan.weights));
  ExecutorOptions options;
  options.weights = weights ? &*weights : nullptr;
  // A plan for N ranks: one rank's step (its batch), timed alone.
  options.oneRankOfMany = true;
  Executor exec(plan, *backend, options);
  const Plan &p = plan.plan;
  std::vector<std::vector<double>> samples(p.steps.size());
  bool timing = false;
  auto last = std::chrono::steady_clock::now();
  exec.onStepExecuted = [&](size_t i) {
    backend->synchronize();
    auto now = std::chrono::steady_clock::now();
    if (timing)
      samples[i].push_back(std::chrono::duration<double>(now - last).count());
    last = now;
  };
  std::vector<double> stepSeconds;
  for (int s = 0; s < warmup + steps; ++s) {
    timing = s >= warmup;
    backend->synchronize();
    last = std::chrono::steady_clock::now();
    // The next step's inputs are filled after this step's last plan step,
    // outside every plan step's interval (only the first step's are filled
    // inside its first interval: it is a warm-up step by default).
    StepResult r = exec.runStep(/*prefetchNext=*/s + 1 < warmup + steps);
    if (timing)
      stepSeconds.push_back(r.milliseconds / 1000);
    progress << "remat profile: " << (timing ? "timed" : "warm-up")
             << " step " << s + 1 << "/" << warmup + steps << ": "
             << r.milliseconds << " ms\n"
             << std::flush;
  }
  // A call's samples go to its key's pool in `ops` (first computations)
  // or in `recompute_ops` (recomputations of a planned step: their
  // operands may be cold where the first computation's were just made).
  std::map<std::string, std::vector<double>> byKey, byRecomputeKey;
  // Each plan step's own median too: where a recomputation costs what
  // its key's pooled median says, and where it does not (cache state).
  nlohmann::json calls = nlohmann::json::array();
  for (size_t i = 0; i < p.steps.size(); ++i) {
    calls.push_back({{"step", i},
                     {"op", p.steps[i].op},
                     {"phase", phaseName(p.steps[i].phase)},
                     {"recompute", p.steps[i].recompute},
                     {"seconds", median(samples[i])}});
    std::vector<double> &pool =
        (p.steps[i].recompute ? byRecomputeKey
                              : byKey)[stepCostKey(p, p.steps[i])];
    pool.insert(pool.end(), samples[i].begin(), samples[i].end());
  }
  nlohmann::json table = nlohmann::json::object(),
                 recomputeTable = nlohmann::json::object();
  for (auto &[key, pool] : byKey)
    table[key] = median(pool);
  for (auto &[key, pool] : byRecomputeKey)
    recomputeTable[key] = median(pool);
  nlohmann::json result = {{"backend", backendName},
                           {"warmup_steps", warmup},
                           {"timed_steps", steps},
                           {"step_seconds", median(stepSeconds)},
                           {"ops", table},
                           {"calls", calls}};
  if (!recomputeTable.empty())
    result["recompute_ops"] = recomputeTable;
  if (std::optional<DeviceMemoryReport> memory = backend->deviceMemory())
    result["device_memory"] = deviceMemoryJson(*memory);
  if (p.report.contains("budget_bytes"))
    result["budget_bytes"] = p.report["budget_bytes"];
  return result;
}

nlohmann::json profileFile(nlohmann::json table,
                           const std::string &backendName,
                           const std::string &model) {
  DeviceProfile base =
      *builtinDeviceProfile(backendName == "cpu" ? "cpu" : "h200");
  nlohmann::json profile = {{"name", "measured-" + backendName},
                            {"flops_per_second", base.flopsPerSecond},
                            {"bytes_per_second", base.bytesPerSecond},
                            {"launch_seconds", base.launchSeconds}};
  if (base.bf16FlopsPerSecond > 0)
    profile["bf16_flops_per_second"] = base.bf16FlopsPerSecond;
  for (const char *key : {"ops", "recompute_ops", "calls"})
    if (table.contains(key)) {
      profile[key] = table[key];
      table.erase(key);
    }
  table["model"] = model;
  profile["source"] = table;
  return profile;
}

nlohmann::json planProfile(const std::string &planPath,
                           const std::string &backendName, int warmup,
                           int steps, std::ostream &progress) {
  return profileFile(
      measureOpCosts(planPath, backendName, warmup, steps, progress),
      backendName, planPath);
}

void writeProfileFile(const std::string &output, const nlohmann::json &profile,
                      const std::string &command) {
  runtime::writeOutputFile(output, profile.dump(1) + "\n");
  std::cerr << command << ": " << profile["ops"].size()
            << " op calls timed; median step "
            << profile["source"]["step_seconds"].get<double>() * 1000
            << " ms\n";
}

int profilePlanMain(int argc, char **argv) {
  static const char *help =
      "usage: remat-run profile PLAN [-o PROFILE.json] [options]\n"
      "\n"
      "Times every step of PLAN on a backend and writes its device profile\n"
      "(docs/cli.md, remat profile): `ops` by op call, `recompute_ops` for\n"
      "its recomputations, `calls` per plan step; on a device that reports\n"
      "it, `source.device_memory` (docs/cuda.md, \"Memory\").\n"
      "\n"
      "options:\n"
      "  -o FILE            write the profile to FILE (default stdout, -)\n"
      "  --steps N          timed training steps (default 5)\n"
      "  --warmup N         untimed steps first (default 1)\n"
      "  --backend NAME     the backend to time (default cpu)\n"
      "  -h, --help         this text\n";
  std::string plan, output = "-", backend = "cpu";
  int steps = 5, warmup = 1;
  auto usage = [&](const std::string &message) {
    std::cerr << "remat-run profile: " << message
              << "\n(remat-run profile --help lists the options)\n";
    return 2;
  };
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "-h" || arg == "--help") {
      std::cout << help;
      return 0;
    }
    bool takes = arg == "-o" || arg == "--steps" || arg == "--warmup" ||
                 arg == "--backend";
    if (takes) {
      if (i + 1 >= argc)
        return usage(arg + " needs a value");
      std::string value = argv[++i];
      if (arg == "-o")
        output = value;
      else if (arg == "--backend")
        backend = value;
      else {
        int &out = arg == "--steps" ? steps : warmup;
        size_t used = 0;
        try {
          out = std::stoi(value, &used);
        } catch (const std::exception &) {
          used = 0;
        }
        if (used == 0 || used != value.size() ||
            out < (arg == "--steps" ? 1 : 0))
          return usage(arg + " needs an integer >= " +
                       (arg == "--steps" ? "1" : "0") + ", got '" + value +
                       "'");
      }
    } else if (arg.size() > 1 && arg[0] == '-') {
      return usage("unknown option '" + arg + "'");
    } else if (plan.empty()) {
      plan = arg;
    } else {
      return usage("more than one plan given");
    }
  }
  if (plan.empty())
    return usage("no plan given");
  try {
    writeProfileFile(output,
                     planProfile(plan, backend, warmup, steps, std::cerr),
                     "remat-run profile");
    return 0;
  } catch (const std::exception &e) {
    std::cerr << "remat-run profile: error: " << e.what() << "\n";
    return 1;
  }
}

nlohmann::json deviceMemoryJson(const DeviceMemoryReport &m) {
  return {{"used_bytes", m.usedBytes},
          {"peak_bytes", m.peakBytes},
          {"context_bytes", m.contextBytes},
          {"arena_bytes", m.arenaBytes},
          {"workspace_bytes", m.workspaceBytes},
          {"overhead_bytes", m.overheadBytes()},
          {"handle_bytes", m.handleBytes},
          {"allocation_bytes", m.allocationBytes},
          {"module_bytes", m.moduleBytes},
          {"graph_bytes", m.graphBytes},
          {"unattributed_bytes", m.unattributedBytes}};
}

std::string deviceMemoryLine(const DeviceMemoryReport &m) {
  std::ostringstream line;
  line << "device memory: " << m.usedBytes << " B used = context "
       << m.contextBytes << " + arena " << m.arenaBytes << " + workspace "
       << m.workspaceBytes << " + runtime overhead " << m.overheadBytes()
       << " (handles " << m.handleBytes << ", allocation rounding "
       << m.allocationBytes << ", modules " << m.moduleBytes << ", graphs "
       << m.graphBytes << ", unattributed " << m.unattributedBytes
       << "); peak " << m.peakBytes << " B";
  return line.str();
}

} // namespace remat::tools
