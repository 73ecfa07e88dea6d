//===- ChainDp.cpp - Optimal checkpointing of heterogeneous chains --------===//
#include "passes/planner/ChainDp.h"
#include "passes/planner/ChainRanges.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <string>

namespace remat {
namespace planner {

using detail::indexRanges;
using detail::RangeIndex;

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

int Chain::optionCount(int stage) const {
  size_t extra = static_cast<size_t>(stage) < dropOptions.size()
                     ? dropOptions[stage].size()
                     : 0;
  return 1 + static_cast<int>(extra);
}

KeepOption Chain::keepOption(int stage, int option) const {
  if (option > 0)
    return dropOptions[stage][option - 1];
  KeepOption keepAll;
  keepAll.keptBytes = keptBytes[stage];
  keepAll.backwardPeak = backwardPeak[stage];
  keepAll.forwardPeak = forwardPeak[stage];
  return keepAll;
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
  RangeIndex ranges = indexRanges(chain);
  result.tableRows = ranges.rows;
  // Two tables of rows x (slots + 1) entries: stay near 3e6 entries.
  slots = std::max(10, std::min(slots, static_cast<int>(3e6 / ranges.rows)));
  // Unit: about memory / slots (at least 1 byte); sizes round up, the
  // memory rounds down, so the discrete model is conservative. Rounding
  // costs least when the unit is a fraction (or multiple) of the most
  // common activation size (a transformer's residual stream): take the
  // nearest such unit.
  int64_t unit = std::max<int64_t>(1, (memoryBytes + slots - 1) / slots);
  {
    std::map<int64_t, int> frequency;
    int64_t common = 0;
    for (int i = 1; i <= L; ++i) {
      int count = ++frequency[chain.activationBytes[i]];
      if (chain.activationBytes[i] > 0 &&
          (common == 0 || count > frequency[common]))
        common = chain.activationBytes[i];
    }
    double ratio = double(common) / double(unit);
    if (common > 0 && ratio >= 1) {
      int64_t parts = std::llround(ratio);
      unit = (common + parts - 1) / parts;
    } else if (common > 0) {
      unit = common * std::llround(1 / ratio);
    }
  }
  auto units = [&](int64_t bytes) {
    return static_cast<int>((bytes + unit - 1) / unit);
  };
  int S = static_cast<int>(memoryBytes / unit);
  std::vector<int> a(L + 1), g(L + 1), runPeak(L + 1);
  // Per stage and keep option: abar^o, fpk^o, bpk^o (units) and r^o.
  std::vector<std::vector<int>> abar(L + 1), fpk(L + 1), bpk(L + 1);
  std::vector<std::vector<double>> recompute(L + 1);
  // pointOption[i]: whether some option keeps no more than a_i, so that a
  // checkpointed a_i can serve as its abar_i (table E).
  std::vector<char> pointOption(L + 1, 0);
  for (int i = 0; i <= L; ++i) {
    a[i] = units(chain.activationBytes[i]);
    g[i] = units(chain.gradientBytes[i]);
    runPeak[i] = units(chain.forwardRunPeak.empty() ? chain.forwardPeak[i]
                                                    : chain.forwardRunPeak[i]);
    for (int o = 0; o < chain.optionCount(i); ++o) {
      KeepOption option = chain.keepOption(i, o);
      abar[i].push_back(
          units(std::max(option.keptBytes, chain.activationBytes[i])));
      fpk[i].push_back(units(option.forwardPeak));
      bpk[i].push_back(units(option.backwardPeak));
      recompute[i].push_back(option.recomputeCost);
      pointOption[i] |= abar[i].back() <= a[i];
    }
  }
  const double inf = std::numeric_limits<double>::infinity();
  // Two tables over (s, t, m), 1 <= s <= t <= L:
  //   C: a_{s-1} outside, delta_t inside m.
  //   E: the same plus a_t already resident (inside m) as abar_t of an
  //      option that keeps only a_t: F_t is done.
  // Choice codes: -1 infeasible, 0 keep (or base) with the keep option in
  // optionC / optionE, 2(j - s) + e for "checkpoint a_{j-1}" followed by C
  // (e = 0) or by E (e = 1: B_{j-1} uses a_{j-1} as its abar_{j-1});
  // relative to s, so that identical ranges share rows.
  size_t tableSize = size_t(ranges.rows) * (S + 1);
  std::vector<double> costC(tableSize, inf), costE(tableSize, inf);
  std::vector<int32_t> choiceC(tableSize, -1), choiceE(tableSize, -1);
  std::vector<uint8_t> optionC(tableSize, 0), optionE(tableSize, 0);
  auto at = [&](int s, int t, int m) -> size_t {
    return size_t(ranges.row[ranges.pair(s, t)]) * (S + 1) + m;
  };
  for (int len = 0; len < L; ++len) {
    for (int s = 1; s + len <= L; ++s) {
      int t = s + len;
      if (!ranges.first[ranges.pair(s, t)])
        continue;
      for (int withE = 0; withE < 2; ++withE) {
        std::vector<double> &table = withE ? costE : costC;
        std::vector<int32_t> &choices = withE ? choiceE : choiceC;
        std::vector<uint8_t> &options = withE ? optionE : optionC;
        // Bytes resident besides the work of this call: delta_t (and a_t
        // for E).
        int held = g[t] + (withE ? a[t] : 0);
        // Keep options tried: all, except where B_s directly follows F_s
        // (C with s == t): there dropping only adds recomputation, and the
        // recomputes would repeat segment s out of Checkmate order.
        int keepOptions =
            !withE && s == t ? 1 : std::min<int>(256, abar[s].size());
        for (int m = 0; m <= S; ++m) {
          double best = inf;
          int bestChoice = -1;
          int bestOption = 0;
          for (int o = 0; o < keepOptions; ++o) {
            if (abar[s][o] + g[s] + bpk[s][o] > m)
              continue;
            double c = chain.backwardCost[s] + recompute[s][o];
            if (withE && s == t) {
              // F_t is done; B_t needs an option a_t can serve.
              if (abar[s][o] > a[s])
                continue;
            } else {
              // F_s leaves abar_s^o for B_s.
              if (held + std::max(fpk[s][o], abar[s][o]) > m)
                continue;
              c += chain.forwardCost[s];
              if (s < t) {
                int rest = m - abar[s][o];
                c = rest >= 0 ? c + table[at(s + 1, t, rest)] : inf;
              }
            }
            if (c < best) {
              best = c;
              bestChoice = 0;
              bestOption = o;
            }
          }
          // Checkpoint options: run F_s..F_{j-1} without keeping, keep
          // a_{j-1}.
          double runCost = 0;
          for (int j = s + 1; j <= t; ++j) {
            int k = j - 1;
            int during =
                held + (k > s ? a[k - 1] : 0) + std::max(runPeak[k], a[k]);
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
            double lowerE = pointOption[j - 1] ? costE[at(s, j - 1, m)] : inf;
            int e = lowerE < lowerC ? 1 : 0;
            double c = upper + std::min(lowerC, lowerE);
            if (c < best) {
              best = c;
              bestChoice = 2 * (j - s) + e;
            }
          }
          table[at(s, t, m)] = best;
          choices[at(s, t, m)] = bestChoice;
          options[at(s, t, m)] = static_cast<uint8_t>(bestOption);
        }
      }
    }
  }
  if (costC[at(1, L, S)] == inf)
    return result;
  result.feasible = true;
  result.cost = costC[at(1, L, S)];
  // Rebuild the strategy, reading shared rows with each range's own stages.
  struct Rebuilder {
    const std::vector<int32_t> &choiceC;
    const std::vector<int32_t> &choiceE;
    const std::vector<uint8_t> &optionC;
    const std::vector<uint8_t> &optionE;
    const std::vector<int> &a;
    const std::vector<std::vector<int>> &abar;
    const RangeIndex &ranges;
    std::vector<ChainOp> &ops;
    int S;
    size_t at(int s, int t, int m) const {
      return size_t(ranges.row[ranges.pair(s, t)]) * (S + 1) + m;
    }
    void run(int s, int t, int m, bool withE) {
      int c = (withE ? choiceE : choiceC)[at(s, t, m)];
      if (c == 0) {
        int o = (withE ? optionE : optionC)[at(s, t, m)];
        if (withE && s == t) {
          ops.push_back({ChainOp::Backward, s, o});
          return;
        }
        ops.push_back({ChainOp::Forward, s});
        if (s < t)
          run(s + 1, t, m - abar[s][o], withE);
        ops.push_back({ChainOp::Backward, s, o});
        return;
      }
      int j = s + c / 2;
      for (int k = s; k < j; ++k)
        ops.push_back({ChainOp::Forward, k});
      run(j, t, m - a[j - 1], withE);
      run(s, j - 1, m, c % 2 == 1);
    }
  } rebuilder{choiceC, choiceE, optionC,    optionE, a,
              abar,    ranges,  result.ops, S};
  rebuilder.run(1, L, S, false);
  return result;
}

} // namespace planner
} // namespace remat
