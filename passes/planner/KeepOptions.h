//===- KeepOptions.h - Keep options of a chain stage (internal) -*- C++ -*-===//
//
// The keep options of one stage of a chain (greedy selective
// recomputation, Korthikanti et al. 2022), computed on the stage in
// stage-relative form so that structurally identical stages share one
// generation (chainFromProblem).
//
//===----------------------------------------------------------------------===//
#ifndef REMAT_PASSES_PLANNER_KEEPOPTIONS_H
#define REMAT_PASSES_PLANNER_KEEPOPTIONS_H

#include "passes/planner/ChainDp.h"

#include <cstdint>
#include <vector>

namespace remat {
namespace planner {
namespace detail {

/// A stage in stage-relative form: all that its keep options depend on.
/// Positions: the segment 0..n-1 (n-1 is a_i), then B_i's nodes, then
/// B_i's gradient inputs (outputs of later stages that B_i reads).
struct StageShape {
  std::vector<double> cost;
  std::vector<int64_t> bytes;
  /// Operands among the positions; the others (a_{i-1}, the prefix, the
  /// loss) are held by the caller or outside the DP's memory.
  std::vector<std::vector<int>> operands;
  /// Segment positions: read by B_i (or a_i itself), kept by keep-all.
  std::vector<char> readByBackward;
  /// Segment positions: may be dropped (read by B_i, not a_i, not a
  /// required output).
  std::vector<char> droppable;
  /// Backward and input positions: the value outlives B_i (read by
  /// earlier stages, or required).
  std::vector<char> outlives;
  int segmentSize = 0;
  int backwardSize = 0;
};

/// One keep option of a stage, with what B_i recomputes first (positions).
struct ShapeOption {
  KeepOption option;
  std::vector<int> recompute;
};

/// The keep options of a stage: keep-all first.
using StageOptions = std::vector<ShapeOption>;

/// How far the live bytes rise above those of `initial` while `sequence`
/// (positions, in order) runs from the live set `initial`: each value is
/// freed after its last read in the sequence unless `stays` holds for it.
/// While a node runs, its operands and its output are live.
int64_t sequencePeak(const StageShape &shape, const std::vector<int> &sequence,
                     const std::vector<char> &stays,
                     const std::vector<char> &initial);

/// The keep options of one stage, keep-all first, at most `maxOptions`
/// (keep-all included):
///  1. Candidates: the segment values B_i reads, except a_i and required
///     outputs.
///  2. Greedy: drop, one at a time, the candidate whose drop adds the least
///     recompute cost per byte saved (cheap elementwise and normalization
///     outputs go first, matmul outputs last), given the ones dropped so
///     far; the recomputation of a drop set is the closure of the dropped
///     values over segment values that are not kept, in index order. Each
///     step is an option; the last keeps only a_i. O(c^2 n) for c
///     candidates and n nodes in the stage (c <= 32; beyond that the order
///     is fixed by the first round's ratios, O(c n)).
///  3. Options dominated in (kept bytes, recompute cost, forward peak, kept
///     + backward peak) are removed; of the rest, keep-all, the one that
///     keeps only a_i and those nearest to evenly spaced kept-bytes targets
///     are retained.
StageOptions generateOptions(const StageShape &shape, int maxOptions);

} // namespace detail
} // namespace planner
} // namespace remat

#endif // REMAT_PASSES_PLANNER_KEEPOPTIONS_H
