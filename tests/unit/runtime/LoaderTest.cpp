//===- LoaderTest.cpp - Plan parsing, serialization and validation -------===//
#include "TestUtil.h"
#include "TinyPlan.h"

#include "runtime/Executor.h"
#include "runtime/plan/Loader.h"
#include "runtime/backends/cpu/CpuBackend.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <random>
#include <tuple>
#include <vector>

using namespace remat::runtime;
using namespace remat::runtime::test;
using nlohmann::json;

namespace {

json tinyJson() { return json::parse(kTinyLinearPlan); }

/// Loading `plan` throws a PlanError whose message contains `expected`.
void expectRejected(const json &plan, const std::string &expected) {
  INFO("expected error containing: " << expected);
  try {
    loadPlanText(plan.dump(), "bad.plan");
    FAIL("the plan was accepted");
  } catch (const PlanError &e) {
    std::string msg = e.what();
    INFO("got: " << msg);
    CHECK(msg.find(expected) != std::string::npos);
    CHECK(msg.rfind("bad.plan: ", 0) == 0);
  }
}

} // namespace

TEST_CASE("the hand-written tiny plan loads and validates", "[runtime]") {
  LoadedPlan lp = loadPlanText(kTinyLinearPlan, "tiny.plan");
  CHECK(lp.plan.model == "tiny_linear");
  CHECK(lp.plan.buffers.size() == 14);
  CHECK(lp.steps.size() == 10);
  CHECK(lp.steps[6].op == OpKind::Matmul);
  CHECK(lp.steps[6].attrs.transposeA);
  CHECK(lp.steps[8].attrs.lr == Approx(0.1));
  // grad:w (buffer 6) is last written by step 6.
  CHECK(lp.lastWriter[6] == 6);
  CHECK(lp.lastWriter[1] == 8); // w, updated in place by sgd_update
}

TEST_CASE("serializePlan and parsePlan round-trip a plan byte for byte",
          "[runtime]") {
  Plan plan = parsePlanText(kTinyLinearPlan, "tiny.plan");
  std::string once = serializePlanText(plan);
  Plan again = parsePlanText(once, "again.plan");
  CHECK(serializePlanText(again) == once);
  CHECK(again.buffers[0].data->kind == DataSpec::Kind::Randn);
  CHECK(again.buffers[3].init->kind == InitSpec::Kind::Uniform);
  CHECK(again.buffers[3].init->low == -1.0);
  CHECK(again.report["planned_peak_bytes"] == 836);
}

TEST_CASE("a plan built in code serializes to a loadable file", "[runtime]") {
  // What the compiler's emitter does: fill a Plan, serialize it.
  Plan plan;
  plan.model = "emitted";
  plan.alignment = 16;
  plan.arenaBytes = 48;
  plan.batch = 2;
  BufferDesc a{"a", BufferRole::Input, DType::F32, {2, 2}, 0, 16, {}, {}};
  a.data = DataSpec{};
  BufferDesc loss{"loss", BufferRole::Activation, DType::F32, {}, 16, 4, {},
                  {}};
  BufferDesc zero{
      "zero", BufferRole::Activation, DType::F32, {2, 2}, 32, 16, {}, {}};
  plan.buffers = {a, loss, zero};
  StepDesc constant{"constant",     {},   {2}, {{"value", 0.0}},
                    Phase::Forward, false};
  StepDesc mse{"mse", {0, 2}, {1}, json::object(), Phase::Forward, false};
  plan.steps = {constant, mse};
  plan.loss = 1;
  LoadedPlan lp = loadPlanText(serializePlanText(plan), "emitted.plan");
  CHECK(lp.steps[1].op == OpKind::Mse);
}

TEST_CASE("loader rejects truncated and malformed JSON", "[runtime]") {
  std::string text = kTinyLinearPlan;
  CHECK_THROWS_WITH(loadPlanText(text.substr(0, text.size() / 2), "t.plan"),
                    Catch::StartsWith("t.plan: truncated JSON"));
  CHECK_THROWS_WITH(loadPlanText("{\"format\": remat}", "m.plan"),
                    Catch::StartsWith("m.plan: malformed JSON at byte"));
  CHECK_THROWS_AS(loadPlanText("", "e.plan"), PlanError);
}

