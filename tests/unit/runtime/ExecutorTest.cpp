//===- ExecutorTest.cpp - The executor trains plans on the CPU -----------===//
//
// Whole plans on the CPU backend: losses fall, runs are deterministic, the
// arena is one allocation, params initialize and load from safetensors,
// steps are observed in order, errors name their step, and the plan's
// gradients match finite differences of its loss.
//
//===----------------------------------------------------------------------===//
#include "ExecutorTestUtil.h"
#include "TestUtil.h"
#include "TinyPlan.h"

#include "runtime/Executor.h"
#include "runtime/backends/cpu/CpuBackend.h"
#include "runtime/backends/cpu/StepScratch.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>

using namespace remat::runtime;
using namespace remat::runtime::test;

TEST_CASE("the tiny linear plan trains for 20 steps and its loss decreases",
          "[runtime]") {
  LoadedPlan plan = loadPlanText(kTinyLinearPlan, "tiny.plan");
  std::vector<double> losses = runLosses(plan, 20);
  INFO("first loss " << losses.front() << ", last " << losses.back());
  CHECK(losses.back() < 0.05 * losses.front());
  double early = 0, late = 0;
  for (int i = 0; i < 5; ++i) {
    early += losses[i];
    late += losses[15 + i];
  }
  CHECK(late < early);
}

TEST_CASE("the example plan file in tests/e2e/plans loads and runs",
          "[runtime]") {
  LoadedPlan plan = loadPlan(std::string(REMAT_SOURCE_DIR) +
                             "/tests/e2e/plans/tiny_linear.plan");
  CHECK(runLosses(plan, 3).size() == 3);
}

TEST_CASE("the shipped GPT-2 tiny plan (recomputation, dropout, the loss "
          "gradient over the logits) runs deterministically",
          "[runtime]") {
  // tests/e2e/plans/gpt2_tiny_520k.plan: `remat compile models/gpt2.json
  // --preset tiny --budget 4720000 --workspace-reserve 4200000 --emit=plan`
  // (the arena under 520,000 B; the reserve holds the CUDA backend's least
  // workspace); the CUDA tests run it on both backends.
  LoadedPlan plan = loadPlan(std::string(REMAT_SOURCE_DIR) +
                             "/tests/e2e/plans/gpt2_tiny_520k.plan");
  const Plan &p = plan.plan;
  int recomputed = 0;
  bool shared = false;
  for (const StepDesc &s : p.steps) {
    recomputed += s.recompute;
    if (s.op == "cross_entropy_grad")
      shared = p.buffers[size_t(s.outputs[0])].offset ==
               p.buffers[size_t(s.inputs[0])].offset;
  }
  CHECK(recomputed > 0);
  CHECK(shared);
  std::vector<double> first = runLosses(plan, 3), second = runLosses(plan, 3);
  CHECK(first == second);
  for (double loss : first)
    CHECK((loss > 0 && loss < 10));
}

TEST_CASE("the arena is one allocation of exactly arena_bytes", "[runtime]") {
  LoadedPlan plan = loadPlanText(kTinyLinearPlan, "tiny.plan");
  CpuBackend cpu;
  {
    Executor exec(plan, cpu);
    for (int i = 0; i < 3; ++i)
      exec.runStep();
    CHECK(exec.arenaBytes() == 896);
    // Beside it, only what oneDNN's matmul wants for the steps' GEMMs
    // where no gap of the arena holds it (none on an AVX2 CPU), as far as
    // the plan's budget leaves room.
    CHECK(exec.workspaceBytes() ==
          cpuSideWorkspaceBytes(cpuStepScratch(plan.plan), plan.plan,
                                plan.budgetBytes().value_or(0)));
  }
  CHECK(cpu.arenaAllocations() == 1);
  CHECK(cpu.lastArenaBytes() == 896);
}

TEST_CASE("a run is a pure function of plan and seed", "[runtime]") {
  LoadedPlan plan = loadPlanText(kTinyLinearPlan, "tiny.plan");
  CHECK(runLosses(plan, 5) == runLosses(plan, 5));
  ExecutorOptions other;
  other.seed = 8;
  CHECK(runLosses(plan, 5) != runLosses(plan, 5, other));
}

TEST_CASE("parameters are initialized once, from their init spec",
          "[runtime]") {
  LoadedPlan plan = loadPlanText(kTinyLinearPlan, "tiny.plan");
  CpuBackend cpu;
  Executor exec(plan, cpu);
  auto teacher = asFloats(exec.readBuffer(3));
  for (float v : teacher) {
    CHECK(v >= -1.0f);
    CHECK(v < 1.0f);
  }
  CHECK(teacher != std::vector<float>(8, 0.0f));
  exec.runStep();
  // w_teacher has no optimizer step, so it never changes; w does.
  CHECK(asFloats(exec.readBuffer(3)) == teacher);
  auto state = exec.stateTensors();
  CHECK(state.count("momentum:w") == 1);
  CHECK(asFloats(state["momentum:w"].bytes) != std::vector<float>(8, 0.0f));
}

