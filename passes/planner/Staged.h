//===- Staged.h - Stage-by-stage schedule builder (internal) ----*- C++ -*-===//
//
// Shared by the baselines and the heuristic: runs stages t = 0..n-1, each
// recomputing the missing values node t needs (in index order) and then
// node t, so every schedule it builds is stage-structured (Checkmate mode).
//
//===----------------------------------------------------------------------===//
#ifndef REMAT_PASSES_PLANNER_STAGED_H
#define REMAT_PASSES_PLANNER_STAGED_H

#include "passes/planner/EventList.h"

#include <vector>

namespace remat {
namespace planner {
namespace detail {

class StagedBuilder {
public:
  StagedBuilder(const Problem &problem, const UseInfo &uses);

  /// The nodes stage t must compute: t (unless live) and, recursively,
  /// every non-live operand; ascending. Empty `error` on success; a
  /// non-recomputable value that is gone is an error.
  std::vector<int> closure(int t, std::string &error);

  /// For the nodes of `stageNodes` (ascending), lastReadPos[v] = the last
  /// position in stageNodes that reads v, -1 when none. Reset per stage.
  void computeLastReads(const std::vector<int> &stageNodes);

  void compute(int node);
  void free(int node);

  const Problem &problem;
  const UseInfo &uses;
  EventList schedule;
  std::vector<char> live;
  std::vector<char> everComputed;
  /// Live nodes, unordered (for eviction scans); position in liveIndex.
  std::vector<int> liveList;
  std::vector<int> liveIndex;
  std::vector<int> lastReadPos;
  int64_t memory = 0;
  int64_t peak = 0;

private:
  std::vector<int> stamp;
  int stampValue = 0;
  std::vector<int> touched;
};

} // namespace detail
} // namespace planner
} // namespace remat

#endif // REMAT_PASSES_PLANNER_STAGED_H
