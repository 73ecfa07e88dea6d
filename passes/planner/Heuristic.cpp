//===- Heuristic.cpp - DTR-style eviction with lookahead ------------------===//
//
// The heuristic solver, for any DAG and size:
//   1. Run the stages in order. Stage t computes, in index order, node t and
//      (recursively) every operand that is not live: recompute on demand.
//   2. After each compute, a value with no further read in the stage is
//      freed when no later node reads it; otherwise it stays (lazily).
//   3. Before a compute that would exceed the budget, evict live values
//      with no further read in this stage, lowest score first:
//        score(v) = (cost(v) + cost of v's non-live operands)
//                   / (bytes(v) * (nextUse(v) - t)^alpha)
//      i.e. DTR's cost / (memory x staleness) with staleness replaced by the
//      known distance to the next use (Belady), since the schedule is static.
//   4. Repeat with several alpha values and eviction headrooms; keep the
//      cheapest run that completed.
//   5. None completed: a feasibility search (repair, then perturbed
//      restarts; see searchAtBudget).
//   6. The time limit is spent as a work budget (eviction candidates
//      scored, recompute-cost visits, computes; kWorkPerSecond per second),
//      not by the clock: the same problem, budget and limit give the same
//      answer on an idle and on a loaded machine, so a budget at which the
//      minimum search found a schedule is one at which auto finds it again.
//   7. Still none (Checkmate mode): the budget ladder, steps 1-5 again at
//      up to 8 points of a fixed geometric grid below the budget (see
//      solveHeuristic): a schedule found at one of them fits the budget.
// One run is O(sum over computes of live-set size); no optimality claim:
// on Checkmate's graphs it is typically within tens of percent of the MILP
// at tight budgets (see docs/planner.md).
//
//===----------------------------------------------------------------------===//
#include "passes/planner/Solvers.h"
#include "passes/planner/Staged.h"

#include <cmath>

namespace remat {
namespace planner {

using detail::StagedBuilder;

namespace {

struct HeuristicParams {
  double alpha = 1.0;
  /// Evict down to budget * (1 - headroom) when evicting at all, so that
  /// evictions are batched (fewer, larger recompute runs).
  double headroom = 0.0;
  /// Restarts when the fixed settings find nothing: a seeded log-normal
  /// perturbation of every score (0: none) ...
  unsigned seed = 0;
  /// ... and, when set, a preference for values whose operands are live
  /// (score x (1 + non-live operands)^2): their recomputation later pins
  /// no cascade, which is what makes tight budgets fail.
  bool shallow = false;

