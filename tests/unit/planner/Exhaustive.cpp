//===- Exhaustive.cpp - Exact search over Checkmate schedules -------------===//
//
// See Exhaustive.h for the algorithm. Sets of nodes are bitmasks (n <= 10).
//
//===----------------------------------------------------------------------===//
#include "Exhaustive.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>
#include <vector>

namespace remat {
namespace planner {

namespace {

using Mask = uint32_t;

constexpr double kInfeasible = std::numeric_limits<double>::infinity();

Mask bit(int node) { return Mask(1) << node; }

/// What one recompute set implies for a stage, whatever is kept.
struct StagePlan {
  /// The stage's computes in index order (R and t).
  std::vector<int> computes;
  /// Values read by some compute of the stage.
  Mask reads = 0;
  /// freeAfter[pos]: values whose last read in the stage is computes[pos],
  /// plus computes[pos] itself when the stage never reads it; each is freed
  /// right after that compute unless it is kept.
  std::vector<Mask> freeAfter;
};

class Search {
public:
  Search(const Problem &problem, int64_t budgetBytes);

  /// The least cost of stages t..n-1 from resident set `resident`, or
  /// kInfeasible.
  double costToGo(int t, Mask resident);

  /// Appends the events of the optimal schedule found by costToGo(0, 0).
  void emitBest(EventList &schedule) const;

private:
  StagePlan planStage(int t, Mask recomputed) const;
  /// The stage's peak for resident set `resident` and kept set `kept`;
  /// stops early once it exceeds the budget. With `schedule`, also appends
  /// the stage's events.
  int64_t stagePeak(const StagePlan &plan, Mask resident, Mask kept,
                    EventList *schedule) const;

