//===- SolverTest.cpp - Solvers against the checker and brute force -------===//
#include "passes/planner/Solvers.h"
#include "TestUtil.h"

#include <catch2/catch.hpp>

#include <algorithm>

using namespace remat::planner;
using remat::planner::test::diamond;
using remat::planner::test::randomDag;

namespace {

/// Replays a solve() result independently and checks the solver's claims.
void requireChecked(const Problem &problem, int64_t budget,
                    const SolveResult &result, CountingMode mode) {
  INFO(result.stats.solverName << ": " << result.error);
  REQUIRE(result.ok);
  CheckResult check = checkSchedule(problem, result.schedule, mode);
  INFO(check.error);
  REQUIRE(check.ok);
  CHECK(check.peakBytes <= budget);
  CHECK(check.peakBytes == result.stats.peakBytes);
  CHECK(check.totalCost == Approx(result.stats.cost));
}

/// Compares the exact MILP with the exhaustive search at one budget; true
/// when a schedule exists (and was compared). `proven`: the MILP must also
/// prove optimality.
bool exactMatchesBruteForce(const Problem &problem, int64_t budget,
                            bool proven) {
  double brute = bruteForceOptimalCost(problem, budget);
  SolveResult exact = test::solveExactCheckmate(problem, budget);
  if (brute < 0) {
    CHECK_FALSE(exact.ok);
    return false;
  }
  requireChecked(problem, budget, exact, CountingMode::Checkmate);
  CHECK(exact.stats.cost == Approx(brute));
  if (proven)
    CHECK(exact.stats.provenGap <= kOptimalGap);
  return true;
}

} // namespace

TEST_CASE("exact MILP equals brute force on seeded random tiny DAGs",
          "[planner]") {
  int compared = 0;
  for (unsigned seed = 1; seed <= 10; ++seed) {
    int n = 4 + static_cast<int>(seed % 3); // 4..6 nodes: 2^15 R matrices
    Problem problem = randomDag(seed, n, 2, 3);
    int64_t lower = computeLowerBound(problem).bytes;
    int64_t peak = storeAllPeak(problem);
    for (int64_t budget : {lower, (lower + peak) / 2, peak - 1}) {
      if (budget < lower)
        continue;
      INFO("seed " << seed << " n " << n << " budget " << budget);
      compared += exactMatchesBruteForce(problem, budget, true);
    }
  }
  CHECK(compared >= 15);
}

TEST_CASE("exact MILP equals brute force on seeded random 7-node DAGs",
          "[planner]") {
  // 2^21 recompute matrices per budget: the largest size the exhaustive
  // search covers in seconds (8 nodes would be 2^28).
  int compared = 0;
  for (unsigned seed = 21; seed <= 22; ++seed) {
    Problem problem = randomDag(seed, 7, 2, 3);
    int64_t lower = computeLowerBound(problem).bytes;
    int64_t peak = storeAllPeak(problem);
    int64_t budget = (lower + peak) / 2;
    INFO("seed " << seed << " budget " << budget);
    compared += exactMatchesBruteForce(problem, budget, false);
  }
  CHECK(compared >= 1);
}

TEST_CASE("every solver's schedule is checked and within budget on random "
          "DAGs",
          "[planner]") {
  const SolverKind kinds[] = {SolverKind::StoreAll, SolverKind::PerBlock,
                              SolverKind::SqrtN,    SolverKind::Heuristic,
                              SolverKind::ChainDp,  SolverKind::Exact,
                              SolverKind::Auto};
  for (unsigned seed = 100; seed < 104; ++seed) {
    // Generic DAGs (even seeds) and training steps (odd seeds).
    int n = 18 + static_cast<int>(seed % 5) * 4;
    Problem problem = seed % 2 == 0
                          ? randomDag(seed, n)
                          : remat::planner::test::randomTrainingDag(seed, n / 2);
    int64_t lower = computeLowerBound(problem).bytes;
    int64_t peak = storeAllPeak(problem);
    for (double fraction : {1.0, 0.85, 0.7, 0.0}) {
      int64_t budget = std::max<int64_t>(lower, int64_t(peak * fraction));
      INFO("seed " << seed << " n " << n << " budget " << budget
                   << " (lower " << lower << ", store-all " << peak << ")");
      SolveOptions options;
      options.mode = CountingMode::Checkmate;
      options.timeLimitSeconds = 1;
      SolveResult perBlock, autoResult;
      bool anyOk = false;
      for (SolverKind kind : kinds) {
        SolveResult result = solve(problem, budget, kind, options);
        if (result.ok) {
          requireChecked(problem, budget, result, CountingMode::Checkmate);
          anyOk = true;
        } else {
          CHECK_FALSE(result.error.empty());
        }
        if (kind == SolverKind::PerBlock)
          perBlock = result;
        if (kind == SolverKind::Auto)
          autoResult = result;
      }
      if (fraction == 1.0) {
        // Store-all fits: auto takes it, at zero overhead, proven optimal.
        REQUIRE(autoResult.ok);
        CHECK(autoResult.stats.overhead == 0.0);
        CHECK(autoResult.stats.provenGap == 0.0);
      }
      if (anyOk)
        CHECK(autoResult.ok);
      if (perBlock.ok) {
        REQUIRE(autoResult.ok);
        CHECK(autoResult.stats.cost <= perBlock.stats.cost + 1e-9);
      }
    }
  }
}

