//===- MeasuredChoice.h - measure's choice among candidate plans -*- C++ -*-===//
//
// `--device-profile measure` under a budget that recomputes
// (docs/planner.md#measured-costs): the step is planned with the measured
// costs, with the backend's roofline, and once more with the
// recomputations' costs as measured where they ran; the plans are timed in
// rounds and the fastest is kept. A candidate that cannot be planned (no
// schedule fits the budget with its costs) is left out, so the choice
// fails only when none can. How a plan is made and timed is the caller's
// (CompileCommand.cpp: the compiler and `remat profile PLAN`), so that a
// test can drive the choice with plans and times of its own.
//
//===----------------------------------------------------------------------===//
#ifndef REMAT_TOOLS_REMAT_MEASUREDCHOICE_H
#define REMAT_TOOLS_REMAT_MEASUREDCHOICE_H

#include "ops/DeviceProfile.h"
#include "runtime/plan/PlanFormat.h"

#include <nlohmann/json.hpp>

#include <functional>
#include <map>
#include <ostream>
#include <string>

namespace remat::tools {

/// One timed run of a plan: its median step and its recomputations' own
/// medians by op call (`remat profile PLAN`'s step_seconds, recompute_ops).
struct TimedRun {
  double stepSeconds = 0;
  std::map<std::string, double> recomputeOps;
};

struct ChoiceHooks {
  /// Plans the step with `costs`, filling `report`; throws
  /// std::runtime_error where it cannot (no schedule fits the budget).
  std::function<runtime::Plan(const DeviceProfile &costs,
                              nlohmann::json &report)>
      plan;
  /// Times one run of the plan of the candidate named `source` ("measured",
  /// "roofline", "measured in-situ").
  std::function<TimedRun(const std::string &source, const runtime::Plan &)>
      time;
};

/// The plan --device-profile measure keeps: the plan planned with
/// `measured` when it does not recompute, else the fastest candidate
/// (three rounds of timing; one round where one candidate is left).
/// `report` becomes its report; with more than one candidate planned, its
/// recompute_overhead is priced with every cost measured and
/// device_profile gains `candidates` (each timed one's costs,
/// measured_step_seconds, runs, planned_peak_bytes), `chosen` and, where a
/// candidate could not be planned, `unplanned` (its costs and the error).
/// One line a round and one for the choice go to `progress`. Throws the
/// first candidate's error when none can be planned.
runtime::Plan chooseMeasuredPlan(const DeviceProfile &measured,
                                 const DeviceProfile &roofline,
                                 const ChoiceHooks &hooks,
                                 nlohmann::json &report,
                                 std::ostream &progress);

} // namespace remat::tools

#endif // REMAT_TOOLS_REMAT_MEASUREDCHOICE_H
