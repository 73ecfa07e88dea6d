// Tests of the MLIR-free memory algorithms: memory-aware order, liveness
// with buffer reuse, arena layout.

#include "passes/memory/StepGraph.h"

#include <catch2/catch.hpp>

#include <map>
#include <random>

using namespace remat::memory;

namespace {
/// Builds step graphs by name for readable tests.
struct Builder {
  StepGraph graph;

  int arg(const std::string &name, Role role, int64_t bytes) {
    graph.values.push_back({name, role, bytes, -1, -1});
    return static_cast<int>(graph.values.size()) - 1;
  }
  int op(const std::string &name, std::vector<int> operands, int64_t bytes,
         Role role = Role::Activation, Phase phase = Phase::Forward,
         int reusable = -1, int inPlaceOf = -1) {
    int k = static_cast<int>(graph.ops.size());
    graph.values.push_back({name, role, bytes, k, inPlaceOf});
    int v = static_cast<int>(graph.values.size()) - 1;
    graph.ops.push_back({name, std::move(operands), {v}, phase, reusable});
    return v;
  }
  int update(const std::string &name, int param, int grad) {
    return op(name, {param, grad}, graph.values[param].bytes, Role::Param,
              Phase::Optimizer, -1, param);
  }
};

constexpr int64_t A = 1 << 20; // one activation-sized buffer
constexpr int64_t W = 4096;    // a weight
constexpr int64_t S = 64;      // a small tensor

/// The forum's model (three linear layers, bias adds that may reuse the
/// matmul's buffer, loss = sum), with the backward in the order a plain
/// reverse sweep emits: each input gradient before its weight gradient.
Builder forumModel() {
  Builder b;
  int x = b.arg("x", Role::Input, A);
  int w1 = b.arg("w1", Role::Param, W), b1 = b.arg("b1", Role::Param, S);
  int w2 = b.arg("w2", Role::Param, W), b2 = b.arg("b2", Role::Param, S);
  int w3 = b.arg("w3", Role::Param, W);
  int xw1 = b.op("xw1", {x, w1}, A);
  int h1 = b.op("h1", {xw1, b1}, A, Role::Activation, Phase::Forward, 0);
  int hw2 = b.op("hw2", {h1, w2}, A);
  int h2 = b.op("h2", {hw2, b2}, A, Role::Activation, Phase::Forward, 0);
  int out = b.op("out", {h2, w3}, S);
  int loss = b.op("loss", {out}, S);
  auto bw = [&](const std::string &n, std::vector<int> in, int64_t bytes,
                Role role = Role::Temporary) {
    return b.op(n, std::move(in), bytes, role, Phase::Backward);
  };
  int dout = bw("dout", {loss}, S);
  int dh2 = bw("dh2", {dout, w3}, A);
  int dw3 = bw("dw3", {h2, dout}, W, Role::Grad);
  int db2 = bw("db2", {dh2}, S, Role::Grad);
  int dh1 = bw("dh1", {dh2, w2}, A);
  int dw2 = bw("dw2", {h1, dh2}, W, Role::Grad);
  int db1 = bw("db1", {dh1}, S, Role::Grad);
  int dw1 = bw("dw1", {x, dh1}, W, Role::Grad);
  int nw1 = b.update("w1'", w1, dw1), nb1 = b.update("b1'", b1, db1);
  int nw2 = b.update("w2'", w2, dw2), nb2 = b.update("b2'", b2, db2);
  int nw3 = b.update("w3'", w3, dw3);
  b.graph.outputs = {loss, nw1, nb1, nw2, nb2, nw3};
  return b;
}

int64_t persistent(const StepGraph &g) {
  int64_t bytes = 0;
  for (const StepValue &v : g.values)
    if (v.isArgument())
      bytes += alignUp(v.bytes, 64);
  return bytes;
}
} // namespace

TEST_CASE("the forum's model peaks at 3 activation buffers when weight "
          "gradients run first",
          "[memory]") {
  Builder b = forumModel();
  REQUIRE(b.graph.validate().empty());
  // In program order dh2 is computed while h2 is still held for dw3:
  // x (an input, persistent) + h1 + h2 + dh2 = 4 activation buffers.
  Liveness naive = computeLiveness(b.graph, 64);
  CHECK(naive.peakBytes - persistent(b.graph) >= 3 * A);

  StepGraph ordered = reorder(b.graph, memoryAwareOrder(b.graph));
  REQUIRE(ordered.validate().empty());
  Liveness live = computeLiveness(ordered, 64);
  // x is an input (persistent); h1 + h2 in forward (h1 reuses xw1, h2
  // reuses hw2); in backward dw3 frees h2 before dh2 exists, dw2 frees h1
  // before dh1 exists: x + 2 activations + a few small tensors.
  int64_t transient = live.peakBytes - persistent(ordered);
  CHECK(transient >= 2 * A);
  CHECK(transient < 2 * A + 16 * W);
}

