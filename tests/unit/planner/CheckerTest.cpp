//===- CheckerTest.cpp - The schedule checker accepts and rejects ---------===//
#include "passes/planner/Checker.h"
#include "passes/planner/Solvers.h"
#include "TestUtil.h"

#include <catch2/catch.hpp>

using namespace remat::planner;
using remat::planner::test::diamond;

namespace {

EventList storeAllOfDiamond() {
  // Each value is freed after its last reader: a after c, b and c after d,
  // d (read by nobody, not required) right after it runs.
  EventList schedule;
  schedule.compute(0);
  schedule.compute(1);
  schedule.compute(2);
  schedule.free(0);
  schedule.compute(3);
  schedule.free(1);
  schedule.free(2);
  schedule.free(3);
  return schedule;
}

} // namespace

TEST_CASE("checker accepts store-all on a diamond and counts its peak by hand",
          "[planner]") {
  Problem problem = diamond();
  CheckResult check = checkSchedule(problem, storeAllOfDiamond());
  REQUIRE(check.ok);
  // Live bytes after each event (persistent 100 always resident):
  //   compute a: 100 + 10           = 110
  //   compute b: 110 + 20           = 130
  //   compute c: 130 + 30           = 160   <- peak (a still read by c)
  //   free a:    160 - 10           = 150
  //   compute d: 150 + 5            = 155   (b, c, d live together)
  CHECK(check.peakBytes == 160);
  CHECK(check.peakEvent == 2);
  CHECK(check.totalCost == 10.0);
  CHECK(check.recomputeCost == 0.0);
  // The same in Checkmate mode: the order is stage-structured.
  CHECK(checkSchedule(problem, storeAllOfDiamond(), CountingMode::Checkmate)
            .peakBytes == 160);
  // The store-all solver builds exactly this schedule.
  SolverOutput storeAll = solveStoreAll(problem);
  REQUIRE(storeAll.found);
  CHECK(storeAll.schedule.events == storeAllOfDiamond().events);
  CHECK(storeAllPeak(problem) == 160);
}

TEST_CASE("lower bound of the diamond is its widest node with its operands",
          "[planner]") {
  // d: 5 + b 20 + c 30 = 55; c: 30 + a 10 = 40; b: 20 + 10 = 30; a: 10.
  LowerBound bound = computeLowerBound(diamond());
  CHECK(bound.bytes == 155);
  CHECK(bound.node == 3);
  CHECK(bound.describe(diamond()).find("'d'") != std::string::npos);
}

TEST_CASE("the arena's lower bound counts an output in place over an "
          "operand once", "[planner]") {
  // d may reuse a dying operand: on the arena it peaks at 100 + b 20 + c 30;
  // c, which may not, then sets the bound: 100 + 30 + a 10.
  Problem problem = diamond();
  problem.nodes[3].mayReuseOperand = true;
  CHECK(computeLowerBound(problem).bytes == 155); // the solvers' count
  LowerBound arena = computeLowerBound(problem, /*arena=*/true);
  CHECK(arena.bytes == 150);
  CHECK(arena.node == 3);
  CHECK(arena.outputBytes == 0);
  CHECK(arena.describe(problem).find("in place over an operand") !=
        std::string::npos);
  problem.nodes[3].operands = {2}; // d reads c alone: c's 140 is the bound
  problem.nodes[3].bytes = 30;
  CHECK(computeLowerBound(problem, true).bytes == 140);
  CHECK(computeLowerBound(problem, true).node == 2);
}

