//===- Loader.h - Read a plan and validate everything before it runs -----===//
//
// `loadPlan` = parse (PlanFormat.h) + `validatePlan`. Validation checks, in
// this order, and stops at the first error with a message that names the
// file and the JSON place (`m.plan: /steps/12 'attention': input 1 has shape
// [64,32] but expects K=64`):
//
//   1. header: alignment a power of two, arena_bytes > 0, batch and
//      tokens_per_sample >= 1;
//   2. buffers: unique non-empty names, positive dims, bytes ==
//      product(shape) * dtype size (64-bit overflow detected), offset
//      aligned, offset + bytes inside the arena; init only (and always) on
//      param/optimizer buffers; data only on inputs, with valid generator
//      parameters; persistent buffers (param, optimizer) and inputs overlap
//      no other buffer;
//   3. steps: known op, buffer indices in range, operand and result counts,
//      attributes present and typed, dtypes and shapes (Ops.h); a result
//      shares bytes with an operand only when it is the very same range of
//      an in-place-safe op; param/optimizer buffers are written only by the
//      optimizer ops, which must update in place;
//   4. the loss is a scalar float buffer written by some step.
//
// A plan that passes cannot make a kernel write outside the arena.
//
//===----------------------------------------------------------------------===//
#ifndef REMAT_RUNTIME_LOADER_H
#define REMAT_RUNTIME_LOADER_H

#include "runtime/plan/Ops.h"
#include "runtime/plan/PlanFormat.h"

#include <optional>
#include <string>
#include <vector>

namespace remat::runtime {

/// A step with its op resolved and attributes typed.
struct ResolvedStep {
  OpKind op;
  OpAttrs attrs;
};

/// A plan that passed validation.
struct LoadedPlan {
  Plan plan;
  std::string source;              ///< file name used in messages
  std::vector<ResolvedStep> steps; ///< parallel to plan.steps
  /// For each buffer, the index of the last step that writes it, or -1.
  std::vector<int64_t> lastWriter;

  /// "<source>: /steps/<i> '<op>'".
  std::string stepPlace(size_t stepIndex) const;
  /// "<source>: /buffers/<i> '<name>'".
  std::string bufferPlace(size_t bufferIndex) const;
  /// The plan's budget for the whole step (report.budget_bytes), if it was
  /// compiled with one.
  std::optional<uint64_t> budgetBytes() const;
};

/// Validates `plan` (see the file comment); throws PlanError.
LoadedPlan validatePlan(Plan plan, const std::string &source);

/// readPlanFile + validatePlan.
LoadedPlan loadPlan(const std::string &path);

/// parsePlanText + validatePlan (tests, in-memory plans).
LoadedPlan loadPlanText(const std::string &text, const std::string &source);

} // namespace remat::runtime

#endif // REMAT_RUNTIME_LOADER_H
