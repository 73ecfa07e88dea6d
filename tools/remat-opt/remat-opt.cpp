//===- remat-opt.cpp - run passes on graph-dialect IR text ------*- C++ -*-===//
//
// MlirOptMain with the graph, func and arith dialects and MLIR's core
// transform passes (cse, canonicalize, ...) and remat's test passes, so every stage of the pipeline
// can be tested alone with lit and FileCheck.
//
//===----------------------------------------------------------------------===//

#include "ir/GraphDialect.h"

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
  registry.insert<remat::graph::GraphDialect, mlir::func::FuncDialect,
                  mlir::arith::ArithDialect>();

  mlir::registerTransformsPasses();
  remat::registerTestPasses();
  // TODO(lead): register the project passes here once passes/Passes.h exists:
  //   #include "passes/Passes.h"  and  remat::registerAllPasses();

  return mlir::asMainReturnCode(mlir::MlirOptMain(
      argc, argv, "remat optimizer driver: graph-dialect passes\n", registry));
}
