//===- ChainDp.h - Optimal checkpointing of heterogeneous chains -*- C++ -*-===//
//
// rotor-style dynamic program (Beaumont et al. 2019, "Optimal checkpointing
// for heterogeneous chains") over a chain of stages 1..L, each with a
// forward step F_i, a backward step B_i, and several keep options per stage
// (Rockmate, Zhao et al. 2023).
//
// The chain solver's public interface: the chain and its DP, the
// conversion of a Problem to a chain with per-stage keep options
// (chainFromProblem), the node-level schedule of a chain strategy, and the
// solver that searches the DP's memory (solveChainDpProblem).
//
//===----------------------------------------------------------------------===//
#ifndef REMAT_PASSES_PLANNER_CHAINDP_H
#define REMAT_PASSES_PLANNER_CHAINDP_H

#include "passes/planner/Solvers.h"

namespace remat {
namespace planner {

/// A keep mode of one stage (a forward/backward option pair in the sense
/// of Rockmate): F_i leaves abar_i^o bytes for B_i, and B_i first
/// recomputes what F_i dropped from a_{i-1} and the kept values (the
/// "selective recomputation" of Korthikanti et al. 2022).
struct KeepOption {
  /// abar_i^o: the bytes F_i leaves for B_i, a_i included.
  int64_t keptBytes = 0;
  /// r_i^o: cost of the recomputation B_i starts with.
  double recomputeCost = 0;
  /// bpk_i^o: the most that the bytes live while B_i runs (recomputation
  /// included) exceed abar_i^o + g_i.
  int64_t backwardPeak = 0;
  /// fpk_i^o: the most bytes live while F_i runs in this mode (besides
  /// a_{i-1}), what it keeps included.
  int64_t forwardPeak = 0;
};

/// A heterogeneous chain. Arrays are indexed 0..L; index 0 describes the
/// chain input (a_0 = input activation, g_0 = gradient B_1 produces).
///   F_i reads a_{i-1}, produces a_i (keep mode: leaves keptBytes[i] =
///       abar_i >= a_i for B_i); forwardPeak[i] bytes are live while it runs.
///   B_i reads abar_i, a_{i-1}, g_i; produces g_{i-1}; backwardPeak[i] bytes
///       (its outputs, g_{i-1} included) are live while it runs.
/// The last stage L is usually the loss, with g_L = 0. F_i runs that keep
/// only a_i (checkpointing) have forwardRunPeak[i] bytes live (when empty:
/// forwardPeak[i]).
/// Keep options: option 0 of stage i is the one above (keep abar_i, no
/// recomputation); options 1.. are dropOptions[i] (may be absent: then the
/// chain is rotor's, one keep mode per stage). Options must not number
/// more than 256 per stage.
struct Chain {
  std::vector<double> forwardCost;
  std::vector<double> backwardCost;
  std::vector<int64_t> activationBytes;
  std::vector<int64_t> keptBytes;
  std::vector<int64_t> gradientBytes;
  std::vector<int64_t> forwardPeak;
  std::vector<int64_t> backwardPeak;
  std::vector<int64_t> forwardRunPeak;
  /// Empty, or L + 1 lists of further keep options.
  std::vector<std::vector<KeepOption>> dropOptions;

  int length() const { return static_cast<int>(forwardCost.size()) - 1; }

  /// The number of keep options of `stage` (at least 1).
  int optionCount(int stage) const;
  /// Keep option `option` of `stage`; 0 is keep-all.
  KeepOption keepOption(int stage, int option) const;

  /// A chain of `length` identical stages (plus the input at index 0).
  static Chain uniform(int length, double forwardCost, double backwardCost,
                       int64_t activationBytes, int64_t gradientBytes);

