//===- EventList.h - Compute/free event lists -------------------*- C++ -*-===//
//
// The output of every planner solver: an ordered list of Compute and Free
// events, and the Checkmate (R, S) matrix form that converts to it.
//
//===----------------------------------------------------------------------===//
#ifndef REMAT_PASSES_PLANNER_SCHEDULE_H
#define REMAT_PASSES_PLANNER_SCHEDULE_H

#include "passes/planner/Problem.h"

#include <iosfwd>
#include <vector>

namespace remat {
namespace planner {

enum class EventKind { Compute, Free };

/// Compute(node) allocates the node's output and runs it (a first compute
/// or a recompute); Free(node) releases the output.
struct Event {
  EventKind kind;
  int node;
  bool operator==(const Event &other) const {
    return kind == other.kind && node == other.node;
  }
};

struct EventList {
  std::vector<Event> events;

  void compute(int node) { events.push_back({EventKind::Compute, node}); }
  void free(int node) { events.push_back({EventKind::Free, node}); }
  /// Number of Compute events (first computes plus recomputes).
  int computeCount() const;
  /// Debug dump, one event per line: "compute 3 'relu1'", "free 3 'relu1'".
  void print(std::ostream &os, const Problem &problem) const;
};

/// `schedule` without its dead computes: a compute whose output is freed
/// unread and that a later compute of the same node replaces, together
/// with its free; repeated until none is left (a dead compute's operands
/// may die with it). Every node keeps at least one compute. Such computes arise
/// where a fixed order forces a first compute long before the value is needed
/// and the solver then drops and recomputes it. Valid in Event mode only:
/// the later recompute becomes the first compute, out of node order.
EventList eliminateDeadComputes(const Problem &problem,
                                const EventList &schedule);

/// A Checkmate solution (Jain et al. 2020): stage t computes node t and may
/// first recompute earlier nodes, in index order.
///   recompute[t][i]: node i is computed in stage t (i <= t; [t][t] is 1).
///   resident[t][i]:  node i's output is resident at the start of stage t.
struct CheckmateSolution {
  std::vector<std::vector<char>> recompute;
  std::vector<std::vector<char>> resident;

  /// All-zero n x n matrices.
  static CheckmateSolution empty(int n);

  /// The event schedule of the solution: per stage, the computes in index
  /// order; after each compute, every input (and the output) that no later
  /// compute of the stage reads and that is not resident at the start of the
  /// next stage is freed. A resident value that the stage neither reads nor
  /// keeps is freed when the stage starts. A recompute of a value that is
  /// already live is dropped (it only arises with zero-cost nodes).
  /// Returns an error string (empty when fine) for solutions that read a
  /// value that is not there.
  EventList toSchedule(const Problem &problem,
                       std::string *error = nullptr) const;

  /// The inverse for stage-structured schedules (see Checker.h); returns
  /// false when `schedule` is not stage-structured.
  static bool fromSchedule(const Problem &problem, const EventList &schedule,
                           CheckmateSolution &result);
};

} // namespace planner
} // namespace remat

#endif // REMAT_PASSES_PLANNER_SCHEDULE_H
