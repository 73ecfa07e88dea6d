//===- ExplainAnalysis.h - What a plan keeps, recomputes and holds live ---===//
//
// The analysis behind `remat explain`, from the plan file alone: when each
// buffer is live and how many bytes are live per step, the forward results
// kept into the backward pass, and the recomputed tensors with the forward
// step each repeats. MLIR-free; the renderings and the CLI build on it.
//
//===----------------------------------------------------------------------===//
#ifndef REMAT_TOOLS_REMAT_EXPLAINANALYSIS_H
#define REMAT_TOOLS_REMAT_EXPLAINANALYSIS_H

#include "runtime/plan/PlanFormat.h"
#include "runtime/backends/cpu/StepScratch.h"

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace remat::tools {

using runtime::kNumBufferRoles;

/// When a buffer holds a value (runtime/plan/Lifetimes.h).
using runtime::BufferLifetime;

/// A forward result that stays live into the backward pass.
struct SavedActivation {
  int64_t buffer = -1;
  int64_t producerStep = -1;     ///< the forward step that writes it
  int64_t firstLaterReader = -1; ///< first reader at or after backwardStart
  int64_t lastReader = -1;
  int64_t recomputedAs = -1;    ///< a recomputed copy of it, if any (buffer)
  bool readByRecompute = false; ///< an input of some recompute step
  std::string reason;
};

/// The result of a step marked `recompute`.
struct RecomputedTensor {
  int64_t buffer = -1;
  int64_t producerStep = -1; ///< the recompute step
  int64_t original = -1;     ///< the forward buffer it recomputes, or -1
  int64_t originalStep = -1; ///< the forward step that first computed it
  int64_t droppedAfter = -1; ///< last read of the original before producerStep
  int64_t consumerStep = -1; ///< first non-recompute step that needs it
  std::string reason;
};

/// Everything `remat explain` prints, derived from the plan alone.
struct PlanExplanation {
  /// First step whose phase is backward (steps.size() if none).
  int64_t backwardStart = 0;
  std::vector<BufferLifetime> lifetimes; ///< parallel to plan.buffers
  /// Live bytes per step: the size of the union of the byte ranges of the
  /// buffers live at that step, each range rounded up to the plan's
  /// alignment as the arena planner counts it (an in-place result and its
  /// operand share one range and count once), plus the step's scratch.
  std::vector<uint64_t> liveBytes;
  /// The same, split by role (index = static_cast<int>(BufferRole)); each
  /// byte counts for the first live buffer (lowest offset, then index)
  /// that covers it, so the roles sum to liveBytes.
  std::array<std::vector<uint64_t>, kNumBufferRoles> liveBytesByRole;
  /// Per step: the CPU kernel scratch the runtime places in the arena while
  /// it runs (runtime/backends/cpu/StepScratch.h; 0 for a plan whose report names
  /// another backend), rounded up to the alignment. liveBytes includes it:
  /// the roles and the scratch sum to liveBytes.
  std::vector<uint64_t> scratchBytes;
  uint64_t peakLiveBytes = 0;
  int64_t peakStep = -1;                    ///< first step with peakLiveBytes
  std::vector<SavedActivation> saved;       ///< largest first
  std::vector<RecomputedTensor> recomputed; ///< largest first
  int64_t recomputeSteps = 0;
  uint64_t savedBytes = 0, recomputedBytes = 0;
};

/// The index of `role` in PlanExplanation::liveBytesByRole.
inline int roleIndex(runtime::BufferRole role) {
  return static_cast<int>(role);
}

/// Derives liveness, saved and recomputed tensors (see the struct comments).
/// Expects a plan that passed validatePlan; O(steps x live buffers log).
PlanExplanation explainPlan(const runtime::Plan &plan);

/// "step 12 'matmul'".
std::string stepLabel(const runtime::Plan &plan, int64_t step);

/// "backward step 57 'attention_grad'", "recompute step 74 'dropout'".
std::string kindStepLabel(const runtime::Plan &plan, int64_t step);

} // namespace remat::tools

#endif // REMAT_TOOLS_REMAT_EXPLAINANALYSIS_H
