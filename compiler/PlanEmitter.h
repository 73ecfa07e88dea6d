//===- PlanEmitter.h - TrainStep to the runtime's Plan ----------*- C++ -*-===//
//
// Serializes the plan dialect into the plan file's contents
// (runtime/plan/PlanFormat.h, docs/plan-format.md), and builds the memory report.
//
//===----------------------------------------------------------------------===//
#ifndef REMAT_COMPILER_PLANEMITTER_H
#define REMAT_COMPILER_PLANEMITTER_H

#include "ir/PlanOps.h"
#include "passes/Rematerialize.h"
#include "passes/TrainStep.h"
#include "runtime/plan/PlanFormat.h"

#include <optional>

namespace remat::compiler {

/// The report keys of the plan file and `--report` that the step, its
/// layout and the planner's outcome give (docs/cli.md): budget_bytes,
/// planned_peak_bytes, arena_bytes, live_lower_bound_bytes, breakdown
/// {params, grads, optimizer, inputs, activations, workspace}, peak_op,
/// modeled_step_seconds, and the planner's solver, solve_seconds,
/// recompute_overhead, optimality_gap, lower_bound_bytes and _reason,
/// min_feasible_bytes and _gap, order. The driver adds the backend's.
nlohmann::json memoryReport(const TrainStep &step,
                            const memory::Liveness &liveness,
                            const memory::ArenaLayout &layout,
                            std::optional<int64_t> budgetBytes,
                            const RematOutcome &planned);

/// The plan file's contents from the verified `plan.arena` (the plan
/// dialect serialized): buffers and steps in arena order. The header fields
/// (model, seed, batch, tokens per sample) come from `step`; `report` is
/// embedded without what depends on the wall clock (solve_seconds,
/// optimality_gap).
runtime::Plan emitPlan(plan::ArenaOp arena, const TrainStep &step,
                       const nlohmann::json &report);

} // namespace remat::compiler

#endif // REMAT_COMPILER_PLANEMITTER_H
