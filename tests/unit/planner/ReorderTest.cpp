//===- ReorderTest.cpp - The planner moves ops as well as recomputing -----===//
#include "passes/planner/Reorder.h"
#include "passes/planner/Solvers.h"
#include "TestUtil.h"

#include <catch2/catch.hpp>

using namespace remat::planner;
using remat::planner::test::isTopologicalOrder;
using remat::planner::test::randomDag;
using remat::planner::test::randomTrainingDag;

namespace {

/// A 100-byte value `early` that only the last node reads, given first;
/// then a chain of four 10-byte nodes and the 6-byte `join` of both.
///   given order:  early live through the chain: 100 + 10 + 10 = 120 at
///                 the chain's second node;
///   early moved:  the chain first (at most 20), then early with the chain's
///                 end (110), then join: 100 + 10 + 6 = 116.
Problem lateUse(bool earlyRecomputable) {
  Problem problem;
  problem.addNode("early", 5.0, 100, {}, earlyRecomputable);
  problem.addNode("c1", 1.0, 10, {});
  problem.addNode("c2", 1.0, 10, {1});
  problem.addNode("c3", 1.0, 10, {2});
  problem.addNode("c4", 1.0, 10, {3});
  problem.addNode("join", 1.0, 6, {0, 4});
  problem.requiredOutputs = {5};
  problem.normalize();
  return problem;
}

/// The inverse of unpermuteSchedule: node order[p] becomes node p.
EventList permuteSchedule(EventList schedule, const std::vector<int> &order) {
  std::vector<int> position(order.size());
  for (size_t p = 0; p < order.size(); ++p)
    position[order[p]] = static_cast<int>(p);
  for (Event &event : schedule.events)
    event.node = position[event.node];
  return schedule;
}

} // namespace

TEST_CASE("candidate orders are topological and permute back exactly",
          "[planner]") {
  for (unsigned seed = 1; seed <= 12; ++seed) {
    Problem problem = seed % 2 ? randomDag(seed, 30, 3, 8)
                               : randomTrainingDag(seed, 15);
    for (const NodeOrder &order : candidateOrders(problem)) {
      INFO("seed " << seed << " order " << order.name);
      REQUIRE(isTopologicalOrder(problem, order.order));
      Problem permuted = permuteProblem(problem, order.order);
      REQUIRE(permuted.validate().empty());
      SolveResult r = solve(permuted, storeAllPeak(permuted),
                            SolverKind::StoreAll);
      REQUIRE(r.ok);
      // The same schedule in the original numbering replays with the same
      // peak and cost.
      CheckResult check =
          checkSchedule(problem, unpermuteSchedule(r.schedule, order.order));
      INFO(check.error);
      REQUIRE(check.ok);
      CHECK(check.peakBytes == r.stats.peakBytes);
      CHECK(check.totalCost == Approx(r.stats.cost));
    }
  }
  std::vector<int> notTopological = {0, 2, 1, 3, 4, 5}; // c2 before c1
  CHECK_FALSE(isTopologicalOrder(lateUse(true), notTopological));
}

TEST_CASE("moving an op meets a budget below the given order's minimum",
          "[planner]") {
  Problem problem = lateUse(/*earlyRecomputable=*/false);
  CHECK(computeLowerBound(problem).bytes == 120);
  SolveResult fixed = solve(problem, 116, SolverKind::Auto);
  CHECK_FALSE(fixed.ok);
  SolveOptions options;
  options.reorder = true;
  SolveResult moved = solve(problem, 116, SolverKind::Auto, options);
  INFO(moved.error);
  REQUIRE(moved.ok);
  CHECK(moved.stats.order == "greedy-memory");
  CHECK(moved.stats.peakBytes == 116);
  CHECK(moved.stats.overhead == 0.0);
  CHECK(moved.minimumBytes <= 116);
  CheckResult check = checkSchedule(problem, moved.schedule);
  INFO(check.error);
  CHECK(check.ok);
}