  /// The eviction score of step 3 (lowest goes first): recompute cost per
  /// byte, divided by the distance to the next use to the power alpha.
  double evictionScore(double recompute, int64_t bytes,
                       double distance) const {
    return (recompute + 1e-9) / (double(bytes) * std::pow(distance, alpha));
  }
};

/// DTR's e*: the cost of rematerializing v now, i.e. v plus every non-live
/// ancestor reached through non-live values (capped at 64 nodes; beyond
/// that the cascade is expensive anyway).
class RecomputeCost {
public:
  explicit RecomputeCost(const Problem &problem)
      : problem(problem), stamp(problem.size(), 0) {}
  /// Nodes visited so far (the heuristic's work count).
  int64_t visits = 0;
  double operator()(int v, const std::vector<char> &live) {
    ++stampValue;
    double total = 0;
    stack.assign(1, v);
    stamp[v] = stampValue;
    int visited = 0;
    while (!stack.empty() && visited < 64) {
      int node = stack.back();
      stack.pop_back();
      ++visited;
      total += problem.nodes[node].cost;
      for (int op : problem.nodes[node].operands) {
        if (!live[op] && stamp[op] != stampValue) {
          stamp[op] = stampValue;
          stack.push_back(op);
        }
      }
    }
    visits += visited;
    // Unvisited non-live ancestors: charge them as much again.
    return stack.empty() ? total : 2 * total;
  }

private:
  const Problem &problem;
  std::vector<int> stamp;
  std::vector<int> stack;
  int stampValue = 0;
};

/// The restarts' score perturbation: deterministic per (seed, node, stage).
double perturbation(const HeuristicParams &params, int node, int stage) {
  if (params.seed == 0)
    return 1.0;
  uint64_t x = (uint64_t(params.seed) * 0x9E3779B97F4A7C15ull) ^
               (uint64_t(node) * 0xBF58476D1CE4E5B9ull) ^
               (uint64_t(stage) * 0x94D049BB133111EBull);
  x ^= x >> 31;
  x *= 0xD6E8FEB86659FD93ull;
  x ^= x >> 32;
  double u = double(x >> 11) / double(1ull << 53); // [0, 1)
  return std::exp(4.0 * (u - 0.5));                 // e^-2 .. e^2
}

int nonLiveOperands(const Problem &problem, int v,
                    const std::vector<char> &live) {
  int count = 0;
  for (int op : problem.nodes[v].operands)
    count += !live[op];
  return count;
}

/// `protect` (may be null): values evicted only when nothing else can be
/// (score x 1e6). On failure, `failedStage` receives the nodes the failing
/// stage recomputed: keeping some of them is what would have let it fit.
bool runOnce(const Problem &problem, const UseInfo &uses, int64_t budget,
             const HeuristicParams &params, EventList &schedule, double &cost,
             std::string &error, int64_t &work,
             const std::vector<char> *protect = nullptr,
             std::vector<int> *failedStage = nullptr) {
  int n = problem.size();
  StagedBuilder builder(problem, uses);
  RecomputeCost recomputeCost(problem);
  cost = 0;
  struct Count {
    int64_t &work;
    RecomputeCost &costs;
    int64_t own = 0;
    ~Count() { work += own + costs.visits; }
  } count{work, recomputeCost};
  for (int t = 0; t < n; ++t) {
    std::vector<int> stageNodes = builder.closure(t, error);
    if (!error.empty())
      return false;
    builder.computeLastReads(stageNodes);
    for (int pos = 0; pos < static_cast<int>(stageNodes.size()); ++pos) {
      int k = stageNodes[pos];
      int64_t need = problem.nodes[k].bytes;
      if (builder.memory + need > budget) {
        int64_t target =
            budget - static_cast<int64_t>(double(budget) * params.headroom);
        while (builder.memory + need > budget ||
               (params.headroom > 0 && builder.memory + need > target)) {
          int bestNode = -1;
          double bestScore = 0;
          count.own += static_cast<int64_t>(builder.liveList.size());
          for (int v : builder.liveList) {
            const Node &node = problem.nodes[v];
            if (!node.recomputable || uses.required[v] || node.bytes == 0)
              continue;
            // Still read later in this stage (or read by k itself).
            if (builder.lastReadPos[v] >= pos)
              continue;
            int next = uses.nextUseAfter(v, t);
            double distance = next < 0 ? 1e9 : double(next - t);
            double score = params.evictionScore(
                recomputeCost(v, builder.live), node.bytes, distance);
            score *= perturbation(params, v, t);
            if (protect && (*protect)[v])
              score *= 1e6;
            if (params.shallow) {
              double deep = 1 + nonLiveOperands(problem, v, builder.live);
              score *= deep * deep;
            }
            if (bestNode < 0 || score < bestScore) {
              bestNode = v;
              bestScore = score;
            }
          }
          if (bestNode < 0) {
            if (builder.memory + need <= budget)
              break; // Only the optional headroom is unmet.
            if (failedStage)
              for (int v : stageNodes)
                if (v != t)
                  failedStage->push_back(v);
            error = "no value can be evicted before computing node " +
                    std::to_string(k) + " ('" + problem.nodes[k].name +
                    "'): " + std::to_string(builder.memory) + " bytes live, " +
                    std::to_string(builder.liveList.size()) + " values";
            return false;
          }
          builder.free(bestNode);
        }
      }
      builder.compute(k);
      ++count.own;
      cost += problem.nodes[k].cost;
      auto settle = [&](int v) {
        if (!builder.live[v] || builder.lastReadPos[v] > pos)
          return;
        if (!uses.neededAfter(v, t))
          builder.free(v);
      };
      for (int op : problem.nodes[k].operands)
        settle(op);
      settle(k);
    }
  }
  schedule = std::move(builder.schedule);
  return true;
}

/// Event-mode variant (DTR proper): node t's missing operands are
/// rematerialized recursively on demand, locking only the operands of the
/// node being computed, so a value may be recomputed more than once per
/// stage. Not stage-structured; used only in Event mode.
class EventDtr {
public:
  EventDtr(const Problem &problem, const UseInfo &uses, int64_t budget,
           const HeuristicParams &params)
      : problem(problem), uses(uses), budget(budget), params(params),
        builder(problem, uses), recomputeCost(problem),
        locks(problem.size(), 0),
        pending(problem.size(), 0) {}

  /// Work done (as runOnce counts it).
  int64_t work() const { return ownWork + recomputeCost.visits; }