TEST_CASE("an in-place update waits for every other reader of its "
          "parameter",
          "[memory]") {
  Builder b = forumModel();
  StepGraph ordered = reorder(b.graph, memoryAwareOrder(b.graph));
  std::map<std::string, int> position;
  for (size_t k = 0; k < ordered.ops.size(); ++k)
    position[ordered.ops[k].name] = static_cast<int>(k);
  // dh2 reads w3, so w3's update must come after it; dh1 reads w2.
  CHECK(position["w3'"] > position["dh2"]);
  CHECK(position["w2'"] > position["dh1"]);
  // Updates run as soon as their gradient is final.
  CHECK(position["w3'"] < position["dh1"]);
}

TEST_CASE("validate rejects an update placed before a reader of its "
          "parameter",
          "[memory]") {
  Builder b;
  int w = b.arg("w", Role::Param, W);
  int y = b.op("y", {w}, W);
  int g = b.op("g", {y}, W, Role::Grad, Phase::Backward);
  b.graph.ops.insert(b.graph.ops.begin(), StepOp{"w'", {w, g}, {}, Phase::Optimizer});
  CHECK(!b.graph.validate().empty());
}

TEST_CASE("a bias add reuses the matmul buffer that dies at it",
          "[memory]") {
  Builder b = forumModel();
  Liveness live = computeLiveness(b.graph, 64);
  auto id = [&](const char *n) {
    for (size_t v = 0; v < b.graph.values.size(); ++v)
      if (b.graph.values[v].name == n)
        return static_cast<int>(v);
    return -1;
  };
  CHECK(live.bufferOf[id("h1")] == id("xw1"));
  CHECK(live.bufferOf[id("h2")] == id("hw2"));
  // dh2 dies at dw2 (not an elementwise op): no reuse for dw2.
  CHECK(live.bufferOf[id("dw2")] == id("dw2"));
}

TEST_CASE("liveness counts operands and results together while an op runs",
          "[memory]") {
  // a (arg, 100) -> b (200) -> c (300); c is the output.
  Builder g;
  int a = g.arg("a", Role::Input, 100);
  int bv = g.op("b", {a}, 200);
  int c = g.op("c", {bv}, 300);
  g.graph.outputs = {c};
  Liveness live = computeLiveness(g.graph, 1);
  // op b: a + b = 300; op c: a + b + c = 600.
  CHECK(live.liveBytesAt == std::vector<int64_t>{300, 600});
  CHECK(live.peakBytes == 600);
  CHECK(live.peakOp == 1);
  // With 64-byte alignment: 128 + 256 + 320 = 704.
  CHECK(computeLiveness(g.graph, 64).peakBytes == 704);
}

TEST_CASE("arena layouts never overlap live buffers on random graphs",
          "[memory]") {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    Builder b;
    int numArgs = 1 + rng() % 4;
    std::vector<int> available;
    for (int i = 0; i < numArgs; ++i)
      available.push_back(b.arg("a" + std::to_string(i), Role::Param,
                                1 + rng() % 5000));
    int numOps = 1 + rng() % 40;
    for (int k = 0; k < numOps; ++k) {
      std::vector<int> operands;
      int count = 1 + rng() % 3;
      for (int i = 0; i < count; ++i)
        operands.push_back(available[rng() % available.size()]);
      int64_t bytes = 1 + rng() % 10000;
      int reusable = rng() % 2 ? 0 : -1;
      if (reusable == 0)
        bytes = b.graph.values[operands[0]].bytes;
      available.push_back(b.op("v" + std::to_string(k), operands, bytes,
                               Role::Activation, Phase::Forward, reusable));
      // Some ops need kernel scratch, laid out with the buffers.
      if (rng() % 3 == 0)
        b.graph.ops.back().scratchBytes = 1 + rng() % 10000;
    }
    b.graph.outputs = {available.back()};
    REQUIRE(b.graph.validate().empty());
    StepGraph ordered = reorder(b.graph, memoryAwareOrder(b.graph));
    REQUIRE(ordered.validate().empty());
    Liveness live = computeLiveness(ordered, 64);
    ArenaLayout layout = assignOffsets(ordered, live, 64);
    INFO("trial " << trial);
    CHECK(findOverlap(ordered, live, layout).empty());
    CHECK(layout.arenaBytes >= live.peakBytes);
    for (int64_t offset : layout.offsets)
      CHECK(offset % 64 == 0);
    for (int64_t offset : layout.scratchOffsets)
      CHECK((offset == -1 || offset % 64 == 0));
  }
}

