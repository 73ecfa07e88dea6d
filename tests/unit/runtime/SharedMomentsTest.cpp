//===- SharedMomentsTest.cpp - batch_norm moments shared between steps ----===//
//
// The tiny linear plan with batch normalization of h (buffer 9) added:
// batch_norm, running_mean_update and running_var_update read h, and
// batch_norm_grad reads it either before mse_grad writes dy over h's bytes
// (one group of four) or after (a group of three; the gradient computes
// its own moments of what is there then).
//
//===----------------------------------------------------------------------===//
#include "runtime/backends/cpu/SharedMoments.h"
#include "runtime/Executor.h"
#include "runtime/backends/cpu/CpuBackend.h"
#include "runtime/backends/cpu/CpuWorkspace.h"
#include "runtime/backends/cpu/Kernels.h"

#include "TinyPlan.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <cstring>

using namespace remat::runtime;
using nlohmann::json;

namespace {

json bufferJson(const std::string &name, const std::string &role,
                std::vector<int64_t> shape, uint64_t offset) {
  uint64_t bytes = 4;
  for (int64_t d : shape)
    bytes *= uint64_t(d);
  json b = {{"name", name},   {"role", role},     {"dtype", "f32"},
            {"shape", shape}, {"offset", offset}, {"bytes", bytes}};
  if (role == "param")
    b["init"] = {{"kind", "normal"}, {"mean", 1.0}, {"std", 0.5}};
  if (role == "state")
    b["init"] = {{"kind", "ones"}};
  return b;
}

json stepJson(const std::string &op, std::vector<int64_t> ins,
              std::vector<int64_t> outs, json attrs, const char *phase) {
  return {{"op", op},       {"inputs", ins},  {"outputs", outs},
          {"attrs", attrs}, {"phase", phase}, {"recompute", false}};
}

/// gradBeforeOverwrite: batch_norm_grad right after the running updates
/// (steps 2, 3, 5, 6 read h); else after mse_grad (step 8) has written dy
/// over h's bytes (steps 2, 3, 5 share; step 9 computes its own).
LoadedPlan batchNormPlan(bool gradBeforeOverwrite) {
  json p = json::parse(test::kTinyLinearPlan);
  auto &buffers = p["buffers"];
  buffers.push_back(bufferJson("gamma", "param", {2}, 896));         // 14
  buffers.push_back(bufferJson("beta", "param", {2}, 960));          // 15
  buffers.push_back(bufferJson("running_mean", "state", {2}, 1024)); // 16
  buffers.push_back(bufferJson("running_var", "state", {2}, 1088));  // 17
  buffers.push_back(bufferJson("bn", "activation", {8, 2}, 1152));   // 18
  buffers.push_back(bufferJson("dbn", "activation", {8, 2}, 1216));  // 19
  buffers.push_back(bufferJson("dgamma", "activation", {2}, 1280));  // 20
  buffers.push_back(bufferJson("dbeta", "activation", {2}, 1344));   // 21
  p["arena_bytes"] = 1408;
  p["report"]["budget_bytes"] = 4096;
  json steps = json::array();
  for (size_t i = 0; i < p["steps"].size(); ++i) {
    if (i == 2) {
      steps.push_back(stepJson("batch_norm", {9, 14, 15}, {18},
                               {{"epsilon", 1e-5}}, "forward"));
      steps.push_back(stepJson("running_mean_update", {16, 9}, {16},
                               {{"momentum", 0.9}}, "forward"));
    }
    steps.push_back(p["steps"][i]);
    bool grad = false;
    if (i == 2) { // after the add
      steps.push_back(stepJson("running_var_update", {17, 9}, {17},
                               {{"momentum", 0.9}}, "forward"));
      grad = gradBeforeOverwrite;
    }
    if (i == 5) // after mse_grad
      grad = !gradBeforeOverwrite;
    if (grad)
      steps.push_back(stepJson("batch_norm_grad", {9, 14, 18}, {19, 20, 21},
                               {{"epsilon", 1e-5}}, "backward"));
  }
  p["steps"] = steps;
  return loadPlanText(p.dump(), "bn.plan");
}

/// Sets REMAT_CPU_MOMENTS for the scope of the object.
struct MomentsEnv {
  explicit MomentsEnv(const char *value) {
    setenv("REMAT_CPU_MOMENTS", value, 1);
  }
  ~MomentsEnv() { unsetenv("REMAT_CPU_MOMENTS"); }
};

/// Every buffer after `steps` training steps.
std::vector<std::vector<char>> run(const LoadedPlan &plan, int steps,
                                   uint64_t *sharedReads = nullptr) {
  CpuBackend cpu;
  Executor exec(plan, cpu);
  for (int i = 0; i < steps; ++i)
    exec.runStep();
  std::vector<std::vector<char>> out;
  for (size_t b = 0; b < plan.plan.buffers.size(); ++b)
    out.push_back(exec.readBuffer(b));
  if (sharedReads)
    *sharedReads = cpu.sharedMomentReads();
  return out;
}

} // namespace