TEST_CASE("loader rejects another format or version naming both versions",
          "[runtime]") {
  json p = tinyJson();
  p["version"] = 2;
  expectRejected(p, "/version: unsupported plan version 2 (this runtime "
                    "reads version 1)");
  p = tinyJson();
  p["format"] = "onnx";
  expectRejected(p, "not a remat plan");
  p = tinyJson();
  p.erase("arena_bytes");
  expectRejected(p, "missing field \"arena_bytes\"");
  p = tinyJson();
  p["extra"] = 1;
  expectRejected(p, "unknown field \"extra\"");
}

TEST_CASE("loader rejects offsets outside the arena or misaligned",
          "[runtime]") {
  json p = tinyJson();
  p["buffers"][13]["offset"] = 896;
  expectRejected(p, "/buffers/13 'dy': bytes [896, 896+64) lie outside the "
                    "arena of 896 bytes");
  p = tinyJson();
  p["buffers"][13]["offset"] = 648;
  expectRejected(p, "/buffers/13 'dy': offset 648 is not aligned to 64");
  p = tinyJson();
  p["buffers"][13]["offset"] = uint64_t(-64) & ~uint64_t(63);
  expectRejected(p, "outside the arena");
  p = tinyJson();
  p["alignment"] = 48;
  expectRejected(p, "/alignment: must be a power of two");
}

TEST_CASE("loader rejects byte counts that do not match the shape or "
          "overflow",
          "[runtime]") {
  json p = tinyJson();
  p["buffers"][0]["bytes"] = 64;
  expectRejected(p, "/buffers/0 'x': bytes is 64 but shape [8,4] of f32 "
                    "needs 128");
  p = tinyJson();
  p["buffers"][0]["shape"] = {int64_t(1) << 40, int64_t(1) << 40};
  expectRejected(p, "overflows 64-bit byte count");
  p = tinyJson();
  p["buffers"][0]["shape"] = {8, 0};
  expectRejected(p, "non-positive dim");
}

TEST_CASE("loader rejects buffer indices out of range and wrong operand "
          "counts",
          "[runtime]") {
  json p = tinyJson();
  p["steps"][1]["inputs"] = {0, 1, 2};
  expectRejected(p, "/steps/1 'matmul': has 3 inputs but 'matmul' takes 2");
  p = tinyJson();
  p["steps"][5]["outputs"] = json::array();
  expectRejected(p, "/steps/5 'mse_grad': has 0 outputs but 'mse_grad' "
                    "produces 1");
  p = tinyJson();
  p["steps"][2]["inputs"][1] = 14;
  expectRejected(p, "/steps/2 'add': input 1 is buffer 14, outside [0, 14)");
  p = tinyJson();
  p["loss"] = -1;
  expectRejected(p, "/loss");
}

TEST_CASE("loader rejects a shape mismatch naming the step and operand",
          "[runtime]") {
  json p = tinyJson();
  p["buffers"][1]["shape"] = {3, 2};
  p["buffers"][1]["bytes"] = 24;
  expectRejected(p, "bad.plan: /steps/1 'matmul': input 1 has shape [3,2] "
                    "but expects K=4");
  p = tinyJson();
  p["buffers"][9]["shape"] = {2, 8};
  expectRejected(p, "/steps/1 'matmul': output 0 has shape [2,8] but expects "
                    "[8,2]");
  p = tinyJson();
  p["buffers"][2]["shape"] = {3};
  p["buffers"][2]["bytes"] = 12;
  expectRejected(p, "/steps/2 'add': input 0 [8,2] and input 1 [3] do not "
                    "broadcast: dim 1 of the broadcast shape is 2 vs 3");
}

TEST_CASE("loader rejects an unknown op, role or dtype", "[runtime]") {
  json p = tinyJson();
  p["steps"][3]["op"] = "matmull";
  expectRejected(p, "/steps/3 'matmull': unknown op 'matmull'");
  p = tinyJson();
  p["buffers"][4]["role"] = "status";
  expectRejected(p, "unknown role 'status'");
  p = tinyJson();
  p["buffers"][4]["dtype"] = "c64";
  expectRejected(p, "unknown dtype 'c64'");
  p = tinyJson();
  p["steps"][3]["phase"] = "sideways";
  expectRejected(p, "unknown phase 'sideways'");
  p = tinyJson();
  p["buffers"][0]["data"]["kind"] = "noise";
  expectRejected(
      p, "/buffers/0/data/kind: unknown data kind 'noise' "
         "(expected randn|randint|sequence|labels_of|teacher|sample_mask)");
  p = tinyJson();
  p["buffers"][0]["data"]["std"] = "wide";
  expectRejected(p, "/buffers/0/data/std");
  p = tinyJson();
  p["buffers"][1]["init"]["kind"] = "xavier";
  expectRejected(p, "/buffers/1/init/kind: unknown init kind 'xavier' "
                    "(expected normal|uniform|zeros|ones)");
}

