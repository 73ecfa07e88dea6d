//===- StepGraph.h - A training step as plain data --------------*- C++ -*-===//
//
// The scheduled training step (forward, backward, optimizer) as plain data:
// values with sizes and roles, ops in program order. The MLIR passes convert
// `func.func @train_step` into this form, run the MLIR-free algorithms of
// this folder on it (memory-aware ordering, liveness, arena layout) and
// write the results back. MLIR-free; unit-tested on hand-built graphs.
//
//===----------------------------------------------------------------------===//
#ifndef REMAT_PASSES_MEMORY_STEPGRAPH_H
#define REMAT_PASSES_MEMORY_STEPGRAPH_H

#include "runtime/plan/PlanFormat.h"

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

namespace remat::memory {

/// What a value is for; decides its lifetime and its line in reports: the
/// plan file's buffer roles. Params and optimizer state live the whole step
/// and across steps, inputs the whole step; a grad is a parameter's final
/// gradient (read by its update); activations come from the forward pass,
/// temporaries from the backward pass.
using Role = runtime::BufferRole;
using runtime::roleName;

/// The plan file's step phases.
using Phase = runtime::Phase;
using runtime::phaseName;

struct StepValue {
  std::string name;
  Role role = Role::Activation;
  int64_t bytes = 0;
  /// The op that defines it; -1 for function arguments (params, optimizer
  /// state, inputs), which are live for the whole step.
  int producer = -1;
  /// For an in-place update result: the argument value whose buffer it
  /// reuses; -1 otherwise.
  int inPlaceOf = -1;
  bool isArgument() const { return producer < 0; }
};

struct StepOp {
  std::string name; ///< for messages and dumps, e.g. "matmul#12"
  std::vector<int> operands; ///< value ids
  std::vector<int> results;  ///< value ids
  Phase phase = Phase::Forward;
  /// An elementwise op may write its result over this operand (an index
  /// into `operands`, -1: none) when that operand dies here and has the
  /// result's size; its kernel must allow that exact aliasing.
  int reusableOperand = -1;
  /// Bytes of kernel scratch the op uses while it runs (a convolution's
  /// unfolded block, attention's scores: runtime/backends/cpu/StepScratch.h), laid out
  /// in the arena like a buffer live at this op only; 0: none.
  int64_t scratchBytes = 0;
};

/// A training step: values and ops in program order; `outputs` are the
/// values that must be live when the step ends, the loss first, then the
/// updated parameters and state. Backward and optimizer ops run after the
/// op that computes the loss.
struct StepGraph {
  std::vector<StepValue> values;
  std::vector<StepOp> ops;
  std::vector<int> outputs;

