//===- CheckmateGraph.h - Reader for Checkmate benchmark graphs -*- C++ -*-===//
//
// Reads the networkx node-link JSON of the Checkmate paper's training graphs
// (`remat plan --graph FILE`) into a Problem, and the budget helpers of the
// benchmark tables.
//
//===----------------------------------------------------------------------===//
#ifndef REMAT_PASSES_PLANNER_CHECKMATEGRAPH_H
#define REMAT_PASSES_PLANNER_CHECKMATEGRAPH_H

#include "passes/planner/Problem.h"

#include <string>

namespace remat {
namespace planner {

/// A Checkmate graph: the problem plus the graph's display name.
struct CheckmateGraph {
  std::string name;
  Problem problem;
};

/// Parses node-link JSON text: {"nodes": [{"id", "cost_cpu", "cost_ram",
/// optional "name", optional "backward"}], "links": [{"source", "target"}],
/// optional "graph": {"name"}}. Node ids must be 0..n-1 and form a
/// topological order (every link goes from a smaller to a larger id).
/// Returns false with a message naming the offending node or link.
bool parseCheckmateGraph(const std::string &text, CheckmateGraph &graph,
                         std::string &error);

/// Reads and parses a file; `error` starts with the path.
bool readCheckmateGraph(const std::string &path, CheckmateGraph &graph,
                        std::string &error);

/// The benchmark budget for `fraction` of the store-all peak (Checkmate
/// counting), rounded down to a byte.
int64_t budgetForFraction(const Problem &problem, double fraction);

} // namespace planner
} // namespace remat

#endif // REMAT_PASSES_PLANNER_CHECKMATEGRAPH_H
