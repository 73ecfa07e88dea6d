//===- ChainDp.h - Optimal checkpointing of heterogeneous chains -*- C++ -*-===//
//
// rotor-style dynamic program (Beaumont et al. 2019, "Optimal checkpointing
// for heterogeneous chains") over a chain of stages 1..L, each with a
// forward step F_i and a backward step B_i.
//
//===----------------------------------------------------------------------===//
#ifndef REMAT_PASSES_PLANNER_CHAINDP_H
#define REMAT_PASSES_PLANNER_CHAINDP_H

#include "passes/planner/Solvers.h"

namespace remat {
namespace planner {

/// A heterogeneous chain. Arrays are indexed 0..L; index 0 describes the
/// chain input (a_0 = input activation, g_0 = gradient B_1 produces).
///   F_i reads a_{i-1}, produces a_i (keep mode: leaves keptBytes[i] =
///       abar_i >= a_i for B_i); forwardPeak[i] bytes are live while it runs.
///   B_i reads abar_i, a_{i-1}, g_i; produces g_{i-1}; backwardPeak[i] bytes
///       (its outputs, g_{i-1} included) are live while it runs.
/// The last stage L is usually the loss, with g_L = 0.
struct Chain {
  std::vector<double> forwardCost;
  std::vector<double> backwardCost;
  std::vector<int64_t> activationBytes;
  std::vector<int64_t> keptBytes;
  std::vector<int64_t> gradientBytes;
  std::vector<int64_t> forwardPeak;
  std::vector<int64_t> backwardPeak;

  int length() const { return static_cast<int>(forwardCost.size()) - 1; }

  /// A chain of `length` identical stages (plus the input at index 0).
  static Chain uniform(int length, double forwardCost, double backwardCost,
                       int64_t activationBytes, int64_t gradientBytes);

  /// The Problem of the chain: node 0 = input (not recomputable), nodes
  /// 1..L = F_1..F_L (bytes a_i; abar_i = a_i), nodes L+1..2L = B_L..B_1
  /// where B_i reads F_i, F_{i-1} and B_{i+1}. Its Checkmate stage order
  /// is the order in which the DP runs, so DP and MILP are comparable.
  Problem toProblem() const;
};

/// One step of a chain strategy.
struct ChainOp {
  enum Kind { Forward, Backward } kind;
  int stage;
};

struct ChainDpResult {
  bool feasible = false;
  /// Modeled cost (sum of the steps run).
  double cost = 0;
  std::vector<ChainOp> ops;
};

/// Solves the chain DP with `memoryBytes` available besides the chain
/// input (a_0) and, discretized into at most `slots` memory units (sizes
/// rounded up: the result is feasible in the continuous model).
///   C(s,t,m) = min of
///     f_s + C(s+1,t,m-abar_s) + b_s                 (run F_s in keep mode)
///     sum_{k=s}^{j-1} f_k + C(j,t,m-a_{j-1}) + C(s,j-1,m)  (checkpoint a_{j-1})
/// with memory conditions at every step. O(L^3 * slots) time,
/// O(L^2 * slots) memory.
ChainDpResult solveChainDp(const Chain &chain, int64_t memoryBytes,
                           int slots = 400);

/// Conversion of a Problem whose forward part (nodes not marked backward)
/// splits at articulation points into segments and whose backward nodes
/// read only their own segment and the previous segment's output, in
/// decreasing stage order. `segmentNodes[i]` / `backwardNodes[i]` list the
/// nodes of stage i (1..L); `prefixNodes` are leading non-recomputable
/// forward inputs (kept throughout). False (with a reason) when the problem
/// is not chain-structured.
struct ChainMapping {
  Chain chain;
  std::vector<int> prefixNodes;
  std::vector<std::vector<int>> segmentNodes;
  std::vector<std::vector<int>> backwardNodes;
};
bool chainFromProblem(const Problem &problem, ChainMapping &mapping,
                      std::string &reason);

/// The node-level schedule of a chain strategy: the nodes of each step in
/// index order, with frees from scheduleFromComputeSequence.
Schedule chainStrategySchedule(const Problem &problem,
                               const ChainMapping &mapping,
                               const std::vector<ChainOp> &ops);

/// Chain DP on a Problem: converts it, then bisects the DP's memory for the
/// largest value whose checked node-level peak fits `budgetBytes` (the
/// chain model is conservative for multi-node segments and rounds sizes
/// up). Up to 12 DP runs, fewer when `timeLimitSeconds` runs out.
SolverOutput solveChainDpProblem(const Problem &problem, int64_t budgetBytes,
                                 CountingMode mode, int slots = 4000,
                                 double timeLimitSeconds = 5.0);

/// Frees for a given compute sequence: each computed value stays live
/// until its last read before its next recompute (to the end when it is a
/// required output), the least memory for that sequence.
Schedule scheduleFromComputeSequence(const Problem &problem,
                                     const std::vector<int> &computes);

} // namespace planner
} // namespace remat

#endif // REMAT_PASSES_PLANNER_CHAINDP_H