TEST_CASE("loader rejects a wrong dtype", "[runtime]") {
  json p = tinyJson();
  p["buffers"][0]["dtype"] = "i32"; // same 4-byte size, so bytes still match
  p["buffers"][0].erase("data");
  expectRejected(p, "/steps/0 'matmul': input 0 has dtype i32 but expects a "
                    "float dtype");
  p = tinyJson();
  p["buffers"][0]["data"] = {{"kind", "randint"}, {"low", 0}, {"high", 4}};
  expectRejected(p, "data 'randint' needs an i32/i64 buffer");
}

TEST_CASE("cpu backend rejects f16 plans with a clear message", "[runtime]") {
  json p = tinyJson();
  for (json &b : p["buffers"]) {
    b["dtype"] = "f16";
    b["bytes"] = b["bytes"].get<int64_t>() / 2;
  }
  LoadedPlan lp = loadPlanText(p.dump(), "half.plan");
  CpuBackend cpu;
  CHECK_THROWS_WITH(cpu.checkSupport(lp),
                    "half.plan: /buffers/0 'x': dtype f16 is not supported by "
                    "the cpu backend (f32, bf16 or f64)");
}

TEST_CASE("cpu backend takes a plan whose floats are all f64; the loader "
          "refuses one whose op mixes f32 and f64",
          "[runtime]") {
  json p = tinyJson();
  for (json &b : p["buffers"])
    if (b["dtype"] == "f32") {
      b["dtype"] = "f64";
      b["bytes"] = b["bytes"].get<int64_t>() * 2;
    }
  // Offsets of the doubled buffers, laid out one after another.
  uint64_t offset = 0;
  for (json &b : p["buffers"]) {
    b["offset"] = offset;
    offset += (b["bytes"].get<uint64_t>() + 63) / 64 * 64;
  }
  p["arena_bytes"] = offset;
  LoadedPlan lp = loadPlanText(p.dump(), "wide.plan");
  CpuBackend cpu;
  CHECK_NOTHROW(cpu.checkSupport(lp));
  CHECK(floatElementBytes(lp.plan) == 8);
  p["buffers"][0]["dtype"] = "f32";
  p["buffers"][0]["bytes"] = p["buffers"][0]["bytes"].get<int64_t>() / 2;
  CHECK_THROWS_WITH(loadPlanText(p.dump(), "mixed.plan"),
                    "mixed.plan: /steps/0 'matmul': input 1 has dtype f64 but "
                    "expects f32");
}

TEST_CASE("loader rejects missing, unknown and mistyped attributes",
          "[runtime]") {
  json p = tinyJson();
  p["steps"][8]["attrs"].erase("lr");
  expectRejected(p, "/steps/8 'sgd_update': missing attribute 'lr'");
  p = tinyJson();
  p["steps"][6]["attrs"]["transpose_a"] = "yes";
  expectRejected(p, "attribute 'transpose_a' must be a boolean");
  p = tinyJson();
  p["steps"][6]["attrs"]["sum_batch"] = true;
  expectRejected(p, "sum_batch needs transpose_a");
  p = tinyJson();
  p["steps"][4]["attrs"]["valu"] = 1;
  expectRejected(p, "unknown attribute 'valu' for op 'constant'");
}

TEST_CASE("loader rejects unsafe aliasing and writes to persistent state",
          "[runtime]") {
  json p = tinyJson();
  p["buffers"][1]["offset"] = 0; // w on top of x
  expectRejected(p, "shares arena bytes");
  p = tinyJson();
  p["steps"][8]["outputs"] = {6, 4}; // param' not in place
  expectRejected(p, "output 0 must be input 0");
  p = tinyJson();
  p["steps"][4]["outputs"] = {1}; // constant writing a param
  expectRejected(p, "/steps/4 'constant': output 0 'w' is a param buffer, "
                    "which only optimizer ops may write");
  p = tinyJson();
  p["buffers"][10]["offset"] = 640; // y = add(h, b) in h's bytes is fine
  CHECK_NOTHROW(loadPlanText(p.dump(), "ok.plan"));
  p = tinyJson();
  p["buffers"][6]["offset"] = 640; // grad:w = x^T dy inside dy's bytes
  expectRejected(p, "/steps/6 'matmul': output 0 'grad:w' shares bytes with "
                    "input 1 'dy' but 'matmul' cannot run in place");
}

