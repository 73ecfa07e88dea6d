//===- PlannerProblemTest.cpp - The planner problem of a compiled step ---===//
#include "compiler/Driver.h"
#include "compiler/ModelGraph.h"
#include "passes/Rematerialize.h"
#include "passes/TrainStep.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/MLIRContext.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>

using namespace remat;

namespace {
/// models/gpt2.json at its tiny preset.
model::ModelGraph tinyGpt2() {
  std::ifstream in(std::string(REMAT_SOURCE_DIR) + "/models/gpt2.json");
  std::stringstream text;
  text << in.rdbuf();
  model::ModelOptions options;
  options.preset = "tiny";
  return model::loadModel(text.str(), "gpt2.json", options);
}
} // namespace

TEST_CASE("cross_entropy_grad's result shares the logits' bytes in the "
          "planner problem as in the layout",
          "[compiler]") {
  model::ModelGraph graph = tinyGpt2();
  mlir::MLIRContext context;
  auto module =
      compiler::buildModule(graph, context, compiler::Stage::Scheduled);
  TrainStep step = extractTrainStep(*module);
  planner::Problem problem = buildPlannerProblem(step, 64);
  REQUIRE(problem.size() == int(step.ops.size()));

  int grad = -1;
  for (size_t k = 0; k < step.ops.size(); ++k)
    if (step.ops[k].kind == "cross_entropy_grad")
      grad = int(k);
  REQUIRE(grad >= 0);
  const memory::StepOp &op = step.graph.ops[size_t(grad)];
  int logits = step.graph.values[size_t(op.operands[0])].producer;
  int dlogits = op.results[0];
  // The result takes no bytes of its own; the logits are computed once and
  // read by every reader of dlogits, so they stay resident as long.
  CHECK(problem.nodes[size_t(grad)].bytes == 0);
  CHECK(problem.nodes[size_t(logits)].bytes > 0);
  CHECK_FALSE(problem.nodes[size_t(logits)].recomputable);
  int readers = 0;
  for (size_t k = 0; k < step.graph.ops.size(); ++k) {
    const auto &operands = step.graph.ops[k].operands;
    if (std::find(operands.begin(), operands.end(), dlogits) ==
        operands.end())
      continue;
    ++readers;
    const auto &nodeOperands = problem.nodes[k].operands;
    CHECK(std::find(nodeOperands.begin(), nodeOperands.end(), logits) !=
          nodeOperands.end());
  }
  CHECK(readers >= 2); // the lm_head's input and weight gradients
}

TEST_CASE("an op before the loss is forward though only the backward reads "
          "it (a planned step's evicted and recomputed op)",
          "[compiler]") {
  model::ModelGraph graph = tinyGpt2();
  mlir::MLIRContext context;
  auto module =
      compiler::buildModule(graph, context, compiler::Stage::Scheduled);
  mlir::Operation *terminator = nullptr;
  std::vector<mlir::Operation *> ops = trainStepOps(*module, &terminator);
  // The ops the loss depends on.
  std::set<mlir::Operation *> forward;
  std::vector<mlir::Value> work{terminator->getOperand(0)};
  while (!work.empty()) {
    mlir::Operation *def = work.back().getDefiningOp();
    work.pop_back();
    if (def && forward.insert(def).second)
      for (mlir::Value operand : def->getOperands())
        work.push_back(operand);
  }
  // A forward op whose result the backward reads too: recompute it right
  // after itself for its forward readers, as the planner's rewrite does,
  // so that the original feeds only the backward.
  mlir::Operation *original = nullptr;
  for (mlir::Operation *op : ops) {
    if (!forward.count(op) || op->getNumResults() != 1)
      continue;
    bool forwardUse = false, backwardUse = false;
    for (mlir::Operation *user : op->getResult(0).getUsers())
      (forward.count(user) ? forwardUse : backwardUse) = true;
    if (forwardUse && backwardUse) {
      original = op;
      break;
    }
  }
  REQUIRE(original != nullptr);
  mlir::OpBuilder b(original->getContext());
  b.setInsertionPointAfter(original);
  mlir::Operation *clone = b.clone(*original);
  clone->setAttr("remat.recompute", b.getUnitAttr());
  original->getResult(0).replaceUsesWithIf(
      clone->getResult(0),
      [&](mlir::OpOperand &use) { return forward.count(use.getOwner()) > 0; });

  TrainStep step = extractTrainStep(*module);
  size_t index = size_t(
      std::find(ops.begin(), ops.end(), original) - ops.begin());
  REQUIRE(index < step.graph.ops.size());
  CHECK(step.graph.ops[index].phase == memory::Phase::Forward);
  CHECK(step.graph.ops[index + 1].phase == memory::Phase::Forward);
  CHECK(step.graph.validate().empty());
}
