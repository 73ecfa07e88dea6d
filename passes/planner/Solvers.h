//===- Solvers.h - Rematerialization solvers and the solve() entry -*- C++ -*-//
//
// The planner's solvers. Every solver returns an event schedule that
// `solve()` replays through the checker before anyone sees it.
//
//===----------------------------------------------------------------------===//
#ifndef REMAT_PASSES_PLANNER_SOLVERS_H
#define REMAT_PASSES_PLANNER_SOLVERS_H

#include "passes/planner/Checker.h"
#include "passes/planner/Defaults.h"

#include <cmath>
#include <limits>
#include <string>

namespace remat {
namespace planner {

enum class SolverKind {
  /// Runs every solver that fits the size and time limit; keeps the best
  /// checked schedule.
  Auto,
  /// Checkmate MILP on CBC, time-limited, warm-started from the heuristic.
  Exact,
  /// rotor-style optimal DP over a chain (forward/backward graph must
  /// decompose into a chain of stages at articulation points).
  ChainDp,
  /// DTR-style eviction simulation with Belady-like lookahead.
  Heuristic,
  /// Compute every node once, free after the last use.
  StoreAll,
  /// Keep block outputs (or articulation points), recompute interiors.
  PerBlock,
  /// Chen et al.: keep every sqrt(n)-th articulation point.
  SqrtN,
};

/// "auto", "exact", "dp", "heuristic", "store-all", "per-block", "sqrt".
const char *solverKindName(SolverKind kind);
/// Parses the names above (also "chain-dp", "sqrtn", "storeall",
/// "perblock"); false when unknown.
bool parseSolverKind(const std::string &text, SolverKind &kind);

struct SolveOptions {
  /// Wall-clock limit for the exact MILP (and for auto overall).
  double timeLimitSeconds = defaults::kExactTimeLimitSeconds;
  CountingMode mode = CountingMode::Event;
  /// Progress lines on stderr: one per solver run (name, status, peak,
  /// overhead, proven gap, seconds), and the MILP's incumbent / bound / gap
  /// once a second.
  bool progress = false;
  /// Prefix of those lines after "[planner] " (the order being solved).
  std::string progressLabel;
  /// Let CBC print its own log.
  bool verbose = false;
  /// Auto runs the exact MILP only up to this many nodes.
  int exactMaxNodes = 120;
  /// Chain DP memory discretization (slots).
  int dpMemorySlots = 4000;
  /// Also solve the problem in the candidate orders of Reorder.h and keep
  /// the cheapest checked schedule (ties: the lower peak, then the given
  /// order): the planner may then move ops, not only recompute them. The
  /// time limit is shared; the exact MILP runs on the given order only
  /// under auto. In Checkmate mode the schedule is stage-structured in the
  /// order it was solved in (SolveStats::order).
  bool reorder = false;
  /// In Checkmate mode, run the heuristic's budget ladder (Heuristic.cpp,
  /// step 7: on failure, search again at kHeuristicLadderSteps points of a
  /// fixed grid below the budget), which makes its success monotone in the
  /// budget over that window. Not in Event mode: the remat pass plans each
  /// budget at a fixed grid of targets of its own, where failing targets
  /// are common and the ladder would multiply their cost. The minimum
  /// search's probes run it too.
  bool heuristicLadder = true;
};

/// Results whose proven gap is at most this are reported "optimal" (the
/// MILP also stops there).
constexpr double kOptimalGap = 1e-4;

struct SolveStats {
  std::string solverName;
  /// "optimal" (proven gap <= kOptimalGap), "feasible", "time-limit",
  /// "infeasible", "not-applicable", "over-budget", "failed".
  std::string status;
  int64_t peakBytes = 0;
  /// Total modeled cost of the schedule and of computing each node once.
  double cost = 0;
  double baseCost = 0;
  /// (cost - baseCost) / baseCost.
  double overhead = 0;
  double solveSeconds = 0;
  /// (cost - best proven lower bound) / cost; NaN when nothing is proven.
  double provenGap = std::numeric_limits<double>::quiet_NaN();
  /// MILP best bound on the cost, when known (NaN otherwise).
  double bestBound = std::numeric_limits<double>::quiet_NaN();
  /// The node order the schedule was solved in: "given", or a candidate
  /// order's name (SolveOptions::reorder). provenGap and bestBound refer
  /// to that order's own optimum: no solver proves anything across orders.
  std::string order = "given";
  /// When reordering: the order's permutation (order[p] = node at stage p).
  std::vector<int> nodeOrder;
};

struct SolveResult {
  /// True when `schedule` passed the checker and its peak is within budget.
  bool ok = false;
  /// Why not ok (budget below the minimum, solver failure, checker error).
  std::string error;
  EventList schedule;
  SolveStats stats;
  /// The lower bound on any schedule's peak (the minimum budget to try).
  int64_t minimumBytes = 0;
  /// Auto only: the other solvers' checked schedules within the budget
  /// (and, with reorder, the other orders'), cheapest first. The compiler
  /// tries them in turn when the best one's real buffer layout overflows
  /// the budget. Their own runnersUp are empty.
  std::vector<SolveResult> runnersUp;
};

/// Plans `problem` under `budgetBytes` (persistent bytes included) with the
/// given solver. The returned schedule has been replayed by checkSchedule in
/// `options.mode`; a solver bug shows up as ok == false, never as a bad
/// schedule. Budgets below the lower bound fail with the minimum and its
/// breakdown in `error`.
SolveResult solve(const Problem &problem, int64_t budgetBytes, SolverKind kind,
                  const SolveOptions &options = SolveOptions());

/// The store-all peak (compute once, free after last use): the 1.0 budget
/// fraction of benchmark tables.
int64_t storeAllPeak(const Problem &problem);

//===----------------------------------------------------------------------===//
// Individual solvers. They return unchecked schedules; prefer solve().
//===----------------------------------------------------------------------===//

/// Raw outcome of one solver, before the checker.
struct SolverOutput {
  bool found = false;
  std::string message;
  EventList schedule;
  std::string status;
  double bestBound = std::numeric_limits<double>::quiet_NaN();
};

/// Store-all: O(n + e).
SolverOutput solveStoreAll(const Problem &problem);

/// Checkpointing baseline: the forward part (nodes not marked backward)
/// runs once, keeping the `checkpoints` and dropping every other forward
/// value after its last forward use; the backward part recomputes, in index
/// order and just before the node that needs it, every missing value from
/// the nearest live ones and keeps recomputed values until their last use.
/// Values after the last checkpoint are kept (backward starts there).
/// Ignores the budget; O(n + e) plus the recomputation.
SolverOutput solveWithCheckpoints(const Problem &problem,
                                  const std::vector<char> &checkpoints);

/// Per-block checkpoints: the outputs of each block (nodes read outside
/// their block) when block ids are set, else every articulation point of
/// the forward part.
SolverOutput solvePerBlock(const Problem &problem);

/// Chen et al. 2016: every ceil(sqrt(A))-th of the A forward articulation
/// points is a checkpoint.
SolverOutput solveSqrtN(const Problem &problem);

/// The heuristic's time limit is a work budget: this many units (eviction
/// candidates scored, recompute-cost visits, computes) per second, measured
/// on the project's 2-core machine, so that its answer does not depend on
/// the machine's load (Heuristic.cpp).
constexpr double kHeuristicWorkPerSecond = 1e8;
/// The least time limit the heuristic gets (SolveOptions::timeLimitSeconds
/// when larger): the minimum search probes with exactly this, so auto at
/// any limit finds a schedule wherever the search found one.
constexpr double kHeuristicMinSeconds = 2.0;
/// The heuristic's budget ladder (Heuristic.cpp, step 7): where nothing is
/// found at the budget, the search runs again at up to `ladderSteps` points
/// of the budget-independent grid kHeuristicLadderRatio^k below it (8 steps:
/// 2% below), each with this share of the limit.
constexpr double kHeuristicLadderRatio = 1.0025;
constexpr double kHeuristicLadderShare = 0.25;
constexpr int kHeuristicLadderSteps = 8;

/// DTR-style heuristic (Kirisame et al. 2021). See Heuristic.cpp for the
/// algorithm. In Checkmate mode only the stage-structured variant runs; in
/// Event mode also the on-demand recursive one, and the cheaper wins.
/// `ladderSteps` (0: none): the budget ladder's rungs below the budget.
SolverOutput solveHeuristic(const Problem &problem, int64_t budgetBytes,
                            double timeLimitSeconds = 10.0,
                            CountingMode mode = CountingMode::Event,
                            int ladderSteps = 0);

/// Checkmate MILP on CBC; `warmStart` (may be empty) seeds the incumbent.
SolverOutput solveExact(const Problem &problem, int64_t budgetBytes,
                        const EventList &warmStart,
                        const SolveOptions &options);

/// Brute force over all Checkmate recompute matrices (2^(n(n-1)/2)
/// candidates; n <= 7), for tests. Returns the optimal cost, or -1 when no
/// schedule fits the budget.
double bruteForceOptimalCost(const Problem &problem, int64_t budgetBytes,
                             EventList *best = nullptr);

/// The stage-structured schedule that computes, in stage t, the nodes i
/// with recompute[t][i] (plus t) in index order and keeps every value
/// until its last read before its next recompute (the least memory for
/// those computes). Used by the brute force and the MILP decoding.
EventList scheduleFromRecomputeMatrix(const Problem &problem,
                                      const std::vector<std::vector<char>> &r);

} // namespace planner
} // namespace remat

#endif // REMAT_PASSES_PLANNER_SOLVERS_H