TEST_CASE("loader rejects a step that reads a buffer before it is written",
          "[runtime]") {
  json p = tinyJson();
  std::swap(p["steps"][1], p["steps"][2]);
  expectRejected(p, "/steps/1 'add': input 0 reads 'h' before any step "
                    "writes it");
}

TEST_CASE("loader rejects init and data on the wrong roles", "[runtime]") {
  json p = tinyJson();
  p["buffers"][1].erase("init");
  expectRejected(p, "/buffers/1 'w': param buffer needs \"init\"");
  p = tinyJson();
  p["buffers"][9]["init"] = {{"kind", "zeros"}};
  expectRejected(
      p, "\"init\" is only for param/optimizer/state/accumulator buffers");
  p = tinyJson();
  p["buffers"][0]["dtype"] = "i32"; // buffers are checked before steps
  p["buffers"][0]["data"] = {{"kind", "labels_of"}, {"of", 1}};
  expectRejected(p, "must name an input with data 'sequence'");
}

TEST_CASE("randomly corrupted plans are rejected or run, never crash",
          "[runtime]") {
  // Seeded mutations of one field each: any outcome but a PlanError (or,
  // once loaded, a clean run) would be a loader hole. Run under ASan to
  // also catch silent wild accesses.
  std::mt19937 rng(2024);
  const json base = tinyJson();
  std::vector<json> values = {-1,  0,   1,    3,        7,     8,
                              64,  640, 896,  1 << 20,  -64,   2.5,
                              "x", true, nullptr, json::array(), json::array({1, 2}),
                              json::array({8, 4}), json::object()};
  int loaded = 0, rejected = 0;
  for (int trial = 0; trial < 400; ++trial) {
    json p = base;
    const json &value = values[rng() % values.size()];
    bool onBuffer = rng() % 2 == 0;
    if (onBuffer) {
      static const char *keys[] = {"offset", "bytes", "shape", "dtype",
                                   "role"};
      json &b = p["buffers"][rng() % p["buffers"].size()];
      b[keys[rng() % 5]] = value;
    } else {
      static const char *keys[] = {"inputs", "outputs", "op", "attrs"};
      json &s = p["steps"][rng() % p["steps"].size()];
      const char *key = keys[rng() % 4];
      if ((std::string(key) == "inputs" || std::string(key) == "outputs") &&
          !s[key].empty() && rng() % 2 == 0)
        s[key][rng() % s[key].size()] = value; // one index
      else
        s[key] = value;
    }
    try {
      LoadedPlan lp = loadPlanText(p.dump(), "fuzz.plan");
      ++loaded;
      CpuBackend cpu;
      Executor exec(lp, cpu);
      exec.runStep();
    } catch (const PlanError &) {
      ++rejected;
    } catch (const ExecutionError &) {
    }
  }
  CHECK(rejected > 200);
  CHECK(loaded > 0);
}

// Regressions from tests/fuzz/fuzz_inputs.py (plans that crashed or hung
// remat-run under ASan/UBSan instead of failing with a message).

TEST_CASE("loader rejects a number literal out of range with the file name",
          "[runtime]") {
  // nlohmann reports "1e999" as out_of_range.406, not as a parse_error.
  CHECK_THROWS_WITH(
      loadPlanText("{\"format\": \"remat-plan\", \"version\": 1e999}",
                   "n.plan"),
      Catch::StartsWith("n.plan: malformed JSON: number overflow parsing "
                        "'1e999'"));
}

TEST_CASE("loader rejects a labels_of shift past the row (it hung the "
          "generator)",
          "[runtime]") {
  // Past the end of a row, labels_of steps the sequence rule once per
  // position of the shift: 10^15 steps for every label.
  json p = tinyJson();
  p["buffers"][0]["dtype"] = "i32";
  p["buffers"][0]["data"] = {{"kind", "sequence"}, {"vocab", 8}};
  p["buffers"][8]["role"] = "input";
  p["buffers"][8]["dtype"] = "i32";
  p["buffers"][8]["shape"] = {8, 4};
  p["buffers"][8]["bytes"] = 128;
  p["buffers"][8]["offset"] = 896;
  p["arena_bytes"] = 1024;
  p["buffers"][8]["data"] = {
      {"kind", "labels_of"}, {"of", 0}, {"shift", 1000000000000000}};
  expectRejected(p, "/buffers/8 'target': data 'labels_of' shift must be in "
                    "[0, 4] (the last dim, time), got 1000000000000000");
  p["buffers"][8]["data"]["shift"] = -1;
  expectRejected(p, "shift must be in [0, 4]");
}

