//===- BoundsCheckTest.cpp - The bounds check catches stray reads/writes -===//
#include "runtime/BoundsCheck.h"
#include "runtime/Executor.h"
#include "runtime/ForwardingBackend.h"
#include "runtime/Loader.h"
#include "runtime/backends/cpu/CpuBackend.h"

#include <catch2/catch.hpp>

#include <cstring>
#include <string>

using namespace remat::runtime;

namespace {

std::string gpt2TinyPath() {
  return std::string(REMAT_SOURCE_DIR) +
         "/tests/e2e/plans/gpt2_tiny_520k.plan";
}

enum class Fault { None, WritePastResult, ReadPastOperand, ReadResultFirst };

/// The CPU backend with one injected fault in every matmul step.
class FaultyBackend final : public ForwardingBackend {
public:
  explicit FaultyBackend(Fault fault)
      : ForwardingBackend(createCpuBackend()), fault(fault) {}

  void runStep(const KernelCall &call) override {
    float *out = call.outputs[0].as<float>();
    int64_t n = call.outputs[0].numElements;
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
  CHECK_THAT(error, Catch::Contains("wrote outside its results: bytes ["));
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
