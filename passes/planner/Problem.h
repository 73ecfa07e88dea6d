//===- Problem.h - The rematerialization planning problem -------*- C++ -*-===//
//
// The input of every planner solver: a DAG of nodes in a fixed topological
// order, each with a modeled cost and an output size. MLIR-free.
//
//===----------------------------------------------------------------------===//
#ifndef REMAT_PASSES_PLANNER_PROBLEM_H
#define REMAT_PASSES_PLANNER_PROBLEM_H

#include <cstdint>
#include <string>
#include <vector>

namespace remat {
namespace planner {

/// One operation of the training step. Its output is the only value it
/// defines; `bytes` is that output's exact size after alignment.
struct Node {
  std::string name;
  /// Modeled cost of running the node once (any unit, e.g. microseconds).
  double cost = 0.0;
  /// Size of the node's output in bytes.
  int64_t bytes = 0;
  /// Indices of the nodes whose outputs this node reads; each is smaller
  /// than the node's own index. Duplicates are ignored.
  std::vector<int> operands;
  /// False for values that cannot be produced twice (inputs loaded once,
  /// random state, ...): they are computed exactly once and stay live until
  /// their last use.
  bool recomputable = true;
  /// Optional block id (-1: none), e.g. a transformer layer. Used by the
  /// per-block baseline and the chain decomposition.
  int block = -1;
  /// True for nodes of the backward pass (and the loss). Optional: only the
  /// baselines (per-block, sqrt(n)) and the chain conversion use it.
  bool backward = false;
  /// The output may take the bytes of an operand of its size that dies at
  /// this node (an elementwise kernel running in place; the buffer layout
  /// does it, the solvers' count does not). Only the arena's lower bound
  /// reads it.
  bool mayReuseOperand = false;
};

/// A DAG in topological order plus the memory that is always resident.
struct Problem {
  std::vector<Node> nodes;
  /// Bytes always resident (parameters, gradients, optimizer state); added
  /// to every peak.
  int64_t persistentBytes = 0;
  /// Nodes whose outputs must be live when the step ends (e.g. gradients
  /// read by an optimizer outside the graph). Sorted, unique.
  std::vector<int> requiredOutputs;

  int size() const { return static_cast<int>(nodes.size()); }

  /// Appends a node and returns its index.
  int addNode(std::string name, double cost, int64_t bytes,
              std::vector<int> operands, bool recomputable = true,
              int block = -1, bool backward = false);

  /// Checks the structural invariants (operand indices in range and
  /// smaller than the user, sizes and costs non-negative, required outputs
  /// in range). Returns an empty string when valid, else the first problem.
  std::string validate() const;

  /// Sorts and dedups operands and requiredOutputs (call after building).
  void normalize();

  double totalCost() const;
};

/// Derived use information, computed once per solve.
struct UseInfo {
  /// consumers[i]: the nodes that read node i, sorted ascending.
  std::vector<std::vector<int>> consumers;
  /// lastUse[i]: the last consumer of i, or i itself when it has none.
  std::vector<int> lastUse;
  /// required[i]: node i is a required output.
  std::vector<char> required;
  /// pinnedUntil[i]: for a non-recomputable node, the last stage that may
  /// read it, directly or to recompute a recomputable descendant (the max
  /// of lastUse over i and its descendants through recomputable nodes);
  /// such a value must stay live until then. lastUse[i] otherwise.
  std::vector<int> pinnedUntil;

  explicit UseInfo(const Problem &problem);

  /// The first consumer of `node` with index > `stage`, or -1.
  int nextUseAfter(int node, int stage) const;
  /// Whether `node`'s output is needed after stage `stage`: a later reader,
  /// a required output, or a pinned value still needed for recomputation.
  bool neededAfter(int node, int stage) const {
    return required[node] || nextUseAfter(node, stage) >= 0 ||
           pinnedUntil[node] > stage;
  }
};

/// The lower bound on any schedule's peak: for every node k, its output, its
/// operands, the required outputs and non-recomputable values computed
/// before k and needed after it must be live together while k runs.
struct LowerBound {
  int64_t bytes = 0;
  /// The node that attains the bound and the breakdown of its bytes.
  int node = -1;
  int64_t outputBytes = 0;
  int64_t operandBytes = 0;
  int64_t pinnedBytes = 0;
  /// "persistent P + output of 'n' B + its operands O + pinned Q".
  std::string describe(const Problem &problem) const;
};
/// With `arena`, a bound on the arena after buffer layout rather than on
/// the solvers' count: the output of a node that may reuse a dying operand
/// (Node::mayReuseOperand) then takes no bytes of its own.
LowerBound computeLowerBound(const Problem &problem, bool arena = false);

/// Articulation points of the subgraph formed by the nodes with
/// `includeNode[i]` set, in the given order: node k is one when every edge
/// between included nodes that starts before k ends at or before k, i.e.
/// k's output is the only included value crossing the cut after k.
std::vector<int> articulationPoints(const Problem &problem,
                                    const std::vector<char> &includeNode);

/// The nodes of the forward part: those with `backward` unset. When no node
/// is marked backward, all nodes.
std::vector<char> forwardMask(const Problem &problem);

} // namespace planner
} // namespace remat

#endif // REMAT_PASSES_PLANNER_PROBLEM_H