TEST_CASE("loader rejects a randint range wider than int64 (signed overflow "
          "in the generator)",
          "[runtime]") {
  json p = tinyJson();
  p["buffers"][0]["dtype"] = "i64";
  p["buffers"][0]["shape"] = {16};
  p["buffers"][0]["data"] = {
      {"kind", "randint"}, {"low", -INT64_MAX}, {"high", INT64_MAX}};
  expectRejected(p, "/buffers/0 'x': data 'randint' range "
                    "[-9223372036854775807, 9223372036854775807) has more "
                    "than 2^63 - 1 values");
  // The widest range that fits is still accepted by the buffer check (the
  // plan then fails later, at the first step that reads x as f32).
  p["buffers"][0]["data"]["low"] = 0;
  expectRejected(p, "/steps/0 'matmul'");
}

TEST_CASE("cpu backend refuses an arena or workspace beyond host memory "
          "before allocating",
          "[runtime]") {
  // A valid 1 PiB plan: under ASan, posix_memalign of that size aborts the
  // process (allocation-size-too-big), so the size is checked first.
  json p = tinyJson();
  p["arena_bytes"] = uint64_t(1) << 50;
  LoadedPlan huge = loadPlanText(p.dump(), "huge.plan");
  CpuBackend cpu;
  CHECK_THROWS_WITH(cpu.checkSupport(huge),
                    Catch::StartsWith("huge.plan: /arena_bytes: arena of "
                                      "1125899906842624 bytes is more than "
                                      "this machine's memory"));
  CHECK_THROWS_AS(Executor(huge, cpu), PlanError);
  CHECK(cpu.arenaAllocations() == 0);

  // attention over S = 2^20 positions: a 4 TiB score workspace for a 4 MiB
  // operand.
  const int64_t s = int64_t(1) << 20, bytes = s * 4;
  json a = {{"format", "remat-plan"}, {"version", 1},   {"model", "attn"},
            {"alignment", 64},        {"batch", 1},     {"loss", 4},
            {"arena_bytes", 4 * bytes + 64}};
  const char *names[] = {"q", "k", "v", "o"};
  for (int i = 0; i < 4; ++i) {
    json b = {{"name", names[i]}, {"role", i < 3 ? "input" : "activation"},
              {"dtype", "f32"},   {"shape", {1, 1, s, 1}},
              {"offset", i * bytes}, {"bytes", bytes}};
    if (i < 3)
      b["data"] = {{"kind", "randn"}};
    a["buffers"].push_back(b);
  }
  a["buffers"].push_back({{"name", "loss"}, {"role", "activation"},
                          {"dtype", "f32"}, {"shape", json::array()},
                          {"offset", 4 * bytes}, {"bytes", 4}});
  a["steps"] = {{{"op", "attention"}, {"inputs", {0, 1, 2}},
                 {"outputs", json::array({3})}, {"phase", "forward"},
                 {"attrs", {{"causal", true}, {"scale", 1.0}}}},
                {{"op", "mse"}, {"inputs", {3, 0}}, {"outputs", json::array({4})},
                 {"phase", "forward"}}};
  LoadedPlan attn = loadPlanText(a.dump(), "attn.plan");
  CHECK_THROWS_WITH(cpu.checkSupport(attn),
                    Catch::StartsWith("attn.plan: /steps/0 'attention': "
                                      "needs a workspace of 4398046511104 "
                                      "bytes"));

  // The limit is arena + workspace: with a 1 KiB machine the tiny plan's
  // 896-byte arena fits, a 2 KiB one does not.
  CpuBackend small;
  small.memoryLimit = 1024;
  LoadedPlan tiny = loadPlanText(kTinyLinearPlan, "tiny.plan");
  CHECK_NOTHROW(small.checkSupport(tiny));
  p = tinyJson();
  p["arena_bytes"] = 2048;
  CHECK_THROWS_WITH(small.checkSupport(loadPlanText(p.dump(), "two.plan")),
                    "two.plan: /arena_bytes: arena of 2048 bytes is more "
                    "than this machine's memory (1024 bytes); the cpu "
                    "backend does not attempt it");
}

