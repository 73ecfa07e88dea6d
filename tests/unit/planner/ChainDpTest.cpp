//===- ChainDpTest.cpp - rotor-style chain DP -----------------------------===//
#include "passes/planner/ChainDp.h"
#include "TestUtil.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <random>

using namespace remat::planner;

namespace {

Chain randomChain(unsigned seed, int length) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> size(1, 6);
  std::uniform_int_distribution<int> cost(1, 9);
  Chain chain = Chain::uniform(length, 1, 1, 1, 1);
  for (int i = 0; i <= length; ++i) {
    chain.activationBytes[i] = chain.keptBytes[i] = chain.forwardPeak[i] =
        size(rng);
    chain.gradientBytes[i] = size(rng);
    chain.forwardCost[i] = i ? cost(rng) : 0;
    chain.backwardCost[i] = i ? cost(rng) : 0;
  }
  chain.gradientBytes[length] = 0;
  // B_i's outputs are g_{i-1}.
  for (int i = 1; i <= length; ++i)
    chain.backwardPeak[i] = chain.gradientBytes[i - 1];
  return chain;
}

} // namespace

TEST_CASE("chain DP equals the exact MILP on small chains", "[planner]") {
  int compared = 0;
  for (unsigned seed = 1; seed <= 8; ++seed) {
    int length = 3 + static_cast<int>(seed % 3); // 3..5 stages, 7..11 nodes
    Chain chain = seed <= 2 ? Chain::uniform(length, 1, 2, 2, 2)
                            : randomChain(seed, length);
    Problem problem = chain.toProblem();
    int64_t lower = computeLowerBound(problem).bytes;
    int64_t peak = storeAllPeak(problem);
    for (int64_t budget = lower; budget <= peak; budget += 2) {
      INFO("seed " << seed << " length " << length << " budget " << budget);
      SolveOptions options;
      options.mode = CountingMode::Checkmate;
      options.timeLimitSeconds = 20;
      SolveResult exact = solve(problem, budget, SolverKind::Exact, options);
      // Input a_0 stays outside the DP's memory.
      ChainDpResult dp =
          solveChainDp(chain, budget - chain.activationBytes[0], 100000);
      REQUIRE(exact.ok == dp.feasible);
      if (!dp.feasible)
        continue;
      CHECK(dp.cost == Approx(exact.stats.cost));
      // The DP's strategy replays at node level within the budget.
      ChainMapping mapping;
      std::string reason;
      REQUIRE(chainFromProblem(problem, mapping, reason));
      Schedule schedule = chainStrategySchedule(problem, mapping, dp.ops);
      CheckResult check =
          checkSchedule(problem, schedule, CountingMode::Checkmate);
      REQUIRE(check.ok);
      CHECK(check.peakBytes <= budget);
      CHECK(check.totalCost == Approx(dp.cost));
      ++compared;
    }
  }
  CHECK(compared >= 10);
}

TEST_CASE("a uniform chain at about 2 sqrt(n) memory costs about one extra "
          "forward pass",
          "[planner]") {
  const int length = 100;
  // Unit activations and gradients; 2 sqrt(100) = 20 activations of memory.
  Chain chain = Chain::uniform(length, 1.0, 2.0, 1, 1);
  double forward = length * 1.0;
  double base = length * 3.0;
  ChainDpResult dp = solveChainDp(chain, 20, 1000);
  REQUIRE(dp.feasible);
  double extra = dp.cost - base;
  INFO("extra cost " << extra << " vs one forward " << forward);
  CHECK(extra > 0.0);
  CHECK(extra <= 1.25 * forward);
  // More memory never costs more; store-all memory costs nothing extra.
  ChainDpResult roomy = solveChainDp(chain, 40, 1000);
  REQUIRE(roomy.feasible);
  CHECK(roomy.cost <= dp.cost);
  ChainDpResult all = solveChainDp(chain, length + 3, 1000);
  REQUIRE(all.feasible);
  CHECK(all.cost == Approx(base));
}

TEST_CASE("chain DP through solve() converts a chain problem and is checked",
          "[planner]") {
  Chain chain = Chain::uniform(30, 1.0, 2.0, 4, 4);
  Problem problem = chain.toProblem();
  int64_t peak = storeAllPeak(problem);
  SolveOptions options;
  options.mode = CountingMode::Checkmate;
  SolveResult result = solve(problem, peak / 3, SolverKind::ChainDp, options);
  REQUIRE(result.ok);
  CheckResult check =
      checkSchedule(problem, result.schedule, CountingMode::Checkmate);
  REQUIRE(check.ok);
  CHECK(check.peakBytes <= peak / 3);
  CHECK(result.stats.overhead > 0.0);
  CHECK(result.stats.overhead < 1.0 / 3.0 + 1e-9); // < one forward pass
}

TEST_CASE("chain conversion rejects problems that are not chains",
          "[planner]") {
  Problem problem = remat::planner::test::diamond();
  ChainMapping mapping;
  std::string reason;
  CHECK_FALSE(chainFromProblem(problem, mapping, reason));
  CHECK(reason.find("backward") != std::string::npos);
  SolveResult result = solve(problem, 1000, SolverKind::ChainDp);
  CHECK_FALSE(result.ok);
  CHECK(result.error.find("not a chain") != std::string::npos);
}
