//===- Passes.h - the training-step passes ----------------------*- C++ -*-===//
//
// Declares remat's MLIR passes (generated from Passes.td), their registration
// and the training-step pipeline. Pass contracts are in Passes.td.
//
//===----------------------------------------------------------------------===//

#ifndef REMAT_PASSES_PASSES_H
#define REMAT_PASSES_PASSES_H

#include "ir/GraphDialect.h"
#include "ir/PlanDialect.h"
#include "passes/planner/Defaults.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"

#include <memory>

namespace remat {

#define GEN_PASS_DECL
#include "passes/Passes.h.inc"

/// Registers every remat pass (`-remat-autodiff`, `-remat-optimizer`) and
/// the `-remat-train-step` pipeline with the global registry, for remat-opt.
void registerAllPasses();

/// Adds the passes that turn `func.func @forward` into the optimizer-updated
/// `func.func @train_step`, in order: autodiff, optimizer, then MLIR's CSE
/// (it merges duplicate constants and shared backward subexpressions; it
/// must run before any rematerialization planning, which duplicates work on
/// purpose and which CSE would undo).
void buildTrainStepPipeline(mlir::OpPassManager &pm);

} // namespace remat

#endif // REMAT_PASSES_PASSES_H
