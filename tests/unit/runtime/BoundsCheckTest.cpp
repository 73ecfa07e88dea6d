//===- BoundsCheckTest.cpp - The bounds check catches stray reads/writes -===//
#include "runtime/BoundsCheck.h"
#include "runtime/Executor.h"
#include "runtime/ForwardingBackend.h"
#include "runtime/backends/cpu/CpuBackend.h"
#include "runtime/backends/cpu/StepScratch.h"
#include "runtime/plan/Loader.h"

#include <catch2/catch.hpp>

#include <cstring>
#include <string>

using namespace remat::runtime;

namespace {

std::string gpt2TinyPath() {
  return std::string(REMAT_SOURCE_DIR) +
         "/tests/e2e/plans/gpt2_tiny_520k.plan";
}

enum class Fault {
  None,
  WritePastResult,
  ReadPastOperand,
  ReadResultFirst,
  FillScratch,
  ReadScratchFirst
};

/// The CPU backend with one injected fault in every matmul step, or in
/// every step with scratch in the arena (FillScratch: allowed, overwrites
/// all of it; ReadScratchFirst: reads it before the kernel writes it).
class FaultyBackend final : public ForwardingBackend {
public:
  /// `scratchSteps`, when given, counts the steps that ran with scratch in
  /// the arena.
  explicit FaultyBackend(Fault fault, int *scratchSteps = nullptr)
      : ForwardingBackend(createCpuBackend()), fault(fault),
        scratchSteps(scratchSteps) {}

  void *allocateArena(uint64_t bytes, uint64_t alignment) override {
    base = static_cast<char *>(inner->allocateArena(bytes, alignment));
    return base;
  }

  void runStep(const KernelCall &call) override {
    float *out = call.outputs[0].as<float>();
    int64_t n = call.outputs[0].numElements;
    auto [scratchOffset, scratchBytes] = inner->arenaScratch(call.stepIndex);
    if (scratchBytes > 0 &&
        (fault == Fault::FillScratch || fault == Fault::ReadScratchFirst)) {
      if (scratchSteps)
        ++*scratchSteps;
      float first;
      std::memcpy(&first, base + scratchOffset, sizeof first);
      inner->runStep(call);
      if (fault == Fault::FillScratch)
        std::memset(base + scratchOffset, 0x5A, scratchBytes);
      else
        out[0] += first;
      return;
    }
    bool matmul = call.op == OpKind::Matmul;
    // A kernel that accumulates into its result without clearing it.
    float old = fault == Fault::ReadResultFirst && matmul ? out[0] : 0.0f;
    inner->runStep(call);
    if (!matmul)
      return;
    if (fault == Fault::WritePastResult)
      out[n] = 1.0f; // one float past the result
    else if (fault == Fault::ReadPastOperand)
      out[0] += call.inputs[0].as<float>()[call.inputs[0].numElements];
    else if (fault == Fault::ReadResultFirst)
      out[0] += old;
  }

private:
  Fault fault;
  int *scratchSteps;
  char *base = nullptr;
};

/// Runs two training steps of the GPT-2 tiny plan under the bounds check;
/// returns the error, or "" when none.
std::string checkedRun(std::unique_ptr<Backend> backend) {
  LoadedPlan plan = loadPlan(gpt2TinyPath());
  std::unique_ptr<Backend> checked = withBoundsCheck(std::move(backend));
  try {
    Executor exec(plan, *checked);
    exec.runStep();
    exec.runStep();
  } catch (const PlanError &e) {
    return e.what();
  }
  return "";
}

} // namespace

TEST_CASE("the bounds check passes the cpu backend on the GPT-2 tiny plan and "
          "changes no result",
          "[runtime]") {
  LoadedPlan plan = loadPlan(gpt2TinyPath());
  auto run = [&](std::unique_ptr<Backend> backend) {
    Executor exec(plan, *backend);
    std::vector<double> losses;
    for (int s = 0; s < 2; ++s)
      losses.push_back(exec.runStep().loss);
    return losses;
  };
  std::vector<double> plain = run(createCpuBackend());
  std::vector<double> checked = run(withBoundsCheck(createCpuBackend()));
  CHECK(checked == plain);
}

TEST_CASE("the bounds check reports a write past a step's result",
          "[runtime]") {
  std::string error =
      checkedRun(std::make_unique<FaultyBackend>(Fault::WritePastResult));
  INFO(error);
  CHECK_THAT(error, Catch::Contains("gpt2_tiny_520k.plan: /steps/"));
  CHECK_THAT(error, Catch::Contains("'matmul'"));
  CHECK_THAT(error, Catch::Contains("training step 1"));
  CHECK_THAT(error,
             Catch::Contains("wrote outside its results and scratch: bytes ["));
}

TEST_CASE("the bounds check reports a read past a step's operand",
          "[runtime]") {
  std::string error =
      checkedRun(std::make_unique<FaultyBackend>(Fault::ReadPastOperand));
  INFO(error);
  CHECK_THAT(error, Catch::Contains("'matmul'"));
  CHECK_THAT(error, Catch::Contains("read bytes outside its operands"));
}

TEST_CASE("the bounds check reports a result read before it is written",
          "[runtime]") {
  std::string error =
      checkedRun(std::make_unique<FaultyBackend>(Fault::ReadResultFirst));
  INFO(error);
  CHECK_THAT(error, Catch::Contains("'matmul'"));
  CHECK_THAT(error, Catch::Contains("or a result before writing it"));
}

TEST_CASE("a faultless forwarding backend passes the bounds check",
          "[runtime]") {
  CHECK(checkedRun(std::make_unique<FaultyBackend>(Fault::None)).empty());
}

TEST_CASE("the bounds check lets a step write its scratch in the arena and "
          "reports a read of it before the kernel writes it",
          "[runtime]") {
  // GPT-2 tiny's attention steps (and its matmul steps where oneDNN's
  // matmul needs a scratchpad on this CPU) have their scratch in gaps of
  // the arena: the first of them is the first to read it.
  LoadedPlan plan = loadPlan(gpt2TinyPath());
  StepScratch scratch = cpuStepScratch(plan.plan);
  size_t first = 0;
  while (first < plan.plan.steps.size() &&
         (scratch.arenaOffset[first] < 0 || scratch.arenaBytes[first] == 0))
    ++first;
  REQUIRE(first < plan.plan.steps.size());
  int filled = 0, read = 0;
  CHECK(checkedRun(std::make_unique<FaultyBackend>(Fault::FillScratch, &filled))
            .empty());
  CHECK(filled > 0);

  std::string error = checkedRun(
      std::make_unique<FaultyBackend>(Fault::ReadScratchFirst, &read));
  INFO(error);
  REQUIRE(read > 0);
  CHECK_THAT(error, Catch::Contains("/steps/" + std::to_string(first) + " '" +
                                    plan.plan.steps[first].op + "'"));
  CHECK_THAT(error, Catch::Contains("read bytes outside its operands"));
}
