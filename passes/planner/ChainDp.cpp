//===- ChainDp.cpp - Optimal checkpointing of heterogeneous chains --------===//
#include "passes/planner/ChainDp.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <map>

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

namespace {

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

RangeIndex indexRanges(const Chain &chain) {
  RangeIndex index;
  int L = index.L = chain.length();
  std::map<std::vector<double>, int> kinds;
  std::vector<int> kind(L + 2, -1);
  for (int i = 1; i <= L; ++i) {
    std::vector<double> key{
        chain.forwardCost[i], chain.backwardCost[i],
        double(chain.activationBytes[i]), double(chain.gradientBytes[i]),
        double(chain.forwardRunPeak.empty() ? chain.forwardPeak[i]
                                            : chain.forwardRunPeak[i])};
    for (int o = 0; o < chain.optionCount(i); ++o) {
      KeepOption option = chain.keepOption(i, o);
      key.insert(key.end(),
                 {double(option.keptBytes), option.recomputeCost,
                  double(option.forwardPeak), double(option.backwardPeak)});
    }
    kind[i] = kinds.emplace(key, static_cast<int>(kinds.size())).first->second;
  }
  // common[s][s']: how many stages from s and from s' on have equal kinds.
  int width = L + 2;
  std::vector<int> common(size_t(width) * width, 0);
  for (int s = L; s >= 1; --s)
    for (int other = L; other >= 1; --other)
      if (kind[s] == kind[other])
        common[size_t(s) * width + other] =
            1 + common[size_t(s + 1) * width + other + 1];
  // Only stages of s's own kind can start an equal range.
  std::vector<std::vector<int>> members(kinds.size());
  for (int i = 1; i <= L; ++i)
    members[kind[i]].push_back(i);
  index.row.assign(size_t(L) * L, -1);
  index.first.assign(size_t(L) * L, 0);
  for (int len = 0; len < L; ++len) {
    for (int s = 1; s + len <= L; ++s) {
      int earlier = s;
      for (int other : members[kind[s]]) {
        if (other >= s)
          break;
        if (common[size_t(other) * width + s] > len) {
          earlier = other;
          break;
        }
      }
      if (earlier < s) {
        index.row[index.pair(s, s + len)] =
            index.row[index.pair(earlier, earlier + len)];
        continue;
      }
      index.first[index.pair(s, s + len)] = 1;
      index.row[index.pair(s, s + len)] = index.rows++;
      index.work += len + 1 + chain.optionCount(s);
    }
  }
  return index;
}

} // namespace

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

