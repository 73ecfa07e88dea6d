//===- ChainSchedule.cpp - Node-level schedules of chain strategies -------===//
#include "passes/planner/ChainDp.h"

#include <vector>

namespace remat {
namespace planner {

EventList chainStrategySchedule(const Problem &problem,
                                const ChainMapping &mapping,
                                const std::vector<ChainOp> &ops) {
  std::vector<int> computes = mapping.prefixNodes;
  for (const ChainOp &op : ops) {
    if (op.kind == ChainOp::Backward && op.option > 0) {
      const std::vector<int> &recomputes =
          mapping.recomputeNodes[op.stage][op.option];
      computes.insert(computes.end(), recomputes.begin(), recomputes.end());
    }
    const std::vector<int> &nodes = op.kind == ChainOp::Forward
                                        ? mapping.segmentNodes[op.stage]
                                        : mapping.backwardNodes[op.stage];
    computes.insert(computes.end(), nodes.begin(), nodes.end());
  }
  return scheduleFromComputeSequence(problem, computes);
}

EventList scheduleFromComputeSequence(const Problem &problem,
                                      const std::vector<int> &computes) {
  int n = problem.size();
  int count = static_cast<int>(computes.size());
  UseInfo uses(problem);
  // lastServed[p]: last position whose read is served by the compute at p
  // (count = the end, for required outputs); -1 when never read.
  std::vector<int> lastServed(count, -1);
  std::vector<int> latest(n, -1);
  for (int p = 0; p < count; ++p) {
    int k = computes[p];
    for (int op : problem.nodes[k].operands)
      if (latest[op] >= 0)
        lastServed[latest[op]] = p;
    latest[k] = p;
  }
  for (int v = 0; v < n; ++v)
    if (uses.required[v] && latest[v] >= 0)
      lastServed[latest[v]] = count;
  std::vector<std::vector<int>> freesAt(count);
  for (int p = 0; p < count; ++p) {
    if (lastServed[p] < 0)
      freesAt[p].push_back(computes[p]);
    else if (lastServed[p] < count)
      freesAt[lastServed[p]].push_back(computes[p]);
  }
  EventList schedule;
  for (int p = 0; p < count; ++p) {
    schedule.compute(computes[p]);
    for (int v : freesAt[p])
      schedule.free(v);
  }
  return schedule;
}

} // namespace planner
} // namespace remat