  /// The Problem of the chain: node 0 = input (not recomputable), nodes
  /// 1..L = F_1..F_L (bytes a_i; abar_i = a_i), nodes L+1..2L = B_L..B_1
  /// where B_i reads F_i, F_{i-1} and B_{i+1}. Its Checkmate stage order
  /// is the order in which the DP runs, so DP and MILP are comparable.
  /// Single-node stages have nothing to drop: keptBytes and dropOptions
  /// are not represented.
  Problem toProblem() const;
};

/// One step of a chain strategy.
struct ChainOp {
  enum Kind { Forward, Backward } kind;
  int stage;
  /// Backward steps: the keep option the stage's forward used (0: keep
  /// all); B_stage first recomputes what that option dropped.
  int option = 0;
};

struct ChainDpResult {
  bool feasible = false;
  /// Modeled cost (sum of the steps run).
  double cost = 0;
  std::vector<ChainOp> ops;
  /// Table rows computed: one per kind of stage range (identical ranges
  /// share one), at most L (L + 1) / 2.
  int tableRows = 0;
};

/// Solves the chain DP with `memoryBytes` available besides the chain
/// input (a_0), discretized into about `slots` memory units (sizes rounded
/// up: the result is feasible in the continuous model; the unit is
/// adjusted to divide the most common activation size, which may give up
/// to 1.5x the slots).
///   C(s,t,m) = min of
///     min_o f_s + C(s+1,t,m-abar_s^o) + r_s^o + b_s   (F_s in keep option o)
///     sum_{k=s}^{j-1} f_k + C(j,t,m-a_{j-1}) + C(s,j-1,m)  (checkpoint a_{j-1})
/// with memory conditions at every step (the second term may also be
/// E(s,j-1,m): a_{j-1} serves as abar_{j-1} of an option that keeps only
/// a_{j-1}). Ranges [s,t] whose stages are pairwise identical share one
/// table row: R rows (R <= L(L+1)/2; O(L) for a chain of identical blocks)
/// cost O(R * slots * (L + O)) time for O options per stage and
/// O(R * slots) memory. One option per stage is rotor's DP.
ChainDpResult solveChainDp(const Chain &chain, int64_t memoryBytes,
                           int slots = 400);

/// Default cap on the keep options per stage (keep-all included).
constexpr int kDefaultKeepOptions = 6;

/// Conversion of a Problem whose forward part (nodes not marked backward)
/// splits at articulation points into segments and whose backward nodes
/// read only their own segment and the previous segment's output, in
/// decreasing stage order. `segmentNodes[i]` / `backwardNodes[i]` list the
/// nodes of stage i (1..L); `prefixNodes` are leading non-recomputable
/// forward inputs (kept throughout). False (with a reason) when the problem
/// is not chain-structured. Two relaxations fit compiled training steps:
/// every stage may read a_L (the loss, which every backward op reads), and
/// a backward node that reads no forward value joins the current stage
/// (weight updates the memory-aware order moved late).
///
/// Sizes come from replaying each stage's nodes in index order, freeing
/// each value after its last read in the stage unless it is kept (F_i) or
/// read by a later stage (B_i); g_j counts every backward value live
/// between B_{j+1} and B_j (required outputs to the end).
///
/// Keep options of a stage, up to `maxKeepOptions` (keep-all included),
/// come from greedy selective recomputation (generateOptions states the
/// steps and their complexity).
/// Options are generated once per structurally identical stage (same
/// costs, sizes, flags and operands relative to the stage: segment and
/// backward positions, a_{i-1}, or "outside"): the layers of a transformer
/// share one generation. A stage whose successor has no backward nodes
/// gets keep-all only (its recomputes would follow forward nodes of later
/// segments, out of Checkmate order).
struct ChainMapping {
  Chain chain;
  std::vector<int> prefixNodes;
  std::vector<std::vector<int>> segmentNodes;
  std::vector<std::vector<int>> backwardNodes;
  /// recomputeNodes[i][o]: what B_i recomputes first under keep option o,
  /// in index order (empty for o = 0).
  std::vector<std::vector<std::vector<int>>> recomputeNodes;
  /// Stages whose keep options were generated; the others reused those of
  /// an identical earlier stage.
  int distinctStages = 0;
  /// Bytes of a_L when it is a required output or backward nodes of
  /// earlier stages read it (the loss every backward op reads): it stays
  /// live to the end, outside the DP's memory (and out of stage L's sizes).
  int64_t heldBytes = 0;
};
bool chainFromProblem(const Problem &problem, ChainMapping &mapping,
                      std::string &reason,
                      int maxKeepOptions = kDefaultKeepOptions);

/// The node-level schedule of a chain strategy: the nodes of each step in
/// index order (a backward step's recomputation first), with frees from
/// scheduleFromComputeSequence.
EventList chainStrategySchedule(const Problem &problem,
                                const ChainMapping &mapping,
                                const std::vector<ChainOp> &ops);

/// Chain DP on a Problem: converts it, then searches the DP's memory for
/// the largest value whose checked node-level peak fits `budgetBytes`
/// (the model rounds sizes up, counts the prefix and a held a_L as live
/// throughout, and holds a_{s-1} through B_s even when B_s does not read
/// it). The search starts at the budget less those outside bytes and
/// steps by the checked slack, bisecting where that leaves the bracket:
/// up to 12 DP runs, at least one, fewer when `timeLimitSeconds` runs out.
/// The search is not monotone, so where stages have several keep options
/// the single-option chain is searched too (each gets half the time) and
/// the cheapest checked schedule wins: options never make it worse.
/// `maxKeepOptions` = 1 gives rotor's single keep mode per stage.
SolverOutput solveChainDpProblem(const Problem &problem, int64_t budgetBytes,
                                 CountingMode mode, int slots = 4000,
                                 double timeLimitSeconds = 5.0,
                                 int maxKeepOptions = kDefaultKeepOptions);

/// Frees for a given compute sequence: each computed value stays live
/// until its last read before its next recompute (to the end when it is a
/// required output), the least memory for that sequence.
EventList scheduleFromComputeSequence(const Problem &problem,
                                      const std::vector<int> &computes);

} // namespace planner
} // namespace remat

#endif // REMAT_PASSES_PLANNER_CHAINDP_H
