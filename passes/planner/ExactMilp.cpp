//===- ExactMilp.cpp - Checkmate MILP on CBC ------------------------------===//
//
// The Checkmate formulation (Jain et al., MLSys 2020), stages t = 0..n-1:
//   R[t][i] (i <= t)  binary: node i is computed in stage t; R[t][t] = 1.
//   S[t][i] (i < t)   binary: node i is resident when stage t starts.
//   FREE[t][i][k]     in [0,1]: i (an operand of k, or k itself) is freed
//                     right after k runs in stage t. It equals the product
//                     R[t][k] (1 - S[t+1][i]) prod_{users j>k of i} (1 - R[t][j]),
//                     linearized exactly with one row per factor and one
//                     row FREE >= 1 - sum of hazards, so it can stay
//                     continuous.
//   U[t][k]           memory after k runs in stage t:
//                     U[t][0] = P + sum_i S[t][i] m_i + R[t][0] m_0
//                     U[t][k] = U[t][k-1] + R[t][k] m_k
//                               - sum_{i in ops(k-1) + k-1} m_i FREE[t][i][k-1]
//                     U[t][k] <= budget.
//   S[t+1][i] <= S[t][i] + R[t][i];  R[t][k] <= R[t][i] + S[t][i] (i in ops(k)).
//   Required outputs: S[n-1][i] + R[n-1][i] >= 1; never freed in stage n-1.
//   Objective: min sum R[t][i] cost_i.
// Variables O(n^2 + n e); bytes are scaled so the budget is 1000.
// The solution is decoded from R alone (scheduleFromRecomputeMatrix), which
// frees at least as early as the MILP, and then checked.
//
//===----------------------------------------------------------------------===//
#include "passes/planner/Solvers.h"

#include "CbcEventHandler.hpp"
#include "CbcModel.hpp"
#include "CbcStrategy.hpp"
#include "CoinPackedMatrix.hpp"
#include "OsiClpSolverInterface.hpp"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>

