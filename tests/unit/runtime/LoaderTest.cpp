//===- LoaderTest.cpp - Plan parsing, serialization and validation -------===//
#include "TinyPlan.h"

#include "runtime/Executor.h"
#include "runtime/Loader.h"
#include "runtime/backends/cpu/CpuBackend.h"

#include <catch2/catch.hpp>

#include <random>

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
  expectRejected(p, "/steps/2 'add': input shapes [8,2] and [3] do not "
                    "broadcast");
}

TEST_CASE("loader rejects an unknown op, role or dtype", "[runtime]") {
  json p = tinyJson();
  p["steps"][3]["op"] = "matmull";
  expectRejected(p, "/steps/3 'matmull': unknown op 'matmull'");
  p = tinyJson();
  p["buffers"][4]["role"] = "state";
  expectRejected(p, "unknown role 'state'");
  p = tinyJson();
  p["buffers"][4]["dtype"] = "f64";
  expectRejected(p, "unknown dtype 'f64'");
  p = tinyJson();
  p["steps"][3]["phase"] = "sideways";
  expectRejected(p, "unknown phase 'sideways'");
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
                    "the cpu backend (f32 only)");
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
  expectRejected(p, "\"init\" is only for param/optimizer buffers");
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
