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
