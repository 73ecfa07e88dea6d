//===- Checker.h - Independent schedule replay ------------------*- C++ -*-===//
//
// Replays a schedule against its problem and proves (or refutes) it: every
// dependency, every free, the final live set, and the exact peak. Every
// solver's result goes through here before anyone uses it.
//
//===----------------------------------------------------------------------===//
#ifndef REMAT_PASSES_PLANNER_CHECKER_H
#define REMAT_PASSES_PLANNER_CHECKER_H

#include "passes/planner/EventList.h"

#include <string>

namespace remat {
namespace planner {

/// How memory is counted and which event orders are legal.
///  - Event: any event order. Peak = max over time of persistentBytes + the
///    bytes of all live outputs, where during Compute(k) k's operands and
///    its new output are live together.
///  - Checkmate: the same counting, but the schedule must be stage-structured
///    as in Checkmate (`--graph` mode): first computes happen in node order,
///    and the recomputes before node t's first compute are nodes < t in
///    strictly increasing index order. Frees may happen at any point.
enum class CountingMode { Event, Checkmate };

struct CheckResult {
  bool ok = false;
  /// First violation, with the event index; empty when ok.
  std::string error;
  int64_t peakBytes = 0;
  /// Index of the event at which the peak is first reached.
  int peakEvent = -1;
  /// Sum of the costs of all Compute events.
  double totalCost = 0;
  /// Cost of computes beyond each node's first.
  double recomputeCost = 0;
};

/// Replays `schedule`. Rejects: an out-of-range node, computing a node whose
/// operand is not live (missing operand or use after free), computing a
/// value that is live, recomputing a non-recomputable node, freeing a value
/// that is not live (double free), a node never computed, a required output
/// not live at the end, and in Checkmate mode an order that is not
/// stage-structured.
CheckResult checkSchedule(const Problem &problem, const EventList &schedule,
                          CountingMode mode = CountingMode::Event);

} // namespace planner
} // namespace remat

#endif // REMAT_PASSES_PLANNER_CHECKER_H
