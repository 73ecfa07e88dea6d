//===- PlanEmitter.h - TrainStep to the runtime's Plan ----------*- C++ -*-===//
//
// Emits the plan file's contents (runtime/PlanFormat.h, docs/plan-format.md)
// from a scheduled, laid-out TrainStep, and the memory report.
//
//===----------------------------------------------------------------------===//
#ifndef REMAT_COMPILER_PLANEMITTER_H
#define REMAT_COMPILER_PLANEMITTER_H

#include "passes/TrainStep.h"
#include "runtime/PlanFormat.h"

#include <optional>

namespace remat::compiler {

/// The memory report keys of the plan file and `--report` (issue contract):
/// budget_bytes, planned_peak_bytes, arena_bytes, live_lower_bound_bytes,
/// breakdown {params, grads, optimizer, inputs, activations, workspace},
/// recompute_overhead, solver, solve_seconds.
nlohmann::json memoryReport(const TrainStep &step,
                            const memory::Liveness &liveness,
                            const memory::ArenaLayout &layout,
                            std::optional<int64_t> budgetBytes,
                            double recomputeOverhead,
                            const std::string &solver, double solveSeconds);

/// Builds the plan: one buffer per value (values sharing a buffer share its
/// offset), one step per op in the current order.
runtime::Plan emitPlan(const TrainStep &step, const memory::Liveness &liveness,
                       const memory::ArenaLayout &layout, int64_t alignment,
                       const nlohmann::json &report);

} // namespace remat::compiler

#endif // REMAT_COMPILER_PLANEMITTER_H
