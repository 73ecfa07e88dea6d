//===- Baselines.cpp - Store-all, per-block, sqrt(n), brute force ---------===//
#include "passes/planner/Solvers.h"
#include "passes/planner/Staged.h"

#include <algorithm>
#include <cmath>

namespace remat {
namespace planner {

using detail::StagedBuilder;

SolverOutput solveStoreAll(const Problem &problem) {
  std::vector<char> all(problem.size(), 1);
  SolverOutput out = solveWithCheckpoints(problem, all);
  out.status = out.found ? "feasible" : "failed";
  return out;
}

SolverOutput solveWithCheckpoints(const Problem &problem,
                                  const std::vector<char> &checkpoints) {
  UseInfo uses(problem);
  int n = problem.size();
  std::vector<char> forward = forwardMask(problem);
  // Forward values after the last forward checkpoint are kept: the
  // backward pass starts with them.
  int lastCheckpoint = -1;
  for (int k = 0; k < n; ++k)
    if (forward[k] && checkpoints[k])
      lastCheckpoint = k;
  auto hasForwardUseAfter = [&](int v, int t) {
    for (int user : uses.consumers[v])
      if (user > t && forward[user])
        return true;
    return false;
  };
  StagedBuilder builder(problem, uses);
  SolverOutput out;
  for (int t = 0; t < n; ++t) {
    std::string error;
    std::vector<int> stageNodes = builder.closure(t, error);
    if (!error.empty()) {
      out.message = error;
      return out;
    }
    builder.computeLastReads(stageNodes);
    for (int pos = 0; pos < static_cast<int>(stageNodes.size()); ++pos) {
      int k = stageNodes[pos];
      builder.compute(k);
      auto settle = [&](int v) {
        if (!builder.live[v] || builder.lastReadPos[v] > pos)
          return;
        bool keep = uses.neededAfter(v, t);
        if (keep && forward[t] && forward[v] && !checkpoints[v] &&
            v < lastCheckpoint && problem.nodes[v].recomputable &&
            !uses.required[v] && !hasForwardUseAfter(v, t))
          keep = false;
        if (!keep)
          builder.free(v);
      };
      for (int op : problem.nodes[k].operands)
        settle(op);
      settle(k);
    }
  }
  out.found = true;
  out.status = "feasible";
  out.schedule = std::move(builder.schedule);
  return out;
}

SolverOutput solvePerBlock(const Problem &problem) {
  int n = problem.size();
  std::vector<char> forward = forwardMask(problem);
  std::vector<char> checkpoints(n, 0);
  bool haveBlocks = std::any_of(problem.nodes.begin(), problem.nodes.end(),
                                [](const Node &node) { return node.block >= 0; });
  if (haveBlocks) {
    // A block output is a forward value read by a forward node of another
    // block; non-recomputable values are kept anyway.
    for (int k = 0; k < n; ++k) {
      if (!forward[k])
        continue;
      for (int op : problem.nodes[k].operands)
        if (forward[op] && problem.nodes[op].block != problem.nodes[k].block)
          checkpoints[op] = 1;
    }
    for (int k = 0; k < n; ++k)
      if (forward[k] && problem.nodes[k].block < 0)
        checkpoints[k] = 1;
  } else {
    for (int k : articulationPoints(problem, forward))
      checkpoints[k] = 1;
  }
  SolverOutput out = solveWithCheckpoints(problem, checkpoints);
  return out;
}

SolverOutput solveSqrtN(const Problem &problem) {
  std::vector<char> forward = forwardMask(problem);
  std::vector<int> points = articulationPoints(problem, forward);
  std::vector<char> checkpoints(problem.size(), 0);
  int count = static_cast<int>(points.size());
  int stride = std::max(1, static_cast<int>(std::ceil(std::sqrt(count))));
  for (int j = stride - 1; j < count; j += stride)
    checkpoints[points[j]] = 1;
  return solveWithCheckpoints(problem, checkpoints);
}

EventList scheduleFromRecomputeMatrix(const Problem &problem,
                                      const std::vector<std::vector<char>> &r) {
  int n = problem.size();
  UseInfo uses(problem);
  // stageOf[t]: the nodes computed in stage t, ascending.
  std::vector<std::vector<int>> stageNodes(n);
  std::vector<std::vector<char>> inStage(n, std::vector<char>(n, 0));
  std::vector<std::vector<char>> readIn(n, std::vector<char>(n, 0));
  for (int t = 0; t < n; ++t) {
    for (int i = 0; i < t; ++i)
      if (r[t][i])
        stageNodes[t].push_back(i);
    stageNodes[t].push_back(t);
    for (int k : stageNodes[t]) {
      inStage[t][k] = 1;
      for (int op : problem.nodes[k].operands)
        readIn[t][op] = 1;
    }
  }
  // keepAfter(v, t): the next stage that touches v reads it without
  // recomputing it first (readers follow v in index order, so a recompute
  // in a stage always precedes that stage's reads).
  auto keepAfter = [&](int v, int t) {
    for (int s = t + 1; s < n; ++s) {
      if (inStage[s][v])
        return false;
      if (readIn[s][v])
        return true;
    }
    return uses.required[v] != 0;
  };
  EventList schedule;
  std::vector<char> live(n, 0);
  std::vector<int> lastReadPos(n, -1);
  for (int t = 0; t < n; ++t) {
    const std::vector<int> &nodes = stageNodes[t];
    std::fill(lastReadPos.begin(), lastReadPos.end(), -1);
    for (int pos = 0; pos < static_cast<int>(nodes.size()); ++pos)
      for (int op : problem.nodes[nodes[pos]].operands)
        lastReadPos[op] = pos;
    for (int pos = 0; pos < static_cast<int>(nodes.size()); ++pos) {
      int k = nodes[pos];
      if (live[k]) // Kept and recomputed: keepAfter never allows this.
        continue;
      schedule.compute(k);
      live[k] = 1;
      auto settle = [&](int v) {
        if (live[v] && lastReadPos[v] <= pos && !keepAfter(v, t)) {
          schedule.free(v);
          live[v] = 0;
        }
      };
      for (int op : problem.nodes[k].operands)
        settle(op);
      settle(k);
    }
  }
  return schedule;
}

double bruteForceOptimalCost(const Problem &problem, int64_t budgetBytes,
                             EventList *best) {
  int n = problem.size();
  std::vector<std::pair<int, int>> pairs; // (stage, node)
  for (int t = 0; t < n; ++t)
    for (int i = 0; i < t; ++i)
      if (problem.nodes[i].recomputable)
        pairs.emplace_back(t, i);
  if (pairs.size() > 24)
    return -2; // Too large to enumerate.
  double bestCost = -1;
  std::vector<std::vector<char>> r(n, std::vector<char>(n, 0));
  for (uint32_t mask = 0; mask < (1u << pairs.size()); ++mask) {
    for (size_t b = 0; b < pairs.size(); ++b)
      r[pairs[b].first][pairs[b].second] = (mask >> b) & 1;
    EventList schedule = scheduleFromRecomputeMatrix(problem, r);
    CheckResult check =
        checkSchedule(problem, schedule, CountingMode::Checkmate);
    if (!check.ok || check.peakBytes > budgetBytes)
      continue;
    if (bestCost < 0 || check.totalCost < bestCost) {
      bestCost = check.totalCost;
      if (best)
        *best = schedule;
    }
  }
  return bestCost;
}

} // namespace planner
} // namespace remat
