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
#include "mlir/Support/FileUtilities.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "runtime/plan/OutputFile.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
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

  auto [inputFilename, outputFilename] = mlir::registerAndParseCLIOptions(
      argc, argv, "remat optimizer driver: graph-dialect passes\n", registry);
  mlir::MlirOptMainConfig config =
      mlir::MlirOptMainConfig::createFromCLOptions();
  if (outputFilename == "-" || config.shouldShowDialects())
    return mlir::asMainReturnCode(mlir::MlirOptMain(
        argc, argv, inputFilename, outputFilename, registry));

  // -o FILE: the output is kept in memory and written only on success,
  // through runtime/plan/OutputFile.h (special files in place, regular files
  // replaced atomically).
  llvm::InitLLVM initLLVM(argc, argv);
  std::string errorMessage;
  std::unique_ptr<llvm::MemoryBuffer> input =
      mlir::openInputFile(inputFilename, &errorMessage);
  if (!input) {
    llvm::errs() << errorMessage << "\n";
    return 1;
  }
  std::string text;
  llvm::raw_string_ostream os(text);
  if (mlir::failed(mlir::MlirOptMain(os, std::move(input), registry, config)))
    return 1;
  os.flush();
  try {
    remat::runtime::writeOutputFile(outputFilename, text);
  } catch (const std::exception &e) {
    llvm::errs() << "remat-opt: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
