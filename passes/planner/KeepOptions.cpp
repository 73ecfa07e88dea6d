//===- KeepOptions.cpp - Keep options of a chain stage --------------------===//
#include "passes/planner/KeepOptions.h"

#include <algorithm>
#include <cmath>

namespace remat {
namespace planner {
namespace detail {

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

namespace {

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

} // namespace

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

} // namespace detail
} // namespace planner
} // namespace remat
