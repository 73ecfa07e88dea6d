//===- Profile.cpp - Measured op costs of a plan (remat profile) ----------===//
#include "tools/remat/Profile.h"

#include "ops/CostKey.h"
#include "runtime/Backend.h"
#include "runtime/Executor.h"
#include "runtime/Loader.h"
#include "runtime/Safetensors.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <optional>
#include <vector>

namespace remat::tools {

using namespace runtime;

namespace {
double median(std::vector<double> v) {
  if (v.empty())
    return 0;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}
} // namespace

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
    std::vector<Shape> ins, outs;
    for (int64_t b : p.steps[i].inputs)
      ins.push_back(p.buffers[size_t(b)].shape);
    for (int64_t b : p.steps[i].outputs)
      outs.push_back(p.buffers[size_t(b)].shape);
    std::vector<double> &pool =
        (p.steps[i].recompute ? byRecomputeKey : byKey)[ops::opCostKey(
            p.steps[i].op, p.steps[i].attrs, ins, outs)];
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
  return result;
}

} // namespace remat::tools
