//===- ChainDp.cpp - Optimal checkpointing of heterogeneous chains --------===//
#include "passes/planner/ChainDp.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>

namespace remat {
namespace planner {

Chain Chain::uniform(int length, double forwardCost, double backwardCost,
                     int64_t activationBytes, int64_t gradientBytes) {
  Chain chain;
  int size = length + 1;
  chain.forwardCost.assign(size, forwardCost);
  chain.backwardCost.assign(size, backwardCost);
  chain.activationBytes.assign(size, activationBytes);
  chain.keptBytes.assign(size, activationBytes);
  chain.gradientBytes.assign(size, gradientBytes);
  chain.forwardPeak.assign(size, activationBytes);
  chain.backwardPeak.assign(size, gradientBytes);
  chain.forwardCost[0] = chain.backwardCost[0] = 0;
  chain.gradientBytes[length] = 0;
  return chain;
}

Problem Chain::toProblem() const {
  int L = length();
  Problem problem;
  problem.addNode("input", 0.0, activationBytes[0], {}, /*recomputable=*/false);
  for (int i = 1; i <= L; ++i)
    problem.addNode("F" + std::to_string(i), forwardCost[i], activationBytes[i],
                    {i - 1});
  // B_i is node 2L + 1 - i; it reads F_i (node i), F_{i-1} and B_{i+1}.
  for (int i = L; i >= 1; --i) {
    std::vector<int> operands{i, i - 1};
    if (i < L)
      operands.push_back(2 * L - i);
    problem.addNode("B" + std::to_string(i), backwardCost[i],
                    gradientBytes[i - 1], operands, true, -1,
                    /*backward=*/true);
  }
  problem.normalize();
  return problem;
}

ChainDpResult solveChainDp(const Chain &chain, int64_t memoryBytes,
                           int slots) {
  ChainDpResult result;
  int L = chain.length();
  if (L <= 0 || memoryBytes < 0)
    return result;
  // Two tables of L^2 (slots + 1) entries: stay near 3e6 entries.
  slots = std::max(10, std::min(slots, static_cast<int>(3e6 / (double(L) * L))));
  // Unit: the largest of 1 byte and memory / slots; sizes round up, the
  // memory rounds down, so the discrete model is conservative.
  int64_t unit = std::max<int64_t>(1, (memoryBytes + slots - 1) / slots);
  auto units = [&](int64_t bytes) {
    return static_cast<int>((bytes + unit - 1) / unit);
  };
  int S = static_cast<int>(memoryBytes / unit);
  std::vector<int> a(L + 1), abar(L + 1), g(L + 1), fpk(L + 1), bpk(L + 1);
  for (int i = 0; i <= L; ++i) {
    a[i] = units(chain.activationBytes[i]);
    abar[i] = units(std::max(chain.keptBytes[i], chain.activationBytes[i]));
    g[i] = units(chain.gradientBytes[i]);
    fpk[i] = units(chain.forwardPeak[i]);
    bpk[i] = units(chain.backwardPeak[i]);
  }
  const double inf = std::numeric_limits<double>::infinity();
  // Two tables over (s, t, m), 1 <= s <= t <= L:
  //   C: a_{s-1} outside, delta_t inside m.
  //   E: the same plus abar_t already resident (inside m): F_t is done.
  // Choice codes: -1 infeasible, 0 keep (or base), 2j + e for "checkpoint
  // a_{j-1}" followed by C (e = 0) or by E (e = 1: a_{j-1} is all B_{j-1}
  // needs, so it is kept as abar_{j-1} instead of being recomputed).
  size_t tableSize = size_t(L) * L * (S + 1);
  std::vector<double> costC(tableSize, inf), costE(tableSize, inf);
  std::vector<int32_t> choiceC(tableSize, -1), choiceE(tableSize, -1);
  auto at = [&](int s, int t, int m) -> size_t {
    return (size_t(s - 1) * L + (t - 1)) * (S + 1) + m;
  };
  for (int len = 0; len < L; ++len) {
    for (int s = 1; s + len <= L; ++s) {
      int t = s + len;
      for (int withE = 0; withE < 2; ++withE) {
        std::vector<double> &table = withE ? costE : costC;
        std::vector<int32_t> &choices = withE ? choiceE : choiceC;
        // Bytes resident besides the work of this call: delta_t (and
        // abar_t for E).
        int held = g[t] + (withE ? abar[t] : 0);
        for (int m = 0; m <= S; ++m) {
          double best = inf;
          int bestChoice = -1;
          bool backwardOk = abar[s] + g[s] + bpk[s] <= m;
          if (withE && s == t) {
            if (backwardOk) {
              best = chain.backwardCost[s];
              bestChoice = 0;
            }
          } else if (held + std::max(fpk[s], abar[s]) <= m && backwardOk) {
            // Keep option: F_s leaves abar_s for B_s.
            double c = chain.forwardCost[s] + chain.backwardCost[s];
            if (s < t) {
              int rest = m - abar[s];
              c = rest >= 0 ? c + table[at(s + 1, t, rest)] : inf;
            }
            if (c < best) {
              best = c;
              bestChoice = 0;
            }
          }
          // Checkpoint options: run F_s..F_{j-1} without keeping, keep
          // a_{j-1}.
          double runCost = 0;
          for (int j = s + 1; j <= t; ++j) {
            int k = j - 1;
            int during = held + (k > s ? a[k - 1] : 0) + std::max(fpk[k], a[k]);
            if (during > m)
              break;
            runCost += chain.forwardCost[k];
            int rest = m - a[j - 1];
            if (rest < 0)
              break;
            double upper = runCost + table[at(j, t, rest)];
            if (upper >= best)
              continue;
            double lowerC = costC[at(s, j - 1, m)];
            double lowerE =
                abar[j - 1] <= a[j - 1] ? costE[at(s, j - 1, m)] : inf;
            int e = lowerE < lowerC ? 1 : 0;
            double c = upper + std::min(lowerC, lowerE);
            if (c < best) {
              best = c;
              bestChoice = 2 * j + e;
            }
          }
          table[at(s, t, m)] = best;
          choices[at(s, t, m)] = bestChoice;
        }
      }
    }
  }
  if (costC[at(1, L, S)] == inf)
    return result;
  result.feasible = true;
  result.cost = costC[at(1, L, S)];
  struct Rebuilder {
    const std::vector<int32_t> &choiceC;
    const std::vector<int32_t> &choiceE;
    const std::vector<int> &a;
    const std::vector<int> &abar;
    std::vector<ChainOp> &ops;
    int L, S;
    size_t at(int s, int t, int m) const {
      return (size_t(s - 1) * L + (t - 1)) * (S + 1) + m;
    }
    void run(int s, int t, int m, bool withE) {
      int c = (withE ? choiceE : choiceC)[at(s, t, m)];
      if (c == 0) {
        if (withE && s == t) {
          ops.push_back({ChainOp::Backward, s});
          return;
        }
        ops.push_back({ChainOp::Forward, s});
        if (s < t)
          run(s + 1, t, m - abar[s], withE);
        ops.push_back({ChainOp::Backward, s});
        return;
      }
      int j = c / 2;
      for (int k = s; k < j; ++k)
        ops.push_back({ChainOp::Forward, k});
      run(j, t, m - a[j - 1], withE);
      run(s, j - 1, m, c % 2 == 1);
    }
  } rebuilder{choiceC, choiceE, a, abar, result.ops, L, S};
  rebuilder.run(1, L, S, false);
  return result;
}

Schedule scheduleFromComputeSequence(const Problem &problem,
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
  Schedule schedule;
  for (int p = 0; p < count; ++p) {
    schedule.compute(computes[p]);
    for (int v : freesAt[p])
      schedule.free(v);
  }
  return schedule;
}

bool chainFromProblem(const Problem &problem, ChainMapping &mapping,
                      std::string &reason) {
  int n = problem.size();
  std::vector<char> forward = forwardMask(problem);
  if (std::all_of(forward.begin(), forward.end(), [](char c) { return c; })) {
    reason = "no node is marked backward";
    return false;
  }
  mapping = ChainMapping();
  // Leading non-recomputable forward sources stay outside the chain.
  std::vector<char> inChain(n, 0);
  for (int k = 0; k < n; ++k) {
    if (!forward[k])
      continue;
    if (!problem.nodes[k].recomputable) {
      if (!problem.nodes[k].operands.empty()) {
        reason = "a non-recomputable forward node has operands";
        return false;
      }
      mapping.prefixNodes.push_back(k);
      continue;
    }
    inChain[k] = 1;
  }
  std::vector<int> points = articulationPoints(problem, inChain);
  if (points.empty()) {
    reason = "the forward part is empty";
    return false;
  }
  int L = static_cast<int>(points.size());
  std::vector<int> segmentOf(n, 0);
  mapping.segmentNodes.assign(L + 1, {});
  mapping.backwardNodes.assign(L + 1, {});
  {
    int segment = 1;
    for (int k = 0; k < n; ++k) {
      if (!inChain[k])
        continue;
      segmentOf[k] = segment;
      mapping.segmentNodes[segment].push_back(k);
      if (segment <= L && k == points[segment - 1])
        ++segment;
    }
  }
  std::vector<char> isPoint(n, 0);
  for (int p : points)
    isPoint[p] = 1;
  std::vector<int> stageOf(n, 0);
  int previousStage = L;
  for (int k = 0; k < n; ++k) {
    if (forward[k])
      continue;
    int stage = 0;
    int backwardMin = L;
    bool hasBackwardOperand = false;
    for (int op : problem.nodes[k].operands) {
      if (inChain[op])
        stage = std::max(stage, segmentOf[op]);
      else if (!forward[op]) {
        hasBackwardOperand = true;
        backwardMin = std::min(backwardMin, stageOf[op]);
      }
    }
    if (stage == 0)
      stage = hasBackwardOperand ? backwardMin : previousStage;
    for (int op : problem.nodes[k].operands) {
      if (!inChain[op])
        continue;
      int segment = segmentOf[op];
      bool ok = segment == stage || (segment == stage - 1 && isPoint[op]);
      if (!ok) {
        reason = "backward node '" + problem.nodes[k].name +
                 "' reads forward values of an earlier segment";
        return false;
      }
    }
    if (stage > previousStage) {
      reason = "backward node '" + problem.nodes[k].name +
               "' is out of stage order";
      return false;
    }
    previousStage = stage;
    stageOf[k] = stage;
    mapping.backwardNodes[stage].push_back(k);
  }
  UseInfo uses(problem);
  Chain &chain = mapping.chain;
  chain.forwardCost.assign(L + 1, 0);
  chain.backwardCost.assign(L + 1, 0);
  chain.activationBytes.assign(L + 1, 0);
  chain.keptBytes.assign(L + 1, 0);
  chain.gradientBytes.assign(L + 1, 0);
  chain.forwardPeak.assign(L + 1, 0);
  chain.backwardPeak.assign(L + 1, 0);
  for (int i = 1; i <= L; ++i) {
    chain.activationBytes[i] = problem.nodes[points[i - 1]].bytes;
    int64_t kept = 0, all = 0;
    for (int k : mapping.segmentNodes[i]) {
      chain.forwardCost[i] += problem.nodes[k].cost;
      all += problem.nodes[k].bytes;
      bool readByBackward = k == points[i - 1];
      for (int user : uses.consumers[k])
        readByBackward |= !forward[user];
      if (readByBackward)
        kept += problem.nodes[k].bytes;
    }
    chain.keptBytes[i] = kept;
    chain.forwardPeak[i] = all;
    int64_t backwardAll = 0;
    for (int k : mapping.backwardNodes[i]) {
      chain.backwardCost[i] += problem.nodes[k].cost;
      backwardAll += problem.nodes[k].bytes;
      // Outputs read by later stages form the gradient g_{i-1}.
      bool readLater = uses.required[k] != 0;
      for (int user : uses.consumers[k])
        readLater |= !forward[user] && stageOf[user] < i;
      if (readLater)
        chain.gradientBytes[i - 1] += problem.nodes[k].bytes;
    }
    chain.backwardPeak[i] = backwardAll;
  }
  return true;
}

Schedule chainStrategySchedule(const Problem &problem,
                               const ChainMapping &mapping,
                               const std::vector<ChainOp> &ops) {
  std::vector<int> computes = mapping.prefixNodes;
  for (const ChainOp &op : ops) {
    const std::vector<int> &nodes = op.kind == ChainOp::Forward
                                        ? mapping.segmentNodes[op.stage]
                                        : mapping.backwardNodes[op.stage];
    computes.insert(computes.end(), nodes.begin(), nodes.end());
  }
  return scheduleFromComputeSequence(problem, computes);
}

SolverOutput solveChainDpProblem(const Problem &problem, int64_t budgetBytes,
                                 CountingMode mode, int slots,
                                 double timeLimitSeconds) {
  SolverOutput out;
  ChainMapping mapping;
  std::string reason;
  if (!chainFromProblem(problem, mapping, reason)) {
    out.status = "not-applicable";
    out.message = "not a chain: " + reason;
    return out;
  }
  int64_t outside = problem.persistentBytes;
  for (int k : mapping.prefixNodes)
    outside += problem.nodes[k].bytes;
  for (int r : problem.requiredOutputs)
    outside += problem.nodes[r].bytes;
  int L = mapping.chain.length();
  // Keep each DP near 2e7 steps: O(L^3 * slots).
  double steps = double(L) * L * L / 6.0;
  int effectiveSlots = std::max(
      50, std::min(slots, static_cast<int>(2e7 / std::max(1.0, steps))));
  auto start = std::chrono::steady_clock::now();
  // The chain model is approximate for multi-node segments (conservative
  // peaks) and the discretization rounds sizes up, so the DP's memory is a
  // knob, not the budget: bisect it for the largest value whose checked
  // node-level peak fits, keeping the cheapest fitting schedule seen.
  int64_t low = 0;
  int64_t high = 2 * std::max<int64_t>(1, budgetBytes - outside);
  int64_t memory = std::max<int64_t>(1, budgetBytes - outside);
  double bestCost = 0;
  std::string lastError;
  for (int attempt = 0; attempt < 12; ++attempt) {
    if (attempt > 0 && std::chrono::duration<double>(
                           std::chrono::steady_clock::now() - start)
                               .count() > timeLimitSeconds)
      break;
    ChainDpResult dp = solveChainDp(mapping.chain, memory, effectiveSlots);
    bool fits = false;
    if (dp.feasible) {
      Schedule schedule = chainStrategySchedule(problem, mapping, dp.ops);
      CheckResult check = checkSchedule(problem, schedule, mode);
      if (!check.ok) {
        out.status = "failed";
        out.message = "chain strategy does not replay: " + check.error;
        return out;
      }
      fits = check.peakBytes <= budgetBytes;
      if (fits && (!out.found || check.totalCost < bestCost)) {
        out.found = true;
        bestCost = check.totalCost;
        out.schedule = std::move(schedule);
      }
    }
    // Infeasible DP or fitting schedule: more DP memory may help.
    if (!dp.feasible || fits)
      low = memory;
    else
      high = memory;
    if (high - low <= std::max<int64_t>(1, budgetBytes / 4096))
      break;
    memory = low + (high - low) / 2;
  }
  if (out.found) {
    out.status = "feasible";
    return out;
  }
  out.status = "infeasible";
  out.message = "the chain DP finds no strategy that fits the budget";
  return out;
}

} // namespace planner
} // namespace remat
