//===- ChainSearch.cpp - The chain DP as a planner solver -----------------===//
#include "passes/planner/ChainDp.h"
#include "passes/planner/ChainRanges.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <string>

namespace remat {
namespace planner {

using detail::indexRanges;
using detail::RangeIndex;

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
        EventList schedule = chainStrategySchedule(problem, mapping, dp.ops);
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
