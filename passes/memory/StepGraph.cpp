//===- StepGraph.cpp - Ordering, liveness and arena layout ----------------===//

#include "passes/memory/StepGraph.h"

#include <algorithm>
#include <tuple>
#include <map>
#include <set>
#include <stdexcept>

namespace remat::memory {

int64_t alignUp(int64_t bytes, int64_t alignment) {
  return (bytes + alignment - 1) / alignment * alignment;
}

namespace {
/// Distinct values an op reads, in first-use order.
std::vector<int> distinctOperands(const StepOp &op) {
  std::vector<int> out;
  for (int v : op.operands)
    if (std::find(out.begin(), out.end(), v) == out.end())
      out.push_back(v);
  return out;
}

/// For each op, the ops that must run before it: producers of its operands;
/// for an in-place update, every other reader of the argument it overwrites
/// (they must see the old value); for a backward or optimizer op, the op
/// that computes the loss (outputs[0]) when it is a forward op.
std::vector<std::vector<int>> predecessors(const StepGraph &graph) {
  std::vector<std::vector<int>> readers(graph.values.size());
  for (size_t k = 0; k < graph.ops.size(); ++k)
    for (int v : distinctOperands(graph.ops[k]))
      readers[v].push_back(static_cast<int>(k));
  int lossOp = -1;
  if (!graph.outputs.empty() && graph.outputs[0] >= 0 &&
      graph.outputs[0] < (int)graph.values.size()) {
    int producer = graph.values[graph.outputs[0]].producer;
    if (producer >= 0 && producer < (int)graph.ops.size() &&
        graph.ops[producer].phase == Phase::Forward)
      lossOp = producer;
  }
  std::vector<std::vector<int>> preds(graph.ops.size());
  for (size_t k = 0; k < graph.ops.size(); ++k) {
    std::set<int> before;
    for (int v : graph.ops[k].operands)
      if (graph.values[v].producer >= 0)
        before.insert(graph.values[v].producer);
    for (int r : graph.ops[k].results) {
      int arg = graph.values[r].inPlaceOf;
      if (arg < 0)
        continue;
      for (int reader : readers[arg])
        if (reader != (int)k)
          before.insert(reader);
    }
    // The backward starts after the loss: a backward op that reads no
    // forward value (the gradient of a sum is a broadcast constant) must
    // not run ahead of the forward and hold its result across it.
    if (lossOp >= 0 && graph.ops[k].phase != Phase::Forward &&
        (int)k != lossOp)
      before.insert(lossOp);
    preds[k].assign(before.begin(), before.end());
  }
  return preds;
}
} // namespace

std::string StepGraph::validate() const {
  int n = static_cast<int>(values.size());
  std::vector<int> producedBy(values.size(), -1);
  for (size_t k = 0; k < ops.size(); ++k) {
    for (int v : ops[k].operands)
      if (v < 0 || v >= n)
        return ops[k].name + ": operand id " + std::to_string(v) +
               " out of range";
    for (int r : ops[k].results) {
      if (r < 0 || r >= n)
        return ops[k].name + ": result id " + std::to_string(r) +
               " out of range";
      if (producedBy[r] >= 0)
        return "value '" + values[r].name + "' is produced twice";
      producedBy[r] = static_cast<int>(k);
      if (values[r].producer != (int)k)
        return "value '" + values[r].name + "' names the wrong producer";
    }
  }
  for (size_t v = 0; v < values.size(); ++v) {
    if (!values[v].isArgument() && producedBy[v] < 0)
      return "value '" + values[v].name + "' is never produced";
    int arg = values[v].inPlaceOf;
    if (arg >= 0) {
      if (arg >= n || !values[arg].isArgument())
        return "value '" + values[v].name +
               "' is in place of a value that is not an argument";
      if (values[arg].bytes != values[v].bytes)
        return "value '" + values[v].name + "' is in place of '" +
               values[arg].name + "' but sized differently";
    }
  }
  // Program order must respect data and in-place (anti-) dependencies.
  auto preds = predecessors(*this);
  for (size_t k = 0; k < ops.size(); ++k)
    for (int p : preds[k])
      if (p >= (int)k)
        return ops[k].name + " runs before " + ops[p].name +
               ", which it depends on";
  for (int o : outputs)
    if (o < 0 || o >= n)
      return "output id " + std::to_string(o) + " out of range";
  return "";
}

std::vector<int> memoryAwareOrder(const StepGraph &graph) {
  size_t numOps = graph.ops.size();
  auto preds = predecessors(graph);
  std::vector<std::vector<int>> succs(numOps);
  std::vector<int> pending(numOps, 0);
  for (size_t k = 0; k < numOps; ++k) {
    pending[k] = static_cast<int>(preds[k].size());
    for (int p : preds[k])
      succs[p].push_back(static_cast<int>(k));
  }
  std::vector<char> isOutput(graph.values.size(), 0);
  for (int o : graph.outputs)
    isOutput[o] = 1;
  std::vector<int> readersLeft(graph.values.size(), 0);
  for (const StepOp &op : graph.ops)
    for (int v : distinctOperands(op))
      ++readersLeft[v];

  auto score = [&](int k) {
    const StepOp &op = graph.ops[k];
    int64_t s = 0;
    for (int v : distinctOperands(op)) {
      const StepValue &value = graph.values[v];
      if (!value.isArgument() && !isOutput[v] && readersLeft[v] == 1)
        s += value.bytes;
    }
    for (int r : op.results)
      if (graph.values[r].inPlaceOf < 0)
        s -= graph.values[r].bytes;
    return s;
  };

  // Ops without operands (constants) are placed afterwards, just before
  // their first reader, so they do not sit in memory from the start.
  std::vector<int> order;
  std::vector<int> ready;
  std::vector<char> deferred(numOps, 0);
  for (size_t k = 0; k < numOps; ++k)
    if (graph.ops[k].operands.empty() && preds[k].empty())
      deferred[k] = 1;
  auto release = [&](int k) {
    for (int s : succs[k])
      if (--pending[s] == 0)
        ready.push_back(s);
  };
  // Ops ready from the start first: releasing the deferred ops then adds
  // exactly the ops whose last predecessor they were (an op read by a
  // constant and ready by it must not be listed twice).
  for (size_t k = 0; k < numOps; ++k)
    if (!deferred[k] && pending[k] == 0)
      ready.push_back(static_cast<int>(k));
  for (size_t k = 0; k < numOps; ++k)
    if (deferred[k])
      release(static_cast<int>(k));
  while (!ready.empty()) {
    size_t best = 0;
    int64_t bestScore = score(ready[0]);
    for (size_t i = 1; i < ready.size(); ++i) {
      int64_t s = score(ready[i]);
      if (s > bestScore || (s == bestScore && ready[i] < ready[best])) {
        best = i;
        bestScore = s;
      }
    }
    int k = ready[best];
    ready.erase(ready.begin() + best);
    order.push_back(k);
    for (int v : distinctOperands(graph.ops[k]))
      --readersLeft[v];
    release(k);
  }
  // Insert each deferred op right before its first reader (or at the end).
  std::vector<int> position(numOps, -1);
  std::vector<int> placedBefore(numOps, static_cast<int>(order.size()));
  for (size_t i = 0; i < order.size(); ++i)
    position[order[i]] = static_cast<int>(i);
  for (size_t k = 0; k < numOps; ++k) {
    if (!deferred[k])
      continue;
    for (int s : succs[k])
      placedBefore[k] = std::min(placedBefore[k], position[s]);
  }
  std::vector<int> result;
  for (size_t i = 0; i <= order.size(); ++i) {
    for (size_t k = 0; k < numOps; ++k)
      if (deferred[k] && placedBefore[k] == (int)i)
        result.push_back(static_cast<int>(k));
    if (i < order.size())
      result.push_back(order[i]);
  }
  return result;
}

StepGraph reorder(const StepGraph &graph, const std::vector<int> &order) {
  StepGraph out;
  out.values = graph.values;
  out.outputs = graph.outputs;
  std::vector<int> newIndex(graph.ops.size(), -1);
  for (size_t i = 0; i < order.size(); ++i) {
    newIndex[order[i]] = static_cast<int>(i);
    out.ops.push_back(graph.ops[order[i]]);
  }
  for (StepValue &v : out.values)
    if (v.producer >= 0)
      v.producer = newIndex[v.producer];
  return out;
}

RecomputedStep applyComputeOrder(const StepGraph &graph,
                                 const std::vector<int> &computes) {
  RecomputedStep out;
  out.graph.values = graph.values;
  std::vector<int> current(graph.values.size());
  for (size_t v = 0; v < current.size(); ++v)
    current[v] = static_cast<int>(v);
  std::vector<int> timesComputed(graph.ops.size(), 0);
  for (int k : computes) {
    const StepOp &op = graph.ops[k];
    StepOp copy = op;
    for (int &v : copy.operands)
      v = current[v];
    int newIndex = static_cast<int>(out.graph.ops.size());
    int count = timesComputed[k]++;
    for (int &r : copy.results) {
      if (count == 0) {
        out.graph.values[r].producer = newIndex;
        continue;
      }
      StepValue value = graph.values[r];
      value.name += "@r" + std::to_string(count);
      value.producer = newIndex;
      value.inPlaceOf = -1;
      int id = static_cast<int>(out.graph.values.size());
      out.graph.values.push_back(value);
      current[r] = id;
      r = id;
    }
    if (count == 0)
      for (int r : op.results)
        current[r] = r;
    out.graph.ops.push_back(copy);
    out.origin.push_back(k);
    out.recompute.push_back(count > 0);
  }
  for (int o : graph.outputs)
    out.graph.outputs.push_back(current[o]);

  // Move each in-place update right after the last other reader of its
  // argument, in one pass: an update reads only its own parameter, gradient
  // and state, which no other update overwrites, so moving one never
  // changes another's last reader. Updates with the same last reader go
  // after it latest-first (the order the former rotate-one-at-a-time loop
  // gave, at quadratic cost per move).
  size_t numOps = out.graph.ops.size();
  std::vector<int> lastReaderOf(out.graph.values.size(), -1);
  for (size_t j = 0; j < numOps; ++j)
    for (int v : out.graph.ops[j].operands)
      lastReaderOf[v] = static_cast<int>(j);
  std::vector<std::vector<int>> after(numOps); // reader -> updates after it
  std::vector<char> deferred(numOps, 0);
  for (size_t k = 0; k < numOps; ++k) {
    int lastReader = -1;
    for (int r : out.graph.ops[k].results) {
      int arg = out.graph.values[r].inPlaceOf;
      if (arg >= 0 && lastReaderOf[arg] > static_cast<int>(k))
        lastReader = std::max(lastReader, lastReaderOf[arg]);
    }
    if (lastReader < 0)
      continue;
    deferred[k] = 1;
    after[size_t(lastReader)].push_back(static_cast<int>(k));
  }
  std::vector<int> order;
  order.reserve(numOps);
  for (size_t j = 0; j < numOps; ++j) {
    if (deferred[j] && !after[j].empty())
      throw std::logic_error("applyComputeOrder: an in-place update is the "
                             "last reader of another's argument");
    if (!deferred[j])
      order.push_back(static_cast<int>(j));
    for (auto it = after[j].rbegin(); it != after[j].rend(); ++it)
      order.push_back(*it);
  }
  {
    std::vector<StepOp> ops;
    std::vector<int> origin;
    std::vector<char> recompute;
    for (int k : order) {
      ops.push_back(std::move(out.graph.ops[size_t(k)]));
      origin.push_back(out.origin[size_t(k)]);
      recompute.push_back(out.recompute[size_t(k)]);
    }
    out.graph.ops = std::move(ops);
    out.origin = std::move(origin);
    out.recompute.assign(recompute.begin(), recompute.end());
  }
  for (size_t k = 0; k < out.graph.ops.size(); ++k)
    for (int r : out.graph.ops[k].results)
      out.graph.values[r].producer = static_cast<int>(k);
  return out;
}

namespace {
thread_local int searchDepth = 0;
} // namespace

LivenessCounts &livenessCounts() {
  static LivenessCounts counts;
  return counts;
}

SearchScope::SearchScope() { ++searchDepth; }
SearchScope::~SearchScope() { --searchDepth; }

Liveness computeLiveness(const StepGraph &graph, int64_t alignment) {
  (searchDepth > 0 ? livenessCounts().inSearch : livenessCounts().outside)++;
  Liveness live;
  int numOps = static_cast<int>(graph.ops.size());
  int last = std::max(numOps - 1, 0);
  size_t n = graph.values.size();

  // 1. Each value's own lifetime: producer to last reader.
  std::vector<Interval> own(n);
  std::vector<char> isOutput(n, 0);
  for (int o : graph.outputs)
    isOutput[o] = 1;
  for (size_t v = 0; v < n; ++v) {
    const StepValue &value = graph.values[v];
    own[v] = value.isArgument() ? Interval{0, last}
                                : Interval{value.producer, value.producer};
  }
  for (int k = 0; k < numOps; ++k)
    for (int v : graph.ops[k].operands)
      own[v].end = std::max(own[v].end, k);
  for (int o : graph.outputs)
    own[o].end = last;

  // 2. Buffers: in-place results join their argument, reusing results join
  //    their dying operand's buffer (ids of earlier values, so one pass in
  //    op order settles every chain).
  live.bufferOf.resize(n);
  for (size_t v = 0; v < n; ++v)
    live.bufferOf[v] = static_cast<int>(v);
  for (size_t v = 0; v < n; ++v)
    if (graph.values[v].inPlaceOf >= 0)
      live.bufferOf[v] = graph.values[v].inPlaceOf;
  for (int k = 0; k < numOps; ++k) {
    const StepOp &op = graph.ops[k];
    if (op.reusableOperand < 0 || op.results.size() != 1)
      continue;
    int operand = op.operands[op.reusableOperand];
    int result = op.results[0];
    const StepValue &in = graph.values[operand];
    const StepValue &out = graph.values[result];
    if (in.isArgument() || isOutput[operand] || isOutput[result] ||
        in.inPlaceOf >= 0 || out.inPlaceOf >= 0 || own[operand].end != k ||
        alignUp(in.bytes, alignment) != alignUp(out.bytes, alignment))
      continue;
    live.bufferOf[result] = live.bufferOf[operand];
  }
  live.intervals.assign(n, Interval{numOps, -1});
  for (size_t v = 0; v < n; ++v) {
    Interval &b = live.intervals[live.bufferOf[v]];
    b.begin = std::min(b.begin, own[v].begin);
    b.end = std::max(b.end, own[v].end);
  }
  for (size_t v = 0; v < n; ++v)
    live.intervals[v] = live.intervals[live.bufferOf[v]];

  // 3. Live bytes per op and the peak, counting each buffer once.
  live.liveBytesAt.assign(numOps, 0);
  live.peakBreakdown.assign(runtime::kNumBufferRoles, 0);
  std::vector<int64_t> delta(numOps + 1, 0);
  for (size_t v = 0; v < n; ++v) {
    if (live.bufferOf[v] != (int)v || live.intervals[v].end < 0)
      continue;
    int64_t bytes = alignUp(graph.values[v].bytes, alignment);
    delta[live.intervals[v].begin] += bytes;
    delta[live.intervals[v].end + 1] -= bytes;
  }
  int64_t running = 0;
  for (int k = 0; k < numOps; ++k) {
    running += delta[k];
    int64_t scratch = alignUp(graph.ops[k].scratchBytes, alignment);
    live.liveBytesAt[k] = running + scratch;
    if (live.liveBytesAt[k] > live.peakBytes || live.peakOp < 0) {
      live.peakBytes = live.liveBytesAt[k];
      live.peakOp = k;
      live.peakScratchBytes = scratch;
    }
  }
  // The breakdown charges each buffer to the value that occupies it at the
  // peak (the latest one defined by then).
  if (live.peakOp >= 0) {
    std::vector<int> occupant(n, -1);
    for (size_t v = 0; v < n; ++v) {
      int b = live.bufferOf[v];
      const StepValue &value = graph.values[v];
      int defined = value.isArgument() ? 0 : value.producer;
      if (defined <= live.peakOp &&
          (occupant[b] < 0 ||
           defined >= (graph.values[occupant[b]].isArgument()
                           ? 0
                           : graph.values[occupant[b]].producer)))
        occupant[b] = static_cast<int>(v);
    }
    for (size_t b = 0; b < n; ++b) {
      const Interval &i = live.intervals[b];
      if (live.bufferOf[b] != (int)b || occupant[b] < 0 ||
          i.begin > live.peakOp || live.peakOp > i.end)
        continue;
      live.peakBreakdown[static_cast<int>(graph.values[occupant[b]].role)] +=
          alignUp(graph.values[b].bytes, alignment);
    }
  }
  return live;
}

ArenaLayout assignOffsets(const StepGraph &graph, const Liveness &liveness,
                          int64_t alignment) {
  ArenaLayout layout;
  size_t n = graph.values.size();
  layout.offsets.assign(n, -1);
  layout.scratchOffsets.assign(graph.ops.size(), -1);
  // What the layout places: values (their buffers), and ops' scratch as
  // items n + k, live at op k only.
  auto sizeOf = [&](int item) {
    return item < (int)n ? alignUp(graph.values[item].bytes, alignment)
                         : alignUp(graph.ops[item - n].scratchBytes, alignment);
  };
  auto intervalOf = [&](int item) {
    return item < (int)n ? liveness.intervals[item]
                         : Interval{item - int(n), item - int(n)};
  };
  auto offsetOf = [&](int item) -> int64_t & {
    return item < (int)n ? layout.offsets[item]
                         : layout.scratchOffsets[item - n];
  };
  std::vector<int> placed;
  auto place = [&](int item) {
    int64_t size = sizeOf(item);
    Interval live = intervalOf(item);
    std::vector<std::pair<int64_t, int64_t>> busy; // [offset, end)
    for (int p : placed)
      if (intervalOf(p).overlaps(live))
        busy.push_back({offsetOf(p), offsetOf(p) + sizeOf(p)});
    std::sort(busy.begin(), busy.end());
    int64_t offset = 0;
    for (auto [start, end] : busy) {
      if (start - offset >= size)
        break;
      offset = std::max(offset, end);
    }
    offsetOf(item) = offset;
    layout.arenaBytes = std::max(layout.arenaBytes, offset + size);
    placed.push_back(item);
  };
  std::vector<int> transient;
  for (size_t v = 0; v < n; ++v) {
    if (liveness.bufferOf[v] != (int)v)
      continue;
    if (graph.values[v].isArgument())
      place(static_cast<int>(v));
    else
      transient.push_back(static_cast<int>(v));
  }
  for (size_t k = 0; k < graph.ops.size(); ++k)
    if (graph.ops[k].scratchBytes > 0)
      transient.push_back(int(n + k));
  // Largest first; ties by live interval, which depends only on the op
  // order, not on how the values happen to be numbered: the rematerialize
  // pass lays out its own copy of the step and the driver the one it
  // extracts from the rewritten IR, and both must get the same arena.
  // Values before scratch of the same size and interval.
  auto rawBytes = [&](int item) {
    return item < (int)n ? graph.values[item].bytes
                         : graph.ops[item - n].scratchBytes;
  };
  std::stable_sort(transient.begin(), transient.end(), [&](int a, int b) {
    Interval ia = intervalOf(a), ib = intervalOf(b);
    return std::make_tuple(-rawBytes(a), ia.begin, ia.end, a >= (int)n) <
           std::make_tuple(-rawBytes(b), ib.begin, ib.end, b >= (int)n);
  });
  for (int v : transient)
    place(v);
  for (size_t v = 0; v < n; ++v)
    layout.offsets[v] = layout.offsets[liveness.bufferOf[v]];
  return layout;
}

std::string findOverlap(const StepGraph &graph, const Liveness &liveness,
                        const ArenaLayout &layout) {
  // Values (their buffers' first values) and ops' scratch, as items.
  struct Item {
    std::string name;
    Interval live;
    int64_t offset, bytes;
  };
  std::vector<Item> items;
  for (size_t v = 0; v < graph.values.size(); ++v)
    if (liveness.bufferOf[v] == (int)v && graph.values[v].bytes > 0)
      items.push_back({graph.values[v].name, liveness.intervals[v],
                       layout.offsets[v], graph.values[v].bytes});
  for (size_t k = 0; k < graph.ops.size(); ++k)
    if (graph.ops[k].scratchBytes > 0 && k < layout.scratchOffsets.size())
      items.push_back({"scratch of " + graph.ops[k].name,
                       Interval{int(k), int(k)}, layout.scratchOffsets[k],
                       graph.ops[k].scratchBytes});
  for (size_t a = 0; a < items.size(); ++a)
    for (size_t b = a + 1; b < items.size(); ++b)
      if (items[a].live.overlaps(items[b].live) &&
          items[a].offset < items[b].offset + items[b].bytes &&
          items[b].offset < items[a].offset + items[a].bytes)
        return items[a].name + " and " + items[b].name;
  return "";
}

} // namespace remat::memory
