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

/// A training step of `blocks` identical blocks after an input x and
/// h_0 = embed(x) (cost 1, 64 bytes):
///   norm_l = norm(h_{l-1})             cost 1,   64 bytes (elementwise)
///   h_l    = matmul(norm_l) + h_{l-1}  cost 10,  64 bytes (the block output)
/// then a loss and, per block from the last, dmatmul_l (reads h_l, norm_l
/// and the incoming gradient; cost 20) and dnorm_l (reads h_{l-1} and
/// dmatmul_l; cost 2). Chain stages: 1 = embed, l + 1 = block l, whose
/// backward reads both of its forward values; dropping norm_l saves 64
/// bytes for 1 unit of recomputation, while checkpointing re-runs the
/// matmul. `changed` (>= 1) gives that block's matmul cost 12 instead.
Problem identicalBlocks(int blocks, int changed = 0) {
  Problem problem;
  int x = problem.addNode("x", 0.0, 64, {}, /*recomputable=*/false);
  int h = problem.addNode("embed", 1.0, 64, {x});
  std::vector<int> norm{-1}, output{h};
  for (int l = 1; l <= blocks; ++l) {
    std::string name = std::to_string(l);
    norm.push_back(problem.addNode("norm" + name, 1.0, 64, {h}));
    h = problem.addNode("matmul" + name, l == changed ? 12.0 : 10.0, 64,
                        {norm.back(), h});
    output.push_back(h);
  }
  int gradient = problem.addNode("loss", 1.0, 4, {h}, true, -1, true);
  for (int l = blocks; l >= 1; --l) {
    std::string name = std::to_string(l);
    int dmatmul =
        problem.addNode("dmatmul" + name, 20.0, 64,
                        {output[l], norm[l], gradient}, true, -1, true);
    gradient = problem.addNode("dnorm" + name, 2.0, 64,
                               {output[l - 1], dmatmul}, true, -1, true);
  }
  problem.requiredOutputs.push_back(gradient);
  problem.normalize();
  return problem;
}