  bool run(EventList &schedule, double &cost, std::string &error) {
    int n = problem.size();
    for (stage = 0; stage < n; ++stage) {
      touched.clear();
      if (!builder.live[stage] && !materialize(stage, error, 0))
        return false;
      // Free what this stage computed or read and nobody needs later.
      for (int v : touched)
        if (builder.live[v] && !locks[v] && !uses.neededAfter(v, stage))
          builder.free(v);
    }
    cost = totalCost;
    schedule = std::move(builder.schedule);
    return true;
  }

private:
  bool materialize(int v, std::string &error, int depth) {
    const Node &node = problem.nodes[v];
    if (builder.everComputed[v] && !node.recomputable) {
      error = "node '" + node.name + "' cannot be recomputed but was evicted";
      return false;
    }
    if (depth > 20000) {
      error = "rematerialization recursion too deep";
      return false;
    }
    for (int op : node.operands)
      ++pending[op];
    bool ok = true;
    size_t locked = 0;
    for (int op : node.operands) {
      if (!builder.live[op] && !materialize(op, error, depth + 1)) {
        ok = false;
        break;
      }
      ++locks[op];
      ++locked;
    }
    if (ok)
      ok = makeRoom(node.bytes, v, error);
    if (ok) {
      builder.compute(v);
      ++ownWork;
      totalCost += node.cost;
      touched.push_back(v);
    }
    for (int op : node.operands) {
      --pending[op];
      touched.push_back(op);
    }
    for (size_t j = 0; j < locked; ++j)
      --locks[node.operands[j]];
    return ok;
  }

  bool makeRoom(int64_t bytes, int computing, std::string &error) {
    while (builder.memory + bytes > budget) {
      int bestNode = -1;
      double bestScore = 0;
      ownWork += static_cast<int64_t>(builder.liveList.size());
      for (int v : builder.liveList) {
        const Node &node = problem.nodes[v];
        if (locks[v] || !node.recomputable || uses.required[v] ||
            node.bytes == 0 || v == computing)
          continue;
        int next = uses.nextUseAfter(v, stage - 1);
        double distance = pending[v] ? 0.5 : next < 0 ? 1e9 : double(next - stage + 1);
        if (!pending[v] && !uses.neededAfter(v, stage - 1))
          distance = 1e9;
        double score = params.evictionScore(recomputeCost(v, builder.live),
                                            node.bytes, distance);
        if (bestNode < 0 || score < bestScore) {
          bestNode = v;
          bestScore = score;
        }
      }
      if (bestNode < 0) {
        error = "no value can be evicted before computing node " +
                std::to_string(computing) + " ('" +
                problem.nodes[computing].name + "')";
        return false;
      }
      builder.free(bestNode);
    }
    return true;
  }

