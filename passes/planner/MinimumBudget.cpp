//===- MinimumBudget.cpp - The smallest budget a schedule meets ----------===//
#include "passes/planner/MinimumBudget.h"

#include <chrono>
#include <sstream>
#include <utility>

namespace remat {
namespace planner {

std::string describeGap(const MinimumBudget &m) {
  std::ostringstream os;
  if (m.gap == "bound-met")
    os << "the minimum equals the lower bound: no schedule can use less";
  else if (m.gap == "proven")
    os << "the exact MILP proves " << m.provenInfeasibleBytes
       << " bytes infeasible (" << m.minFeasibleBytes - m.provenInfeasibleBytes
       << " bytes below the minimum)";
  else
    os << "open between the lower bound " << m.lowerBoundBytes
       << " and the minimum " << m.minFeasibleBytes << " bytes";
  return os.str();
}

MinimumBudget searchMinimumBudget(const Problem &input,
                                  const MinimumSearchOptions &options) {
  auto start = std::chrono::steady_clock::now();
  Problem problem = input;
  problem.normalize();
  MinimumBudget m;
  LowerBound bound = computeLowerBound(problem);
  m.lowerBoundBytes = bound.bytes;
  m.lowerBoundReason = bound.describe(problem);
  m.provenInfeasibleBytes = bound.bytes - 1;
  SolveOptions fast;
  fast.mode = options.mode;
  fast.timeLimitSeconds = options.heuristicSeconds;
  // The probes run the heuristic's budget ladder, as auto does (the
  // default): it finds schedules at budgets where the search at the budget
  // alone fails (the 1,000- and 3,000-node layered graphs: 0.179 -> 0.177
  // and 0.178 -> 0.1767 of store-all).
  // The peak of the first fast solver's schedule within `budget`, or -1;
  // the schedule goes to `found`.
  SolveResult found;
  auto probe = [&](int64_t budget, std::string &solver) -> int64_t {
    for (SolverKind kind : {SolverKind::Heuristic, SolverKind::PerBlock,
                            SolverKind::SqrtN, SolverKind::ChainDp}) {
      SolveResult r = solve(problem, budget, kind, fast);
      if (r.ok) {
        solver = r.stats.solverName;
        found = std::move(r);
        return found.stats.peakBytes;
      }
    }
    return -1;
  };
  int64_t storeAll = storeAllPeak(problem);
  m.minFeasibleBytes = storeAll;
  m.solver = "store-all";
  int64_t low = bound.bytes - 1; // no schedule fits here
  int64_t high = storeAll;
  // A schedule found: its peak is the new upper end, and it is kept.
  auto keep = [&](int64_t peak, const std::string &solver) {
    high = peak;
    m.solver = solver;
    m.schedule = found;
  };
  int64_t step = std::max<int64_t>(
      1, static_cast<int64_t>(double(storeAll) * options.resolution));
  // The lower bound itself first: often met exactly.
  std::string solver;
  if (int64_t peak = probe(bound.bytes, solver); peak >= 0)
    keep(peak, solver);
  while (high - low > step) {
    int64_t mid = low + (high - low) / 2;
    int64_t peak = probe(mid, solver);
    if (peak >= 0) {
      keep(peak, solver); // the schedule's own peak, at most mid
    } else {
      low = mid;
    }
  }
  // The heuristic's success is not monotone in the budget (a probe may
  // fail where a smaller budget succeeds: on a 1,000-node layered graph the
  // bisection stopped at 0.186 of store-all, the heuristic plans at 0.177),
  // so scan below the bisection's answer: up to kScanProbes budgets 0.2% of
  // the store-all peak apart, restarting below each success.
  constexpr int kScanProbes = 8;
  for (int i = 1, probes = 0; probes < kScanProbes; ++i, ++probes) {
    int64_t budget = high - i * 2 * step;
    if (budget < bound.bytes)
      break;
    int64_t peak = probe(budget, solver);
    if (peak >= 0) {
      keep(peak, solver);
      i = 0;
    }
  }
  m.minFeasibleBytes = high;
  if (problem.size() <= options.exactMaxNodes &&
      m.minFeasibleBytes > bound.bytes) {
    SolveOptions exact;
    exact.mode = options.mode;
    exact.timeLimitSeconds = options.exactSeconds;
    // 1% below the minimum, until the MILP finds nothing there.
    for (int round = 0; round < 20; ++round) {
      int64_t below = std::max<int64_t>(
          m.minFeasibleBytes - m.minFeasibleBytes / 100 - 1, bound.bytes);
      if (below >= m.minFeasibleBytes)
        break;
      SolveResult r = solve(problem, below, SolverKind::Exact, exact);
      if (r.ok) {
        m.minFeasibleBytes = r.stats.peakBytes;
        m.solver = "exact";
        m.schedule = std::move(r);
        continue;
      }
      if (r.stats.status == "infeasible") {
        m.provenInfeasibleBytes = below;
        // The MILP may find something between `below` and the minimum:
        // bisect there too, so that the proof is within 1%.
        int64_t lo = below, hi = m.minFeasibleBytes;
        while (hi - lo > std::max<int64_t>(step, hi / 1000)) {
          int64_t mid = lo + (hi - lo) / 2;
          SolveResult s = solve(problem, mid, SolverKind::Exact, exact);
          if (s.ok) {
            hi = s.stats.peakBytes;
            m.solver = "exact";
            m.schedule = std::move(s);
          } else if (s.stats.status == "infeasible") {
            lo = mid;
            m.provenInfeasibleBytes = mid;
          } else {
            break;
          }
        }
        m.minFeasibleBytes = hi;
      }
      break;
    }
  }
  if (m.minFeasibleBytes <= bound.bytes)
    m.gap = "bound-met";
  else if (m.provenInfeasibleBytes >=
           m.minFeasibleBytes - m.minFeasibleBytes / 100 - 1)
    m.gap = "proven"; // by the MILP, or by the bound when it is within 1%
  m.seconds = std::chrono::duration<double>(
                  std::chrono::steady_clock::now() - start)
                  .count();
  return m;
}

} // namespace planner
} // namespace remat