TEST_CASE("loader lets cross_entropy_grad run in place only over its logits",
          "[runtime]") {
  // dlogits [R,1] f32 on the bytes of labels [R] i32: the kernel wrote
  // softmax row r (1.0f) over label r, then indexed dlogits with it
  // (SEGV under ASan).
  const int r = 4;
  json p = {{"format", "remat-plan"}, {"version", 1}, {"model", "ce"},
            {"alignment", 64},        {"batch", 1},   {"loss", 3},
            {"arena_bytes", 512}};
  auto buffer = [](const char *name, const char *role, const char *dtype,
                   json shape, int offset, int bytes) {
    return json{{"name", name},   {"role", role},     {"dtype", dtype},
                {"shape", shape}, {"offset", offset}, {"bytes", bytes}};
  };
  p["buffers"] = {
      buffer("logits", "input", "f32", {r, 1}, 0, r * 4),
      buffer("labels_in", "input", "i32", json::array({r}), 64, r * 4),
      buffer("labels", "activation", "i32", json::array({r}), 128, r * 4),
      buffer("loss", "activation", "f32", json::array(), 192, 4),
      buffer("dloss", "activation", "f32", json::array(), 256, 4),
      buffer("dlogits", "activation", "f32", {r, 1}, 128, r * 4)};
  p["buffers"][0]["data"] = {{"kind", "randn"}};
  p["buffers"][1]["data"] = {{"kind", "randint"}, {"low", 0}, {"high", 1}};
  auto step = [](const char *op, json inputs, json outputs) {
    return json{{"op", op},
                {"inputs", inputs},
                {"outputs", outputs},
                {"phase", "forward"}};
  };
  p["steps"] = {step("reshape", json::array({1}), json::array({2})),
                step("cross_entropy", {0, 2}, json::array({3})),
                step("constant", json::array(), json::array({4})),
                step("cross_entropy_grad", {0, 2, 4}, json::array({5}))};
  p["steps"][2]["attrs"] = {{"value", 1.0}};
  expectRejected(p, "/steps/3 'cross_entropy_grad': output 0 'dlogits' shares "
                    "bytes with input 1 'labels' but 'cross_entropy_grad' "
                    "runs in place only over input 0 (its logits)");
  // Over the logits it is fine (the compiler's placement for GPT-2).
  p["buffers"][5]["offset"] = 320;
  p["buffers"][0]["role"] = "activation";
  p["buffers"][0].erase("data");
  p["buffers"][0]["offset"] = 320;
  p["buffers"].push_back(buffer("x", "input", "f32", {r, 1}, 0, r * 4));
  p["buffers"][6]["data"] = {{"kind", "randn"}};
  p["steps"].insert(p["steps"].begin(),
                    step("relu", json::array({6}), json::array({0})));
  LoadedPlan lp = loadPlanText(p.dump(), "ok.plan");
  CpuBackend cpu;
  Executor exec(lp, cpu);
  CHECK(std::isfinite(exec.runStep().loss));
}

TEST_CASE("loader rejects JSON nested deeper than 100 levels", "[runtime]") {
  // A "report" a million arrays deep: parsePlan's copy of it recursed
  // until the stack overflowed.
  json p = tinyJson();
  p["report"] = {{"x", "@"}};
  std::string text = p.dump();
  std::string deep = std::string(1000000, '[') + std::string(1000000, ']');
  text.replace(text.find("\"@\""), 3, deep);
  CHECK_THROWS_WITH(loadPlanText(text, "deep.plan"),
                    "deep.plan: malformed JSON: nested more than 100 levels "
                    "deep");
  // 90 levels are fine.
  p["report"] = {{"x", "@"}};
  text = p.dump();
  text.replace(text.find("\"@\""), 3,
               std::string(90, '[') + std::string(90, ']'));
  CHECK_NOTHROW(loadPlanText(text, "ok.plan"));
}

TEST_CASE("transpose moves i64 and i32 index tensors whole", "[runtime]") {
  // The loader accepts transpose on index dtypes; the cpu kernel copied
  // them as floats (half of each i64 element, half of the result).
  OpAttrs perm;
  perm.permutation = {1, 0};
  for (DType dtype : {DType::I64, DType::I32}) {
    HostTensor x = tensorOf({2, 3}, {0, 1, 2, 3, 4, 5}, dtype);
    if (dtype == DType::I64)
      x.values[5] = double(int64_t(1) << 40);
    std::vector<HostTensor> y =
        runOp<float>(OpKind::Transpose, perm, {x}, {{dtype, {3, 2}}});
    REQUIRE(y.size() == 1);
    CHECK(y[0].values ==
          std::vector<double>{0, 3, 1, 4, 2, x.values[5]});
    std::vector<HostTensor> yd =
        runOp<double>(OpKind::Transpose, perm, {x}, {{dtype, {3, 2}}});
    CHECK(yd[0].values == y[0].values);
  }
}