  const Problem &problem;
  const UseInfo &uses;
  int64_t budget;
  HeuristicParams params;
  StagedBuilder builder;
  RecomputeCost recomputeCost;
  std::vector<int> locks;
  std::vector<int> pending;
  std::vector<int> touched;
  int stage = 0;
  double totalCost = 0;
  int64_t ownWork = 0;
};

/// Steps 1-5 at one budget, with `timeLimitSeconds` of work (counted from
/// zero here, so the outcome depends only on the problem, the budget and
/// the limit); adds the work done to `total`.
SolverOutput searchAtBudget(const Problem &problem, const UseInfo &uses,
                            int64_t budgetBytes, double timeLimitSeconds,
                            CountingMode mode, int64_t &total) {
  SolverOutput out;
  // The work done so far, in seconds of this machine (see the top).
  int64_t work = 0;
  struct AddToTotal {
    int64_t &total;
    const int64_t &work;
    ~AddToTotal() { total += work; }
  } addToTotal{total, work};
  auto spent = [&] { return double(work) / kHeuristicWorkPerSecond; };
  double bestCost = 0;
  const HeuristicParams variants[] = {
      {1.0, 0.0}, {2.0, 0.0}, {0.5, 0.0}, {1.0, 0.1}, {0.0, 0.0}, {3.0, 0.0},
      {1.0, 0.25}, {2.0, 0.1}};
  // The repair settings of the feasibility search: the shallow ones first
  // (their first round is new; the others' first round is the plain run
  // of step 4, whose failing stage seeds their protection).
  struct Repair {
    HeuristicParams params;
    std::vector<char> protect;
    bool done = false;
  };
  Repair repairs[] = {{variants[2], {}}, {variants[3], {}},
                      {variants[0], {}}, {variants[1], {}}};
  for (Repair &repair : repairs)
    repair.protect.assign(problem.size(), 0);
  repairs[0].params.shallow = repairs[1].params.shallow = true;
  // Repairs 2 and 3 start from the plain runs' failing stages (runs 0, 1).
  std::vector<int> plainFailed[2];
  for (int index = 0; index < 8; ++index) {
    const HeuristicParams &params = variants[index];
    for (int variant = 0; variant < (mode == CountingMode::Event ? 2 : 1);
         ++variant) {
      EventList schedule;
      double cost = 0;
      std::string error;
      bool ok;
      if (variant == 0) {
        ok = runOnce(problem, uses, budgetBytes, params, schedule, cost,
                     error, work, nullptr,
                     index < 2 ? &plainFailed[index] : nullptr);
      } else {
        EventDtr dtr(problem, uses, budgetBytes, params);
        ok = dtr.run(schedule, cost, error);
        work += dtr.work();
      }
      if (ok) {
        if (!out.found || cost < bestCost) {
          out.found = true;
          bestCost = cost;
          out.schedule = std::move(schedule);
        }
      } else if (out.message.empty()) {
        out.message = error;
      }
    }
    // Stop when the next run would likely exceed the limit.
    if (spent() * 2 > timeLimitSeconds)
      break;
  }
  // The feasibility search (steps 5-6) may spend up to 3/4 of the limit:
  // on the 3,000-node layered graph the plain runs alone take half.
  auto feasibilityLeft = [&] { return spent() < 0.75 * timeLimitSeconds; };
  // Nothing found: repair. Each failing run names the values its failing
  // stage had to recompute; protecting them (evicted last) in the next run
  // keeps the checkpoints that stage needed. The settings take turns, up to
  // 32 rounds each, so that under a tight work budget each gets its first
  // rounds.
  for (int index = 0; index < 2; ++index) {
    Repair &repair = repairs[2 + index];
    repair.done = plainFailed[index].empty(); // the plain run did not fail
    for (int v : plainFailed[index])
      repair.protect[v] = 1;
  }
  for (int round = 0; !out.found && round < 32; ++round) {
    bool any = false;
    for (Repair &repair : repairs) {
      if (out.found || repair.done || !feasibilityLeft())
        continue;
      any = true;
      EventList schedule;
      double cost = 0;
      std::string error;
      std::vector<int> failed;
      if (runOnce(problem, uses, budgetBytes, repair.params, schedule, cost,
                  error, work, &repair.protect, &failed)) {
        out.found = true;
        out.schedule = std::move(schedule);
        break;
      }
      bool grew = false;
      for (int v : failed)
        if (!repair.protect[v])
          repair.protect[v] = 1, grew = true;
      repair.done = !grew;
    }
    if (!any)
      break;
  }
  // Still nothing: restart with perturbed scores, half of them preferring
  // shallow evictions, until one completes (a feasibility search: the
  // budget is tight, cost matters less), or 48 runs, or the limit.
  for (unsigned seed = 1; !out.found && seed <= 48; ++seed) {
    if (!feasibilityLeft())
      break;
    HeuristicParams params = variants[seed % 8];
    params.seed = seed;
    params.shallow = seed % 2 == 1;
    EventList schedule;
    double cost = 0;
    std::string error;
    if (runOnce(problem, uses, budgetBytes, params, schedule, cost, error,
                work)) {
      out.found = true;
      out.schedule = std::move(schedule);
    }
  }
  return out;
}

} // namespace

SolverOutput solveHeuristic(const Problem &problem, int64_t budgetBytes,
                            double timeLimitSeconds, CountingMode mode,
                            int ladderSteps) {
  UseInfo uses(problem);
  int64_t work = 0;
  SolverOutput out = searchAtBudget(problem, uses, budgetBytes,
                                    timeLimitSeconds, mode, work);
  // Step 7, the budget ladder: a schedule found at a smaller budget fits
  // this one, so on failure search again at the ladder's rungs below the
  // budget: the points kHeuristicLadderRatio^k (k an integer) of one
  // geometric grid that does not depend on the budget, each with
  // kHeuristicLadderShare of the limit. A rung's outcome depends only on the
  // rung, so a schedule found at rung g is found again at every budget from
  // g up to g x ratio^ladderSteps.
  if (!out.found && ladderSteps > 0 && budgetBytes > 1) {
    const double logRatio = std::log(kHeuristicLadderRatio);
    double top = std::floor(std::log(double(budgetBytes)) / logRatio) + 1;
    for (int k = 0, rungs = 0; rungs < ladderSteps; ++k) {
      auto rung = static_cast<int64_t>(
          std::floor(std::exp((top - k) * logRatio)));
      if (rung >= budgetBytes)
        continue; // above the budget (the grid's top point, rounding)
      if (rung < 1)
        break;
      ++rungs;
      SolverOutput low =
          searchAtBudget(problem, uses, rung, timeLimitSeconds *
                                                  kHeuristicLadderShare,
                         mode, work);
      if (low.found) {
        out = std::move(low);
        break;
      }
    }
  }
  out.status = out.found ? "feasible" : "failed";
  if (out.found)
    out.message.clear();
  return out;
}

} // namespace planner
} // namespace remat
