//===- Reorder.h - Alternative topological orders for the planner -*- C++ -*-//
//
// The planner's solvers keep the problem's node order for first computes
// (Checkmate's stages follow it; the others follow it too). These orders
// let solve() move ops as well: it solves the problem once per order and
// keeps the best checked schedule (SolveOptions::reorder).
//
//===----------------------------------------------------------------------===//
#ifndef REMAT_PASSES_PLANNER_REORDER_H
#define REMAT_PASSES_PLANNER_REORDER_H

#include "passes/planner/EventList.h"

#include <string>
#include <vector>

namespace remat {
namespace planner {

/// A topological order of a problem's nodes: order[p] = the node at
/// position p.
struct NodeOrder {
  std::string name;
  std::vector<int> order;
};

/// Candidate orders besides the given one (which is not included), each a
/// topological order of `problem`, duplicates of the given order and of each
/// other removed:
///  - "greedy-memory": list scheduling that always runs, among the ready
///    nodes, the one that frees the most bytes net of its output (operands
///    it reads last), ties to the given order. O(n * ready + e).
///  - "subtree-first": a depth-first post-order from the sinks (in the given
///    order) that evaluates operands in decreasing order of their modeled
///    working set (Sethi-Ullman / Liu's order for trees; on DAGs shared
///    operands make the estimate an upper bound). O(n log n + e).
/// The problem's edges are the only constraint: backward nodes stay after
/// what they read (in remat's own problems, after the loss).
std::vector<NodeOrder> candidateOrders(const Problem &problem);

/// The problem with its nodes renumbered so that node order[p] becomes
/// node p (operands, required outputs and block ids follow). `order` must
/// be a topological order of `problem`.
Problem permuteProblem(const Problem &problem, const std::vector<int> &order);

/// A schedule of permuteProblem(problem, order) in the original numbering.
EventList unpermuteSchedule(const EventList &schedule,
                            const std::vector<int> &order);


} // namespace planner
} // namespace remat

#endif // REMAT_PASSES_PLANNER_REORDER_H
