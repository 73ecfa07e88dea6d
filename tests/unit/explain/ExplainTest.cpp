//===- ExplainTest.cpp - Tests of `remat explain` -------------------------===//
//
// One hand-written plan (kSmallPlan) whose liveness is worked out by hand
// below; the saved/recomputed classification, the SVG and the CLI errors.
//
//===----------------------------------------------------------------------===//
#include "tools/remat/ExplainCommand.h"

#include "runtime/plan/Loader.h"

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include <unistd.h>

using namespace remat::runtime;
using namespace remat::tools;

namespace {

// y = tanh(relu(x * w)), loss = mse(y, x), one SGD update of w. `a` = x * w
// is dropped after the forward pass and recomputed (a#1, step 7) for
// relu_grad; `y` is kept for mse_grad and tanh_grad. Every tensor is [4] f32
// = 16 B, the loss and dloss are scalars = 4 B; alignment 16.
//
//   buffer      role        offset  bytes  lifetime (steps, inclusive)
//   0 x         input         0      16    whole step
//   1 w         param        16      16    whole step
//   2 momentum  optimizer    32      16    whole step
//   3 grad:w    grad         48      16    9..10
//   4 a         activation   64      16    0..1
//   5 h         activation   80      16    1..2
//   6 y         activation   96      16    2..6   (saved)
//   7 loss      activation  112       4    3..10  (the loss: to the end)
//   8 dloss     temporary   128       4    4..5
//   9 dy        activation  144      16    5..6
//  10 dh        activation  144      16    6..8   (in place over dy)
//  11 a#1       activation   64      16    7..8   (recomputed, a's bytes)
//  12 da        activation   80      16    8..9   (h's bytes)
const char *kSmallPlan = R"({
 "format": "remat-plan", "version": 1, "model": "small", "alignment": 16,
 "arena_bytes": 160, "loss": 7, "batch": 1,
 "buffers": [
  {"name": "x", "role": "input", "dtype": "f32", "shape": [4], "offset": 0, "bytes": 16, "data": {"kind": "randn"}},
  {"name": "w", "role": "param", "dtype": "f32", "shape": [4], "offset": 16, "bytes": 16, "init": {"kind": "normal", "std": 0.1}},
  {"name": "momentum:w", "role": "optimizer", "dtype": "f32", "shape": [4], "offset": 32, "bytes": 16, "init": {"kind": "zeros"}},
  {"name": "grad:w", "role": "grad", "dtype": "f32", "shape": [4], "offset": 48, "bytes": 16},
  {"name": "a", "role": "activation", "dtype": "f32", "shape": [4], "offset": 64, "bytes": 16},
  {"name": "h", "role": "activation", "dtype": "f32", "shape": [4], "offset": 80, "bytes": 16},
  {"name": "y", "role": "activation", "dtype": "f32", "shape": [4], "offset": 96, "bytes": 16},
  {"name": "loss", "role": "activation", "dtype": "f32", "shape": [], "offset": 112, "bytes": 4},
  {"name": "dloss", "role": "temporary", "dtype": "f32", "shape": [], "offset": 128, "bytes": 4},
  {"name": "dy", "role": "activation", "dtype": "f32", "shape": [4], "offset": 144, "bytes": 16},
  {"name": "dh", "role": "activation", "dtype": "f32", "shape": [4], "offset": 144, "bytes": 16},
  {"name": "a#1", "role": "activation", "dtype": "f32", "shape": [4], "offset": 64, "bytes": 16},
  {"name": "da", "role": "activation", "dtype": "f32", "shape": [4], "offset": 80, "bytes": 16}
 ],
 "steps": [
  {"op": "mul", "inputs": [0, 1], "outputs": [4], "phase": "forward"},
  {"op": "relu", "inputs": [4], "outputs": [5], "phase": "forward"},
  {"op": "tanh", "inputs": [5], "outputs": [6], "phase": "forward"},
  {"op": "mse", "inputs": [6, 0], "outputs": [7], "phase": "forward"},
  {"op": "constant", "inputs": [], "outputs": [8], "attrs": {"value": 1.0}, "phase": "backward"},
  {"op": "mse_grad", "inputs": [6, 0, 8], "outputs": [9], "phase": "backward"},
  {"op": "tanh_grad", "inputs": [6, 9], "outputs": [10], "phase": "backward"},
  {"op": "mul", "inputs": [0, 1], "outputs": [11], "phase": "forward", "recompute": true},
  {"op": "relu_grad", "inputs": [11, 10], "outputs": [12], "phase": "backward"},
  {"op": "mul", "inputs": [12, 0], "outputs": [3], "phase": "backward"},
  {"op": "sgd_update", "inputs": [1, 3, 2], "outputs": [1, 2], "attrs": {"lr": 0.1, "momentum": 0.9, "weight_decay": 0.0}, "phase": "optimizer"}
 ],
 "report": {"budget_bytes": 128, "planned_peak_bytes": 112, "solver": "hand"}
})";