TEST_CASE("budgets below the lower bound report the minimum and breakdown",
          "[planner]") {
  Problem problem = diamond();
  // d runs with b and c live: 100 + 5 + 20 + 30 = 155.
  for (SolverKind kind : {SolverKind::Auto, SolverKind::Heuristic,
                          SolverKind::Exact, SolverKind::StoreAll}) {
    SolveResult result = solve(problem, 154, kind);
    CHECK_FALSE(result.ok);
    CHECK(result.minimumBytes == 155);
    CHECK(result.error.find("lower bound on any schedule's peak, 155") != std::string::npos);
    CHECK(result.error.find("'d'") != std::string::npos);
  }
  // The bound is not always reachable: whichever of b and c runs second,
  // a must be live with the other one, so every schedule peaks at
  // 100 + 10 + 20 + 30 = 160.
  SolveResult atBound = solve(problem, 155, SolverKind::Exact);
  CHECK_FALSE(atBound.ok);
  SolveResult at160 = solve(problem, 160, SolverKind::Auto);
  REQUIRE(at160.ok);
  CHECK(at160.stats.overhead == 0.0);
}

TEST_CASE("invalid problems are reported, not planned", "[planner]") {
  Problem problem = diamond();
  problem.nodes[1].operands = {2}; // reads a later node
  SolveResult result = solve(problem, 1000, SolverKind::Auto);
  CHECK_FALSE(result.ok);
  CHECK(result.error.find("does not precede") != std::string::npos);
}

TEST_CASE("event mode keeps required outputs and pinned inputs", "[planner]") {
  // A tiny training step: input x (pinned), 4 forward layers, 4 backward
  // layers whose weight gradients are required at the end.
  Problem problem;
  problem.persistentBytes = 1000;
  int x = problem.addNode("x", 0, 8, {}, /*recomputable=*/false);
  std::vector<int> forward{x};
  for (int i = 0; i < 4; ++i)
    forward.push_back(problem.addNode("f" + std::to_string(i), 2, 16,
                                      {forward.back()}));
  int grad = problem.addNode("loss", 1, 4, {forward.back()}, true, -1, true);
  for (int i = 3; i >= 0; --i) {
    int dw = problem.addNode("dw" + std::to_string(i), 3, 2,
                             {forward[i], grad}, true, -1, true);
    problem.requiredOutputs.push_back(dw);
    grad = problem.addNode("dx" + std::to_string(i), 3, 16,
                           {forward[i + 1], grad}, true, -1, true);
  }
  problem.normalize();
  int64_t peak = storeAllPeak(problem);
  int64_t lower = computeLowerBound(problem).bytes;
  REQUIRE(lower < peak);
  for (SolverKind kind : {SolverKind::Heuristic, SolverKind::Auto,
                          SolverKind::Exact}) {
    SolveResult result = solve(problem, (lower + peak) / 2, kind);
    requireChecked(problem, (lower + peak) / 2, result, CountingMode::Event);
  }
}

TEST_CASE("heuristic and auto plan a 10,000-node random DAG within budget",
          "[planner]") {
  // A training step: 5,000 forward nodes, the loss, 5,000 gradients. Its
  // ~1,700 distinct chain stages are too many for the DP, which auto must
  // notice rather than spend minutes on.
  Problem problem = remat::planner::test::randomTrainingDag(7, 5000);
  REQUIRE(problem.size() >= 10000);
  int64_t lower = computeLowerBound(problem).bytes;
  int64_t peak = storeAllPeak(problem);
  int64_t budget = std::max(lower, peak / 4);
  SolveOptions options;
  options.timeLimitSeconds = 20;
  INFO("lower " << lower << " store-all " << peak << " budget " << budget);
  for (SolverKind kind : {SolverKind::Heuristic, SolverKind::Auto}) {
    SolveResult result = solve(problem, budget, kind, options);
    requireChecked(problem, budget, result, CountingMode::Event);
    WARN("10,000-node " << result.stats.solverName << ": "
                        << result.stats.solveSeconds << " s, overhead "
                        << result.stats.overhead * 100 << "%");
  }
}

TEST_CASE("an empty problem and a single node are planned by every solver",
          "[planner]") {
  Problem empty;
  empty.persistentBytes = 7;
  Problem single;
  single.addNode("only", 1.0, 10, {});
  single.requiredOutputs = {0};
  for (SolverKind kind :
       {SolverKind::Auto, SolverKind::Exact, SolverKind::Heuristic,
        SolverKind::StoreAll, SolverKind::PerBlock, SolverKind::SqrtN}) {
    INFO(solverKindName(kind));
    SolveResult none = solve(empty, 7, kind);
    CHECK(none.ok);
    CHECK(none.stats.peakBytes == 7);
    SolveResult one = solve(single, 10, kind);
    REQUIRE(one.ok);
    CHECK(one.stats.peakBytes == 10);
    CHECK(checkSchedule(single, one.schedule).ok);
  }
}
