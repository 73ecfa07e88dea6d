//===- MeasuredChoice.cpp - measure's choice among candidate plans --------===//
#include "tools/remat/MeasuredChoice.h"

#include "runtime/cli/Profile.h"

#include <algorithm>
#include <exception>
#include <optional>
#include <stdexcept>
#include <vector>

namespace remat::tools {
namespace {

struct Candidate {
  std::string source;
  runtime::Plan plan;
  nlohmann::json report;
  std::string text;               ///< the plan, to drop duplicates
  std::vector<double> runSeconds; ///< one median step per timed run
  double stepSeconds = -1;        ///< their median
};

bool recomputes(const runtime::Plan &p) {
  return std::any_of(p.steps.begin(), p.steps.end(),
                     [](const runtime::StepDesc &s) { return s.recompute; });
}

/// A step's cost as the profile prices it: a recomputation its in-situ
/// figure where there is one, else the op's measured one; nullopt when
/// the profile has neither.
std::optional<double> measuredCost(const DeviceProfile &profile,
                                   const runtime::Plan &p,
                                   const runtime::StepDesc &s) {
  std::string key = stepCostKey(p, s);
  if (s.recompute)
    if (auto it = profile.recomputeMeasured.find(key);
        it != profile.recomputeMeasured.end())
      return it->second;
  if (auto it = profile.measured.find(key); it != profile.measured.end())
    return it->second;
  return std::nullopt;
}

} // namespace

runtime::Plan chooseMeasuredPlan(const DeviceProfile &measured,
                                 const DeviceProfile &roofline,
                                 const ChoiceHooks &hooks,
                                 nlohmann::json &report,
                                 std::ostream &progress) {
  DeviceProfile profile = measured;
  std::vector<Candidate> candidates;
  nlohmann::json unplanned = nlohmann::json::array();
  std::exception_ptr firstError;
  auto plan = [&](const std::string &source, const DeviceProfile &costs) {
    Candidate c;
    c.source = source;
    try {
      c.plan = hooks.plan(costs, c.report);
    } catch (const std::runtime_error &e) {
      if (!firstError)
        firstError = std::current_exception();
      std::string what = e.what();
      progress << "remat: the plan with " << source
               << " costs is not a candidate: "
               << what.substr(0, what.find('\n')) << "\n";
      unplanned.push_back({{"costs", source}, {"error", what}});
      return;
    }
    c.text = runtime::serializePlanText(c.plan);
    for (const Candidate &known : candidates)
      if (known.text == c.text)
        return;
    candidates.push_back(std::move(c));
  };
  plan("measured", profile);
  if (candidates.size() == 1 && !recomputes(candidates[0].plan)) {
    report = std::move(candidates[0].report);
    return std::move(candidates[0].plan);
  }
  plan("roofline", roofline);
  if (candidates.empty())
    std::rethrow_exception(firstError);

  // Recompute costs: the median of every timed run's in-situ medians. The
  // candidates go in rounds, so that a change of the machine's load hits
  // them alike, and each one's time is the median of its runs.
  std::map<std::string, std::vector<double>> recomputeSamples;
  auto round = [&](int number) {
    progress << "remat: timing " << candidates.size() << " candidate plan"
             << (candidates.size() == 1 ? "" : "s") << ", round " << number
             << " of 3 (";
    for (size_t i = 0; i < candidates.size(); ++i)
      progress << (i ? ", " : "") << candidates[i].source << " costs";
    progress << ")...\n";
    for (Candidate &c : candidates) {
      TimedRun run = hooks.time(c.source, c.plan);
      c.runSeconds.push_back(run.stepSeconds);
      c.stepSeconds = median(c.runSeconds);
      for (const auto &[key, seconds] : run.recomputeOps)
        recomputeSamples[key].push_back(seconds);
    }
  };
  auto takeRecomputeCosts = [&] {
    for (const auto &[key, seconds] : recomputeSamples)
      profile.recomputeMeasured[key] = median(seconds);
  };
  round(1);
  takeRecomputeCosts();
  plan("measured in-situ", profile);
  if (candidates.size() > 1) { // (one alone needs no more timing)
    round(2);
    round(3);
    takeRecomputeCosts();
  }
  auto best = std::min_element(candidates.begin(), candidates.end(),
                               [](const Candidate &a, const Candidate &b) {
                                 return a.stepSeconds < b.stepSeconds;
                               });

  // The chosen plan's overhead with every cost measured: its
  // recomputations' in-situ costs over the other steps' costs.
  double recomputeSeconds = 0, stepSeconds = 0;
  int unpriced = 0;
  for (const runtime::StepDesc &s : best->plan.steps) {
    std::optional<double> c = measuredCost(profile, best->plan, s);
    unpriced += !c;
    (s.recompute ? recomputeSeconds : stepSeconds) += c.value_or(0);
  }
  nlohmann::json timedList = nlohmann::json::array();
  for (const Candidate &c : candidates)
    timedList.push_back(
        {{"costs", c.source},
         {"measured_step_seconds", c.stepSeconds},
         {"runs", c.runSeconds},
         {"planned_peak_bytes", c.report["planned_peak_bytes"]}});
  progress << "remat: chose the plan planned with " << best->source
           << " costs (measured step " << best->stepSeconds * 1000 << " ms";
  if (candidates.size() > 1) {
    progress << "; the others:";
    for (const Candidate &c : candidates)
      if (&c != &*best)
        progress << " " << c.source << " " << c.stepSeconds * 1000 << " ms";
  }
  progress << ")\n";
  report = std::move(best->report);
  report["recompute_overhead"] =
      stepSeconds > 0 ? recomputeSeconds / stepSeconds : 0.0;
  nlohmann::json &device = report["device_profile"];
  device["name"] = profile.name;
  device["measured_ops"] = profile.measured.size();
  device["measured_recompute_ops"] = profile.recomputeMeasured.size();
  device["candidates"] = timedList;
  device["chosen"] = best->source;
  if (!unplanned.empty())
    device["unplanned"] = unplanned;
  if (unpriced)
    device["unpriced_steps"] = unpriced;
  return std::move(best->plan);
}

} // namespace remat::tools
