//===- Solve.cpp - The solve() entry point and the auto strategy ----------===//
#include "passes/planner/ChainDp.h"
#include "passes/planner/Reorder.h"
#include "passes/planner/Solvers.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <sstream>

namespace remat {
namespace planner {

const char *solverKindName(SolverKind kind) {
  switch (kind) {
  case SolverKind::Auto:
    return "auto";
  case SolverKind::Exact:
    return "exact";
  case SolverKind::ChainDp:
    return "dp";
  case SolverKind::Heuristic:
    return "heuristic";
  case SolverKind::StoreAll:
    return "store-all";
  case SolverKind::PerBlock:
    return "per-block";
  case SolverKind::SqrtN:
    return "sqrt";
  }
  return "unknown";
}

bool parseSolverKind(const std::string &text, SolverKind &kind) {
  struct Entry {
    const char *name;
    SolverKind kind;
  };
  static const Entry entries[] = {
      {"auto", SolverKind::Auto},          {"exact", SolverKind::Exact},
      {"milp", SolverKind::Exact},         {"dp", SolverKind::ChainDp},
      {"chain-dp", SolverKind::ChainDp},   {"heuristic", SolverKind::Heuristic},
      {"store-all", SolverKind::StoreAll}, {"storeall", SolverKind::StoreAll},
      {"per-block", SolverKind::PerBlock}, {"perblock", SolverKind::PerBlock},
      {"sqrt", SolverKind::SqrtN},         {"sqrtn", SolverKind::SqrtN}};
  for (const Entry &entry : entries)
    if (text == entry.name) {
      kind = entry.kind;
      return true;
    }
  return false;
}

int64_t storeAllPeak(const Problem &problem) {
  SolverOutput out = solveStoreAll(problem);
  return checkSchedule(problem, out.schedule).peakBytes;
}

namespace {

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

/// Checks one solver's output and fills a SolveResult.
SolveResult finish(const Problem &problem, int64_t budget,
                   const SolveOptions &options, const char *name,
                   SolverOutput output, Clock::time_point start) {
  SolveResult result;
  result.stats.solverName = name;
  result.stats.baseCost = problem.totalCost();
  result.stats.bestBound = output.bestBound;
  result.stats.status = output.status.empty() ? "failed" : output.status;
  if (!output.found) {
    result.error = std::string(name) + ": " +
                   (output.message.empty() ? "no schedule found"
                                           : output.message);
    result.stats.solveSeconds = secondsSince(start);
    return result;
  }
  if (options.mode == CountingMode::Event)
    output.schedule = eliminateDeadComputes(problem, output.schedule);
  CheckResult check = checkSchedule(problem, output.schedule, options.mode);
  result.stats.solveSeconds = secondsSince(start);
  if (!check.ok) {
    result.error = std::string(name) +
                   " produced a schedule the checker rejects: " + check.error;
    result.stats.status = "failed";
    return result;
  }
  result.stats.peakBytes = check.peakBytes;
  result.stats.cost = check.totalCost;
  double base = result.stats.baseCost;
  result.stats.overhead = base > 0 ? (check.totalCost - base) / base : 0.0;
  double bound = base;
  if (output.bestBound == output.bestBound) // not NaN
    bound = std::max(bound, output.bestBound);
  if (check.totalCost <= base * (1 + 1e-12)) {
    result.stats.provenGap = 0.0;
  } else if (output.bestBound == output.bestBound && check.totalCost > 0) {
    result.stats.provenGap =
        std::max(0.0, (check.totalCost - bound) / check.totalCost);
  }
  if (result.stats.provenGap <= kOptimalGap)
    result.stats.status = "optimal";
  result.schedule = std::move(output.schedule);
  if (check.peakBytes > budget) {
    std::ostringstream os;
    os << name << ": peak " << check.peakBytes << " bytes exceeds the budget "
       << budget << " bytes";
    result.error = os.str();
    result.stats.status = "over-budget";
    return result;
  }
  result.ok = true;
  return result;
}

SolveResult solveOneQuietly(const Problem &problem, int64_t budget,
                            SolverKind kind, const SolveOptions &options,
                            const EventList &warm, Clock::time_point start) {
  const char *name = solverKindName(kind);
  switch (kind) {
  case SolverKind::StoreAll:
    return finish(problem, budget, options, name, solveStoreAll(problem),
                  start);
  case SolverKind::PerBlock:
    return finish(problem, budget, options, name, solvePerBlock(problem),
                  start);
  case SolverKind::SqrtN:
    return finish(problem, budget, options, name, solveSqrtN(problem), start);
  case SolverKind::Heuristic:
    return finish(problem, budget, options, name,
                  solveHeuristic(problem, budget,
                                 std::max(kHeuristicMinSeconds,
                                          options.timeLimitSeconds),
                                 options.mode,
                                 options.heuristicLadder &&
                                         options.mode == CountingMode::Checkmate
                                     ? kHeuristicLadderSteps
                                     : 0),
                  start);
  case SolverKind::ChainDp:
    return finish(problem, budget, options, name,
                  solveChainDpProblem(problem, budget, options.mode,
                                      options.dpMemorySlots,
                                      std::min(5.0, options.timeLimitSeconds / 4)),
                  start);
  case SolverKind::Exact:
    return finish(problem, budget, options, name,
                  solveExact(problem, budget, warm, options), start);
  case SolverKind::Auto:
    break;
  }
  return SolveResult();
}

/// One progress line for a solver's result: name, outcome, time.
void printProgress(const SolveOptions &options, const SolveResult &result,
                   double seconds) {
  if (!options.progress)
    return;
  const SolveStats &stats = result.stats;
  std::ostringstream os;
  os << "[planner] " << options.progressLabel << stats.solverName << ": "
     << stats.status;
  if (result.ok || stats.peakBytes > 0)
    os << ", peak " << stats.peakBytes << " bytes";
  if (result.ok) {
    os << ", overhead " << stats.overhead * 100 << "%";
    if (!std::isnan(stats.provenGap))
      os << ", proven gap " << stats.provenGap * 100 << "%";
  } else if (!result.error.empty() && stats.peakBytes == 0) {
    os << " (" << result.error << ")";
  }
  os << ", " << seconds << " s\n";
  std::fputs(os.str().c_str(), stderr);
}

SolveResult solveOne(const Problem &problem, int64_t budget, SolverKind kind,
                     const SolveOptions &options, const EventList &warm,
                     Clock::time_point start) {
  auto solverStart = Clock::now();
  SolveResult result =
      solveOneQuietly(problem, budget, kind, options, warm, start);
  printProgress(options, result, secondsSince(solverStart));
  return result;
}

bool better(const SolveResult &candidate, const SolveResult &best) {
  if (!candidate.ok)
    return false;
  if (!best.ok)
    return true;
  return candidate.stats.cost < best.stats.cost;
}

SolveResult solveInOrder(const Problem &input, int64_t budgetBytes,
                         SolverKind kind, const SolveOptions &options) {
  auto start = Clock::now();
  SolveResult result;
  result.stats.solverName = solverKindName(kind);
  std::string invalid = input.validate();
  if (!invalid.empty()) {
    result.error = "invalid problem: " + invalid;
    result.stats.status = "failed";
    return result;
  }
  Problem problem = input;
  problem.normalize();
  LowerBound bound = computeLowerBound(problem);
  result.minimumBytes = bound.bytes;
  if (budgetBytes < bound.bytes) {
    std::ostringstream os;
    os << "budget " << budgetBytes
       << " bytes is below the lower bound on any schedule's peak, " << bound.bytes
       << " bytes (" << bound.describe(problem) << ")";
    result.error = os.str();
    result.stats.status = "infeasible";
    result.stats.baseCost = problem.totalCost();
    printProgress(options, result, secondsSince(start));
    return result;
  }
  if (kind == SolverKind::Exact) {
    // Warm start from the better of store-all and the heuristic.
    SolveResult warm = solveOne(problem, budgetBytes, SolverKind::StoreAll,
                                options, EventList(), start);
    if (!warm.ok)
      warm = solveOne(problem, budgetBytes, SolverKind::Heuristic, options,
                      EventList(), start);
    SolveOptions exactOptions = options;
    exactOptions.timeLimitSeconds =
        std::max(0.1, options.timeLimitSeconds - secondsSince(start));
    result = solveOne(problem, budgetBytes, kind, exactOptions,
                      warm.ok ? warm.schedule : EventList(), start);
    result.minimumBytes = bound.bytes;
    return result;
  }
  if (kind != SolverKind::Auto) {
    result = solveOne(problem, budgetBytes, kind, options, EventList(), start);
    result.minimumBytes = bound.bytes;
    return result;
  }

  // Auto: cheap solvers first; the MILP last, warm-started from the best.
  SolveResult best;
  std::vector<SolveResult> runnersUp;
  std::string errors;
  auto consider = [&](SolveResult candidate) {
    if (!candidate.ok) {
      errors += (errors.empty() ? "" : "; ") + candidate.error;
      return;
    }
    if (better(candidate, best))
      std::swap(candidate, best);
    if (candidate.ok)
      runnersUp.push_back(std::move(candidate));
  };
  bool provenInfeasible = false;
  consider(solveOne(problem, budgetBytes, SolverKind::StoreAll, options,
                    EventList(), start));
  if (!(best.ok && best.stats.provenGap == 0.0)) {
    for (SolverKind baseline :
         {SolverKind::PerBlock, SolverKind::SqrtN, SolverKind::Heuristic})
      consider(solveOne(problem, budgetBytes, baseline, options, EventList(),
                        start));
    // The DP's memory bisection: where the MILP will run (small graphs)
    // the time is there anyway, so it gets its usual share; on larger
    // graphs a short leash (at least one run) keeps auto fast, at some cost
    // at tight budgets.
    bool exactRuns = problem.size() <= options.exactMaxNodes;
    SolveOptions dpOptions = options;
    if (!exactRuns)
      dpOptions.timeLimitSeconds = std::min(2.0, options.timeLimitSeconds / 4);
    auto runDp = [&] {
      consider(solveOne(problem, budgetBytes, SolverKind::ChainDp, dpOptions,
                        EventList(), start));
    };
    // The MILP runs on the time it is given: up to exactMaxNodes nodes its
    // root LP takes well under a second (FCN8's 73 nodes: about 0.5 s), and
    // its bound alone proves a gap; CBC proves small graphs (VGG16) optimal
    // in a fraction of a second.
    double exactBound = std::numeric_limits<double>::quiet_NaN();
    auto runExact = [&](double seconds) {
      if (seconds < 0.05)
        return;
      SolveOptions exactOptions = options;
      exactOptions.timeLimitSeconds = seconds;
      SolveResult exact =
          solveOne(problem, budgetBytes, SolverKind::Exact, exactOptions,
                   best.ok ? best.schedule : EventList(), start);
      provenInfeasible = exact.stats.status == "infeasible";
      exactBound = exact.stats.bestBound;
      consider(std::move(exact));
    };
    // Below kDpBeforeExactSeconds the DP's first runs (0.2-0.5 s here) and
    // the MILP's root LP do not both fit: the MILP goes first, keeping the
    // DP's share (min(5 s, limit/4)) for the DP after it. From there on the
    // DP goes first and warm-starts the MILP (which then proves SegNet at
    // 0.8 and 0.7 optimal within 20 s).
    constexpr double kDpBeforeExactSeconds = 5.0;
    if (exactRuns && options.timeLimitSeconds < kDpBeforeExactSeconds) {
      runExact(options.timeLimitSeconds - secondsSince(start) -
               std::min(5.0, options.timeLimitSeconds / 4));
      runDp();
    } else {
      runDp();
      if (exactRuns)
        runExact(options.timeLimitSeconds - secondsSince(start));
    }
    // The MILP's bound holds for every schedule in this order: the best,
    // whichever solver found it, and the runners-up (which solve() may
    // pick across orders).
    auto applyBound = [&](SolveResult &r) {
      if (r.ok && exactBound == exactBound && r.stats.cost > 0 &&
          r.stats.provenGap != 0.0) {
        double lower = std::max(exactBound, r.stats.baseCost);
        r.stats.provenGap =
            std::max(0.0, (r.stats.cost - lower) / r.stats.cost);
        r.stats.bestBound = exactBound;
      }
    };
    applyBound(best);
    for (SolveResult &other : runnersUp)
      applyBound(other);
  }
  if (!best.ok) {
    result.error = "no solver found a schedule within the budget: " + errors;
    // "infeasible": the MILP proved that no schedule in this order fits.
    result.stats.status = provenInfeasible ? "infeasible" : "failed";
    result.stats.baseCost = problem.totalCost();
    result.stats.solveSeconds = secondsSince(start);
    printProgress(options, result, result.stats.solveSeconds);
    return result;
  }
  best.stats.solverName = "auto(" + best.stats.solverName + ")";
  if (best.stats.provenGap <= kOptimalGap)
    best.stats.status = "optimal";
  best.stats.solveSeconds = secondsSince(start);
  best.minimumBytes = bound.bytes;
  std::stable_sort(runnersUp.begin(), runnersUp.end(),
                   [](const SolveResult &a, const SolveResult &b) {
                     return a.stats.cost < b.stats.cost;
                   });
  for (SolveResult &other : runnersUp) {
    other.stats.solverName = "auto(" + other.stats.solverName + ")";
    if (other.stats.provenGap <= kOptimalGap)
      other.stats.status = "optimal";
    other.minimumBytes = bound.bytes;
  }
  best.runnersUp = std::move(runnersUp);
  printProgress(options, best, best.stats.solveSeconds);
  return best;
}

} // namespace

SolveResult solve(const Problem &problem, int64_t budgetBytes, SolverKind kind,
                  const SolveOptions &options) {
  if (!options.reorder)
    return solveInOrder(problem, budgetBytes, kind, options);
  auto start = Clock::now();
  SolveOptions inner = options;
  inner.reorder = false;
  std::vector<NodeOrder> orders;
  if (problem.validate().empty()) {
    Problem normalized = problem;
    normalized.normalize();
    orders = candidateOrders(normalized);
  }
  // The given order gets half the time, or under auto three quarters when
  // the MILP runs there only (41 to exactMaxNodes nodes: the other orders
  // run the fast solvers); the others share the rest.
  bool exactInGivenOnly = kind == SolverKind::Auto && problem.size() > 40 &&
                          problem.size() <= options.exactMaxNodes;
  double share = orders.empty()       ? options.timeLimitSeconds
                 : exactInGivenOnly ? options.timeLimitSeconds * 0.75
                                    : options.timeLimitSeconds / 2;
  inner.timeLimitSeconds = share;
  SolveResult given = solveInOrder(problem, budgetBytes, kind, inner);
  int64_t minimum = given.minimumBytes;
  // Why nothing fits, when nothing does: the given order's reason, the
  // other orders' names, and any schedule that did not replay (a bug).
  std::string otherOrders, replayErrors;
  // Every checked schedule of every order, best first at the end.
  std::vector<SolveResult> pool;
  auto collect = [&](SolveResult &result, const NodeOrder *order) {
    std::vector<SolveResult> all;
    if (result.ok) {
      std::vector<SolveResult> others = std::move(result.runnersUp);
      result.runnersUp.clear();
      all.push_back(std::move(result));
      for (SolveResult &other : others)
        all.push_back(std::move(other));
    }
    for (SolveResult &r : all) {
      if (order) {
        r.schedule = unpermuteSchedule(r.schedule, order->order);
        // An independent replay in the original numbering (any order).
        CheckResult check =
            checkSchedule(problem, r.schedule, CountingMode::Event);
        if (!check.ok || check.peakBytes > budgetBytes) {
          replayErrors += "; " + order->name +
                          " order: the unpermuted schedule does not replay: " +
                          check.error;
          continue;
        }
        r.stats.order = order->name;
        r.stats.nodeOrder = order->order;
      }
      pool.push_back(std::move(r));
    }
  };
  SolveResult failed; // the given order's outcome when nothing fits
  if (!given.ok)
    failed = given;
  // Proven infeasible in every order tried (lower bound or MILP).
  bool allInfeasible = !given.ok && given.stats.status == "infeasible";
  collect(given, nullptr);
  for (size_t i = 0; i < orders.size(); ++i) {
    const NodeOrder &order = orders[i];
    double left = options.timeLimitSeconds - secondsSince(start);
    SolveOptions other = inner;
    other.timeLimitSeconds =
        std::max(0.1, left / static_cast<double>(orders.size() - i));
    // The MILP runs in the other orders only on small graphs, where it
    // takes a fraction of a second (and can prove a budget infeasible).
    if (kind == SolverKind::Auto && problem.size() > 40)
      other.exactMaxNodes = -1;
    other.progressLabel = options.progressLabel + order.name + " order: ";
    SolveResult candidate = solveInOrder(permuteProblem(problem, order.order),
                                         budgetBytes, kind, other);
    minimum = std::min(minimum, candidate.minimumBytes);
    allInfeasible = allInfeasible && !candidate.ok &&
                    candidate.stats.status == "infeasible";
    otherOrders += (otherOrders.empty() ? "" : ", ") + order.name;
    collect(candidate, &order);
  }
  if (pool.empty()) {
    if (!otherOrders.empty())
      failed.error += " (no schedule in the orders " + otherOrders +
                      " either)";
    failed.error += replayErrors;
    failed.stats.status = allInfeasible ? "infeasible" : "failed";
    failed.minimumBytes = minimum;
    failed.stats.solveSeconds = secondsSince(start);
    return failed;
  }
  // Cheapest first; ties: the lower peak, then the given order (stable).
  std::stable_sort(pool.begin(), pool.end(),
                   [](const SolveResult &a, const SolveResult &b) {
                     if (a.stats.cost != b.stats.cost)
                       return a.stats.cost < b.stats.cost;
                     return a.stats.peakBytes < b.stats.peakBytes;
                   });
  SolveResult best = std::move(pool.front());
  for (size_t i = 1; i < pool.size(); ++i) {
    pool[i].minimumBytes = minimum;
    best.runnersUp.push_back(std::move(pool[i]));
  }
  best.minimumBytes = minimum;
  best.stats.solveSeconds = secondsSince(start);
  return best;
}

} // namespace planner
} // namespace remat