TEST_CASE("checker rejects corrupted schedules", "[planner]") {
  Problem problem = diamond();
  EventList good = storeAllOfDiamond();

  SECTION("a missing operand") {
    EventList bad;
    bad.compute(0);
    bad.compute(2);
    bad.compute(3); // b was never computed
    CheckResult check = checkSchedule(problem, bad);
    CHECK_FALSE(check.ok);
    CHECK(check.error.find("reads node 1") != std::string::npos);
  }
  SECTION("a double free") {
    EventList bad = good;
    bad.free(3);
    CheckResult check = checkSchedule(problem, bad);
    CHECK_FALSE(check.ok);
    CHECK(check.error.find("not live") != std::string::npos);
  }
  SECTION("a use after free") {
    EventList bad;
    bad.compute(0);
    bad.compute(1);
    bad.free(0); // c still reads a
    bad.compute(2);
    CHECK_FALSE(checkSchedule(problem, bad).ok);
  }
  SECTION("a node never computed") {
    EventList bad;
    bad.compute(0);
    bad.compute(1);
    bad.compute(2);
    CheckResult check = checkSchedule(problem, bad);
    CHECK_FALSE(check.ok);
    CHECK(check.error.find("never computed") != std::string::npos);
  }
  SECTION("an out-of-range node") {
    EventList bad = good;
    bad.compute(7);
    CHECK_FALSE(checkSchedule(problem, bad).ok);
  }
  SECTION("computing a value that is already live") {
    EventList bad;
    bad.compute(0);
    bad.compute(0);
    CHECK_FALSE(checkSchedule(problem, bad).ok);
  }
  SECTION("recomputing a value that cannot be recomputed") {
    Problem pinned = problem;
    pinned.nodes[0].recomputable = false;
    EventList bad;
    bad.compute(0);
    bad.compute(1);
    bad.free(0);
    bad.compute(0);
    bad.compute(2);
    bad.free(0);
    bad.compute(3);
    CHECK(checkSchedule(problem, bad).ok); // fine when recomputable
    CheckResult check = checkSchedule(pinned, bad);
    CHECK_FALSE(check.ok);
    CHECK(check.error.find("not recomputable") != std::string::npos);
  }
  SECTION("a required output freed before the end") {
    Problem required = problem;
    required.requiredOutputs = {3};
    CHECK_FALSE(checkSchedule(required, good).ok);
    EventList keep = good;
    keep.events.pop_back(); // drop `free d`
    CHECK(checkSchedule(required, keep).ok);
  }
  SECTION("an order that is not stage-structured in Checkmate mode") {
    EventList swapped;
    swapped.compute(0);
    swapped.compute(2); // c before b: a fine event order...
    swapped.compute(1);
    swapped.free(0);
    swapped.compute(3);
    CHECK(checkSchedule(problem, swapped, CountingMode::Event).ok);
    // ...but node 2 is computed before node 1 was ever computed.
    CHECK_FALSE(checkSchedule(problem, swapped, CountingMode::Checkmate).ok);
  }
}

TEST_CASE("Checkmate R/S matrices convert to event schedules and back",
          "[planner]") {
  Problem problem = diamond();
  CheckmateSolution solution;
  REQUIRE(CheckmateSolution::fromSchedule(problem, storeAllOfDiamond(),
                                          solution));
  // Stage 3 (d) starts with a freed and b, c resident.
  CHECK(solution.resident[3][1] == 1);
  CHECK(solution.resident[3][2] == 1);
  CHECK(solution.resident[3][0] == 0);
  std::string error;
  EventList back = solution.toSchedule(problem, &error);
  CHECK(error.empty());
  CheckResult check = checkSchedule(problem, back, CountingMode::Checkmate);
  REQUIRE(check.ok);
  CHECK(check.peakBytes == 160);

  // Recompute a in stage 2 instead of keeping it: stage 1 (b) frees a.
  CheckmateSolution remat = CheckmateSolution::empty(4);
  for (int t = 0; t < 4; ++t)
    remat.recompute[t][t] = 1;
  remat.recompute[2][0] = 1;
  remat.resident[1][0] = 1;
  remat.resident[2][1] = 1;
  remat.resident[3][1] = remat.resident[3][2] = 1;
  EventList lean = remat.toSchedule(problem, &error);
  CHECK(error.empty());
  CheckResult leanCheck = checkSchedule(problem, lean, CountingMode::Checkmate);
  REQUIRE(leanCheck.ok);
  // 100 + b 20 + a 10 + c 30 = 160 while c runs: no gain here, cost +1.
  CHECK(leanCheck.totalCost == 11.0);
  CHECK(leanCheck.recomputeCost == 1.0);

  // A solution that reads a value it dropped is reported.
  CheckmateSolution broken = remat;
  broken.recompute[2][0] = 0;
  error.clear();
  broken.toSchedule(problem, &error);
  CHECK_FALSE(error.empty());
}