Plan smallPlan() { return loadPlanText(kSmallPlan, "small.plan").plan; }

/// Checks that every start tag has its end tag, in order; self-closing tags,
/// the XML declaration and comments are skipped. Returns "" when balanced.
std::string checkBalancedTags(const std::string &xml) {
  std::vector<std::string> open;
  size_t i = 0;
  while ((i = xml.find('<', i)) != std::string::npos) {
    size_t close = xml.find('>', i);
    if (close == std::string::npos)
      return "unterminated tag at " + std::to_string(i);
    std::string tag = xml.substr(i + 1, close - i - 1);
    i = close + 1;
    if (tag.empty() || tag[0] == '?' || tag[0] == '!')
      continue;
    if (tag.back() == '/')
      continue;
    bool end = tag[0] == '/';
    std::string name = tag.substr(end ? 1 : 0);
    name = name.substr(0, name.find_first_of(" \t\n"));
    if (!end) {
      open.push_back(name);
    } else if (open.empty() || open.back() != name) {
      return "</" + name + "> does not close <" +
             (open.empty() ? std::string() : open.back()) + ">";
    } else {
      open.pop_back();
    }
  }
  return open.empty() ? "" : "<" + open.back() + "> never closed";
}

std::filesystem::path scratchDir() {
  auto dir = std::filesystem::temp_directory_path() /
             ("remat-unit-explain-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  return dir;
}

int runExplain(std::vector<std::string> args, std::string &out,
               std::string &err) {
  args.insert(args.begin(), "explain");
  std::vector<char *> argv;
  for (std::string &a : args)
    argv.push_back(a.data());
  std::ostringstream o, e;
  int rc = explainMain(static_cast<int>(argv.size()), argv.data(), o, e);
  out = o.str();
  err = e.str();
  return rc;
}

} // namespace

TEST_CASE("live bytes per step count each live byte range once", "[explain]") {
  PlanExplanation ex = explainPlan(smallPlan());
  // x, w and momentum:w (3 x 16 = 48 B) live at every step. The scalars
  // loss and dloss (4 B) occupy 16 B: 4 rounded up to the alignment 16.
  //  step 0 mul:        48 + a 16                               =  64
  //  step 1 relu:       48 + a 16 + h 16                        =  80
  //  step 2 tanh:       48 + h 16 + y 16                        =  80
  //  step 3 mse:        48 + y 16 + loss 16                     =  80
  //  step 4 constant:   48 + y 16 + loss 16 + dloss 16          =  96
  //  step 5 mse_grad:   48 + y 16 + loss 16 + dloss 16 + dy 16  = 112
  //  step 6 tanh_grad:  48 + y 16 + loss 16 + dy/dh 16 (one range) = 96
  //  step 7 mul (recompute): 48 + loss 16 + dh 16 + a#1 16      =  96
  //  step 8 relu_grad:  48 + loss 16 + dh 16 + a#1 16 + da 16   = 112
  //  step 9 mul:        48 + loss 16 + da 16 + grad:w 16        =  96
  //  step 10 sgd:       48 + loss 16 + grad:w 16                =  80
  std::vector<uint64_t> expected = {64, 80, 80,  80, 96, 112,
                                    96, 96, 112, 96, 80};
  CHECK(ex.liveBytes == expected);
  CHECK(ex.peakLiveBytes == 112);
  CHECK(ex.peakStep == 5); // the first of the two 112 B steps
  CHECK(ex.backwardStart == 4);

  // The roles add up to the total; at step 6 activations are y + loss +
  // dy/dh = 48 B, params 16, optimizer 16, inputs 16.
  auto role = [&](BufferRole r, size_t step) {
    return ex.liveBytesByRole[static_cast<int>(r)][step];
  };
  CHECK(role(BufferRole::Activation, 6) == 48);
  CHECK(role(BufferRole::Param, 6) == 16);
  CHECK(role(BufferRole::Optimizer, 6) == 16);
  CHECK(role(BufferRole::Input, 6) == 16);
  CHECK(role(BufferRole::Grad, 9) == 16);
  CHECK(role(BufferRole::Temporary, 5) == 16);
  for (size_t s = 0; s < expected.size(); ++s) {
    uint64_t sum = 0;
    for (const auto &perRole : ex.liveBytesByRole)
      sum += perRole[s];
    CHECK(ex.scratchBytes[s] == 0);
    CHECK(sum == ex.liveBytes[s]);
  }

  // Lifetimes: the loss lives to the end, dh from its write to its read.
  CHECK(ex.lifetimes[7].begin == 3);
  CHECK(ex.lifetimes[7].end == 10);
  CHECK(ex.lifetimes[10].begin == 6);
  CHECK(ex.lifetimes[10].end == 8);
}

