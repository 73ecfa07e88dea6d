//===- MeasuredChoiceTest.cpp - measure's choice among candidate plans ----===//
//
// tools/remat/MeasuredChoice.h driven with plans and times of the test's
// own: the tiny plan, and variants of it with one forward step recomputed.
//
//===----------------------------------------------------------------------===//
#include "tools/remat/MeasuredChoice.h"

#include "TinyPlan.h"
#include "runtime/cli/Profile.h"

#include <catch2/catch.hpp>

#include <sstream>
#include <stdexcept>

using namespace remat;
using namespace remat::runtime;
using remat::tools::ChoiceHooks;
using remat::tools::chooseMeasuredPlan;
using remat::tools::stepCostKey;
using remat::tools::TimedRun;

namespace {

Plan tinyPlan() { return parsePlanText(test::kTinyLinearPlan, "tiny.plan"); }

/// The tiny plan with forward step `k` recomputed before the backward.
Plan recomputing(size_t k) {
  Plan p = tinyPlan();
  StepDesc again = p.steps[k];
  again.recompute = true;
  p.steps.insert(p.steps.begin() + 5, again);
  return p;
}

/// Which candidate a profile is, as chooseMeasuredPlan passes them.
std::string sourceOf(const DeviceProfile &costs) {
  if (costs.name == "cpu")
    return "roofline";
  return costs.recomputeMeasured.empty() ? "measured" : "measured in-situ";
}

/// The store-all profile as `measure` names it, with `ops` costs.
DeviceProfile measuredProfile(std::map<std::string, double> ops = {}) {
  DeviceProfile measured = *builtinDeviceProfile("cpu");
  measured.name = "measured-cpu";
  measured.measured = std::move(ops);
  return measured;
}

struct Choice {
  Plan plan;
  nlohmann::json report;
  std::string progress;
};

Choice choose(const DeviceProfile &measured, const ChoiceHooks &hooks) {
  Choice c;
  std::ostringstream progress;
  c.plan = chooseMeasuredPlan(measured, *builtinDeviceProfile("cpu"), hooks,
                              c.report, progress);
  c.progress = progress.str();
  return c;
}

const char *kNoFit = "no schedule fits the budget of 100 bytes; minimum "
                     "feasible budget: 200 bytes\n(details)";

} // namespace

TEST_CASE("measure keeps the measured plan as it is when it does not "
          "recompute",
          "[runtime]") {
  int plans = 0, timings = 0;
  ChoiceHooks hooks;
  hooks.plan = [&](const DeviceProfile &, nlohmann::json &report) {
    ++plans;
    report["planned_peak_bytes"] = 836;
    return tinyPlan();
  };
  hooks.time = [&](const std::string &, const Plan &) {
    ++timings;
    return TimedRun{};
  };
  auto [chosen, report, progress] = choose(measuredProfile(), hooks);
  CHECK(plans == 1);
  CHECK(timings == 0);
  CHECK(serializePlanText(chosen) == serializePlanText(tinyPlan()));
  CHECK(report["planned_peak_bytes"] == 836);
  CHECK(progress.empty());
}