  const Problem &problem;
  int64_t budgetBytes;
  int n;
  std::vector<Mask> operandMask;
  Mask recomputableMask = 0;
  Mask requiredMask = 0;
  /// worthKeeping[t]: values that may be read after stage t or are required
  /// outputs (see the constructor).
  std::vector<Mask> worthKeeping;
  /// bytesOf[mask]: the summed output bytes of the nodes in `mask`.
  std::vector<int64_t> bytesOf;
  /// memo[t][resident]: NaN until computed.
  std::vector<std::vector<double>> memo;
  /// choice[t][resident]: the (recomputed, kept) pair attaining memo.
  std::vector<std::vector<std::pair<Mask, Mask>>> choice;
};

Search::Search(const Problem &problem, int64_t budgetBytes)
    : problem(problem), budgetBytes(budgetBytes), n(problem.size()) {
  operandMask.assign(n, 0);
  std::vector<Mask> consumerMask(n, 0);
  for (int k = 0; k < n; ++k) {
    for (int op : problem.nodes[k].operands) {
      operandMask[k] |= bit(op);
      consumerMask[op] |= bit(k);
    }
    if (problem.nodes[k].recomputable)
      recomputableMask |= bit(k);
  }
  for (int r : problem.requiredOutputs)
    requiredMask |= bit(r);
  // A value is worth keeping after stage t when it is required, read by a
  // later node, or read by a recomputable node that is itself worth keeping
  // (which a later stage may recompute from it). Every other value is never
  // read again in an optimal schedule: the recomputes that could read it
  // only feed each other and can be dropped, which lowers cost and memory.
  // So pruning the kept set to these values loses no optimum.
  worthKeeping.assign(n, 0);
  for (int t = 0; t < n; ++t) {
    Mask worth = 0;
    for (int v = t; v >= 0; --v) {
      bool keep = (requiredMask & bit(v)) != 0;
      for (int c = v + 1; c < n && !keep; ++c) {
        if (!(consumerMask[v] & bit(c)))
          continue;
        keep = c > t || (t + 1 < n && (recomputableMask & bit(c)) &&
                         (worth & bit(c)));
      }
      if (keep)
        worth |= bit(v);
    }
    worthKeeping[t] = worth;
  }
  // Masks with highest node v extend those below bit(v) by v's bytes.
  bytesOf.assign(size_t(1) << n, 0);
  for (int v = 0; v < n; ++v)
    for (Mask mask = bit(v); mask < bit(v + 1); ++mask)
      bytesOf[mask] = bytesOf[mask - bit(v)] + problem.nodes[v].bytes;
  memo.assign(n, std::vector<double>(size_t(1) << n, std::nan("")));
  choice.assign(n, std::vector<std::pair<Mask, Mask>>(size_t(1) << n));
}

StagePlan Search::planStage(int t, Mask recomputed) const {
  StagePlan plan;
  for (int k = 0; k < t; ++k)
    if (recomputed & bit(k))
      plan.computes.push_back(k);
  plan.computes.push_back(t);
  std::vector<int> lastReadPos(n, -1);
  for (int pos = 0; pos < static_cast<int>(plan.computes.size()); ++pos)
    for (int op : problem.nodes[plan.computes[pos]].operands) {
      lastReadPos[op] = pos;
      plan.reads |= bit(op);
    }
  plan.freeAfter.assign(plan.computes.size(), 0);
  for (int v = 0; v <= t; ++v)
    if (lastReadPos[v] >= 0)
      plan.freeAfter[lastReadPos[v]] |= bit(v);
  for (int pos = 0; pos < static_cast<int>(plan.computes.size()); ++pos) {
    int k = plan.computes[pos];
    if (!(plan.reads & bit(k)))
      plan.freeAfter[pos] |= bit(k);
  }
  return plan;
}

int64_t Search::stagePeak(const StagePlan &plan, Mask resident, Mask kept,
                          EventList *schedule) const {
  // Resident values the stage neither reads nor keeps go first.
  Mask dropped = resident & ~(plan.reads | kept);
  if (schedule)
    for (int v = 0; v < n; ++v)
      if (dropped & bit(v))
        schedule->free(v);
  int64_t memory = problem.persistentBytes + bytesOf[resident & ~dropped];
  int64_t peak = memory;
  for (size_t pos = 0; pos < plan.computes.size(); ++pos) {
    int k = plan.computes[pos];
    memory += problem.nodes[k].bytes;
    peak = std::max(peak, memory);
    if (peak > budgetBytes && !schedule)
      return peak;
    Mask freed = plan.freeAfter[pos] & ~kept;
    memory -= bytesOf[freed];
    if (schedule) {
      schedule->compute(k);
      for (int v = 0; v < n; ++v)
        if (freed & bit(v))
          schedule->free(v);
    }
  }
  return peak;
}

double Search::costToGo(int t, Mask resident) {
  if (t == n)
    return (requiredMask & ~resident) == 0 ? 0.0 : kInfeasible;
  double &best = memo[t][resident];
  if (!std::isnan(best))
    return best;
  best = kInfeasible;
  Mask candidates = recomputableMask & (bit(t) - 1) & ~resident;
  // Every subset of the candidates, from the full set down to the empty one.
  for (Mask recomputed = candidates;;
       recomputed = (recomputed - 1) & candidates) {
    Mask computes = recomputed | bit(t);
    bool operandsLive = true;
    double stageCost = 0;
    for (int k = 0; k <= t && operandsLive; ++k) {
      if (!(computes & bit(k)))
        continue;
      // Operands precede k: resident, or recomputed earlier in the stage.
      operandsLive = (operandMask[k] & ~(resident | recomputed)) == 0;
      stageCost += problem.nodes[k].cost;
    }
    // Costs are non-negative, so a stage that alone costs as much as the
    // best so far cannot improve it.
    if (operandsLive && stageCost < best) {
      StagePlan plan = planStage(t, recomputed);
      Mask keepable = (resident | computes) & worthKeeping[t];
      for (Mask kept = keepable;; kept = (kept - 1) & keepable) {
        if (stagePeak(plan, resident, kept, nullptr) <= budgetBytes) {
          double total = stageCost + costToGo(t + 1, kept);
          if (total < best) {
            best = total;
            choice[t][resident] = {recomputed, kept};
          }
        }
        if (kept == 0)
          break;
      }
    }
    if (recomputed == 0)
      break;
  }
  return best;
}

void Search::emitBest(EventList &schedule) const {
  Mask resident = 0;
  for (int t = 0; t < n; ++t) {
    auto [recomputed, kept] = choice[t][resident];
    stagePeak(planStage(t, recomputed), resident, kept, &schedule);
    resident = kept;
  }
}

} // namespace

double exhaustiveOptimalCost(const Problem &problem, int64_t budgetBytes,
                             EventList *best) {
  if (problem.size() > kExhaustiveMaxNodes || !problem.validate().empty())
    return -2;
  if (problem.size() == 0) {
    if (problem.persistentBytes > budgetBytes)
      return -1;
    if (best)
      *best = EventList();
    return 0;
  }
  Search search(problem, budgetBytes);
  double cost = search.costToGo(0, 0);
  if (cost == kInfeasible)
    return -1;
  if (best) {
    *best = EventList();
    search.emitBest(*best);
  }
  return cost;
}

} // namespace planner
} // namespace remat