TEST_CASE("live bytes count the kernels' scratch where the cpu runtime puts "
          "it in the arena",
          "[explain]") {
  // GPT-2 tiny's attention steps (and its matmul steps where oneDNN's
  // matmul needs a scratchpad on this CPU): their scratch goes into gaps
  // of the arena, which hold it beside the live buffers.
  LoadedPlan loaded = loadPlan(std::string(REMAT_SOURCE_DIR) +
                               "/tests/e2e/plans/gpt2_tiny_520k.plan");
  PlanExplanation ex = explainPlan(loaded.plan);
  int withScratch = 0;
  for (size_t s = 0; s < loaded.plan.steps.size(); ++s) {
    uint64_t sum = ex.scratchBytes[s];
    for (const auto &perRole : ex.liveBytesByRole)
      sum += perRole[s];
    CHECK(sum == ex.liveBytes[s]);
    CHECK(ex.liveBytes[s] <= loaded.plan.arenaBytes);
    if (ex.scratchBytes[s] > 0) {
      ++withScratch;
      CHECK((loaded.plan.steps[s].op.rfind("attention", 0) == 0 ||
             loaded.plan.steps[s].op == "matmul"));
    }
  }
  CHECK(withScratch > 0);
  // Another backend's plan has no scratch in its arena.
  loaded.plan.report["backend"] = "cuda";
  PlanExplanation cuda = explainPlan(loaded.plan);
  CHECK(cuda.scratchBytes ==
        std::vector<uint64_t>(loaded.plan.steps.size(), 0));
}

TEST_CASE("explain tells saved activations from recomputed ones", "[explain]") {
  Plan plan = smallPlan();
  PlanExplanation ex = explainPlan(plan);

  // y is the one forward result read after step 4 (by mse_grad and
  // tanh_grad); a is last read by relu at step 1, so it is not saved.
  REQUIRE(ex.saved.size() == 1);
  const SavedActivation &y = ex.saved[0];
  CHECK(plan.buffers[y.buffer].name == "y");
  CHECK(y.producerStep == 2);
  CHECK(y.firstLaterReader == 5);
  CHECK(y.lastReader == 6);
  CHECK(y.recomputedAs == -1);
  CHECK(y.reason ==
        "read by backward step 5 'mse_grad' (last: step 6); kept: not "
        "recomputed");
  CHECK(ex.savedBytes == 16);

  // a#1 repeats step 0 (same op, same inputs); a was last read at step 1
  // and relu_grad at step 8 needs the copy.
  REQUIRE(ex.recomputed.size() == 1);
  const RecomputedTensor &r = ex.recomputed[0];
  CHECK(plan.buffers[r.buffer].name == "a#1");
  CHECK(r.producerStep == 7);
  CHECK(r.original == 4);
  CHECK(r.originalStep == 0);
  CHECK(r.droppedAfter == 1);
  CHECK(r.consumerStep == 8);
  CHECK(r.reason == "recomputes 'a' of forward step 0 'mul'; dropped after "
                    "forward step 1 'relu', recomputed at step 7 for "
                    "backward step 8 'relu_grad'");
  CHECK(ex.recomputeSteps == 1);
  CHECK(ex.recomputedBytes == 16);

  std::string text = formatExplanation(plan, ex, "small.plan");
  CHECK_THAT(text, Catch::Contains("budget_bytes"));
  CHECK_THAT(text, Catch::Contains("peak 112 B at backward step 5 "
                                   "'mse_grad'"));
  CHECK_THAT(text, Catch::Contains("total: 1 tensors, 16 B, 1 "
                                   "recompute steps of 11"));
}