namespace remat {
namespace planner {

namespace {

using Clock = std::chrono::steady_clock;

/// Prints incumbent / bound / gap at most once a second and stops the
/// search at the wall-clock limit.
class ProgressHandler : public CbcEventHandler {
public:
  ProgressHandler(Clock::time_point start, double limit, bool print)
      : start(start), limit(limit), print(print) {}
  CbcAction event(CbcEvent whichEvent) override {
    double elapsed =
        std::chrono::duration<double>(Clock::now() - start).count();
    if (print && elapsed - lastPrint >= 1.0) {
      lastPrint = elapsed;
      double incumbent = model_->getObjValue();
      double bound = model_->getBestPossibleObjValue();
      bool haveIncumbent =
          model_->bestSolution() != nullptr && std::fabs(incumbent) < 1e40;
      if (!(std::fabs(bound) < 1e40))
        bound = NAN;
      double gap = haveIncumbent && std::fabs(incumbent) > 0
                       ? (incumbent - bound) / std::fabs(incumbent)
                       : NAN;
      if (haveIncumbent)
        std::fprintf(stderr,
                     "[exact] %.1fs incumbent %.6g bound %.6g gap %.2f%%\n",
                     elapsed, incumbent, bound, gap * 100);
      else
        std::fprintf(stderr, "[exact] %.1fs no incumbent, bound %.6g\n",
                     elapsed, bound);
    }
    if (elapsed > limit && whichEvent != endSearch)
      return stop;
    return noAction;
  }
  CbcEventHandler *clone() const override {
    return new ProgressHandler(*this);
  }

private:
  Clock::time_point start;
  double limit;
  bool print;
  double lastPrint = 0;
};

struct FreeVar {
  int t, i, k, col;
};

/// Checkmate's two-phase rounding (Jain et al. 2020, section 5): keep value
/// i into stage t when the LP relaxation's S[t][i] >= threshold (random
/// thresholds for randomized rounding), then take the least recomputation R
/// that produces each stage's node and the values to keep. Frees follow
/// scheduleFromRecomputeMatrix; the caller checks the result.
EventList roundResident(const Problem &problem, const UseInfo &uses,
                        const std::vector<std::vector<double>> &residentLp,
                        double threshold, std::mt19937 *rng) {
  int n = problem.size();
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  auto keep = [&](int t, int i) {
    if (t >= n)
      return uses.required[i] != 0;
    if (!problem.nodes[i].recomputable)
      return i < t && t <= uses.pinnedUntil[i];
    double cut = rng ? uniform(*rng) : threshold;
    return residentLp[t][i] >= cut && residentLp[t][i] > 1e-6;
  };
  std::vector<std::vector<char>> r(n, std::vector<char>(n, 0));
  std::vector<char> resident(n, 0), next(n, 0), visited(n, 0);
  std::vector<int> stack;
  for (int t = 0; t < n; ++t) {
    for (int i = 0; i < n; ++i)
      next[i] = i <= t && keep(t + 1, i);
    std::fill(visited.begin(), visited.end(), 0);
    stack.clear();
    auto want = [&](int v) {
      if (!resident[v] && !visited[v]) {
        visited[v] = 1;
        stack.push_back(v);
      }
    };
    want(t);
    for (int i = 0; i < t; ++i)
      if (next[i])
        want(i);
    while (!stack.empty()) {
      int v = stack.back();
      stack.pop_back();
      r[t][v] = 1;
      for (int op : problem.nodes[v].operands)
        want(op);
    }
    resident = next;
  }
  return scheduleFromRecomputeMatrix(problem, r);
}

} // namespace

SolverOutput solveExact(const Problem &problem, int64_t budgetBytes,
                        const EventList &warmStart,
                        const SolveOptions &options) {
  auto start = Clock::now();
  SolverOutput out;
  int n = problem.size();
  if (n == 0) {
    out.found = true;
    out.status = "optimal";
    return out;
  }
  if (n > 400) {
    out.status = "not-applicable";
    out.message = "the MILP has O(n^2) variables; refused above 400 nodes";
    return out;
  }
  UseInfo uses(problem);
  const double unit = std::max<double>(1.0, double(budgetBytes) / 1000.0);
  auto scaled = [&](int64_t bytes) { return double(bytes) / unit; };

  // Columns.
  std::vector<double> colLower, colUpper, objective;
  std::vector<char> isInteger;
  auto addColumn = [&](double lo, double hi, double obj, bool integer) {
    colLower.push_back(lo);
    colUpper.push_back(hi);
    objective.push_back(obj);
    isInteger.push_back(integer);
    return static_cast<int>(colLower.size()) - 1;
  };
  std::vector<std::vector<int>> rCol(n, std::vector<int>(n, -1));
  std::vector<std::vector<int>> sCol(n, std::vector<int>(n, -1));
  std::vector<std::vector<int>> uCol(n, std::vector<int>(n, -1));
  for (int t = 0; t < n; ++t)
    for (int i = 0; i <= t; ++i) {
      bool allowed = i == t || problem.nodes[i].recomputable;
      double lo = i == t ? 1.0 : 0.0;
      rCol[t][i] = addColumn(lo, allowed ? 1.0 : 0.0, problem.nodes[i].cost,
                             true);
    }
  for (int t = 1; t < n; ++t)
    for (int i = 0; i < t; ++i)
      sCol[t][i] = addColumn(0.0, 1.0, 0.0, true);
  double budgetScaled = scaled(budgetBytes);
  for (int t = 0; t < n; ++t)
    for (int k = 0; k <= t; ++k)
      uCol[t][k] = addColumn(0.0, budgetScaled, 0.0, false);
  // FREE[t][i][k] for i in ops(k) + {k}, k <= t.
  std::vector<FreeVar> frees;
  // freesAfter[t][k]: indices into `frees`.
  std::vector<std::vector<std::vector<int>>> freesAfter(
      n, std::vector<std::vector<int>>());
  for (int t = 0; t < n; ++t) {
    freesAfter[t].assign(t + 1, {});
    for (int k = 0; k <= t; ++k) {
      std::vector<int> candidates = problem.nodes[k].operands;
      candidates.push_back(k);
      for (int i : candidates) {
        if (t == n - 1 && uses.required[i])
          continue; // Never freed: it must be live at the end.
        freesAfter[t][k].push_back(static_cast<int>(frees.size()));
        frees.push_back({t, i, k, addColumn(0.0, 1.0, 0.0, false)});
      }
    }
  }
  int numColumns = static_cast<int>(colLower.size());

  // Rows as triplets.
  std::vector<int> rowIndex, colIndex;
  std::vector<double> elements, rowLower, rowUpper;
  const double inf = COIN_DBL_MAX;
  auto addRow = [&](const std::vector<std::pair<int, double>> &terms,
                    double lo, double hi) {
    int row = static_cast<int>(rowLower.size());
    for (const auto &term : terms) {
      rowIndex.push_back(row);
      colIndex.push_back(term.first);
      elements.push_back(term.second);
    }
    rowLower.push_back(lo);
    rowUpper.push_back(hi);
  };
  // S[t+1][i] <= S[t][i] + R[t][i].
  for (int t = 0; t + 1 < n; ++t)
    for (int i = 0; i <= t; ++i) {
      std::vector<std::pair<int, double>> terms{{sCol[t + 1][i], 1.0},
                                                {rCol[t][i], -1.0}};
      if (sCol[t][i] >= 0)
        terms.push_back({sCol[t][i], -1.0});
      addRow(terms, -inf, 0.0);
    }
  // R[t][k] <= R[t][i] + S[t][i].
  for (int t = 0; t < n; ++t)
    for (int k = 0; k <= t; ++k)
      for (int i : problem.nodes[k].operands) {
        std::vector<std::pair<int, double>> terms{{rCol[t][k], 1.0},
                                                  {rCol[t][i], -1.0}};
        if (sCol[t][i] >= 0)
          terms.push_back({sCol[t][i], -1.0});
        addRow(terms, -inf, 0.0);
      }
  // Required outputs live at the end.
  for (int i : problem.requiredOutputs) {
    std::vector<std::pair<int, double>> terms{{rCol[n - 1][i], 1.0}};
    if (sCol[n - 1][i] >= 0)
      terms.push_back({sCol[n - 1][i], 1.0});
    addRow(terms, 1.0, inf);
  }
  // FREE linearization.
  for (const FreeVar &f : frees) {
    // Hazards: (1 - R[t][k]), S[t+1][i], R[t][j] for users j > k, j <= t.
    std::vector<std::pair<int, double>> sum{{f.col, 1.0}, {rCol[f.t][f.k], -1.0}};
    // FREE <= R[t][k]
    addRow({{f.col, 1.0}, {rCol[f.t][f.k], -1.0}}, -inf, 0.0);
    if (f.t + 1 < n) {
      addRow({{f.col, 1.0}, {sCol[f.t + 1][f.i], 1.0}}, -inf, 1.0);
      sum.push_back({sCol[f.t + 1][f.i], 1.0});
    }
    for (int j : uses.consumers[f.i]) {
      if (j <= f.k || j > f.t)
        continue;
      addRow({{f.col, 1.0}, {rCol[f.t][j], 1.0}}, -inf, 1.0);
      sum.push_back({rCol[f.t][j], 1.0});
    }
    // FREE >= 1 - hazards  <=>  FREE - R[t][k] + S + sum R[t][j] >= 0.
    addRow(sum, 0.0, inf);
  }
  // Memory.
  for (int t = 0; t < n; ++t) {
    std::vector<std::pair<int, double>> terms{{uCol[t][0], 1.0}};
    for (int i = 0; i < t; ++i)
      terms.push_back({sCol[t][i], -scaled(problem.nodes[i].bytes)});
    terms.push_back({rCol[t][0], -scaled(problem.nodes[0].bytes)});
    double persistent = scaled(problem.persistentBytes);
    addRow(terms, persistent, persistent);
    for (int k = 1; k <= t; ++k) {
      std::vector<std::pair<int, double>> step{
          {uCol[t][k], 1.0},
          {uCol[t][k - 1], -1.0},
          {rCol[t][k], -scaled(problem.nodes[k].bytes)}};
      for (int index : freesAfter[t][k - 1])
        step.push_back(
            {frees[index].col, scaled(problem.nodes[frees[index].i].bytes)});
      addRow(step, 0.0, 0.0);
    }
  }

  CoinPackedMatrix matrix(true, rowIndex.data(), colIndex.data(),
                          elements.data(),
                          static_cast<CoinBigIndex>(elements.size()));
  matrix.setDimensions(static_cast<int>(rowLower.size()), numColumns);
  OsiClpSolverInterface solver;
  solver.loadProblem(matrix, colLower.data(), colUpper.data(),
                     objective.data(), rowLower.data(), rowUpper.data());
  for (int c = 0; c < numColumns; ++c)
    if (isInteger[c])
      solver.setInteger(c);
  solver.messageHandler()->setLogLevel(options.verbose ? 1 : 0);

  CbcModel model(solver);
  model.setLogLevel(options.verbose ? 1 : 0);
  model.messageHandler()->setLogLevel(options.verbose ? 1 : 0);
  model.setUseElapsedTime(true);
  double elapsedSetup =
      std::chrono::duration<double>(Clock::now() - start).count();
  double limit = std::max(0.1, options.timeLimitSeconds - elapsedSetup);
  model.setMaximumSeconds(limit);
  // Stop when optimal within 0.01% (what tables print as "optimal").
  model.setAllowableGap(1e-9);
  model.setAllowableFractionGap(1e-4);
  // Cuts pay off on small models; on large ones the root cut loop alone
  // can overrun the time limit (CBC checks the clock between nodes), so
  // they get a few root passes only.
  CbcStrategyDefault strategy(1, 5, 5);
  model.setStrategy(strategy);
  if (n > 100)
    model.setMaximumCutPassesAtRoot(2);
  // The root LP of a large model can alone exceed the limit; Clp honours
  // its own limit (the search then keeps the warm-start incumbent).
  if (auto *clp = dynamic_cast<OsiClpSolverInterface *>(model.solver()))
    clp->getModelPtr()->setMaximumSeconds(limit);
  if (options.progress)
    std::fprintf(stderr,
                 "[exact] %d nodes: %d columns, %zu rows, built in %.1fs\n",
                 n, numColumns, rowLower.size(), elapsedSetup);
  // The LP relaxation first: its value is a bound even if the search never
  // starts, and its S drives the rounding heuristic below.
  model.solver()->initialSolve();
  bool lpSolved = model.solver()->isProvenOptimal();
  double lpBound = lpSolved ? model.solver()->getObjValue() : NAN;
  if (options.progress)
    std::fprintf(stderr, "[exact] LP relaxation %s in %.1fs: %.6g\n",
                 lpSolved ? "solved" : "not solved",
                 std::chrono::duration<double>(Clock::now() - start).count(),
                 lpBound);
  ProgressHandler handler(start, options.timeLimitSeconds, options.progress);
  model.passInEventHandler(&handler);

  // Warm start: the cheapest of the given schedule and the LP-rounded
  // ones, as R with the least S (see the header comment).
  EventList bestWarm;
  double bestWarmCost = 0;
  auto offer = [&](const EventList &candidate) {
    CheckmateSolution parsed;
    if (candidate.events.empty() ||
        !CheckmateSolution::fromSchedule(problem, candidate, parsed))
      return;
    EventList minimal = scheduleFromRecomputeMatrix(problem, parsed.recompute);
    CheckResult check =
        checkSchedule(problem, minimal, CountingMode::Checkmate);
    if (!check.ok || check.peakBytes > budgetBytes)
      return;
    if (bestWarm.events.empty() || check.totalCost < bestWarmCost) {
      bestWarm = std::move(minimal);
      bestWarmCost = check.totalCost;
    }
  };
  offer(warmStart);
  if (lpSolved) {
    const double *lp = model.solver()->getColSolution();
    std::vector<std::vector<double>> residentLp(
        n + 1, std::vector<double>(n, 0.0));
    for (int t = 1; t < n; ++t)
      for (int i = 0; i < t; ++i)
        residentLp[t][i] = lp[sCol[t][i]];
    for (double threshold : {0.01, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7,
                             0.8, 0.9, 0.99}) {
      offer(roundResident(problem, uses, residentLp, threshold, nullptr));
    }
    std::mt19937 rng(12345);
    for (int sample = 0; sample < 50; ++sample) {
      if (std::chrono::duration<double>(Clock::now() - start).count() >
          options.timeLimitSeconds / 2)
        break;
      offer(roundResident(problem, uses, residentLp, 0.0, &rng));
    }
  }
  if (options.progress && !bestWarm.events.empty())
    std::fprintf(stderr, "[exact] warm start cost %.6g\n", bestWarmCost);
  CheckmateSolution tight;
  if (!bestWarm.events.empty() &&
      CheckmateSolution::fromSchedule(problem, bestWarm, tight)) {
    std::vector<double> values(numColumns, 0.0);
    double cost = 0;
    for (int t = 0; t < n; ++t)
      for (int i = 0; i <= t; ++i)
        if (tight.recompute[t][i]) {
          values[rCol[t][i]] = 1.0;
          cost += problem.nodes[i].cost;
        }
    for (int t = 1; t < n; ++t)
      for (int i = 0; i < t; ++i)
        values[sCol[t][i]] = tight.resident[t][i];
    auto sNext = [&](int t, int i) {
      return t + 1 < n ? tight.resident[t + 1][i] != 0
                       : uses.required[i] != 0;
    };
    for (const FreeVar &f : frees) {
      bool freed = tight.recompute[f.t][f.k] && !sNext(f.t, f.i);
      for (int j : uses.consumers[f.i])
        if (j > f.k && j <= f.t && tight.recompute[f.t][j])
          freed = false;
      values[f.col] = freed ? 1.0 : 0.0;
    }
    bool fits = true;
    for (int t = 0; t < n; ++t) {
      double memory = scaled(problem.persistentBytes);
      for (int i = 0; i < t; ++i)
        memory += tight.resident[t][i] * scaled(problem.nodes[i].bytes);
      memory += tight.recompute[t][0] * scaled(problem.nodes[0].bytes);
      values[uCol[t][0]] = memory;
      for (int k = 1; k <= t; ++k) {
        memory += tight.recompute[t][k] * scaled(problem.nodes[k].bytes);
        for (int index : freesAfter[t][k - 1])
          memory -= values[frees[index].col] *
                    scaled(problem.nodes[frees[index].i].bytes);
        values[uCol[t][k]] = memory;
      }
      for (int k = 0; k <= t; ++k)
        fits &= values[uCol[t][k]] <= budgetScaled + 1e-7;
    }
    if (fits)
      model.setBestSolution(values.data(), numColumns, cost, true);
  }

  // CBC's clock starts here: give it what is left.
  double left = options.timeLimitSeconds -
                std::chrono::duration<double>(Clock::now() - start).count();
  model.setMaximumSeconds(std::max(0.1, left));
  if (auto *clp = dynamic_cast<OsiClpSolverInterface *>(model.solver()))
    clp->getModelPtr()->setMaximumSeconds(std::max(0.1, left));
  model.branchAndBound();

  // CBC reports +-1e50 (or worse) when the root LP did not finish.
  double bound = model.getBestPossibleObjValue();
  out.bestBound = std::fabs(bound) < 1e40 ? bound : NAN;
  const double *best = model.bestSolution();
  // CBC calls the model infeasible when its root solve stops at the time
  // limit too: only a search that ended before the limit proves it, and
  // never against a warm start that fits.
  bool infeasible =
      model.isProvenInfeasible() && bestWarm.events.empty() &&
      !model.isSecondsLimitReached() &&
      std::chrono::duration<double>(Clock::now() - start).count() <
          options.timeLimitSeconds;
  if (!best && !infeasible && !bestWarm.events.empty()) {
    // The search found nothing better than the warm start, which CBC may
    // not have taken: that is the incumbent.
    out.schedule = bestWarm;
    out.found = true;
    out.status = "time-limit";
    out.bestBound = lpBound;
    return out;
  }
  if (!best) {
    out.status = infeasible ? "infeasible" : "time-limit";
    out.message = infeasible ? "the MILP is infeasible at this budget"
                             : "no MILP solution within the time limit";
    return out;
  }
  std::vector<std::vector<char>> r(n, std::vector<char>(n, 0));
  for (int t = 0; t < n; ++t)
    for (int i = 0; i <= t; ++i)
      r[t][i] = best[rCol[t][i]] > 0.5;
  out.schedule = scheduleFromRecomputeMatrix(problem, r);
  out.found = true;
  out.status = model.isProvenOptimal() ? "optimal" : "time-limit";
  double incumbent = model.getObjValue();
  bool haveIncumbent = std::fabs(incumbent) < 1e40;
  // A bound above the incumbent is not a bound on it (the LP stopped).
  if (!haveIncumbent ||
      out.bestBound > incumbent + 1e-6 * (1 + std::fabs(incumbent)))
    out.bestBound = NAN;
  if (model.isProvenOptimal() && haveIncumbent)
    out.bestBound = incumbent;
  // The LP relaxation's value bounds the optimum whatever the search did.
  if (lpSolved && !(out.bestBound >= lpBound))
    out.bestBound = lpBound;
  return out;
}

} // namespace planner
} // namespace remat
