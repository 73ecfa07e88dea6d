//===- SharedMoments.h - Batch-norm statistics shared between steps -------===//
//
// The ops of the kernel families BatchNorm, BatchNormGrad and
// RunningStatUpdate (batch normalization, its gradient and the running
// mean and variance) all start from the per-channel mean and Σ(x - mean)²
// of their operand x, computed by the same function (the families' kernel
// file in kernels/), so the same bits from the same bytes. Where several
// such steps read one buffer and no step writes any of its bytes between
// them (a batch normalization and its two running updates; in a plan that
// keeps x, also its gradient), they form a group: the first step computes
// the moments and keeps them in a slot of 2·C doubles, the later ones read
// them instead of passing over x again. A slot is reused by a later group
// once its own group is done.
//
// The grouping is static (the plan's steps in order); CpuBackend lets a
// step read a slot only when the step that filled it ran earlier in the
// same unbroken run of consecutive steps, so a step run alone or twice
// (--check-bounds runs each step twice) computes its own moments.
//
//===----------------------------------------------------------------------===//
#ifndef REMAT_RUNTIME_BACKENDS_CPU_SHAREDMOMENTS_H
#define REMAT_RUNTIME_BACKENDS_CPU_SHAREDMOMENTS_H

#include "runtime/plan/Loader.h"

#include <cstdint>
#include <vector>

namespace remat::runtime::cpu {

struct SharedMoments {
  /// Per step: the slot of its group, or -1 (the step computes its own).
  std::vector<int> slot;
  /// Per step: true for the first step of a group (it fills the slot).
  std::vector<char> fills;
  /// Per slot: the most channels of the groups placed in it.
  std::vector<int64_t> slotChannels;
  /// Groups of two or more steps found (each has a slot while it runs).
  int groups = 0;
};

/// Groups the steps of `plan` that can share moments (see the file
/// comment). Only activation and temporary buffers are shared: inputs,
/// parameters and gradients are also written outside the steps (the next
/// batch, ranks).
SharedMoments planSharedMoments(const LoadedPlan &plan);

} // namespace remat::runtime::cpu

#endif // REMAT_RUNTIME_BACKENDS_CPU_SHAREDMOMENTS_H
