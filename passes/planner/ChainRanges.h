//===- ChainRanges.h - Shared rows of the chain DP (internal) ---*- C++ -*-===//
//
// Groups the stage ranges [s, t] of a chain whose stages are pairwise
// identical, so that the chain DP computes one table row per group; the
// memory search also reads the row count and work to size the DP.
//
//===----------------------------------------------------------------------===//
#ifndef REMAT_PASSES_PLANNER_CHAINRANGES_H
#define REMAT_PASSES_PLANNER_CHAINRANGES_H

#include "passes/planner/ChainDp.h"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace remat {
namespace planner {
namespace detail {

/// The DP's table rows. Ranges of stages [s, t] and [s', t'] whose stages
/// are pairwise identical (same costs, sizes and keep options) have equal
/// C and E rows, so each row is computed once, at the first range of its
/// kind: for L stages made of a few block kinds that is O(L) rows per
/// range length instead of O(L^2) in all. Kinds: O(L log L); rows: O(L^2)
/// times the stages per kind.
struct RangeIndex {
  int L = 0;
  /// row[(s - 1) * L + (t - 1)]: the table row of [s, t].
  std::vector<int32_t> row;
  /// first[...]: [s, t] is the first range of its row (computed there).
  std::vector<char> first;
  int rows = 0;
  /// Sum over rows of (t - s + 1) + the options of s: the DP's work per
  /// memory slot and table.
  double work = 0;

  size_t pair(int s, int t) const { return size_t(s - 1) * L + (t - 1); }
};

/// The table rows of `chain`'s stage ranges.
RangeIndex indexRanges(const Chain &chain);

} // namespace detail
} // namespace planner
} // namespace remat

#endif // REMAT_PASSES_PLANNER_CHAINRANGES_H
