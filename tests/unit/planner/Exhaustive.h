//===- Exhaustive.h - Exact search over Checkmate schedules -----*- C++ -*-===//
//
// An exhaustive search for the cheapest stage-structured (Checkmate mode)
// schedule of a tiny problem: the reference the exact MILP is tested
// against. Independent of the MILP and of the recompute-matrix brute force.
//
//===----------------------------------------------------------------------===//
#ifndef REMAT_TESTS_UNIT_PLANNER_EXHAUSTIVE_H
#define REMAT_TESTS_UNIT_PLANNER_EXHAUSTIVE_H

#include "passes/planner/EventList.h"

#include <cstdint>

namespace remat {
namespace planner {

/// The largest problem exhaustiveOptimalCost searches.
constexpr int kExhaustiveMaxNodes = 10;

/// The least total cost of any schedule that checkSchedule accepts in
/// CountingMode::Checkmate with a peak of at most `budgetBytes` (persistent
/// bytes included); -1 when no schedule fits, -2 when the problem has more
/// than kExhaustiveMaxNodes nodes or fails validate(). When `best` is given
/// and a schedule fits, it receives one optimal schedule.
///
/// Dynamic programming over Checkmate stages (Jain et al. 2020), exhaustive
/// within a stage:
///  1. The state at the start of stage t is the set S of resident values
///     (a bitmask over the nodes before t).
///  2. A transition picks the recompute set R (recomputable nodes before t
///     and outside S) and the set S' of values kept into stage t + 1. The
///     stage computes R and t in index order; each copy is freed right
///     after its last read in the stage unless it is kept (a copy the stage
///     never reads is freed right after its compute, a resident one when the
///     stage starts). The transition is valid when every compute finds its
///     operands live and the stage's peak, counted as the checker counts it
///     (while k runs, its operands and its new output are live together),
///     is within the budget.
///  3. The minimum cost-to-go is memoized by (t, S); after the last stage
///     every required output must be resident.
/// Two reductions keep it exact: a value in S is never recomputed (dropping
/// it one stage earlier gives the same computes with no more memory), and
/// S' holds only values that may still be read or are required outputs.
/// Time O(n 3^n 2^n) in the worst case (S and R disjoint, S' any subset of
/// the live values), far less in practice: operands prune R, and a stage
/// that alone costs the best total so far is skipped. Measured: under a
/// millisecond on random 8-node DAGs, under 0.1 s on 10 nodes.
double exhaustiveOptimalCost(const Problem &problem, int64_t budgetBytes,
                             EventList *best = nullptr);

} // namespace planner
} // namespace remat

#endif // REMAT_TESTS_UNIT_PLANNER_EXHAUSTIVE_H
