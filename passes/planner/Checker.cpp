//===- Checker.cpp - Independent schedule replay --------------------------===//
#include "passes/planner/Checker.h"

#include <sstream>

namespace remat {
namespace planner {

CheckResult checkSchedule(const Problem &problem, const EventList &schedule,
                          CountingMode mode) {
  CheckResult result;
  int n = problem.size();
  std::vector<char> live(n, 0);
  std::vector<int> computeCount(n, 0);
  int64_t memory = problem.persistentBytes;
  result.peakBytes = memory;
  // Checkmate stage tracking: `stage` is the next node to compute for the
  // first time; `previous` the last node computed in the current stage.
  int stage = 0;
  int previous = -1;
  auto fail = [&](size_t index, const std::string &message) {
    std::ostringstream os;
    os << "event " << index << ": " << message;
    result.ok = false;
    result.error = os.str();
    return result;
  };
  auto name = [&](int node) {
    std::ostringstream os;
    os << "node " << node << " ('" << problem.nodes[node].name << "')";
    return os.str();
  };
  for (size_t index = 0; index < schedule.events.size(); ++index) {
    const Event &event = schedule.events[index];
    int k = event.node;
    if (k < 0 || k >= n) {
      std::ostringstream os;
      os << "node " << k << " is out of range";
      return fail(index, os.str());
    }
    if (event.kind == EventKind::Free) {
      if (!live[k])
        return fail(index, "free of " + name(k) + ", which is not live");
      live[k] = 0;
      memory -= problem.nodes[k].bytes;
      continue;
    }
    if (live[k])
      return fail(index, "compute of " + name(k) + ", which is already live");
    for (int op : problem.nodes[k].operands) {
      if (!live[op])
        return fail(index, "compute of " + name(k) + " reads " + name(op) +
                               ", which is not live");
    }
    if (computeCount[k] > 0 && !problem.nodes[k].recomputable)
      return fail(index, "recompute of " + name(k) +
                             ", which is not recomputable");
    if (mode == CountingMode::Checkmate) {
      if (k > stage)
        return fail(index, "stage order: " + name(k) +
                               " is computed before all earlier nodes");
      if (k <= previous)
        return fail(index, "stage order: recomputes within a stage must be "
                           "in increasing index order at " +
                               name(k));
      previous = k;
      if (k == stage) {
        ++stage;
        previous = -1;
      }
    }
    live[k] = 1;
    memory += problem.nodes[k].bytes;
    if (memory > result.peakBytes) {
      result.peakBytes = memory;
      result.peakEvent = static_cast<int>(index);
    }
    result.totalCost += problem.nodes[k].cost;
    if (computeCount[k] > 0)
      result.recomputeCost += problem.nodes[k].cost;
    ++computeCount[k];
  }
  size_t end = schedule.events.size();
  for (int k = 0; k < n; ++k)
    if (computeCount[k] == 0)
      return fail(end, name(k) + " is never computed");
  for (int r : problem.requiredOutputs)
    if (!live[r])
      return fail(end, "required output " + name(r) + " is not live at the end");
  result.ok = true;
  return result;
}

} // namespace planner
} // namespace remat