/// The checked cost of the chain DP on `problem` (-1 when it finds
/// nothing), with `keepOptions` keep options per stage.
double checkedDpCost(const Problem &problem, int64_t budget, int keepOptions,
                     CountingMode mode = CountingMode::Event) {
  SolverOutput out =
      solveChainDpProblem(problem, budget, mode, 4000, 5.0, keepOptions);
  if (!out.found)
    return -1;
  CheckResult check = checkSchedule(problem, out.schedule, mode);
  REQUIRE(check.ok);
  CHECK(check.peakBytes <= budget);
  return check.totalCost;
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
      EventList schedule = chainStrategySchedule(problem, mapping, dp.ops);
      CheckResult check =
          checkSchedule(problem, schedule, CountingMode::Checkmate);
      REQUIRE(check.ok);
      CHECK(check.peakBytes <= budget);
      CHECK(check.totalCost == Approx(dp.cost));
      // So does the DP on the converted problem, through the memory search.
      SolveResult converted =
          solve(problem, budget, SolverKind::ChainDp, options);
      REQUIRE(converted.ok);
      CHECK(converted.stats.cost == Approx(exact.stats.cost));
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

TEST_CASE("keep options let the DP drop a cheap value instead of "
          "re-running a block",
          "[planner]") {
  // 12 blocks: store-all holds 2 x 64 bytes per block.
  Problem problem = identicalBlocks(12);
  ChainMapping mapping;
  std::string reason;
  REQUIRE(chainFromProblem(problem, mapping, reason));
  REQUIRE(mapping.chain.length() == 13);
  // Each block stage: keep-all (128 bytes kept) and "drop norm" (64 bytes
  // kept, recompute cost 1); the embedding has nothing to drop.
  CHECK(mapping.chain.optionCount(1) == 1);
  REQUIRE(mapping.chain.optionCount(6) == 2);
  KeepOption drop = mapping.chain.keepOption(6, 1);
  CHECK(mapping.chain.keepOption(6, 0).keptBytes == 128);
  CHECK(drop.keptBytes == 64);
  CHECK(drop.recomputeCost == 1.0);
  REQUIRE(mapping.recomputeNodes[6][1].size() == 1);
  CHECK(problem.nodes[mapping.recomputeNodes[6][1][0]].name == "norm5");

  int64_t lower = computeLowerBound(problem).bytes;
  int64_t peak = storeAllPeak(problem);
  int strictlyBetter = 0;
  for (int step = 1; step <= 7; ++step) {
    int64_t budget = lower + (peak - lower) * step / 8;
    INFO("budget " << budget << " in [" << lower << ", " << peak << "]");
    double single = checkedDpCost(problem, budget, 1);
    double multi = checkedDpCost(problem, budget, kDefaultKeepOptions);
    REQUIRE(multi >= 0);
    if (single < 0) {
      ++strictlyBetter;
      continue;
    }
    CHECK(multi <= single + 1e-9);
    strictlyBetter += multi < single - 1e-9;
  }
  // Halfway between the lower bound and store-all, dropping the norms
  // costs at most one unit per block (11 in all), where re-running
  // blocks costs 11 units each (66).
  int64_t half = lower + (peak - lower) / 2;
  double base = problem.totalCost();
  double single = checkedDpCost(problem, half, 1);
  double multi = checkedDpCost(problem, half, kDefaultKeepOptions);
  INFO("base " << base << " single " << single << " multi " << multi);
  CHECK(multi <= base + 12);
  CHECK(multi < single);
  CHECK(strictlyBetter >= 5);
}

TEST_CASE("keep options lower the DP's cost on random training steps",
          "[planner]") {
  int compared = 0, strictlyBetter = 0;
  for (unsigned seed = 1; seed <= 12; ++seed) {
    Problem problem = test::randomTrainingDag(seed, 24);
    ChainMapping mapping;
    std::string reason;
    if (!chainFromProblem(problem, mapping, reason))
      continue;
    // Same DP memory, a superset of choices: the modeled cost cannot grow.
    Chain single = mapping.chain;
    single.dropOptions.clear();
    int64_t lower = computeLowerBound(problem).bytes;
    int64_t peak = storeAllPeak(problem);
    for (int step = 1; step <= 5; ++step) {
      int64_t budget = lower + (peak - lower) * step / 6;
      INFO("seed " << seed << " budget " << budget);
      ChainDpResult withOptions = solveChainDp(mapping.chain, budget, 400);
      ChainDpResult without = solveChainDp(single, budget, 400);
      if (without.feasible) {
        REQUIRE(withOptions.feasible);
        CHECK(withOptions.cost <= without.cost + 1e-9);
      }
      // Through the memory search, replayed in Checkmate order.
      double multiCost = checkedDpCost(problem, budget, kDefaultKeepOptions,
                                       CountingMode::Checkmate);
      double singleCost =
          checkedDpCost(problem, budget, 1, CountingMode::Checkmate);
      if (singleCost < 0)
        continue;
      REQUIRE(multiCost >= 0);
      CHECK(multiCost <= singleCost + 1e-9);
      strictlyBetter += multiCost < singleCost - 1e-9;
      ++compared;
    }
  }
  // 38 of the 60 (seed, budget) pairs have a single-option plan, and the
  // options beat it on all 38; the check leaves a margin.
  CHECK(compared >= 20);
  CHECK(strictlyBetter >= compared * 3 / 4);
}

TEST_CASE("chain DP with keep options replays in Checkmate order and never "
          "beats the exact MILP, which it mostly matches",
          "[planner]") {
  int compared = 0, equal = 0;
  for (int blocks = 2; blocks <= 3; ++blocks) {
    Problem problem = identicalBlocks(blocks);
    int64_t lower = computeLowerBound(problem).bytes;
    int64_t peak = storeAllPeak(problem);
    for (int step = 0; step <= 4; ++step) {
      int64_t budget = lower + (peak - lower) * step / 4;
      INFO("blocks " << blocks << " budget " << budget);
      SolveOptions options;
      options.mode = CountingMode::Checkmate;
      // A limit, not the expected time: proofs must survive a loaded
      // machine.
      options.timeLimitSeconds = 60;
      SolveResult exact = solve(problem, budget, SolverKind::Exact, options);
      SolveResult dp = solve(problem, budget, SolverKind::ChainDp, options);
      if (!dp.ok)
        continue;
      // solve() checked the DP's schedule in Checkmate mode.
      REQUIRE(exact.ok);
      CHECK(exact.stats.status == "optimal");
      CHECK(exact.stats.cost <= dp.stats.cost + 1e-9);
      equal += dp.stats.cost <= exact.stats.cost + 1e-9;
      ++compared;
    }
  }
  // 8 budgets plan; the DP matches the MILP on 7 (3 blocks at the
  // tightest budget cost one unit more); the check leaves a margin.
  CHECK(compared >= 6);
  CHECK(equal >= compared - 1);
}

TEST_CASE("identical blocks share one keep-option generation", "[planner]") {
  ChainMapping mapping;
  std::string reason;
  // The embedding and the last block (whose backward holds the loss) are
  // shapes of their own: 3 shapes, however many blocks sit between.
  for (int blocks : {4, 8, 48}) {
    INFO(blocks << " blocks");
    REQUIRE(chainFromProblem(identicalBlocks(blocks), mapping, reason));
    CHECK(mapping.chain.length() == blocks + 1);
    CHECK(mapping.distinctStages == 3);
  }
  // One middle block with a costlier matmul is a fourth shape.
  REQUIRE(chainFromProblem(identicalBlocks(48, 20), mapping, reason));
  CHECK(mapping.distinctStages == 4);
  // Reused options are the same options, mapped to each stage's nodes.
  REQUIRE(chainFromProblem(identicalBlocks(8), mapping, reason));
  for (int i = 2; i <= 9; ++i) {
    REQUIRE(mapping.chain.optionCount(i) == 2);
    REQUIRE(mapping.recomputeNodes[i][1].size() == 1);
    CHECK(mapping.recomputeNodes[i][1][0] == mapping.segmentNodes[i][0]);
  }
}

TEST_CASE("the DP solves ranges of identical blocks once", "[planner]") {
  // 48 blocks: L = 49 stages, 1225 ranges [s, t]. The stage kinds read
  // "embed, block x 47, last block", which has at most 3 distinct ranges
  // per length.
  ChainMapping mapping;
  std::string reason;
  REQUIRE(chainFromProblem(identicalBlocks(48), mapping, reason));
  int L = mapping.chain.length();
  ChainDpResult shared = solveChainDp(mapping.chain, 2000, 400);
  REQUIRE(shared.feasible);
  CHECK(shared.tableRows <= 3 * L);
  // A chain whose stages all differ gets every range, and the same cost
  // as with sharing (the costs differ by far less than the 0.5 steps).
  Chain distinct = mapping.chain;
  for (int i = 1; i <= L; ++i)
    distinct.forwardCost[i] += 1e-7 * i;
  ChainDpResult unshared = solveChainDp(distinct, 2000, 400);
  REQUIRE(unshared.feasible);
  CHECK(unshared.tableRows == L * (L + 1) / 2);
  CHECK(unshared.cost == Approx(shared.cost).epsilon(1e-6));
  // The shared rows rebuild each range's own stages: the strategy replays.
  EventList schedule =
      chainStrategySchedule(identicalBlocks(48), mapping, shared.ops);
  CheckResult check =
      checkSchedule(identicalBlocks(48), schedule, CountingMode::Checkmate);
  REQUIRE(check.ok);
  CHECK(check.totalCost == Approx(shared.cost));
}
