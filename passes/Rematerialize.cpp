//===- Rematerialize.cpp - -remat-rematerialize{budget-bytes=...} ---------===//
//
// Applies a budgeted rematerialization schedule to @train_step. Algorithm:
//   1. extract @train_step (in its current, scheduled order) as a
//      TrainStep and turn it into a planner::Problem: one node per op
//      (output bytes: its results, aligned, none for in-place updates;
//      cost: the modeled seconds), arguments as persistent bytes, forward
//      ops recomputable, the loss and the updates required outputs;
//   2. solve it under the budget with the chosen solver (every schedule
//      goes through the planner's checker); without a budget (0), or when
//      it fits, take the least-memory order that recomputes nothing
//      (leastMemoryWithoutRecompute);
//   3. replay the schedule's compute events on the plain step
//      (memory::applyComputeOrder: recomputations become copies, in-place
//      updates move after the last reader of their parameter), then compute
//      the real liveness (with buffer reuse) and arena layout; if the arena
//      exceeds the budget (fragmentation, or updates moved later), try
//      auto's runners-up, then lower planner targets (attemptPlan);
//   4. rewrite the IR in that order: first computes move, recomputations
//      are clones tagged `remat.recompute`, every op reads the latest copy
//      of each operand. The outcome (solver, bounds, overhead) is returned
//      typed (RematOutcome); the pass also prints it as the module
//      attribute `remat.plan`.
// Run it after -remat-schedule and never run CSE after it: CSE would merge
// the clones back (the tag keeps MLIR's CSE from doing so).
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"
#include "passes/Rematerialize.h"
#include "passes/TrainStep.h"
#include "passes/planner/Reorder.h"
#include "ops/OpTable.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>
#include <optional>
#include <set>
#include <tuple>