TEST_CASE("weights load from safetensors and a missing param is rejected",
          "[runtime]") {
  LoadedPlan plan = loadPlanText(kTinyLinearPlan, "tiny.plan");
  CpuBackend cpu;
  Executor exec(plan, cpu);
  auto state = exec.stateTensors();
  std::vector<float> ones(8, 1.0f);
  std::memcpy(state["w"].bytes.data(), ones.data(), 32);
  std::string path = tempPath("weights.safetensors");
  writeSafetensors(path, state);
  exec.loadWeights(SafetensorsFile::read(path));
  CHECK(asFloats(exec.readBuffer(1)) == ones);
  // The same from a file opened lazily (remat run's way).
  std::vector<float> twos(8, 2.0f);
  std::memcpy(state["w"].bytes.data(), twos.data(), 32);
  writeSafetensors(path, state);
  exec.loadWeights(SafetensorsFile::open(path));
  CHECK(asFloats(exec.readBuffer(1)) == twos);
  state.erase("b");
  writeSafetensors(path, state);
  CHECK_THROWS_WITH(exec.loadWeights(SafetensorsFile::read(path)),
                    path + ": missing tensor 'b'");
}

TEST_CASE("a language model on the sequence task learns with adamw",
          "[runtime]") {
  LoadedPlan plan = validatePlan(sequenceModelPlan(), "lm.plan");
  std::vector<double> losses = runLosses(plan, 40);
  INFO("first loss " << losses.front() << ", last " << losses.back());
  CHECK(losses.front() > 1.5); // about log(16) = 2.77 at init
  CHECK(losses.back() < 0.25 * losses.front());
}

TEST_CASE("onStepExecuted sees every plan step in order", "[runtime]") {
  LoadedPlan plan = loadPlanText(kTinyLinearPlan, "tiny.plan");
  CpuBackend cpu;
  Executor exec(plan, cpu);
  std::vector<size_t> seen;
  exec.onStepExecuted = [&](size_t i) { seen.push_back(i); };
  exec.runStep();
  CHECK(seen == std::vector<size_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
}

TEST_CASE("an embedding index outside the table stops the run with the step "
          "named",
          "[runtime]") {
  Plan p = sequenceModelPlan();
  p.buffers[0].data->vocab = 32; // tokens up to 31, table has 16 rows
  LoadedPlan plan = validatePlan(p, "lm.plan");
  CpuBackend cpu;
  Executor exec(plan, cpu);
  CHECK_THROWS_AS(exec.runStep(), ExecutionError);
  try {
    exec.runStep();
  } catch (const ExecutionError &e) {
    CHECK_THAT(e.what(), Catch::StartsWith("lm.plan: /steps/0 'embedding': "
                                           "index"));
  }
}

TEST_CASE("the plan's parameter gradients match finite differences of its "
          "loss",
          "[runtime]") {
  // Whole-plan check of the autodiff steps of the language model: for a
  // sample of elements of each param, perturb it in a fresh executor (same
  // seed, so the same init and step-0 data) and difference the step-0 loss,
  // which is computed before the optimizer runs. f32 forward with eps 1e-2:
  // rounding ~1e-7 * 3 / 1e-2 = 3e-5 and truncation ~eps^2 = 1e-4, so the
  // check is |analytic - fd| <= 1e-3 + 5e-2 |fd|.
  LoadedPlan plan = validatePlan(sequenceModelPlan(), "lm.plan");
  CpuBackend cpu;
  std::map<size_t, std::vector<float>> grads;
  {
    Executor exec(plan, cpu);
    exec.onStepExecuted = [&](size_t stepIndex) {
      for (size_t b = 0; b < plan.plan.buffers.size(); ++b)
        if (plan.plan.buffers[b].role == BufferRole::Grad &&
            plan.lastWriter[b] == int64_t(stepIndex))
          grads[b] = asFloats(exec.readBuffer(b));
    };
    exec.runStep();
  }
  REQUIRE(grads.size() == 4);
  auto lossWith = [&](size_t param, size_t element, float delta) {
    CpuBackend backend;
    Executor exec(plan, backend);
    std::vector<float> values = asFloats(exec.readBuffer(param));
    values[element] += delta;
    std::vector<char> bytes(values.size() * 4);
    std::memcpy(bytes.data(), values.data(), bytes.size());
    exec.writeBuffer(param, bytes);
    return exec.runStep().loss;
  };
  for (const auto &[gradIndex, grad] : grads) {
    std::string paramName = paramNameOfGrad(plan.plan.buffers[gradIndex].name);
    size_t param = 0;
    while (plan.plan.buffers[param].name != paramName)
      ++param;
    for (size_t element = 0; element < grad.size();
         element += std::max<size_t>(1, grad.size() / 7)) {
      double fd =
          (lossWith(param, element, 1e-2f) - lossWith(param, element, -1e-2f)) /
          2e-2;
      INFO(paramName << "[" << element << "]: analytic " << grad[element]
                     << ", finite difference " << fd);
      CHECK(std::abs(grad[element] - fd) <= 1e-3 + 5e-2 * std::abs(fd));
    }
  }
}
