//===- Rematerialize.h - The training step as a planner problem -*- C++ -*-===//
#ifndef REMAT_PASSES_REMATERIALIZE_H
#define REMAT_PASSES_REMATERIALIZE_H

#include "passes/TrainStep.h"
#include "passes/planner/Solvers.h"

namespace remat {

/// One planner node per op of the step, in its current order: output bytes
/// are its results' aligned sizes (none for in-place updates), cost its
/// modeled seconds; arguments are persistent bytes; forward ops may be
/// recomputed; the loss and the updates are required outputs. Ops of
/// repeated blocks get a block id per repetition ("h.3.*").
planner::Problem buildPlannerProblem(const TrainStep &step, int64_t alignment);

} // namespace remat

#endif // REMAT_PASSES_REMATERIALIZE_H
