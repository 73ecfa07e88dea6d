// The minimum feasible budget (MinimumBudget.h) against the exhaustive
// search: a budget at which a schedule exists, and nothing 1% below.
#include "passes/planner/MinimumBudget.h"
#include "Exhaustive.h"
#include "TestUtil.h"

#include <catch2/catch.hpp>

using namespace remat::planner;

namespace {

void checkAgainstExhaustive(const Problem &problem) {
  REQUIRE(problem.size() <= kExhaustiveMaxNodes);
  MinimumBudget m = searchMinimumBudget(problem);
  INFO("bound " << m.lowerBoundBytes << ", minimum " << m.minFeasibleBytes
                << " (" << m.solver << "), gap " << m.gap << ", proven "
                << m.provenInfeasibleBytes);
  REQUIRE(m.minFeasibleBytes >= m.lowerBoundBytes);
  // A schedule exists at the minimum, and auto finds one there.
  CHECK(exhaustiveOptimalCost(problem, m.minFeasibleBytes) >= 0);
  SolveOptions options;
  options.mode = CountingMode::Checkmate;
  options.timeLimitSeconds = 5;
  CHECK(solve(problem, m.minFeasibleBytes, SolverKind::Auto, options).ok);
  // The gap is closed: the bound is met, or 1% below is infeasible.
  CHECK(m.gap != "open");
  if (m.gap == "proven") {
    CHECK(m.provenInfeasibleBytes >=
          m.minFeasibleBytes - m.minFeasibleBytes / 100 - 1);
    CHECK(exhaustiveOptimalCost(problem, m.provenInfeasibleBytes) < 0);
  }
  if (m.minFeasibleBytes > m.lowerBoundBytes)
    CHECK(exhaustiveOptimalCost(problem, m.minFeasibleBytes -
                                             m.minFeasibleBytes / 100 - 1) <
          0);
}

} // namespace

TEST_CASE("minimum feasible budget of the diamond lies above its bound",
          "[planner]") {
  Problem problem = remat::planner::test::diamond();
  MinimumBudget m = searchMinimumBudget(problem);
  // The bound (155) is not attainable (CheckerTest): every schedule needs
  // 5 bytes more.
  CHECK(m.lowerBoundBytes == 155);
  CHECK(m.minFeasibleBytes == 160);
  CHECK(m.gap == "proven");
  checkAgainstExhaustive(problem);
}

TEST_CASE("minimum feasible budget of small training DAGs is exact to 1%",
          "[planner]") {
  for (unsigned seed = 1; seed <= 8; ++seed) {
    INFO("seed " << seed);
    checkAgainstExhaustive(remat::planner::test::randomTrainingDag(seed, 4));
  }
}

TEST_CASE("auto plans at the searched minimum of a large training DAG",
          "[planner]") {
  // 1,201 nodes: no MILP; the minimum is the heuristic's, whose failing
  // probes spend their whole work budget on restarts. Its limit counts
  // work, not time, so auto (1 s, raised to the heuristic's floor) repeats
  // the search's successful probe however loaded the machine is.
  Problem problem = remat::planner::test::randomTrainingDag(3, 600);
  MinimumBudget m = searchMinimumBudget(problem);
  INFO("bound " << m.lowerBoundBytes << ", minimum " << m.minFeasibleBytes
                << " (" << m.solver << ")");
  REQUIRE(m.minFeasibleBytes < storeAllPeak(problem));
  SolveOptions options;
  options.mode = CountingMode::Checkmate;
  options.timeLimitSeconds = 1;
  SolveResult first = solve(problem, m.minFeasibleBytes, SolverKind::Auto,
                            options);
  REQUIRE(first.ok);
  CHECK(first.stats.peakBytes <= m.minFeasibleBytes);
  // The heuristic alone, twice: the same schedule cost.
  SolveResult a = solve(problem, m.minFeasibleBytes, SolverKind::Heuristic,
                        options);
  SolveResult b = solve(problem, m.minFeasibleBytes, SolverKind::Heuristic,
                        options);
  REQUIRE(a.ok == b.ok);
  if (a.ok)
    CHECK(a.stats.cost == b.stats.cost);
}
