//===- Rematerialize.h - The training step as a planner problem -*- C++ -*-===//
#ifndef REMAT_PASSES_REMATERIALIZE_H
#define REMAT_PASSES_REMATERIALIZE_H

#include "passes/TrainStep.h"
#include "passes/planner/Solvers.h"

#include "mlir/IR/BuiltinOps.h"

#include <optional>
#include <stdexcept>
#include <string>
#include <utility>

namespace remat {

/// One planner node per op of the step, in its current order: output bytes
/// are its results' aligned sizes (none for in-place updates), cost its
/// modeled seconds; arguments are persistent bytes; forward ops may be
/// recomputed; the loss and the updates are required outputs. Ops of
/// repeated blocks get a block id per repetition ("h.3.*"). With
/// `shareLossGradient`, cross_entropy_grad's result takes the bytes of the
/// logits dying there, as in the layout (the logits' node is then computed
/// once, which the chain DP's conversion rejects: the DP gets the problem
/// without it, the layout's slack covering the difference).
planner::Problem buildPlannerProblem(const TrainStep &step, int64_t alignment,
                                     bool shareLossGradient = true);

/// A plan of the step: its schedule replayed on the step, and the arena.
struct Attempt {
  bool ok = false;
  std::string error;
  planner::SolveResult result;
  memory::RecomputedStep applied;
  int64_t arenaBytes = 0;
};

/// The plan that recomputes nothing in the least arena found: the step's
/// own order and, with `reorder`, each candidate order of
/// planner/Reorder.h, every op computed once, replayed on the step
/// (memory::applyComputeOrder) and laid out; the smallest arena wins
/// (ties: the step's order, then the candidate orders in turn). The least
/// over these orders, not over all orders (that search is NP-hard).
/// O(orders x layout).
Attempt leastMemoryWithoutRecompute(const planner::Problem &problem,
                                    const TrainStep &step, bool reorder,
                                    int64_t alignment);

/// One planning attempt under `budget`: when the least-memory plan without
/// recomputation fits, that plan; else solve at planner targets from the
/// budget plus the reuse slack down a fixed grid to the lower bound; at each
/// target replay the best schedule and then (auto) the runners-up on the
/// plain step (memory::applyComputeOrder) and lay out the arena, keeping the
/// first that fits; when only a runner-up fits, lower targets are tried
/// until one's cheapest schedule fits or is no cheaper than the best fit.
/// The cheapest fitting schedule wins.
Attempt attemptPlan(const planner::Problem &problem, const TrainStep &step,
                    int64_t budget, planner::SolverKind kind,
                    const planner::SolveOptions &options, int64_t alignment);

/// attemptPlan, then for `auto` the heuristic and per-block schedules when
/// no schedule of auto's fits after layout.
Attempt attemptWithFallbacks(const planner::Problem &problem,
                             const TrainStep &step, int64_t budget,
                             planner::SolverKind kind,
                             const planner::SolveOptions &options,
                             int64_t alignment);

/// Whether the fast solvers' schedule fits `budget` after layout: the
/// heuristic's, else per-block's (what `auto` falls back to, so auto fits
/// every budget they fit).
bool fitsWithFastSolvers(const planner::Problem &problem,
                         const TrainStep &step, int64_t budget,
                         const planner::SolveOptions &options,
                         int64_t alignment);

/// The lower bound on the step's arena (the planner's bound, in the given
/// order or, with `reorder`, the least over the candidate orders) and the
/// minimum feasible arena budget: the smallest, to within 0.5%, that the
/// heuristic or per-block schedule meets after layout (`auto` falls back
/// to both, so it meets it too), by bisection between the bound and the
/// arena of leastMemoryWithoutRecompute, which always fits. Every command
/// (compile's report and error, plan --sweep) calls this one function with
/// the same fixed probe settings, so they report the same minimum for the
/// same model and options. Workspace reserve not included.
struct StepMinimum {
  int64_t lowerBoundBytes = 0;
  std::string lowerBoundReason;
  int64_t minFeasibleBytes = 0;
  /// "bound-met" (the minimum is within the bisection's resolution of the
  /// bound) or "open": the MILP does not scale to whole training steps.
  std::string gap = "open";
  double seconds = 0;
};
/// The planner's lower bound on the step's peak over the orders it may
/// solve in: the given one and, with `reorder`, each candidate order (a
/// schedule in another order may peak below the given order's bound), the
/// least of them; and its reason, naming the order where it is not the
/// given one. With `arena`, the bound on the arena after layout (an
/// elementwise result over a dying operand counted once), which reports
/// and the minimum's search use; without, the bound on the solvers' count.
std::pair<int64_t, std::string>
lowerBoundOverOrders(const planner::Problem &problem, bool reorder,
                     bool arena = false);
StepMinimum minimumFeasibleBudget(const planner::Problem &problem,
                                  const TrainStep &step, bool reorder,
                                  int64_t alignment);

/// How -remat-rematerialize plans (its pass options, Passes.td, say the
/// same; compiler::CompileOptions fills it for a compile).
struct RematOptions {
  /// The budget of the whole step; 0: none, the least memory without
  /// recomputation.
  int64_t budgetBytes = 0;
  /// Bytes of the budget kept for a workspace beside the arena.
  int64_t workspaceReserve = 0;
  std::string solver = defaults::kSolver;
  double timeLimitSeconds = defaults::kTimeLimitSeconds; ///< of the MILP
  int64_t alignment = defaults::kAlignment;
  bool progress = false;
  bool reorder = true;
  /// Also search the minimum feasible budget (it plans the step a dozen
  /// times).
  bool searchMinimum = false;
  /// A budget no schedule fits: false throws InfeasibleBudget at once,
  /// without searching the minimum for the message (the micro-batch
  /// search tries several splits).
  bool explainInfeasible = true;
};

/// The error of a budget that no schedule of the step fits.
class InfeasibleBudget : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// What planning the step found, for the report (docs/cli.md): the solver
/// and its status, the bounds and the minimum (whole-step: the reserve
/// included), the modeled recompute overhead.
struct RematOutcome {
  std::string solver;
  std::string status;
  int64_t budgetBytes = 0;
  int64_t lowerBoundBytes = 0;
  std::string lowerBoundReason;
  std::optional<int64_t> minFeasibleBytes; ///< when searched
  std::string minFeasibleGap = "not-searched";
  double solveSeconds = 0;
  std::optional<double> optimalityGap; ///< when the solver proves one
  double recomputeOverhead = 0;
  std::string order; ///< the order the schedule came from
};

/// Plans the scheduled @train_step of `module`, whose extracted step is
/// `step`, under options.budgetBytes and rewrites it in the planned order
/// (the algorithm: Rematerialize.cpp); `step` becomes the planned step
/// (replayTrainStep). Throws std::runtime_error naming the minimum feasible
/// budget when no schedule fits, or a bad option.
RematOutcome rematerializeTrainStep(mlir::ModuleOp module, TrainStep &step,
                                    const RematOptions &options);

/// The outcome as the module attribute `remat.plan` (a dictionary), so the
/// IR printed after planning shows it; nothing reads it back.
void setPlanSummary(mlir::ModuleOp module, const RematOutcome &outcome);

} // namespace remat

#endif // REMAT_PASSES_REMATERIALIZE_H
