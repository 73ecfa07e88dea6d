//===- ExhaustiveTest.cpp - The exhaustive search and the exact MILP ------===//
#include "Exhaustive.h"
#include "passes/planner/Solvers.h"
#include "TestUtil.h"

#include <catch2/catch.hpp>

using namespace remat::planner;
using remat::planner::test::diamond;
using remat::planner::test::randomDag;

namespace {

/// a -> b -> c -> d with a skip connection a -> d, no persistent bytes:
///   a: 10 bytes, cost 1; b: 10, cost 2 (reads a); c: 10, cost 3 (reads b);
///   d: 1, cost 4 (reads a, c).
Problem skipChain() {
  Problem problem;
  problem.addNode("a", 1.0, 10, {});
  problem.addNode("b", 2.0, 10, {0});
  problem.addNode("c", 3.0, 10, {1});
  problem.addNode("d", 4.0, 1, {0, 2});
  return problem;
}

/// Runs the exhaustive search and, when it finds a schedule, replays that
/// schedule: it must be stage-structured, cost what the search says and
/// fit the budget. Returns the search's cost.
double checkedExhaustive(const Problem &problem, int64_t budget) {
  EventList schedule;
  double cost = exhaustiveOptimalCost(problem, budget, &schedule);
  if (cost >= 0) {
    CheckResult check =
        checkSchedule(problem, schedule, CountingMode::Checkmate);
    INFO(check.error);
    REQUIRE(check.ok);
    CHECK(check.totalCost == Approx(cost));
    CHECK(check.peakBytes <= budget);
  }
  return cost;
}

/// Seeded variants of randomDag: plain (seed % 3 == 0), with a
/// non-recomputable input (1), or with required outputs in the middle and
/// at the end (2).
Problem randomVariant(unsigned seed, int n) {
  Problem problem = randomDag(seed, n, 2, 3);
  if (seed % 3 == 1)
    problem.nodes[0].recomputable = false;
  if (seed % 3 == 2)
    problem.requiredOutputs = {n / 2, n - 1};
  problem.normalize();
  return problem;
}

/// The budgets every comparison tries: the lower bound, the midpoint to
/// the store-all peak, and one byte below store-all.
std::vector<int64_t> budgetsToTry(const Problem &problem) {
  int64_t lower = computeLowerBound(problem).bytes;
  int64_t peak = storeAllPeak(problem);
  std::vector<int64_t> budgets{lower};
  for (int64_t budget : {(lower + peak) / 2, peak - 1})
    if (budget > budgets.back())
      budgets.push_back(budget);
  return budgets;
}

} // namespace

TEST_CASE("exhaustive search recomputes the input of a skip connection",
          "[planner]") {
  Problem problem = skipChain();
  // Store-all peaks while c runs with a and b live: 10 + 10 + 10 = 30.
  REQUIRE(storeAllPeak(problem) == 30);
  CHECK(checkedExhaustive(problem, 30) == Approx(10.0));
  // Below 30, a is dropped after b and recomputed for d: c runs with b
  // (20), d with a and c (21). Cost 1 + 2 + 3 + 4 + 1 = 11.
  CHECK(checkedExhaustive(problem, 29) == Approx(11.0));
  CHECK(checkedExhaustive(problem, 21) == Approx(11.0));
  // d alone needs 10 + 10 + 1 = 21.
  CHECK(checkedExhaustive(problem, 20) == -1);
  // An input that cannot be recomputed must stay: 30 again.
  problem.nodes[0].recomputable = false;
  CHECK(checkedExhaustive(problem, 29) == -1);
  CHECK(checkedExhaustive(problem, 30) == Approx(10.0));
}

TEST_CASE("exhaustive search keeps required outputs to the end", "[planner]") {
  Problem problem = skipChain();
  problem.requiredOutputs = {1};
  // b stays live through d: while d runs, a + b + c + d = 31.
  CHECK(checkedExhaustive(problem, 30) == -1);
  CHECK(checkedExhaustive(problem, 31) == Approx(10.0));
}

TEST_CASE("exhaustive search agrees with the diamond's known peaks",
          "[planner]") {
  // See SolverTest: every schedule of the diamond peaks at 160.
  Problem problem = diamond();
  CHECK(checkedExhaustive(problem, 159) == -1);
  CHECK(checkedExhaustive(problem, 160) == Approx(10.0));
}

TEST_CASE("exhaustive search refuses problems it cannot search", "[planner]") {
  Problem large = randomDag(3, kExhaustiveMaxNodes + 1);
  CHECK(exhaustiveOptimalCost(large, int64_t(1) << 40) == -2);
  Problem invalid = diamond();
  invalid.nodes[1].operands = {2};
  CHECK(exhaustiveOptimalCost(invalid, 1000) == -2);
  Problem empty;
  empty.persistentBytes = 7;
  CHECK(exhaustiveOptimalCost(empty, 7) == 0);
  CHECK(exhaustiveOptimalCost(empty, 6) == -1);
}

TEST_CASE("exhaustive search equals brute force on seeded random tiny DAGs",
          "[planner]") {
  int compared = 0, infeasible = 0;
  for (unsigned seed = 1; seed <= 24; ++seed) {
    // 4..6 nodes; 7 nodes when node 0 is not recomputable (2^15 brute-force
    // candidates instead of 2^21).
    int n = seed % 3 == 1 && seed > 18 ? 7 : 4 + static_cast<int>(seed % 3);
    Problem problem = randomVariant(seed, n);
    for (int64_t budget : budgetsToTry(problem)) {
      INFO("seed " << seed << " n " << n << " budget " << budget);
      double brute = bruteForceOptimalCost(problem, budget);
      REQUIRE(brute != -2);
      double exhaustive = checkedExhaustive(problem, budget);
      if (brute < 0) {
        CHECK(exhaustive == -1);
        ++infeasible;
      } else {
        CHECK(exhaustive == Approx(brute));
        ++compared;
      }
    }
  }
  CHECK(compared >= 40);
  CHECK(infeasible >= 1);
}

TEST_CASE("exact MILP equals exhaustive search on seeded random 8-node DAGs",
          "[planner]") {
  // 2^28 recompute matrices per budget: out of the brute force's reach.
  int compared = 0, recomputing = 0, infeasible = 0;
  for (unsigned seed = 31; seed <= 46; ++seed) {
    Problem problem = randomVariant(seed, 8);
    for (int64_t budget : budgetsToTry(problem)) {
      INFO("seed " << seed << " budget " << budget);
      double exhaustive = checkedExhaustive(problem, budget);
      REQUIRE(exhaustive != -2);
      SolveResult exact = test::solveExactCheckmate(problem, budget);
      if (exhaustive < 0) {
        CHECK_FALSE(exact.ok);
        ++infeasible;
        continue;
      }
      INFO(exact.error);
      REQUIRE(exact.ok);
      CheckResult check =
          checkSchedule(problem, exact.schedule, CountingMode::Checkmate);
      INFO(check.error);
      REQUIRE(check.ok);
      CHECK(check.peakBytes <= budget);
      CHECK(check.totalCost == Approx(exact.stats.cost));
      CHECK(exact.stats.cost == Approx(exhaustive));
      CHECK(exact.stats.provenGap <= kOptimalGap);
      ++compared;
      recomputing += exhaustive > problem.totalCost() + 1e-9;
    }
  }
  CHECK(compared >= 24);
  // The comparison is worth most where recomputation pays.
  CHECK(recomputing >= 12);
  CHECK(infeasible >= 6);
}