TEST_CASE("steps that read the same unchanged x share batch_norm's moments",
          "[runtime]") {
  CHECK(cpu::momentsOperand(OpKind::BatchNorm) == 0);
  CHECK(cpu::momentsOperand(OpKind::BatchNormGrad) == 0);
  CHECK(cpu::momentsOperand(OpKind::RunningMeanUpdate) == 1);
  CHECK(cpu::momentsOperand(OpKind::RunningVarUpdate) == 1);
  CHECK(cpu::momentsOperand(OpKind::LayerNorm) == -1);

  LoadedPlan before = batchNormPlan(true);
  cpu::SharedMoments shared = cpu::planSharedMoments(before);
  REQUIRE(before.plan.steps[6].op == "batch_norm_grad");
  CHECK(shared.groups == 1);
  CHECK(shared.slotChannels == std::vector<int64_t>{2});
  CHECK(shared.slot ==
        std::vector<int>{-1, -1, 0, 0, -1, 0, 0, -1, -1, -1, -1, -1, -1, -1});
  CHECK(shared.fills[2] == 1);
  CHECK(shared.fills[3] + shared.fills[5] + shared.fills[6] == 0);

  // mse_grad (step 8) writes dy over h's bytes: the gradient after it
  // is not in the group.
  LoadedPlan after = batchNormPlan(false);
  REQUIRE(after.plan.steps[9].op == "batch_norm_grad");
  shared = cpu::planSharedMoments(after);
  CHECK(shared.groups == 1);
  CHECK(shared.slot ==
        std::vector<int>{-1, -1, 0, 0, -1, 0, -1, -1, -1, -1, -1, -1, -1, -1});
}

TEST_CASE("shared moments give the bits of each step's own", "[runtime]") {
  for (bool gradBefore : {true, false}) {
    INFO("batch_norm_grad " << (gradBefore ? "before" : "after")
                            << " dy overwrites h");
    LoadedPlan plan = batchNormPlan(gradBefore);
    uint64_t reads = 0;
    auto sharedRun = run(plan, 3, &reads);
    // Three training steps, each with 3 (or 2) steps reading the moments.
    CHECK(reads == (gradBefore ? 9u : 6u));
    std::vector<std::vector<char>> own;
    {
      MomentsEnv env("own");
      uint64_t ownReads = 1;
      own = run(plan, 3, &ownReads);
      CHECK(ownReads == 0);
    }
    for (size_t b = 0; b < own.size(); ++b) {
      INFO("buffer " << b << " '" << plan.plan.buffers[b].name << "'");
      CHECK(sharedRun[b] == own[b]);
    }
  }
}

TEST_CASE("a step run out of order computes its own moments", "[runtime]") {
  LoadedPlan plan = batchNormPlan(true);
  CpuBackend cpu;
  cpu.prepare(plan);
  char *base = static_cast<char *>(
      cpu.allocateArena(plan.plan.arenaBytes, plan.plan.alignment));
  std::memset(base, 0, plan.plan.arenaBytes);
  auto *h = reinterpret_cast<float *>(base + plan.plan.buffers[9].offset);
  for (int i = 0; i < 16; ++i)
    h[i] = float(i % 5) - 1.5f;
  for (int b : {14, 16, 17}) // gamma and the running statistics
    for (int i = 0; i < 2; ++i)
      reinterpret_cast<float *>(base + plan.plan.buffers[b].offset)[i] = 1.0f;
  PlanCalls calls(plan, base);
  for (size_t s = 2; s <= 3; ++s) // batch_norm fills, the mean update reads
    cpu.runStep(calls.call(s, 0));
  CHECK(cpu.sharedMomentReads() == 1);
  // h changes between the steps (as if a step had been skipped), then the
  // variance update runs: its moments must come from the new h.
  for (int i = 0; i < 16; ++i)
    h[i] = float(i % 3) * 2.0f;
  auto *var = reinterpret_cast<float *>(base + plan.plan.buffers[17].offset);
  cpu.runStep(calls.call(5, 0));
  CHECK(cpu.sharedMomentReads() == 1);
  std::vector<float> got(var, var + 2);
  var[0] = var[1] = 1.0f;
  std::vector<float> workspace(1);
  cpu::runKernel<float>(calls.call(5, 0), workspace.data(), 0);
  CHECK(got == std::vector<float>(var, var + 2));
  // Run again right after (the step's own sequence), it reads nothing.
  cpu.runStep(calls.call(5, 0));
  CHECK(cpu.sharedMomentReads() == 1);
  cpu.freeArena(base);
}
