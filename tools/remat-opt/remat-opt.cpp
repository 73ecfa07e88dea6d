//===- remat-opt.cpp - run passes on graph-dialect IR text ------*- C++ -*-===//
//
// MlirOptMain with the graph, plan, func and arith dialects, MLIR's core
// transform passes (cse, canonicalize, ...), remat's passes and pipelines
// (passes/Passes.h) and its test passes, so every stage of the pipeline can
// be tested alone with lit and FileCheck.
//
//===----------------------------------------------------------------------===//

#include "ir/GraphDialect.h"
#include "ir/PlanDialect.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"

namespace remat {
/// Test-only passes of remat-opt (TestBuildGradients.cpp).
void registerTestPasses();
} // namespace remat

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  registry.insert<remat::graph::GraphDialect, remat::plan::PlanDialect,
                  mlir::func::FuncDialect, mlir::arith::ArithDialect>();

  mlir::registerTransformsPasses();
  remat::registerAllPasses();
  remat::registerTestPasses();

  return mlir::asMainReturnCode(mlir::MlirOptMain(
      argc, argv, "remat optimizer driver: graph-dialect passes\n", registry));
}