TEST_CASE("throughput of a huge batch x tokens_per_sample does not overflow",
          "[runtime]") {
  // batch * tokens_per_sample may not fit int64 (both are only checked to
  // be >= 1): the tokens/s figure must not turn negative.
  json p = tinyJson();
  p["batch"] = INT64_MAX;
  p["tokens_per_sample"] = 8;
  LoadedPlan lp = loadPlanText(p.dump(), "big.plan");
  CpuBackend cpu;
  Executor exec(lp, cpu);
  StepResult r = exec.runStep();
  CHECK(r.samplesPerSecond > 0);
  CHECK(r.tokensPerSecond == Approx(8 * r.samplesPerSecond));
}

TEST_CASE("loader checks a teacher's source and shapes", "[runtime]") {
  json p = tinyJson(); // buffer 0 is x: f32 [8, 4]
  size_t k = p["buffers"].size();
  json labels = json::object();
  labels["name"] = "labels";
  labels["role"] = "input";
  labels["dtype"] = "i32";
  labels["shape"] = json::array({8});
  labels["offset"] = 1024;
  labels["bytes"] = 32;
  labels["data"] = json::object();
  labels["data"]["kind"] = "teacher";
  labels["data"]["of"] = 0;
  p["buffers"].push_back(labels);
  p["arena_bytes"] = 1088;
  expectRejected(p, "/buffers/" + std::to_string(k) +
                        " 'labels': data 'teacher' classes must be "
                    "in [1, 2^31], got 0");
  p["buffers"][k]["data"]["classes"] = 3;
  p["buffers"][k]["shape"] = json::array({4});
  p["buffers"][k]["bytes"] = 16;
  expectRejected(p, "data 'teacher' has shape [4] but 'x' [8,4] gives "
                    "labels of shape [8]");
  p["buffers"][k]["data"]["of"] = k;
  expectRejected(p, "data 'teacher' \"of\" must name a float input");
}

TEST_CASE("loader accepts a state update in place and no other write to "
          "state",
          "[runtime]") {
  // A running mean of h [8, 2] (buffer 9, written by step 1) in a new state
  // buffer 14 past the tiny plan's arena.
  auto withState = [] {
    json p = tinyJson();
    p["arena_bytes"] = 960;
    p["buffers"].push_back({{"name", "stat"},
                            {"role", "state"},
                            {"dtype", "f32"},
                            {"shape", {2}},
                            {"offset", 896},
                            {"bytes", 8},
                            {"init", {{"kind", "ones"}}}});
    p["steps"].insert(p["steps"].begin() + 2,
                      json{{"op", "running_mean_update"},
                           {"inputs", {14, 9}},
                           {"outputs", {14}},
                           {"attrs", {{"momentum", 0.9}}},
                           {"phase", "forward"}});
    return p;
  };
  LoadedPlan lp = loadPlanText(withState().dump(), "state.plan");
  CHECK(lp.plan.buffers[14].role == BufferRole::State);
  CHECK(lp.lastWriter[14] == 2);

  json p = withState();
  p["steps"][2]["outputs"] = {7}; // grad:b [2], not in place
  expectRejected(p, "output 0 must be input 0 (state updates are in place)");
  p = withState();
  p["steps"][2]["inputs"] = {5, 9}; // momentum:b is optimizer state
  p["steps"][2]["outputs"] = {5};
  expectRejected(p, "output 0 'momentum:b' is an optimizer buffer, which only "
                    "optimizer ops may write");
  p = withState();
  p["steps"][5]["outputs"] = {14}; // constant writing the state
  p["steps"][5]["attrs"] = {{"value", 1.0}};
  expectRejected(p, "'constant': output 0 'stat' is a state buffer, which "
                    "only state updates (the running statistics of batch "
                    "normalization) may write");
  p = withState();
  p["buffers"][14]["offset"] = 640; // on top of h
  expectRejected(p, "shares arena bytes");
  p = withState();
  p["buffers"][14].erase("init");
  expectRejected(p, "state buffer needs \"init\"");
}

TEST_CASE("loader checks sharded optimizer updates against the plan's ranks",
          "[runtime]") {
  json p = tinyJson();
  p["steps"][8]["attrs"]["shards"] = 2; // sgd_update of w [4, 2]
  // Sharded, the momentum buffer must be one rank's slice.
  expectRejected(p, "input 2 has shape [4,2] but expects [4] (one of 2 "
                    "shards of the param's 8 elements)");
  p["buffers"][4]["shape"] = {4};
  p["buffers"][4]["bytes"] = 16;
  expectRejected(p, "/steps/8 'sgd_update': /attrs/shards: the update is "
                    "sharded over 2 ranks but the plan is for 1 (/ranks)");
  p["ranks"] = 2;
  CHECK(loadPlanText(p.dump(), "ok.plan").steps[8].attrs.shards == 2);
}

