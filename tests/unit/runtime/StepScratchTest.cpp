//===- StepScratchTest.cpp - Buffer lifetimes; scratch in the arena's gaps ===//
#include "runtime/backends/cpu/StepScratch.h"

#include "TinyPlan.h"

#include "runtime/backends/cpu/CpuWorkspace.h"
#include "runtime/plan/Ops.h"

#include <catch2/catch.hpp>

using namespace remat::runtime;

namespace {
Plan tinyPlan() { return parsePlanText(test::kTinyLinearPlan, "tiny.plan"); }
} // namespace

TEST_CASE("buffer lifetimes run from the first write to the last access; "
          "the loss to the end",
          "[runtime]") {
  Plan plan = tinyPlan();
  std::vector<BufferLifetime> life = bufferLifetimes(plan);
  auto span = [&](int b) { return std::pair{life[b].begin, life[b].end}; };
  CHECK(span(0) == std::pair<int64_t, int64_t>{0, 9});  // x, an input
  CHECK(span(4) == std::pair<int64_t, int64_t>{0, 9});  // momentum:w
  CHECK(span(6) == std::pair<int64_t, int64_t>{6, 8});  // grad:w
  CHECK(span(8) == std::pair<int64_t, int64_t>{0, 5});  // target
  CHECK(span(9) == std::pair<int64_t, int64_t>{1, 2});  // h
  CHECK(span(13) == std::pair<int64_t, int64_t>{5, 7}); // dy, over h's bytes
  CHECK(span(11) == std::pair<int64_t, int64_t>{3, 9}); // the loss
  CHECK(life[13].live(6));
  CHECK_FALSE(life[9].live(3));
}

TEST_CASE("a step's scratch goes to the lowest gap no live buffer occupies, "
          "else beside the arena",
          "[runtime]") {
  Plan plan = tinyPlan();
  std::vector<uint64_t> wanted(plan.steps.size(), 0), least = wanted;
  // Step 0: h, y, loss and dloss are not written yet: [640, 896) is free
  // (the gap [448, 576) of the grads is too small).
  wanted[0] = least[0] = 200;
  // Step 3: the grads' bytes [448, 576) are the lowest gap that fits.
  wanted[3] = least[3] = 100;
  // Step 6: no 256 free bytes (dy at 640, the loss at 768 are live), but
  // its least fits where target (dead after step 5) and grad:b (written
  // at step 7) lie: [512, 640).
  wanted[6] = 256;
  least[6] = 128;
  // Step 8: neither fits.
  wanted[8] = 1000;
  least[8] = 500;
  StepScratch s = placeStepScratch(plan, wanted, least, /*inArena=*/true);
  CHECK(s.arenaOffset ==
        std::vector<int64_t>{640, -1, -1, 448, -1, -1, 512, -1, -1, -1});
  CHECK(s.arenaBytes[0] == 200);
  CHECK(s.arenaBytes[3] == 100);
  CHECK(s.arenaBytes[6] == 128);
  CHECK(s.sideWanted == 1000);
  CHECK(s.sideLeast == 500);

  // Beside the arena: every step shares the one workspace.
  StepScratch beside = placeStepScratch(plan, wanted, least, false);
  CHECK(beside.arenaOffset == std::vector<int64_t>(plan.steps.size(), -1));
  CHECK(beside.sideWanted == 1000);
  CHECK(beside.sideLeast == 500);

  // The budget caps the side workspace at what it leaves beside the arena,
  // never under the least.
  CHECK(cpuSideWorkspaceBytes(s, plan, 0) == 1000);
  CHECK(cpuSideWorkspaceBytes(s, plan, plan.arenaBytes + 700) == 700);
  CHECK(cpuSideWorkspaceBytes(s, plan, plan.arenaBytes + 100) == 500);
}

TEST_CASE("the CPU backend's scratch of a plan without convolutions or "
          "attention is none at the least, and oneDNN's matmul scratchpads "
          "where it wants them",
          "[runtime]") {
  Plan plan = tinyPlan();
  StepScratch s = cpuStepScratch(plan);
  CHECK(s.least == std::vector<uint64_t>(plan.steps.size(), 0));
  CHECK(s.sideLeast == 0);
  std::vector<uint64_t> gemms;
  for (const StepDesc &step : plan.steps) {
    uint64_t elements = 0;
    if (step.op == "matmul")
      elements = cpu::gemmScratchElements(
          OpKind::Matmul, parseOpAttrs(OpKind::Matmul, step.attrs, "test"),
          {plan.buffers[size_t(step.inputs[0])].shape,
           plan.buffers[size_t(step.inputs[1])].shape});
    gemms.push_back(elements * sizeof(float));
  }
  CHECK(s.wanted == gemms);
  CHECK(cpuSideWorkspaceBytes(s, plan, 0) == s.sideWanted);
  // A budget with no room beside the arena leaves the GEMMs to OpenBLAS.
  CHECK(cpuSideWorkspaceBytes(s, plan, plan.arenaBytes) == 0);
}