namespace remat {
#define GEN_PASS_DEF_REMATERIALIZEPASS
#include "passes/Passes.h.inc"

planner::Problem buildPlannerProblem(const TrainStep &step,
                                     int64_t alignment,
                                     bool shareLossGradient) {
  const memory::StepGraph &graph = step.graph;
  planner::Problem problem;
  for (const memory::StepValue &v : graph.values)
    if (v.isArgument())
      problem.persistentBytes += memory::alignUp(v.bytes, alignment);
  // Block ids in order of first appearance of graph::kBlockAttr.
  std::map<std::string, int> blockIds;
  // Backward and optimizer ops run after the loss (StepGraph's rule); the
  // loss stays live to the end anyway, so an edge from it costs nothing.
  int lossOp = -1;
  if (!graph.outputs.empty() && !graph.values[graph.outputs[0]].isArgument())
    lossOp = graph.values[graph.outputs[0]].producer;
  // The value whose bytes op k's one result may take when it dies there
  // (StepGraph's reusableOperand: an operand of the result's size, not an
  // argument), or -1.
  auto reusable = [&](size_t k) {
    const memory::StepOp &op = graph.ops[k];
    if (op.reusableOperand < 0 || op.results.size() != 1)
      return -1;
    int u = op.operands[op.reusableOperand];
    const memory::StepValue &in = graph.values[u];
    return !in.isArgument() &&
                   memory::alignUp(in.bytes, alignment) ==
                       memory::alignUp(graph.values[op.results[0]].bytes,
                                       alignment)
               ? u
               : -1;
  };
  // cross_entropy_grad writes dlogits over the logits dying there (the
  // layout's reuse, StepGraph.cpp). The problem models that exactly: the
  // result takes no bytes of its own, and the logits are computed once and
  // stay resident until dlogits' last reader, which reads them here. The
  // other reusing ops, the elementwise ones, are left to the targets'
  // slack; the arena's lower bound counts their result once
  // (mayReuseOperand). sharedWith[k]: the node whose bytes op k's result
  // takes, or -1.
  std::vector<int> sharedWith(graph.ops.size(), -1);
  if (shareLossGradient) {
    std::vector<int> lastReader(graph.values.size(), -1);
    std::vector<char> isOutput(graph.values.size(), 0);
    for (size_t k = 0; k < graph.ops.size(); ++k)
      for (int v : graph.ops[k].operands)
        lastReader[v] = static_cast<int>(k);
    for (int o : graph.outputs)
      isOutput[o] = 1;
    for (size_t k = 0; k < graph.ops.size(); ++k) {
      int u = reusable(k);
      if (step.ops[k].kind != "cross_entropy_grad" || u < 0)
        continue;
      if (!isOutput[u] && !isOutput[graph.ops[k].results[0]] &&
          lastReader[u] == static_cast<int>(k))
        sharedWith[k] = graph.values[u].producer;
    }
  }
  for (size_t k = 0; k < graph.ops.size(); ++k) {
    const memory::StepOp &op = graph.ops[k];
    int64_t bytes = 0;
    if (sharedWith[k] < 0)
      for (int r : op.results)
        if (graph.values[r].inPlaceOf < 0)
          bytes += memory::alignUp(graph.values[r].bytes, alignment);
    std::vector<int> operands;
    for (int v : op.operands)
      if (!graph.values[v].isArgument()) {
        int producer = graph.values[v].producer;
        operands.push_back(producer);
        if (sharedWith[producer] >= 0)
          operands.push_back(sharedWith[producer]);
      }
    if (lossOp >= 0 && (int)k > lossOp &&
        op.phase != memory::Phase::Forward)
      operands.push_back(lossOp);
    int block = -1;
    if (const std::string &key = step.ops[k].block; !key.empty())
      block = blockIds.emplace(key, (int)blockIds.size()).first->second;
    problem.addNode(op.name, step.ops[k].recomputeSeconds, bytes, operands,
                    op.phase == memory::Phase::Forward, block,
                    op.phase != memory::Phase::Forward);
  }
  for (size_t k = 0; k < graph.ops.size(); ++k)
    if (sharedWith[k] >= 0)
      problem.nodes[sharedWith[k]].recomputable = false;
  for (size_t k = 0; k < graph.ops.size(); ++k)
    problem.nodes[k].mayReuseOperand = reusable(k) >= 0;
  // A state update (running statistics) writes persistent state in place:
  // running it twice would apply it twice.
  for (size_t k = 0; k < graph.ops.size(); ++k)
    if (auto kind = ops::parseOpKind(step.ops[k].kind);
        kind && ops::opInfo(*kind).updatesState)
      problem.nodes[k].recomputable = false;
  for (int o : graph.outputs)
    if (!graph.values[o].isArgument())
      problem.requiredOutputs.push_back(graph.values[o].producer);
  problem.normalize();
  return problem;
}

namespace {

/// 400000 -> "400000 bytes" (scripts read the figures back).
std::string bytesText(int64_t bytes) {
  return std::to_string(bytes) + " bytes";
}

/// Why a solve found nothing within `target`, without the solver's own
/// wording of the target as "the budget".
std::string describeFailure(const planner::Problem &problem,
                            const planner::SolveResult &solved,
                            int64_t target) {
  if (solved.minimumBytes > target) {
    std::string text =
        "below the planner's lower bound on any schedule's peak, " +
        bytesText(solved.minimumBytes);
    // The bound of the given order, or of the candidate order that set it.
    for (bool reorder : {false, true})
      if (auto [bytes, reason] = lowerBoundOverOrders(problem, reorder);
          bytes == solved.minimumBytes)
        return text + " (" + reason + ")";
    return text;
  }
  if (solved.stats.peakBytes > target)
    return solved.stats.solverName + "'s schedule peaks at " +
           bytesText(solved.stats.peakBytes) +
           " in the planner's count, over that target";
  return solved.error;
}

} // namespace

Attempt leastMemoryWithoutRecompute(const planner::Problem &problem,
                                    const TrainStep &step, bool reorder,
                                    int64_t alignment) {
  std::vector<planner::NodeOrder> orders(1);
  orders[0].name = "given";
  orders[0].order.resize(step.graph.ops.size());
  std::iota(orders[0].order.begin(), orders[0].order.end(), 0);
  if (reorder)
    for (planner::NodeOrder &order : planner::candidateOrders(problem))
      orders.push_back(std::move(order));
  Attempt best;
  for (size_t i = 0; i < orders.size(); ++i) {
    memory::RecomputedStep applied =
        memory::applyComputeOrder(step.graph, orders[i].order);
    memory::Liveness live = memory::computeLiveness(applied.graph, alignment);
    int64_t arena =
        memory::assignOffsets(applied.graph, live, alignment).arenaBytes;
    if (best.ok && arena >= best.arenaBytes)
      continue;
    best.ok = true;
    best.applied = std::move(applied);
    best.arenaBytes = arena;
    best.result.stats.order = orders[i].name;
    best.result.stats.nodeOrder = i == 0 ? std::vector<int>() : orders[i].order;
  }
  planner::SolveStats &stats = best.result.stats;
  best.result.ok = true;
  stats.solverName = "store-all";
  stats.status = "optimal";
  stats.provenGap = 0;
  stats.cost = stats.baseCost = problem.totalCost();
  best.result.minimumBytes = planner::computeLowerBound(problem).bytes;
  return best;
}

Attempt attemptPlan(const planner::Problem &problem, const TrainStep &step,
                    int64_t budget, planner::SolverKind kind,
                    const planner::SolveOptions &options, int64_t alignment) {
  // Nothing needs recomputing: the least memory without recomputation.
  Attempt least =
      leastMemoryWithoutRecompute(problem, step, options.reorder, alignment);
  if (least.arenaBytes <= budget)
    return least;
  Attempt a;
  // The planner counts every result as a new buffer; the real layout lets
  // elementwise results reuse dying operands. Start the planner's target
  // above the budget by what reuse saves at store-all, and lower it by the
  // excess whenever the real arena overflows.
  memory::Liveness storeAll = memory::computeLiveness(step.graph, alignment);
  int64_t storeAllArena =
      memory::assignOffsets(step.graph, storeAll, alignment).arenaBytes;
  // Targets from optimistic to cautious. The solvers are heuristics whose
  // success is not monotone in the target, so besides the budget itself
  // the planner tries a fixed grid between the lower bound and the
  // store-all peak: the grid does not depend on the budget, so a schedule
  // that fits a budget is found again for every larger budget.
  int64_t plannerStoreAll = planner::storeAllPeak(problem);
  int64_t slack = std::max<int64_t>(0, plannerStoreAll - storeAllArena);
  int64_t lower = planner::computeLowerBound(problem).bytes;
  std::set<int64_t, std::greater<int64_t>> targets = {budget + slack, budget};
  constexpr int kGrid = 32;
  for (int i = 0; i <= kGrid; ++i) {
    int64_t g = lower + (plannerStoreAll - lower) * i / kGrid;
    if (g <= budget + slack)
      targets.insert(g);
  }
  int64_t firstTarget = *targets.begin();
  // What went wrong at the first target, and the least arena of a schedule
  // that fit a target but not the budget after layout: the error's facts.
  std::string firstFailure, closestSolver;
  int64_t closestArena = -1, closestTarget = 0;
  // Only the first target gets the full time limit of the exact solver.
  planner::SolveOptions later = options;
  later.timeLimitSeconds = std::min(options.timeLimitSeconds, 1.0);
  bool first = true;
  // When only a costlier runner-up fits at a target, lower targets may
  // still give a cheaper schedule that fits: the search goes on until a
  // target's cheapest schedule fits or costs no less than the best fit so
  // far (lower targets rarely give cheaper schedules), and the cheapest fit
  // wins.
  std::optional<Attempt> bestFit;
  int retargets = 0;
  while (!targets.empty()) {
    int64_t target = *targets.begin();
    targets.erase(targets.begin());
    planner::SolveResult solved =
        planner::solve(problem, target, kind, first ? options : later);
    first = false;

    if (!solved.ok) {
      // Proven: no schedule within this target in the planner's model, so
      // none within any lower one either.
      bool proven = solved.stats.status == "infeasible";
      if (target == firstTarget)
        firstFailure = describeFailure(problem, solved, target);
      a.error = solved.error;
      a.result = std::move(solved);
      if (proven)
        break;
      continue;
    }
    // The best schedule, then (auto) the other solvers' in cost order: the
    // first whose real layout fits wins.
    std::vector<planner::SolveResult> candidates =
        std::move(solved.runnersUp);
    solved.runnersUp.clear();
    candidates.insert(candidates.begin(), std::move(solved));
    if (bestFit &&
        candidates.front().stats.cost >= bestFit->result.stats.cost)
      break;
    int64_t cheapestArena = -1; // the layout of this target's best schedule
    int64_t cheapestPeak = 0;   // and its peak in the planner's count
    std::string cheapestSolver;
    bool plateau = false;
    for (size_t c = 0; c < candidates.size(); ++c) {
      planner::SolveResult &candidate = candidates[c];
      if (bestFit && candidate.stats.cost >= bestFit->result.stats.cost)
        break; // cost-sorted: nothing cheaper left at this target
      std::vector<int> computes;
      for (const planner::Event &e : candidate.schedule.events)
        if (e.kind == planner::EventKind::Compute)
          computes.push_back(e.node);
      a.applied = memory::applyComputeOrder(step.graph, computes);
      if (std::string problemText = a.applied.graph.validate();
          !problemText.empty()) {
        a.error = "rematerialized step is invalid: " + problemText;
        a.result = std::move(candidate);
        return a;
      }
      memory::Liveness live =
          memory::computeLiveness(a.applied.graph, alignment);
      a.arenaBytes =
          memory::assignOffsets(a.applied.graph, live, alignment).arenaBytes;
      a.result = std::move(candidate);
      if (c == 0) {
        cheapestArena = a.arenaBytes;
        cheapestPeak = a.result.stats.peakBytes;
        cheapestSolver = a.result.stats.solverName;
        plateau = a.result.stats.status == "optimal";
      }
      if (a.arenaBytes <= budget) {
        a.ok = true;
        if (c == 0)
          return a; // this target's best fits, cheaper than any fit so far
        bestFit = std::move(a);
        a = Attempt();
        break;
      }
    }
    if (!bestFit && cheapestArena >= 0 &&
        (closestArena < 0 || cheapestArena < closestArena)) {
      closestArena = cheapestArena;
      closestSolver = cheapestSolver;
      closestTarget = target;
    }
    // A plateau: the cheapest schedule is proven optimal (in its order)
    // and its layout overflows. At every target between its own planner
    // peak and this one it stays optimal, so the solver gives it again (or
    // a tie): those targets are skipped. On seed_mlp at batch 2.79 M under
    // 32 GiB, 31 grid points of about 1 s each. A tie that would have fit
    // may be missed.
    if (!bestFit && plateau && cheapestArena > budget)
      targets.erase(targets.begin(), targets.upper_bound(cheapestPeak));
    // The best schedule's layout overflowed by some bytes: try the target
    // lower by exactly that next (usually it fits, and costs less than the
    // grid's next point, which may be far lower). A few times at most.
    // On a plateau, lower by it from the schedule's own peak instead.
    if (!bestFit && cheapestArena > budget && retargets < 4) {
      int64_t from = plateau ? cheapestPeak : target;
      int64_t lowered = from - (cheapestArena - budget);
      if (lowered > lower && lowered < from) {
        targets.insert(lowered);
        ++retargets;
      }
    }
  }
  if (bestFit)
    return std::move(*bestFit);
  // Why nothing fits, in the figures of the budget: the planner's targets
  // are derived from it, so each one quoted says how.
  auto targetText = [&](int64_t target) {
    std::string text = bytesText(target);
    if (target == budget + slack && slack > 0)
      text += " (the arena's budget plus " + bytesText(slack) +
              " that buffer reuse saves at store-all, which the planner's "
              "count of one buffer per result does not see)";
    else if (target < budget)
      text += " (a planner target below the arena's budget)";
    return text;
  };
  if (closestArena >= 0)
    a.error = "the closest schedule, " + closestSolver + "'s at planner " +
              "target " + targetText(closestTarget) + ", needs an arena of " +
              bytesText(closestArena) + " after buffer layout";
  else if (!firstFailure.empty())
    a.error = "at the planner's largest target for this budget, " +
              targetText(firstTarget) + ": " + firstFailure;
  return a;
}

/// The fallbacks tried when the requested solver's schedule does not fit.
Attempt attemptWithFallbacks(const planner::Problem &problem,
                             const TrainStep &step, int64_t budget,
                             planner::SolverKind kind,
                             const planner::SolveOptions &options,
                             int64_t alignment) {
  Attempt a = attemptPlan(problem, step, budget, kind, options, alignment);
  if (a.ok || kind != planner::SolverKind::Auto)
    return a;
  for (planner::SolverKind fallback :
       {planner::SolverKind::Heuristic, planner::SolverKind::PerBlock}) {
    Attempt b = attemptPlan(problem, step, budget, fallback, options,
                            alignment);
    if (b.ok)
      return b;
  }
  return a;
}

bool fitsWithFastSolvers(const planner::Problem &problem,
                         const TrainStep &step, int64_t budget,
                         const planner::SolveOptions &options,
                         int64_t alignment) {
  return attemptPlan(problem, step, budget, planner::SolverKind::Heuristic,
                     options, alignment)
             .ok ||
         attemptPlan(problem, step, budget, planner::SolverKind::PerBlock,
                     options, alignment)
             .ok;
}

std::pair<int64_t, std::string>
lowerBoundOverOrders(const planner::Problem &problem, bool reorder,
                     bool arena) {
  planner::LowerBound bound = planner::computeLowerBound(problem, arena);
  int64_t bytes = bound.bytes;
  std::string reason = bound.describe(problem);
  if (reorder)
    for (const planner::NodeOrder &order : planner::candidateOrders(problem)) {
      planner::Problem permuted = planner::permuteProblem(problem, order.order);
      planner::LowerBound other = planner::computeLowerBound(permuted, arena);
      if (other.bytes < bytes) {
        bytes = other.bytes;
        reason = other.describe(permuted) + " in the " + order.name + " order";
      }
    }
  return {bytes, reason};
}

StepMinimum minimumFeasibleBudget(const planner::Problem &problem,
                                  const TrainStep &step, bool reorder,
                                  int64_t alignment) {
  auto start = std::chrono::steady_clock::now();
  StepMinimum m;
  std::tie(m.lowerBoundBytes, m.lowerBoundReason) =
      lowerBoundOverOrders(problem, reorder, /*arena=*/true);
  // Probes use the fast solvers only (the heuristic, then per-block);
  // `auto` falls back to the same ones, so it meets the reported minimum.
  // Fixed settings, not the command's: the same answer everywhere.
  planner::SolveOptions probe;
  probe.timeLimitSeconds = 10.0;
  probe.reorder = reorder;
  auto meets = [&](int64_t budget) {
    return fitsWithFastSolvers(problem, step, budget, probe, alignment);
  };
  int64_t high =
      leastMemoryWithoutRecompute(problem, step, reorder, alignment)
          .arenaBytes;
  int64_t low = m.lowerBoundBytes - 1; // no schedule can use less
  int64_t resolution = std::max<int64_t>(high / 200, 64);
  while (high - low > resolution) {
    int64_t mid = low + (high - low) / 2;
    (meets(mid) ? high : low) = mid;
  }
  m.minFeasibleBytes = high;
  if (low < m.lowerBoundBytes && high - m.lowerBoundBytes <= resolution)
    m.gap = "bound-met";
  m.seconds = std::chrono::duration<double>(
                  std::chrono::steady_clock::now() - start)
                  .count();
  return m;
}

RematOutcome rematerializeTrainStep(mlir::ModuleOp module, TrainStep &step,
                                    const RematOptions &options) {
  const int64_t budgetBytes = options.budgetBytes;
  const int64_t workspaceReserve = options.workspaceReserve;
  const int64_t alignment = options.alignment;
  const bool reorder = options.reorder;
  const std::string &solver = options.solver;
  if (budgetBytes < 0)
    throw std::runtime_error(
        "-remat-rematerialize needs budget-bytes >= 0 (0: no "
        "budget, the least memory without recomputation)");
  planner::SolverKind kind;
  if (!planner::parseSolverKind(solver, kind))
    throw std::runtime_error("unknown solver '" + solver +
                             "' (auto, exact, dp, heuristic, store-all, "
                             "per-block, sqrt)");
  if (workspaceReserve < 0)
    throw std::runtime_error("the workspace reserve of " +
                             bytesText(workspaceReserve) + " is negative");
  // A reserve that leaves nothing for the arena makes the budget
  // infeasible: the error below names the minimum (reserve included).
  int64_t arenaBudget = std::max<int64_t>(budgetBytes - workspaceReserve, 0);
  auto start = std::chrono::steady_clock::now();
  memory::SearchScope search;
  planner::Problem problem = buildPlannerProblem(
      step, alignment, /*shareLossGradient=*/kind != planner::SolverKind::ChainDp);
  planner::SolveOptions solveOptions;
  solveOptions.timeLimitSeconds = options.timeLimitSeconds;
  solveOptions.progress = options.progress;
  solveOptions.reorder = reorder;

  // A caller that only asks whether the budget fits (the micro-batch
  // search) learns "no" from the lower bound at once, without the solvers'
  // fallbacks, where no schedule can use that little.
  if (budgetBytes > 0 && !options.explainInfeasible)
    if (auto [bound, reason] =
            lowerBoundOverOrders(problem, reorder, /*arena=*/true);
        bound > arenaBudget)
      throw InfeasibleBudget("no schedule fits the budget of " +
                             bytesText(budgetBytes) +
                             "; no schedule's arena is below " +
                             bytesText(bound) + " (" + reason + ")");

  // 1-3. Solve, replay, check the real arena (without a budget: the
  // least memory without recomputation).
  Attempt attempt =
      budgetBytes == 0
          ? leastMemoryWithoutRecompute(problem, step, reorder, alignment)
          : attemptWithFallbacks(problem, step, arenaBudget, kind,
                                 solveOptions, alignment);
  if (!attempt.ok && !options.explainInfeasible)
    throw InfeasibleBudget("no schedule fits the budget of " +
                           bytesText(budgetBytes) + "; " + attempt.error);
  if (!attempt.ok) {
    // The search plans the step a dozen times or more (20 s for a
    // 48-layer GPT-2): say so before the error comes.
    llvm::errs() << "remat: no schedule fits " << bytesText(budgetBytes)
                 << "; searching the minimum feasible budget...\n";
    int64_t feasible =
        minimumFeasibleBudget(problem, step, reorder, alignment)
            .minFeasibleBytes;
    std::string diag = "no schedule fits the budget of " + bytesText(budgetBytes);
    if (workspaceReserve > 0)
      diag += " (an arena of " + bytesText(arenaBudget) +
              " after the workspace reserve of " +
              bytesText(workspaceReserve) + ")";
    if (feasible > 0) {
      diag += "; minimum feasible budget: " +
              bytesText(feasible + workspaceReserve) + " (";
      if (workspaceReserve > 0)
        diag += "an arena of " + bytesText(feasible) + " plus the reserve; ";
      diag += (kind == planner::SolverKind::Auto
                   ? "the smallest"
                   : "with solver auto, not " + solver + ": the smallest");
      diag += " that the heuristic or per-block schedule meets after "
              "buffer layout, to within 0.5%)";
    }
    diag += "; " + attempt.error;
    throw InfeasibleBudget(diag);
  }
  const planner::SolveResult &result = attempt.result;
  const memory::RecomputedStep &applied = attempt.applied;
  double seconds = std::chrono::duration<double>(
                       std::chrono::steady_clock::now() - start)
                       .count();

  // 4. Rewrite the IR.
  mlir::Operation *terminator = nullptr;
  std::vector<mlir::Operation *> ops = trainStepOps(module, &terminator);
  mlir::IRMapping latest; // original value -> latest copy
  mlir::OpBuilder b(terminator);
  double recomputeSeconds = 0;
  // Each op's operands as the program wrote them: an op placed before
  // one of its recomputations has its operands rewritten to the copies
  // live then, and a clone made later from it must read the copies live
  // at the clone instead (else it keeps an old copy alive, and the
  // arena outgrows the one the planner laid out).
  std::vector<llvm::SmallVector<mlir::Value, 4>> sources;
  sources.reserve(ops.size());
  for (mlir::Operation *op : ops)
    sources.emplace_back(op->getOperands().begin(), op->getOperands().end());
  auto readLatest = [&](mlir::Operation *op, size_t origin) {
    for (unsigned i = 0; i < op->getNumOperands(); ++i)
      op->setOperand(i, latest.lookupOrDefault(sources[origin][i]));
  };
  for (size_t k = 0; k < applied.origin.size(); ++k) {
    mlir::Operation *original = ops[applied.origin[k]];
    if (!applied.recompute[k]) {
      readLatest(original, size_t(applied.origin[k]));
      original->moveBefore(terminator);
      for (mlir::Value r : original->getResults())
        latest.map(r, r);
      continue;
    }
    mlir::Operation *clone = b.clone(*original, latest);
    readLatest(clone, size_t(applied.origin[k]));
    clone->setAttr("remat.recompute", b.getUnitAttr());
    for (unsigned r = 0; r < original->getNumResults(); ++r)
      latest.map(original->getResult(r), clone->getResult(r));
    recomputeSeconds += step.ops[applied.origin[k]].recomputeSeconds;
  }
  for (mlir::OpOperand &operand : terminator->getOpOperands())
    operand.set(latest.lookupOrDefault(operand.get()));
  // Ops the schedule never computes (nothing needs them) go, users first.
  std::vector<char> computed(ops.size(), 0);
  for (int k : applied.origin)
    computed[k] = 1;
  for (size_t k = ops.size(); k-- > 0;)
    if (!computed[k] && ops[k]->use_empty())
      ops[k]->erase();

  // The bound and (when asked: it plans the step a dozen times) the
  // minimum feasible budget, whole-step: the reserve included.
  std::optional<StepMinimum> minimum;
  if (options.searchMinimum)
    minimum = minimumFeasibleBudget(problem, step, reorder, alignment);
  auto [lowerBound, lowerReason] =
      minimum ? std::make_pair(minimum->lowerBoundBytes,
                               minimum->lowerBoundReason)
              : lowerBoundOverOrders(problem, reorder, /*arena=*/true);
  RematOutcome out;
  out.solver = result.stats.solverName;
  out.status = result.stats.status;
  out.budgetBytes = budgetBytes;
  out.lowerBoundBytes = lowerBound + workspaceReserve;
  out.lowerBoundReason = lowerReason;
  if (minimum)
    out.minFeasibleBytes = minimum->minFeasibleBytes + workspaceReserve;
  out.minFeasibleGap = minimum ? minimum->gap : "not-searched";
  out.solveSeconds = seconds;
  if (!std::isnan(result.stats.provenGap))
    out.optimalityGap = result.stats.provenGap;
  out.recomputeOverhead = step.recomputeOverhead(recomputeSeconds);
  out.order = result.stats.order;
  step = replayTrainStep(step, applied);
  return out;
}

void setPlanSummary(mlir::ModuleOp module, const RematOutcome &outcome) {
  mlir::Builder attrs(module.getContext());
  module->setAttr(
      "remat.plan",
      attrs.getDictionaryAttr({
          attrs.getNamedAttr("solver", attrs.getStringAttr(outcome.solver)),
          attrs.getNamedAttr("status", attrs.getStringAttr(outcome.status)),
          attrs.getNamedAttr("budget_bytes",
                             attrs.getI64IntegerAttr(outcome.budgetBytes)),
          attrs.getNamedAttr("lower_bound_bytes",
                             attrs.getI64IntegerAttr(outcome.lowerBoundBytes)),
          attrs.getNamedAttr("lower_bound_reason",
                             attrs.getStringAttr(outcome.lowerBoundReason)),
          attrs.getNamedAttr(
              "min_feasible_bytes",
              attrs.getI64IntegerAttr(outcome.minFeasibleBytes.value_or(-1))),
          attrs.getNamedAttr("min_feasible_gap",
                             attrs.getStringAttr(outcome.minFeasibleGap)),
          attrs.getNamedAttr("solve_seconds",
                             attrs.getF64FloatAttr(outcome.solveSeconds)),
          attrs.getNamedAttr(
              "optimality_gap",
              attrs.getF64FloatAttr(outcome.optimalityGap.value_or(-1.0))),
          attrs.getNamedAttr("recompute_overhead",
                             attrs.getF64FloatAttr(outcome.recomputeOverhead)),
          attrs.getNamedAttr("order", attrs.getStringAttr(outcome.order)),
      }));
}

namespace {

struct RematerializePass
    : public impl::RematerializePassBase<RematerializePass> {
  using RematerializePassBase::RematerializePassBase;

  void runOnOperation() override {
    mlir::ModuleOp module = getOperation();
    RematOptions options;
    options.budgetBytes = budgetBytes;
    options.workspaceReserve = workspaceReserve;
    options.solver = solver;
    options.timeLimitSeconds = timeLimit;
    options.alignment = alignment;
    options.progress = progress;
    options.reorder = reorder;
    options.searchMinimum = searchMinimum;
    try {
      TrainStep step = extractTrainStep(module);
      setPlanSummary(module, rematerializeTrainStep(module, step, options));
    } catch (const std::exception &e) {
      module.emitError(e.what());
      signalPassFailure();
    }
  }
};

} // namespace
} // namespace remat