TEST_CASE("an op's scratch is laid out live at that op only, over the bytes "
          "of a buffer dead by then",
          "[memory]") {
  // x -> a (big) -> b -> c, and c's kernel needs scratch as big as a: a is
  // dead when c runs, so the scratch takes a's bytes.
  Builder g;
  int x = g.arg("x", Role::Input, 64);
  int a = g.op("a", {x}, A);
  int b = g.op("b", {a}, 64);
  int c = g.op("c", {b}, 64);
  g.graph.ops[2].scratchBytes = A - 10; // aligned up to A
  g.graph.outputs = {c};
  REQUIRE(g.graph.validate().empty());
  Liveness live = computeLiveness(g.graph, 64);
  // While c runs: x, b, c and the scratch.
  CHECK(live.liveBytesAt[2] == 64 + 64 + 64 + A);
  CHECK(live.peakOp == 2);
  CHECK(live.peakScratchBytes == A);
  ArenaLayout layout = assignOffsets(g.graph, live, 64);
  CHECK(layout.scratchOffsets[0] == -1);
  CHECK(layout.scratchOffsets[1] == -1);
  CHECK(layout.scratchOffsets[2] == layout.offsets[a]);
  CHECK(layout.arenaBytes == 64 + A + 64 + 64);
  CHECK(findOverlap(g.graph, live, layout).empty());
  // Placed on b, which c reads, the scratch is an overlap.
  layout.scratchOffsets[2] = layout.offsets[b];
  CHECK(findOverlap(g.graph, live, layout) == "b and scratch of c");
  // Without scratch the arena holds a beside b and c only.
  g.graph.ops[2].scratchBytes = 0;
  Liveness plain = computeLiveness(g.graph, 64);
  CHECK(plain.peakScratchBytes == 0);
  CHECK(assignOffsets(g.graph, plain, 64).arenaBytes == 64 + A + 64);
}

TEST_CASE("findOverlap reports two live buffers placed on each other",
          "[memory]") {
  Builder g;
  int a = g.arg("a", Role::Input, 100);
  int bv = g.op("b", {a}, 100);
  g.graph.outputs = {bv};
  Liveness live = computeLiveness(g.graph, 64);
  ArenaLayout layout = assignOffsets(g.graph, live, 64);
  CHECK(findOverlap(g.graph, live, layout).empty());
  layout.offsets[bv] = layout.offsets[a];
  CHECK(findOverlap(g.graph, live, layout) == "a and b");
}

TEST_CASE("a recomputation copies the op and later readers use the copy",
          "[memory]") {
  // x -> a -> b -> loss; the backward op g reads a. Compute a, b, loss,
  // then a again (a recomputation), then g.
  Builder g;
  int x = g.arg("x", Role::Input, 64);
  int a = g.op("a", {x}, 128);
  int b = g.op("b", {a}, 128);
  int loss = g.op("loss", {b}, 4);
  int d = g.op("g", {a, loss}, 128, Role::Temporary, Phase::Backward);
  g.graph.outputs = {loss, d};
  REQUIRE(g.graph.validate().empty());
  RecomputedStep r = applyComputeOrder(g.graph, {0, 1, 2, 0, 3});
  REQUIRE(r.graph.validate().empty());
  CHECK(r.origin == std::vector<int>{0, 1, 2, 0, 3});
  CHECK(r.recompute == std::vector<char>{0, 0, 0, 1, 0});
  int copy = r.graph.ops[3].results[0];
  CHECK(copy != a);
  CHECK(r.graph.values[copy].name == "a@r1");
  CHECK(r.graph.ops[4].operands[0] == copy); // g reads the recomputed a
  CHECK(r.graph.ops[1].operands[0] == a);    // b read the original
  // The original a dies at b (op 1) instead of living until g.
  Liveness live = computeLiveness(r.graph, 64);
  CHECK(live.intervals[a].end == 1);
  CHECK(live.intervals[copy].begin == 3);
}

TEST_CASE("an in-place update moves after a recomputation that reads its "
          "parameter",
          "[memory]") {
  // w is read by the forward op f; its update u runs right after its
  // gradient. A recomputation of f after u would read the new w, so u
  // must move after it.
  Builder g;
  int w = g.arg("w", Role::Param, 64);
  int f = g.op("f", {w}, 64);
  int loss = g.op("loss", {f}, 4);
  int gw = g.op("gw", {loss}, 64, Role::Grad, Phase::Backward);
  int u = g.update("w'", w, gw);
  int h = g.op("h", {f, loss}, 64, Role::Temporary, Phase::Backward);
  g.graph.outputs = {loss, u, h};
  REQUIRE(g.graph.validate().empty());
  // Compute f, loss, gw, u, then recompute f for h.
  RecomputedStep r = applyComputeOrder(g.graph, {0, 1, 2, 3, 0, 4});
  REQUIRE(r.graph.validate().empty());
  CHECK(r.origin == std::vector<int>{0, 1, 2, 0, 3, 4});
  CHECK(r.recompute == std::vector<char>{0, 0, 0, 1, 0, 0});
}
