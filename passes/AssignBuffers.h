//===- AssignBuffers.h - @train_step to a plan.arena ------------*- C++ -*-===//
//
// The lowering behind -remat-assign-buffers, callable with a liveness and
// layout already computed (the driver computes them once for its memory
// report and the plan).
//
//===----------------------------------------------------------------------===//
#ifndef REMAT_PASSES_ASSIGNBUFFERS_H
#define REMAT_PASSES_ASSIGNBUFFERS_H

#include "ir/PlanOps.h"
#include "passes/TrainStep.h"

#include "mlir/IR/BuiltinOps.h"

namespace remat {

/// Replaces `@train_step` of `module` with one `plan.arena`: a buffer per
/// value at the offsets of `layout`, the steps in order, a `plan.free`
/// after each transient buffer's last reader. `step`, `live` and `layout`
/// must come from this module's `@train_step` (extractTrainStep,
/// memory::computeLiveness, memory::assignOffsets). Returns null, with an
/// error emitted on the module, when they do not match it. Does not verify.
plan::ArenaOp buildPlanArena(mlir::ModuleOp module, const TrainStep &step,
                             const memory::Liveness &live,
                             const memory::ArenaLayout &layout,
                             int64_t alignment);

} // namespace remat

#endif // REMAT_PASSES_ASSIGNBUFFERS_H