TEST_CASE("moving an op is cheaper than recomputing it", "[planner]") {
  // With `early` recomputable, Checkmate's stages (first computes in node
  // order) fit 116 bytes only by computing early twice (+5); in the moved
  // order everything is computed once.
  Problem problem = lateUse(/*earlyRecomputable=*/true);
  SolveOptions options;
  options.mode = CountingMode::Checkmate;
  SolveResult fixed = solve(problem, 116, SolverKind::Exact, options);
  REQUIRE(fixed.ok);
  CHECK(fixed.stats.cost == Approx(problem.totalCost() + 5.0));
  CHECK(fixed.stats.provenGap <= kOptimalGap);
  options.reorder = true;
  for (SolverKind kind : {SolverKind::Heuristic, SolverKind::Auto,
                          SolverKind::Exact}) {
    INFO(solverKindName(kind));
    SolveResult moved = solve(problem, 116, kind, options);
    REQUIRE(moved.ok);
    CHECK(moved.stats.cost == Approx(problem.totalCost()));
    CHECK(moved.stats.order != "given");
    // Stage-structured in the order it was solved in.
    const std::vector<int> &order = moved.stats.nodeOrder;
    CHECK(checkSchedule(permuteProblem(problem, order),
                        permuteSchedule(moved.schedule, order),
                        CountingMode::Checkmate)
              .ok);
  }
}

TEST_CASE("event mode drops a first compute that nothing reads",
          "[planner]") {
  // In event mode the fixed-order schedule's unread first compute of
  // `early` (freed, then recomputed for `join`) is dead and goes: early is
  // computed once, where it is needed.
  Problem problem = lateUse(/*earlyRecomputable=*/true);
  SolveResult fixed = solve(problem, 116, SolverKind::Heuristic);
  REQUIRE(fixed.ok);
  CHECK(fixed.stats.cost == Approx(problem.totalCost()));
  CHECK(fixed.schedule.computeCount() == problem.size());
  EventList dead;
  dead.compute(0);
  dead.free(0);
  for (int k = 1; k < problem.size(); ++k)
    dead.compute(k);
  REQUIRE(checkSchedule(problem, dead).ok == false); // join lacks early
  dead.events.insert(dead.events.end() - 1, Event{EventKind::Compute, 0});
  REQUIRE(checkSchedule(problem, dead).ok);
  EventList clean = eliminateDeadComputes(problem, dead);
  CHECK(clean.computeCount() == problem.size());
  CHECK(clean.events.front() == Event{EventKind::Compute, 1});
  CHECK(checkSchedule(problem, clean).ok);
  // A node nothing reads keeps its only compute.
  EventList once;
  once.compute(1);
  CHECK(eliminateDeadComputes(problem, once).events.size() == 1);
}

TEST_CASE("reordering never makes a plan worse", "[planner]") {
  int compared = 0;
  for (unsigned seed = 1; seed <= 8; ++seed) {
    Problem problem = randomTrainingDag(seed, 20);
    int64_t lower = computeLowerBound(problem).bytes;
    int64_t peak = storeAllPeak(problem);
    for (int64_t budget : {lower + (peak - lower) / 4, (lower + peak) / 2}) {
      SolveResult fixed = solve(problem, budget, SolverKind::Heuristic);
      SolveOptions options;
      options.reorder = true;
      SolveResult moved = solve(problem, budget, SolverKind::Heuristic, options);
      INFO("seed " << seed << " budget " << budget);
      if (!fixed.ok)
        continue;
      REQUIRE(moved.ok);
      CHECK(moved.stats.cost <= fixed.stats.cost);
      CHECK(checkSchedule(problem, moved.schedule).ok);
      ++compared;
    }
  }
  CHECK(compared >= 8);
}

TEST_CASE("auto reports a budget the MILP proves infeasible in every order "
          "as infeasible, and fits the next byte up",
          "[planner]") {
  // Seeds whose minimum lies above the lower bound (so the proof is the
  // MILP's, in each of the three orders) and whose MILPs prove it in well
  // under the time limit.
  for (unsigned seed : {15u, 17u, 21u}) {
    Problem problem = randomTrainingDag(seed, 5);
    REQUIRE(problem.size() <= 40); // the MILP runs in every order
    SolveOptions options;
    options.reorder = true;
    // A limit, not the expected time (well under a second idle): a loaded
    // machine (CI beside other jobs) must not turn proofs into time-outs.
    options.timeLimitSeconds = 10;
    auto fits = [&](int64_t budget) {
      return solve(problem, budget, SolverKind::Auto, options);
    };
    // The smallest budget auto meets, by bisection.
    int64_t bound = computeLowerBound(problem).bytes;
    int64_t low = bound - 1, high = storeAllPeak(problem);
    REQUIRE(fits(high).ok);
    while (high - low > 1) {
      int64_t mid = low + (high - low) / 2;
      (fits(mid).ok ? high : low) = mid;
    }
    INFO("seed " << seed << ": lower bound " << bound << ", minimum " << high);
    REQUIRE(low >= bound); // not the lower bound's refusal
    SolveResult below = fits(low);
    CHECK_FALSE(below.ok);
    CHECK(below.stats.status == "infeasible");
  }
}
