//===- StepScratch.h - The CPU kernels' scratch inside the arena -*- C++ -*-===//
//
// From the plan file alone: where in the arena a step's kernel scratch can
// go while it runs. A step that needs scratch (a convolution's unfolded
// block or oneDNN's copies, attention's scores) takes it from the lowest
// gap of the arena that no buffer live at that step occupies; only the
// steps that find no such gap share a workspace beside the arena. The
// compiler reports that workspace (`workspace_bytes`) and the CPU backend
// allocates it, both through cpuStepScratch, so the two agree.
//
//===----------------------------------------------------------------------===//
#ifndef REMAT_RUNTIME_BACKENDS_CPU_STEPSCRATCH_H
#define REMAT_RUNTIME_BACKENDS_CPU_STEPSCRATCH_H

#include "ops/ShapeRules.h"
#include "runtime/plan/Lifetimes.h"
#include "runtime/plan/PlanFormat.h"

#include <cstdint>
#include <functional>
#include <vector>

namespace remat::runtime {

/// Where each step's kernel scratch goes.
struct StepScratch {
  /// Per step: the scratch bytes it wants, and the least it runs with
  /// (cpu::cpuMinimumWorkspaceElements: its kernel without oneDNN).
  std::vector<uint64_t> wanted, least;
  /// Per step: the arena offset of its scratch (aligned to the plan's
  /// alignment, inside a gap no live buffer occupies while the step runs),
  /// or -1: the step uses the workspace beside the arena (or needs none).
  std::vector<int64_t> arenaOffset;
  /// Per step with an arena offset: the scratch bytes there, `wanted`, or
  /// `least` where only that fits (oneDNN then leaves the step to the
  /// backend's own kernel).
  std::vector<uint64_t> arenaBytes;
  /// Over the steps that use the workspace beside the arena: the most any
  /// wants and the most any runs with at the least.
  uint64_t sideWanted = 0, sideLeast = 0;
};

/// Places the scratch of each step with wanted[i] > 0 at the lowest aligned
/// offset of the arena whose `wanted[i]` bytes no buffer live at step i
/// occupies (buffers occupy their bytes rounded up to the alignment), else
/// at the lowest with least[i] bytes free (a plan laid out for smaller
/// scratch, e.g. compiled with REMAT_CPU_CONV=im2col: its steps run as
/// laid out); with `inArena` false, or where neither fits, the step goes
/// beside the arena. `least[i]` is what step i runs with at the least.
/// O(steps with scratch x buffers x log buffers).
StepScratch placeStepScratch(const Plan &plan,
                             const std::vector<uint64_t> &wanted,
                             const std::vector<uint64_t> &least, bool inArena);

/// Whether the CPU backend places scratch inside the arena: yes, unless
/// the environment variable REMAT_CPU_SCRATCH is `beside` (every step's
/// scratch in the workspace beside the arena, as before this existed).
/// Another value warns once on stderr and counts as `arena`.
bool cpuScratchInArena();

/// Calls `visit` with each step of `plan` that runs an op: its index, op,
/// attributes and its operands' and results' types.
void forEachOpStep(
    const Plan &plan,
    const std::function<void(size_t, ops::OpKind, const ops::OpAttrs &,
                             const std::vector<ops::TensorType> &,
                             const std::vector<ops::TensorType> &)> &visit);

/// The CPU backend's scratch for `plan`: per step what its kernel wants
/// (with oneDNN's needs) and runs with at the least, placed by
/// placeStepScratch with cpuScratchInArena().
StepScratch cpuStepScratch(const Plan &plan);

/// The workspace the CPU backend allocates beside the arena for `scratch`:
/// the side steps' wants as far as the plan's budget (0: none) leaves room
/// beside the arena, never under their least (ops::
/// cpuBudgetedWorkspaceBytes).
uint64_t cpuSideWorkspaceBytes(const StepScratch &scratch, const Plan &plan,
                               uint64_t budgetBytes);

} // namespace remat::runtime

#endif // REMAT_RUNTIME_BACKENDS_CPU_STEPSCRATCH_H
