//===- MinimumBudget.h - The smallest budget a schedule meets ---*- C++ -*-===//
//
// The lower bound says no schedule can use less; the minimum feasible
// budget is the smallest budget at which a solver found a schedule, by
// search. Between them lies a gap that the exact MILP may prove empty
// (small graphs) or that stays open.
//
//===----------------------------------------------------------------------===//
#ifndef REMAT_PASSES_PLANNER_MINIMUMBUDGET_H
#define REMAT_PASSES_PLANNER_MINIMUMBUDGET_H

#include "passes/planner/Solvers.h"

#include <functional>

namespace remat {
namespace planner {

struct MinimumBudget {
  /// computeLowerBound's bound and its reason (LowerBound::describe).
  int64_t lowerBoundBytes = 0;
  std::string lowerBoundReason;
  /// The smallest budget at which a schedule was found (its checked peak).
  int64_t minFeasibleBytes = 0;
  /// The solver whose schedule met it.
  std::string solver;
  /// That schedule (not ok when it is store-all's): a solver asked again at
  /// exactly minFeasibleBytes may not find it (the heuristic's choices
  /// depend on the budget it is given), so a plan at the minimum falls
  /// back on it.
  SolveResult schedule;
  /// "bound-met": min_feasible == the lower bound, nothing lies between;
  /// "proven": `provenInfeasibleBytes`, at most 1% below min_feasible, is
  /// infeasible: proven by the exact MILP, or below the lower bound when
  /// that is within 1% of the minimum; "open": nothing proven in between.
  std::string gap = "open";
  /// The largest budget proven infeasible (the lower bound less one when
  /// nothing better is proven).
  int64_t provenInfeasibleBytes = 0;
  double seconds = 0;
};

/// "bound-met", "proven" or "open" with the numbers, for messages.
std::string describeGap(const MinimumBudget &m);

struct MinimumSearchOptions {
  CountingMode mode = CountingMode::Checkmate;
  /// Relative resolution of the bisection (of the store-all peak).
  double resolution = 0.001;
  /// Try the exact MILP below the fast solvers' minimum up to this many
  /// nodes (0: never): it looks for a schedule 1% lower and proves the
  /// budget 1% below the final minimum infeasible when it can.
  int exactMaxNodes = 40;
  /// Time limit of each MILP run.
  double exactSeconds = 10.0;
  /// Time limit handed to the heuristic per probe. Fixed, so that the
  /// answer does not depend on a command's --time-limit, and equal to the
  /// least the heuristic gets anywhere (kHeuristicMinSeconds): its limit is
  /// a work budget (kHeuristicWorkPerSecond), so a probe that succeeds here
  /// succeeds in auto at the same budget too, whatever the machine's load.
  double heuristicSeconds = kHeuristicMinSeconds;
};

/// The smallest budget at which a solver finds a schedule of `problem`:
/// a bisection between the lower bound and the store-all peak over "the
/// heuristic, per-block, sqrt or the chain DP finds a schedule" (the
/// feasibility of auto, which runs them all), then on graphs of up to
/// exactMaxNodes nodes the exact MILP 1% below, repeatedly, until it fails
/// or proves infeasibility. Deterministic but for the MILP's and the DP's
/// time limits (the heuristic's is a work budget).
MinimumBudget searchMinimumBudget(const Problem &problem,
                                  const MinimumSearchOptions &options =
                                      MinimumSearchOptions());

} // namespace planner
} // namespace remat

#endif // REMAT_PASSES_PLANNER_MINIMUMBUDGET_H