namespace {

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

void appendBits(std::string &key, const void *data, size_t size) {
  key.append(static_cast<const char *>(data), size);
}

/// How far the live bytes rise above those of `initial` while `sequence`
/// (positions, in order) runs from the live set `initial`: each value is
/// freed after its last read in the sequence unless `stays` holds for it.
/// While a node runs, its operands and its output are live.
int64_t sequencePeak(const StageShape &shape, const std::vector<int> &sequence,
                     const std::vector<char> &stays,
                     const std::vector<char> &initial) {
  int size = static_cast<int>(shape.cost.size());
  std::vector<int> lastRead(size, -1);
  std::vector<char> live = initial;
  for (size_t at = 0; at < sequence.size(); ++at)
    for (int op : shape.operands[sequence[at]])
      lastRead[op] = static_cast<int>(at);
  int64_t bytes = 0, peak = 0;
  for (size_t at = 0; at < sequence.size(); ++at) {
    int node = sequence[at];
    live[node] = 1;
    bytes += shape.bytes[node];
    peak = std::max(peak, bytes);
    for (int op : shape.operands[node])
      if (live[op] && !stays[op] && lastRead[op] == static_cast<int>(at)) {
        live[op] = 0;
        bytes -= shape.bytes[op];
      }
    if (!stays[node] && lastRead[node] < static_cast<int>(at)) {
      live[node] = 0;
      bytes -= shape.bytes[node];
    }
  }
  return peak;
}

/// The values B_i needs that `kept` lacks, and their ancestors in the
/// segment that `kept` lacks, in index order.
std::vector<int> recomputationFor(const StageShape &shape,
                                  const std::vector<char> &kept) {
  int n = shape.segmentSize;
  std::vector<char> needed(n, 0);
  for (int p = 0; p < n; ++p)
    needed[p] = shape.readByBackward[p] && !kept[p];
  for (int p = n - 1; p >= 0; --p) {
    if (!needed[p])
      continue;
    for (int op : shape.operands[p])
      if (!kept[op])
        needed[op] = 1;
  }
  std::vector<int> positions;
  for (int p = 0; p < n; ++p)
    if (needed[p])
      positions.push_back(p);
  return positions;
}

/// The keep option that keeps `kept` (segment positions), exactly
/// simulated: F_i frees what it does not keep after its last forward
/// read; B_i recomputes what is missing, then runs, freeing recomputed
/// values and outputs after their last read in the stage.
ShapeOption optionFor(const StageShape &shape, const std::vector<char> &kept) {
  int n = shape.segmentSize;
  int size = static_cast<int>(shape.cost.size());
  ShapeOption result;
  result.recompute = recomputationFor(shape, kept);
  std::vector<int> forwardRun(n);
  std::vector<char> stays(size, 0), initial(size, 0);
  for (int p = 0; p < n; ++p) {
    forwardRun[p] = p;
    stays[p] = kept[p];
    if (kept[p])
      result.option.keptBytes += shape.bytes[p];
  }
  result.option.forwardPeak = sequencePeak(shape, forwardRun, stays, initial);
  // B_i starts from the kept values and its gradient inputs.
  std::vector<int> backwardRun = result.recompute;
  for (int p : result.recompute)
    result.option.recomputeCost += shape.cost[p];
  for (int p = 0; p < n; ++p) {
    stays[p] = 0;
    initial[p] = kept[p];
  }
  for (int q = n; q < size; ++q) {
    stays[q] = shape.outlives[q - n];
    if (q < n + shape.backwardSize)
      backwardRun.push_back(q);
    else
      initial[q] = 1;
  }
  result.option.backwardPeak = sequencePeak(shape, backwardRun, stays, initial);
  return result;
}

/// The keep options of one stage, keep-all first, at most `maxOptions`;
/// see chainFromProblem for the algorithm.
StageOptions generateOptions(const StageShape &shape, int maxOptions) {
  int n = shape.segmentSize;
  std::vector<char> kept(shape.readByBackward.begin(),
                         shape.readByBackward.begin() + n);
  StageOptions generated{optionFor(shape, kept)};
  std::vector<int> candidates;
  for (int p = 0; p < n; ++p)
    if (shape.droppable[p] && shape.bytes[p] > 0)
      candidates.push_back(p);
  if (maxOptions <= 1)
    candidates.clear();
  // Step 2: greedy drops by marginal recompute cost per byte.
  bool marginal = candidates.size() <= 32;
  std::vector<double> ratio(n, 0.0);
  bool firstRound = true;
  while (!candidates.empty()) {
    if (marginal || firstRound) {
      double currentCost = generated.back().option.recomputeCost;
      for (int v : candidates) {
        kept[v] = 0;
        double cost = 0;
        for (int p : recomputationFor(shape, kept))
          cost += shape.cost[p];
        kept[v] = 1;
        ratio[v] = (cost - currentCost) / static_cast<double>(shape.bytes[v]);
      }
      firstRound = false;
    }
    size_t pick = 0;
    for (size_t c = 1; c < candidates.size(); ++c)
      if (ratio[candidates[c]] < ratio[candidates[pick]])
        pick = c;
    kept[candidates[pick]] = 0;
    candidates.erase(candidates.begin() + pick);
    generated.push_back(optionFor(shape, kept));
  }
  // Step 3: drop dominated options, then thin out. Kept bytes fall with
  // every drop, so the last option keeps least; it stays, as does keep-all.
  auto dominates = [](const KeepOption &q, const KeepOption &p) {
    return q.keptBytes <= p.keptBytes && q.recomputeCost <= p.recomputeCost &&
           q.forwardPeak <= p.forwardPeak &&
           q.keptBytes + q.backwardPeak <= p.keptBytes + p.backwardPeak;
  };
  StageOptions pareto;
  for (size_t p = 0; p < generated.size(); ++p) {
    bool dominated = false;
    for (size_t q = 0; q < generated.size() && !dominated; ++q)
      dominated =
          q != p && dominates(generated[q].option, generated[p].option) &&
          (q < p || !dominates(generated[p].option, generated[q].option));
    if (!dominated || p == 0 || p + 1 == generated.size())
      pareto.push_back(generated[p]);
  }
  if (static_cast<int>(pareto.size()) <= maxOptions)
    return pareto;
  // The others: the nearest to kept-bytes targets spaced evenly between
  // keep-all and the last.
  std::vector<char> chosen(pareto.size(), 0);
  chosen.front() = chosen.back() = 1;
  double high = static_cast<double>(pareto.front().option.keptBytes);
  double low = static_cast<double>(pareto.back().option.keptBytes);
  for (int k = 1; k + 1 < maxOptions; ++k) {
    double target = high - k * (high - low) / (maxOptions - 1);
    int nearest = -1;
    double nearestDistance = 0;
    for (size_t p = 1; p + 1 < pareto.size(); ++p) {
      double distance =
          std::fabs(static_cast<double>(pareto[p].option.keptBytes) - target);
      if (!chosen[p] && (nearest < 0 || distance < nearestDistance)) {
        nearest = static_cast<int>(p);
        nearestDistance = distance;
      }
    }
    if (nearest >= 0)
      chosen[nearest] = 1;
  }
  StageOptions thinned;
  for (size_t p = 0; p < pareto.size(); ++p)
    if (chosen[p])
      thinned.push_back(std::move(pareto[p]));
  return thinned;
}

} // namespace