TEST_CASE("measure times the candidates in three rounds and keeps the "
          "fastest, priced with the recomputations' in-situ costs",
          "[runtime]") {
  // Every call of the step costs 1 s; the recomputed matmul 0.2, 0.3 and
  // 0.25 s in situ in the three rounds.
  std::map<std::string, double> ops;
  for (const StepDesc &s : tinyPlan().steps)
    ops[stepCostKey(tinyPlan(), s)] = 1.0;
  std::map<std::string, Plan> plans = {{"measured", recomputing(1)},
                                       {"roofline", recomputing(2)},
                                       {"measured in-situ", recomputing(0)}};
  std::map<std::string, double> seconds = {
      {"measured", 1.0}, {"roofline", 2.0}, {"measured in-situ", 3.0}};
  std::string matmul =
      stepCostKey(plans["measured"], plans["measured"].steps[5]);
  std::vector<std::string> planned;
  std::map<std::string, double> inSituCosts;
  ChoiceHooks hooks;
  hooks.plan = [&](const DeviceProfile &costs, nlohmann::json &report) {
    std::string source = sourceOf(costs);
    planned.push_back(source);
    if (source == "measured in-situ")
      inSituCosts = costs.recomputeMeasured;
    report["planned_peak_bytes"] = int(planned.size());
    return plans.at(source);
  };
  int run = 0;
  hooks.time = [&](const std::string &source, const Plan &plan) {
    CHECK(serializePlanText(plan) == serializePlanText(plans.at(source)));
    TimedRun timed;
    timed.stepSeconds = seconds.at(source);
    if (source == "measured")
      timed.recomputeOps[matmul] = std::vector<double>{0.2, 0.3, 0.25}[run++];
    return timed;
  };
  auto [chosen, report, progress] = choose(measuredProfile(ops), hooks);
  CHECK(planned == std::vector<std::string>{"measured", "roofline",
                                            "measured in-situ"});
  // The in-situ plan is planned with round 1's recompute cost.
  CHECK(inSituCosts == std::map<std::string, double>{{matmul, 0.2}});
  CHECK(serializePlanText(chosen) == serializePlanText(plans["measured"]));
  const nlohmann::json &device = report["device_profile"];
  CHECK(device["chosen"] == "measured");
  REQUIRE(device["candidates"].size() == 3);
  CHECK(device["candidates"][0]["runs"].size() == 3);
  CHECK(device["candidates"][1]["measured_step_seconds"] == 2.0);
  CHECK(device["candidates"][2]["runs"].size() == 2); // planned after round 1
  CHECK(device["measured_recompute_ops"] == 1);
  CHECK_FALSE(device.contains("unplanned"));
  // 10 steps at 1 s, and the recomputation at the median of its rounds.
  CHECK(report["recompute_overhead"].get<double>() == Approx(0.025));
  CHECK(report["planned_peak_bytes"] == 1); // the chosen plan's own report
  CHECK_THAT(progress,
             Catch::Contains("round 3 of 3") &&
                 Catch::Contains("chose the plan planned with measured"));
}

TEST_CASE("measure leaves out a candidate that cannot be planned and keeps "
          "one that can",
          "[runtime]") {
  ChoiceHooks hooks;
  std::vector<std::string> planned, timed;
  hooks.plan = [&](const DeviceProfile &costs, nlohmann::json &report) {
    std::string source = sourceOf(costs);
    planned.push_back(source);
    if (source != "roofline")
      throw std::runtime_error(kNoFit);
    report["planned_peak_bytes"] = 90;
    return recomputing(2);
  };
  hooks.time = [&](const std::string &source, const Plan &) {
    timed.push_back(source);
    TimedRun run;
    run.stepSeconds = 1.5;
    run.recomputeOps["some call"] = 0.1;
    return run;
  };
  auto [chosen, report, progress] = choose(measuredProfile(), hooks);
  CHECK(planned == std::vector<std::string>{"measured", "roofline",
                                            "measured in-situ"});
  // One round: with one candidate left there is nothing to compare.
  CHECK(timed == std::vector<std::string>{"roofline"});
  CHECK(serializePlanText(chosen) == serializePlanText(recomputing(2)));
  const nlohmann::json &device = report["device_profile"];
  CHECK(device["chosen"] == "roofline");
  CHECK(device["candidates"].size() == 1);
  REQUIRE(device["unplanned"].size() == 2);
  CHECK(device["unplanned"][0]["costs"] == "measured");
  CHECK(device["unplanned"][1]["costs"] == "measured in-situ");
  CHECK(device["unplanned"][1]["error"] == kNoFit);
  CHECK_THAT(progress,
             Catch::Contains("the plan with measured costs is not a "
                             "candidate: no schedule fits the budget of 100 "
                             "bytes; minimum feasible budget: 200 bytes\n"));
}

TEST_CASE("measure fails with the first candidate's error when none can be "
          "planned",
          "[runtime]") {
  int timings = 0;
  ChoiceHooks hooks;
  hooks.plan = [&](const DeviceProfile &costs, nlohmann::json &) -> Plan {
    throw std::runtime_error(sourceOf(costs) + ": no schedule fits");
  };
  hooks.time = [&](const std::string &, const Plan &) {
    ++timings;
    return TimedRun{};
  };
  CHECK_THROWS_WITH(choose(measuredProfile(), hooks),
                    "measured: no schedule fits");
  CHECK(timings == 0);
}
