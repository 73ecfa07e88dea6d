//===- Pipelines.cpp - pass registration and pipelines ----------*- C++ -*-===//
//
// Registers remat's passes and builds the pipelines the driver runs.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

namespace remat {

#define GEN_PASS_REGISTRATION
#include "passes/Passes.h.inc"

void buildTrainStepPipeline(mlir::OpPassManager &pm) {
  pm.addPass(createAutodiffPass());
  pm.addPass(createOptimizerPass());
  pm.addPass(mlir::createCSEPass());
}

void registerAllPasses() {
  registerRematPasses();
  mlir::PassPipelineRegistration<>(
      "remat-train-step",
      "forward -> train_step: autodiff, optimizer updates, CSE",
      buildTrainStepPipeline);
}

} // namespace remat