  /// Structural check: ids in range, each op after its operands' producers,
  /// each non-argument value produced exactly once, in-place results sized
  /// like their argument. Empty when valid, else the first problem.
  std::string validate() const;
};

/// The memory-aware order of DESIGN.md: a topological order that, among
/// the ready ops, runs the one that frees the most bytes net of what it
/// allocates (freed: operands whose last remaining reader it is; allocated:
/// its results, none for in-place updates), breaking ties by program order.
/// So a weight gradient that frees an activation runs before the input
/// gradient that would otherwise overlap that activation, and an optimizer
/// update runs as soon as its gradient is final. Greedy, O(n^2) in the
/// worst case over ready sets; not optimal (a lookahead could beat it on
/// graphs where an op must allocate first to free more later).
/// Returns a permutation of op ids.
std::vector<int> memoryAwareOrder(const StepGraph &graph);

/// Returns the graph with its ops permuted by `order` (value ids kept).
StepGraph reorder(const StepGraph &graph, const std::vector<int> &order);

/// The step after rematerialization: `computes` lists op ids in execution
/// order; an op's first occurrence is the op itself, later ones are
/// recomputations, whose results are new values (copies named
/// "NAME@rK"). Each op reads the latest copy of every operand. In-place
/// updates are then moved after every other reader of the argument they
/// overwrite (a recomputation that reads a parameter must see the old
/// value). `origin[k]` is the op id new op k copies, `recompute[k]` whether
/// it is a recomputation. Ops missing from `computes` are dropped (only
/// ops nothing needs may be missing; validate() catches the rest).
struct RecomputedStep {
  StepGraph graph;
  std::vector<int> origin;
  std::vector<char> recompute;
};
RecomputedStep applyComputeOrder(const StepGraph &graph,
                                 const std::vector<int> &computes);

/// A value's lifetime over op positions, both ends inclusive: while op k
/// runs, its operands and results are all live. Arguments and outputs span
/// the whole step.
struct Interval {
  int begin = 0;
  int end = 0;
  bool overlaps(const Interval &other) const {
    return begin <= other.end && other.begin <= end;
  }
};

struct Liveness {
  /// Per value, the buffer it lives in: the id of the first value of its
  /// buffer. A value gets its own buffer unless it is an in-place update
  /// result (its argument's buffer) or reuses a dying operand's buffer.
  std::vector<int> bufferOf;
  /// Per value: the lifetime of its buffer (the union over its values).
  std::vector<Interval> intervals;
  /// Live bytes while each op runs (in-place results counted once), its
  /// scratch included.
  std::vector<int64_t> liveBytesAt;
  int64_t peakBytes = 0;
  int peakOp = -1;
  /// Bytes per role at the peak op; with peakScratchBytes, the peak op's
  /// scratch, they add up to peakBytes.
  std::vector<int64_t> peakBreakdown; ///< indexed by Role
  int64_t peakScratchBytes = 0;
};

/// Liveness of the graph in its current op order. `alignment` rounds each
/// buffer's size up, as the arena will. Walking the ops in order, a result
/// shares its op's reusable operand's buffer when that operand is a
/// transient value (not an argument or output) whose last reader is this
/// op and whose aligned size equals the result's.
Liveness computeLiveness(const StepGraph &graph, int64_t alignment);

/// How many liveness computations a process ran outside and inside a
/// planner's search (a SearchScope on the stack): the tests that hold one
/// compile to one liveness outside the search read them.
struct LivenessCounts {
  std::atomic<int64_t> outside{0};
  std::atomic<int64_t> inSearch{0};
};
LivenessCounts &livenessCounts();

/// Marks the liveness computations of a search over candidate schedules
/// while it lives (on this thread).
class SearchScope {
public:
  SearchScope();
  ~SearchScope();
  SearchScope(const SearchScope &) = delete;
  SearchScope &operator=(const SearchScope &) = delete;
};

int64_t alignUp(int64_t bytes, int64_t alignment);

/// Fixed offsets in one arena.
struct ArenaLayout {
  std::vector<int64_t> offsets; ///< per value; values of a buffer share
  /// Per op: the offset of its scratch (StepOp::scratchBytes), -1: none.
  std::vector<int64_t> scratchOffsets;
  int64_t arenaBytes = 0;
};

/// Assigns aligned offsets so that values with overlapping lifetimes never
/// overlap in memory. Arguments and outputs are placed first, at the bottom
/// of the arena; the other values follow the greedy-by-size strategy of
/// TFLite's arena planner: largest first, each at the lowest offset that
/// does not collide with an already placed value whose lifetime overlaps.
/// Each op's scratch is placed among them as a buffer live at that op only.
/// O(n^2). Not optimal: the arena can exceed the live-bytes peak (the lower
/// bound) through fragmentation; the report shows both.
ArenaLayout assignOffsets(const StepGraph &graph, const Liveness &liveness,
                          int64_t alignment);

/// Debug aid used by tests: the first pair of values (or a value and an
/// op's scratch, "scratch of OP") that overlap in both time and memory, as
/// "a and b", or empty.
std::string findOverlap(const StepGraph &graph, const Liveness &liveness,
                        const ArenaLayout &layout);

} // namespace remat::memory

#endif // REMAT_PASSES_MEMORY_STEPGRAPH_H