TEST_CASE("loader checks a split plan's micro-batches and accumulators",
          "[runtime]") {
  // The tiny plan split into 2 micro-batches: grad:w summed into the
  // accumulator acc:w (scale 1/2), which sgd_update reads.
  json p = tinyJson();
  p["microbatches"] = 2;
  p["arena_bytes"] = 960;
  p["buffers"].push_back({{"name", "accum:w"},
                          {"role", "accumulator"},
                          {"dtype", "f32"},
                          {"shape", {4, 2}},
                          {"offset", 896},
                          {"bytes", 32},
                          {"init", {{"kind", "zeros"}}}});
  json accumulate = {{"op", "grad_accumulate"}, {"inputs", {14, 6}},
                     {"outputs", {14}},         {"attrs", {{"scale", 0.5}}},
                     {"phase", "backward"},     {"recompute", false}};
  p["steps"].insert(p["steps"].begin() + 7, accumulate);
  p["steps"][9]["inputs"] = {1, 14, 4};
  LoadedPlan lp = loadPlanText(p.dump(), "split.plan");
  CHECK(lp.plan.microbatches == 2);
  CHECK(lp.plan.buffers[14].role == BufferRole::Accumulator);
  CHECK(lp.steps[7].op == OpKind::GradAccumulate);
  CHECK(lp.steps[7].attrs.scale == Approx(0.5));
  CHECK(lp.lastWriter[14] == 7);
  // The field round-trips, and an unsplit plan does not write it.
  std::string text = serializePlanText(lp.plan);
  CHECK(json::parse(text)["microbatches"] == 2);
  CHECK(!json::parse(
             serializePlanText(parsePlanText(kTinyLinearPlan, "tiny.plan")))
             .contains("microbatches"));

  for (json bad : {json(0), json(-1), json(4097)}) {
    json q = p;
    q["microbatches"] = bad;
    expectRejected(q, "microbatches must be in [1, 4096]");
  }
  {
    // Slices that differ by one sample: step_samples in ((batch-1)k, bk].
    json q = p;
    q["batch"] = 3;
    q["microbatches"] = 4;
    q["step_samples"] = 10; // 3, 3, 2 and 2 samples
    LoadedPlan uneven = loadPlanText(q.dump(), "uneven.plan");
    CHECK(uneven.plan.stepSamples == 10);
    std::vector<std::tuple<int64_t, int64_t, int64_t>> slices;
    for (int64_t mb = 0; mb < 4; ++mb) {
      MicrobatchSlice s = microbatchSlice(uneven.plan, mb);
      slices.emplace_back(s.first, s.samples, s.padding);
    }
    CHECK(slices == std::vector<std::tuple<int64_t, int64_t, int64_t>>{
                        {0, 3, 0}, {3, 3, 0}, {6, 2, 1}, {8, 2, 1}});
    CHECK(json::parse(serializePlanText(uneven.plan))["step_samples"] == 10);
    CHECK(describeMicrobatches(4, 3, 10) ==
          "4 micro-batches: 2 of 3 samples, 2 of 2 (10 in all)");
    CHECK(describeMicrobatches(4, 3, 12) ==
          "4 micro-batches of 3 samples each");
    // An even split does not write it.
    CHECK(!json::parse(serializePlanText(lp.plan)).contains("step_samples"));
    CHECK(microbatchSlice(lp.plan, 1).first == lp.plan.batch);
    for (json bad : {json(8), json(13), json(0)}) {
      q["step_samples"] = bad;
      expectRejected(q, "step_samples must be in [9, 12] for 4 micro-batches "
                        "of at most 3 samples");
    }
    json one = tinyJson();
    one["step_samples"] = 1;
    expectRejected(one, "step_samples needs microbatches > 1");
  }
  {
    // grad_accumulate writes accumulators only, and only it does.
    json q = p;
    q["buffers"][14]["role"] = "param";
    expectRejected(q, "output 0 'accum:w' is a param buffer, but "
                      "grad_accumulate writes accumulator buffers, and only "
                      "them");
  }
  {
    json q = p;
    q["steps"][6]["outputs"] = {14}; // the weight gradient's matmul
    expectRejected(q, "is an accumulator buffer, but grad_accumulate writes "
                      "accumulator buffers, and only them");
  }
}