bool chainFromProblem(const Problem &problem, ChainMapping &mapping,
                      std::string &reason, int maxKeepOptions) {
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
  // a_L, the last forward value (the loss), may be read by backward nodes
  // of every stage (the compiler makes each backward op read the loss so
  // that the backward starts after it). Such reads do not place a node in
  // stage L; a_L then stays live to the end, outside the DP's memory.
  int lastValue = points[L - 1];
  bool lastValueHeld = false;
  int previousStage = L;
  for (int k = 0; k < n; ++k) {
    if (forward[k])
      continue;
    int stage = 0;
    int backwardMin = L;
    bool hasBackwardOperand = false;
    bool readsLastValue = false;
    for (int op : problem.nodes[k].operands) {
      if (op == lastValue)
        readsLastValue = true;
      else if (inChain[op])
        stage = std::max(stage, segmentOf[op]);
      else if (!forward[op]) {
        hasBackwardOperand = true;
        backwardMin = std::min(backwardMin, stageOf[op]);
      }
    }
    // A node that reads no forward value joins the current stage (it may
    // come late: memory-aware orders delay weight updates).
    if (stage == 0)
      stage = hasBackwardOperand ? std::min(backwardMin, previousStage)
                                 : previousStage;
    lastValueHeld |= readsLastValue && stage < L;
    for (int op : problem.nodes[k].operands) {
      if (!inChain[op] || op == lastValue)
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
  if (lastValueHeld || uses.required[lastValue])
    mapping.heldBytes = problem.nodes[lastValue].bytes;
  Chain &chain = mapping.chain;
  chain.forwardCost.assign(L + 1, 0);
  chain.backwardCost.assign(L + 1, 0);
  chain.activationBytes.assign(L + 1, 0);
  chain.keptBytes.assign(L + 1, 0);
  chain.gradientBytes.assign(L + 1, 0);
  chain.forwardPeak.assign(L + 1, 0);
  chain.forwardRunPeak.assign(L + 1, 0);
  chain.backwardPeak.assign(L + 1, 0);
  chain.dropOptions.assign(L + 1, {});
  mapping.recomputeNodes.assign(L + 1, {{}});
  // g_j: the backward values live between B_{j+1} and B_j, i.e. outputs
  // of stages > j read by stages <= j, and required outputs (live to the
  // end; so they are not counted outside the DP's memory).
  for (int i = 1; i <= L; ++i) {
    for (int k : mapping.backwardNodes[i]) {
      chain.backwardCost[i] += problem.nodes[k].cost;
      int lastStage = uses.required[k] ? 0 : i;
      for (int user : uses.consumers[k])
        if (!forward[user])
          lastStage = std::min(lastStage, stageOf[user]);
      for (int j = lastStage; j < i; ++j)
        chain.gradientBytes[j] += problem.nodes[k].bytes;
    }
  }

  // Per stage: its shape, keyed by costs, sizes, flags and operands
  // (stage positions; -1 for a_{i-1}, -2 for any other input), and its
  // keep options, generated once per distinct key.
  struct Generated {
    StageOptions options;
    int64_t runPeak = 0;
  };
  std::map<std::string, Generated> generatedFor;
  std::vector<int> position(n, -1);
  for (int i = 1; i <= L; ++i) {
    const std::vector<int> &segment = mapping.segmentNodes[i];
    const std::vector<int> &backward = mapping.backwardNodes[i];
    int previousPoint = i > 1 ? points[i - 2] : -1;
    std::vector<int> stageNodes = segment;
    stageNodes.insert(stageNodes.end(), backward.begin(), backward.end());
    for (size_t p = 0; p < stageNodes.size(); ++p)
      position[stageNodes[p]] = static_cast<int>(p);
    // Gradient inputs: outputs of later stages that B_i reads.
    for (int k : backward)
      for (int op : problem.nodes[k].operands)
        if (!forward[op] && stageOf[op] > i && position[op] < 0) {
          position[op] = static_cast<int>(stageNodes.size());
          stageNodes.push_back(op);
        }
    auto encode = [&](int op) {
      if (position[op] >= 0)
        return position[op];
      return op == previousPoint ? -1 : -2;
    };
    StageShape shape;
    shape.segmentSize = static_cast<int>(segment.size());
    shape.backwardSize = static_cast<int>(backward.size());
    std::string key;
    for (size_t p = 0; p < stageNodes.size(); ++p) {
      int k = stageNodes[p];
      const Node &node = problem.nodes[k];
      char flags = 0;
      if (static_cast<int>(p) >= shape.segmentSize + shape.backwardSize) {
        // An input: its size and whether it outlives B_i.
        bool outlives = uses.required[k] != 0;
        for (int user : uses.consumers[k])
          outlives |= !forward[user] && stageOf[user] < i;
        shape.outlives.push_back(outlives);
        shape.cost.push_back(0.0);
        shape.bytes.push_back(node.bytes);
        shape.operands.emplace_back();
        flags = static_cast<char>(16 | outlives << 3);
        appendBits(key, &node.bytes, sizeof(node.bytes));
        appendBits(key, &flags, 1);
        key.push_back(';');
        continue;
      }
      if (forward[k]) {
        bool readByBackward = k == points[i - 1];
        for (int user : uses.consumers[k])
          readByBackward |= !forward[user];
        bool droppable =
            readByBackward && k != points[i - 1] && !uses.required[k];
        shape.readByBackward.push_back(readByBackward);
        shape.droppable.push_back(droppable);
        flags = static_cast<char>(readByBackward | droppable << 1);
      } else {
        bool outlives = uses.required[k] != 0;
        for (int user : uses.consumers[k])
          outlives |= !forward[user] && stageOf[user] < i;
        shape.outlives.push_back(outlives);
        flags = static_cast<char>(4 | outlives << 3);
      }
      shape.cost.push_back(node.cost);
      shape.bytes.push_back(node.bytes);
      shape.operands.emplace_back();
      appendBits(key, &node.cost, sizeof(node.cost));
      appendBits(key, &node.bytes, sizeof(node.bytes));
      appendBits(key, &flags, 1);
      for (int op : node.operands) {
        int code = encode(op);
        if (code >= 0)
          shape.operands.back().push_back(code);
        appendBits(key, &code, sizeof(code));
      }
      key.push_back(';');
    }
    auto found = generatedFor.find(key);
    if (found == generatedFor.end()) {
      ++mapping.distinctStages;
      Generated generated;
      generated.options = generateOptions(shape, maxKeepOptions);
      // A run that keeps only a_i (and required outputs).
      std::vector<int> run(shape.segmentSize);
      std::vector<char> stays(shape.cost.size(), 0), initial = stays;
      for (int p = 0; p < shape.segmentSize; ++p) {
        run[p] = p;
        stays[p] = shape.readByBackward[p] && !shape.droppable[p];
      }
      generated.runPeak = sequencePeak(shape, run, stays, initial);
      found = generatedFor.emplace(key, std::move(generated)).first;
    }
    for (int k : stageNodes)
      position[k] = -1;
    const StageOptions &options = found->second.options;
    chain.activationBytes[i] = problem.nodes[points[i - 1]].bytes;
    for (int k : segment)
      chain.forwardCost[i] += problem.nodes[k].cost;
    chain.keptBytes[i] = options.front().option.keptBytes;
    chain.forwardPeak[i] = options.front().option.forwardPeak;
    chain.backwardPeak[i] = options.front().option.backwardPeak;
    chain.forwardRunPeak[i] = found->second.runPeak;
    // B_i's recomputes must follow a backward node of stage i + 1: after
    // forward nodes of later segments they would break Checkmate's order.
    if (i < L && mapping.backwardNodes[i + 1].empty())
      continue;
    for (size_t o = 1; o < options.size(); ++o) {
      chain.dropOptions[i].push_back(options[o].option);
      std::vector<int> nodes;
      for (int p : options[o].recompute)
        nodes.push_back(segment[p]);
      mapping.recomputeNodes[i].push_back(std::move(nodes));
    }
  }
  // A held a_L is outside the DP's memory, so not in stage L's sizes.
  int64_t held = mapping.heldBytes;
  chain.activationBytes[L] -= held;
  chain.keptBytes[L] -= held;
  chain.forwardPeak[L] -= held;
  chain.forwardRunPeak[L] -= held;
  for (KeepOption &option : chain.dropOptions[L]) {
    option.keptBytes -= held;
    option.forwardPeak -= held;
  }
  return true;
}

Schedule chainStrategySchedule(const Problem &problem,
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

SolverOutput solveChainDpProblem(const Problem &problem, int64_t budgetBytes,
                                 CountingMode mode, int slots,
                                 double timeLimitSeconds, int maxKeepOptions) {
  SolverOutput out;
  ChainMapping mapping;
  std::string reason;
  if (!chainFromProblem(problem, mapping, reason, maxKeepOptions)) {
    out.status = "not-applicable";
    out.message = "not a chain: " + reason;
    return out;
  }
  int L = mapping.chain.length();
  int64_t outside = problem.persistentBytes;
  for (int k : mapping.prefixNodes)
    outside += problem.nodes[k].bytes;
  // Required outputs of the backward are in the chain's gradients, a
  // required a_L is in heldBytes.
  std::vector<char> forward = forwardMask(problem);
  int lastValue = mapping.segmentNodes[L].back();
  for (int r : problem.requiredOutputs)
    if (forward[r] && r != lastValue)
      outside += problem.nodes[r].bytes;
  outside += mapping.heldBytes;
  auto start = std::chrono::steady_clock::now();
  auto elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                         start)
        .count();
  };
  // The DP's memory is a knob, not the budget (see the declaration):
  // search it for the largest value whose checked node-level peak fits,
  // keeping the cheapest fitting schedule seen. At least one run, at most
  // 12, until `deadline` seconds.
  double bestCost = 0;
  bool tooLong = false;
  auto search = [&](const Chain &chain, double deadline) {
    // Keep each DP near 2e7 steps: rows x slots x (range length + options).
    RangeIndex ranges = indexRanges(chain);
    double steps = ranges.work;
    int effectiveSlots = std::max(
        50, std::min(slots, static_cast<int>(2e7 / std::max(1.0, steps))));
    // Long chains of distinct stages (O(L^3) steps) would take far beyond
    // the time limit even for one run: skip them. Measured here: 361
    // distinct stages (a 2,000-node random training step), 45 slots (the
    // table cap), 6.4 s a run, about 5e7 steps/s once the tables outgrow
    // the caches; 134 stages at 50 slots: 0.13 s.
    constexpr double kStepsPerSecond = 5e7;
    double tableSlots = std::max(
        10.0, std::min<double>(effectiveSlots,
                               3e6 / std::max(1, ranges.rows)));
    if (steps * tableSlots > kStepsPerSecond * std::max(0.5, 2 * deadline)) {
      tooLong = true;
      return true;
    }
    // Start at the budget less the outside bytes; the model's slack
    // (outside values that die early, a_{s-1} held through B_s, rounding)
    // stays below a quarter of that plus the outside values that can die.
    int64_t memory = std::max<int64_t>(1, budgetBytes - outside);
    int64_t low = 0;
    int64_t high =
        memory + memory / 4 + (outside - problem.persistentBytes) + 1;
    for (int attempt = 0; attempt < 12; ++attempt) {
      if (attempt > 0 && elapsed() > deadline)
        break;
      ChainDpResult dp = solveChainDp(chain, memory, effectiveSlots);
      bool fits = false;
      int64_t peak = 0;
      if (dp.feasible) {
        Schedule schedule = chainStrategySchedule(problem, mapping, dp.ops);
        CheckResult check = checkSchedule(problem, schedule, mode);
        if (!check.ok) {
          out.status = "failed";
          out.message = "chain strategy does not replay: " + check.error;
          return false;
        }
        peak = check.peakBytes;
        fits = peak <= budgetBytes;
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
      int64_t tolerance = std::max<int64_t>(1, budgetBytes / 4096);
      if (high - low <= tolerance)
        break;
      // The model's error is mostly an offset: step by the checked slack
      // (or excess) when that lands strictly inside the bracket, else
      // bisect.
      int64_t step = dp.feasible ? budgetBytes - peak : 0;
      int64_t next = memory + step;
      if (std::abs(step) < tolerance || next <= low || next >= high)
        next = low + (high - low) / 2;
      memory = next;
    }
    return true;
  };
  // Strategies with drop options fill the model's memory more tightly, so
  // on a non-monotone search they can end worse than the single-option
  // chain: search both (half the time each) and keep the cheapest.
  bool hasOptions = false;
  for (int i = 1; i <= L; ++i)
    hasOptions |= mapping.chain.optionCount(i) > 1;
  if (!search(mapping.chain,
              hasOptions ? timeLimitSeconds / 2 : timeLimitSeconds))
    return out;
  // The second search only within the time limit once one schedule exists
  // (auto gives the DP 0.25 s by default; each search runs at least once).
  if (hasOptions && !(out.found && elapsed() > timeLimitSeconds)) {
    Chain single = mapping.chain;
    single.dropOptions.clear();
    if (!search(single, timeLimitSeconds))
      return out;
  }
  if (out.found) {
    out.status = "feasible";
    return out;
  }
  if (tooLong) {
    out.status = "not-applicable";
    out.message = "a chain of " + std::to_string(L) +
                  " distinct stages is too long for the DP within the time "
                  "limit";
    return out;
  }
  out.status = "infeasible";
  out.message = "the chain DP finds no strategy that fits the budget";
  return out;
}

} // namespace planner
} // namespace remat
