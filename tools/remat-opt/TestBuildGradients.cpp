//===- TestBuildGradients.cpp - exercise the VJP builders -------*- C++ -*-===//
//
// -remat-test-build-gradients: for every op implementing GradientOpInterface,
// builds its gradient right after it, using the op's own results as the
// incoming gradients (they have the right types). The ops it creates are
// checked with FileCheck and, like all IR, by the verifier after the pass.
//
//===----------------------------------------------------------------------===//

#include "ir/GraphOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassRegistry.h"

namespace remat {
namespace {

struct TestBuildGradientsPass
    : public mlir::PassWrapper<TestBuildGradientsPass,
                               mlir::OperationPass<mlir::func::FuncOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(TestBuildGradientsPass)

  llvm::StringRef getArgument() const final {
    return "remat-test-build-gradients";
  }
  llvm::StringRef getDescription() const final {
    return "Build the gradient of every differentiable graph op (test only)";
  }

  void runOnOperation() override {
    llvm::SmallVector<graph::GradientOpInterface> forwardOps;
    getOperation().walk(
        [&](graph::GradientOpInterface op) { forwardOps.push_back(op); });
    for (graph::GradientOpInterface op : forwardOps) {
      mlir::OpBuilder builder(op);
      builder.setInsertionPointAfter(op);
      llvm::SmallVector<mlir::Value> resultGrads(op->getResults());
      llvm::SmallVector<mlir::Value> operandGrads;
      if (mlir::failed(op.buildGradient(builder, resultGrads, operandGrads)))
        return signalPassFailure();
      if (operandGrads.size() != op->getNumOperands()) {
        op->emitOpError() << "built " << operandGrads.size()
                          << " gradients for " << op->getNumOperands()
                          << " operands";
        return signalPassFailure();
      }
      for (auto [index, grad] : llvm::enumerate(operandGrads)) {
        if (grad && grad.getType() != op->getOperand(index).getType()) {
          op->emitOpError() << "gradient of operand #" << index << " has type "
                            << grad.getType() << ", expected "
                            << op->getOperand(index).getType();
          return signalPassFailure();
        }
      }
    }
  }
};

} // namespace

void registerTestPasses() { mlir::PassRegistration<TestBuildGradientsPass>(); }

} // namespace remat