TEST_CASE("explain json lists live bytes and both tensor lists", "[explain]") {
  Plan plan = smallPlan();
  nlohmann::json j = explanationJson(plan, explainPlan(plan));
  CHECK(j["live_bytes"].size() == 11);
  CHECK(j["live_bytes"][8] == 112);
  CHECK(j["saved"][0]["name"] == "y");
  CHECK(j["recomputed"][0]["original"] == "a");
  CHECK(j["recomputed"][0]["consumer"]["index"] == 8);
  CHECK(j["live_bytes_by_role"]["activation"][6] == 48);
}

TEST_CASE("the SVG timeline is well formed, deterministic and shows the "
          "budget",
          "[explain]") {
  Plan plan = smallPlan();
  PlanExplanation ex = explainPlan(plan);
  std::string svg = renderTimelineSvg(plan, ex, "small <plan> & co");
  CHECK(checkBalancedTags(svg) == "");
  CHECK_THAT(svg, Catch::Contains("xmlns=\"http://www.w3.org/2000/svg\""));
  CHECK_THAT(svg, Catch::Contains("class=\"budget-line\""));
  CHECK_THAT(svg, Catch::Contains("budget 128 B"));
  CHECK_THAT(svg, Catch::Contains("class=\"arena-line\""));
  CHECK_THAT(svg, Catch::Contains("class=\"phase-boundary\""));
  CHECK_THAT(svg, Catch::Contains("small &lt;plan&gt; &amp; co"));
  CHECK(svg == renderTimelineSvg(plan, ex, "small <plan> & co"));

  // Without a budget in the report there is no budget line.
  plan.report = nlohmann::json::object();
  std::string noBudget = renderTimelineSvg(plan, explainPlan(plan), "t");
  CHECK(checkBalancedTags(noBudget) == "");
  CHECK_THAT(noBudget, !Catch::Contains("budget-line"));
}

TEST_CASE("remat explain writes the svg and json and reports bad plans",
          "[explain]") {
  auto dir = scratchDir();
  std::string planPath = (dir / "small.plan").string();
  std::ofstream(planPath) << kSmallPlan;
  std::string out, err;

  SECTION("a valid plan") {
    std::string svgPath = (dir / "t.svg").string();
    std::string jsonPath = (dir / "t.json").string();
    REQUIRE(runExplain({planPath, "-o", svgPath, "--json", jsonPath}, out,
                       err) == 0);
    CHECK(err == "");
    CHECK_THAT(out, Catch::Contains("saved activations"));
    CHECK_THAT(out, Catch::Contains("a#1"));
    std::ifstream svg(svgPath);
    std::stringstream svgText;
    svgText << svg.rdbuf();
    CHECK(checkBalancedTags(svgText.str()) == "");
    std::ifstream json(jsonPath);
    CHECK(nlohmann::json::parse(json)["peak_live_bytes"] == 112);
  }
  SECTION("a missing file is an error with the loader's message") {
    CHECK(runExplain({(dir / "missing.plan").string()}, out, err) == 1);
    CHECK_THAT(err, Catch::StartsWith("remat explain: error: "));
    CHECK_THAT(err, Catch::Contains("missing.plan"));
  }
  SECTION("an invalid plan is an error with the loader's message") {
    std::string bad = kSmallPlan;
    bad.replace(bad.find("\"version\": 1"), 12, "\"version\": 2");
    std::ofstream(planPath) << bad;
    CHECK(runExplain({planPath}, out, err) == 1);
    CHECK_THAT(err, Catch::Contains("unsupported plan version 2"));
    CHECK(out == "");
  }
  SECTION("usage") {
    CHECK(runExplain({"--help"}, out, err) == 0);
    CHECK_THAT(out, Catch::StartsWith("usage: remat explain PLAN"));
    CHECK(runExplain({}, out, err) == 2);
    CHECK(runExplain({planPath, "--frobnicate"}, out, err) == 2);
    CHECK_THAT(err, Catch::Contains("unknown option '--frobnicate'"));
  }
  std::filesystem::remove_all(dir);
}
