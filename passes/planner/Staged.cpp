//===- Staged.cpp - Stage-by-stage schedule builder -----------------------===//
#include "passes/planner/Staged.h"

#include <algorithm>
#include <sstream>

namespace remat {
namespace planner {
namespace detail {

StagedBuilder::StagedBuilder(const Problem &problem, const UseInfo &uses)
    : problem(problem), uses(uses), live(problem.size(), 0),
      everComputed(problem.size(), 0), liveIndex(problem.size(), -1),
      lastReadPos(problem.size(), -1), stamp(problem.size(), 0) {
  memory = peak = problem.persistentBytes;
}

std::vector<int> StagedBuilder::closure(int t, std::string &error) {
  std::vector<int> result;
  if (live[t])
    return result;
  ++stampValue;
  std::vector<int> stack{t};
  stamp[t] = stampValue;
  while (!stack.empty()) {
    int node = stack.back();
    stack.pop_back();
    if (everComputed[node] && !problem.nodes[node].recomputable) {
      std::ostringstream os;
      os << "node " << node << " ('" << problem.nodes[node].name
         << "') cannot be recomputed but was freed";
      error = os.str();
      return {};
    }
    result.push_back(node);
    for (int op : problem.nodes[node].operands) {
      if (!live[op] && stamp[op] != stampValue) {
        stamp[op] = stampValue;
        stack.push_back(op);
      }
    }
  }
  std::sort(result.begin(), result.end());
  return result;
}

void StagedBuilder::computeLastReads(const std::vector<int> &stageNodes) {
  for (int v : touched)
    lastReadPos[v] = -1;
  touched.clear();
  for (int pos = 0; pos < static_cast<int>(stageNodes.size()); ++pos) {
    for (int op : problem.nodes[stageNodes[pos]].operands) {
      if (lastReadPos[op] < 0)
        touched.push_back(op);
      lastReadPos[op] = pos;
    }
  }
}

void StagedBuilder::compute(int node) {
  schedule.compute(node);
  live[node] = 1;
  everComputed[node] = 1;
  liveIndex[node] = static_cast<int>(liveList.size());
  liveList.push_back(node);
  memory += problem.nodes[node].bytes;
  peak = std::max(peak, memory);
}

void StagedBuilder::free(int node) {
  schedule.free(node);
  live[node] = 0;
  int index = liveIndex[node];
  int last = liveList.back();
  liveList[index] = last;
  liveIndex[last] = index;
  liveList.pop_back();
  liveIndex[node] = -1;
  memory -= problem.nodes[node].bytes;
}

} // namespace detail
} // namespace planner
} // namespace remat
