// Tests of the model-format reader (compiler/ModelGraph.h): every shipped
// model loads, and each kind of malformed model gets one located message.

#include "compiler/ModelGraph.h"

#include <catch2/catch.hpp>

#include <fstream>
#include <regex>
#include <sstream>

using remat::model::loadModel;
using remat::model::ModelError;
using remat::model::ModelGraph;
using remat::model::ModelOptions;

namespace {
std::string readFile(const std::string &path) {
  std::ifstream in(path);
  REQUIRE(in);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string modelPath(const std::string &name) {
  return std::string(REMAT_SOURCE_DIR) + "/models/" + name;
}

/// A small valid model that the malformed cases below start from.
const char *kBase = R"({
  "format": "remat-model", "version": 1, "name": "t",
  "config": { "batch": 2, "width": 4 },
  "presets": { "wide": { "width": 8 } },
  "inputs": [ { "name": "x", "shape": ["batch", "width"] } ],
  "params": [ { "name": "w", "shape": ["width", "width"] } ],
  "ops": [
    { "name": "y", "op": "matmul", "inputs": ["x", "w"] },
    { "name": "loss", "op": "reduce_sum", "inputs": ["y"], "attrs": { "axes": [0, 1] } }
  ],
  "loss": "loss"
})";

std::string errorOf(const std::string &text, const ModelOptions &options = {}) {
  try {
    loadModel(text, "m.json", options);
  } catch (const ModelError &e) {
    return e.what();
  }
  return "(no error)";
}

/// kBase with `from` replaced by `to` (which must occur).
std::string edit(const std::string &from, const std::string &to,
                 std::string text = kBase) {
  auto at = text.find(from);
  REQUIRE(at != std::string::npos);
  return text.replace(at, from.size(), to);
}
} // namespace

TEST_CASE("every model in models/ loads with its default config and presets",
          "[compiler]") {
  for (const char *name : {"seed_mlp.json", "mlp_deep.json", "gpt2.json"}) {
    INFO(name);
    std::string text = readFile(modelPath(name));
    ModelGraph g = loadModel(text, name);
    CHECK(g.loss >= 0);
    CHECK(!g.ops.empty());
    ModelOptions tiny;
    tiny.preset = "tiny";
    CHECK_NOTHROW(loadModel(text, name, tiny));
  }
}

TEST_CASE("gpt2's default config has the 124M parameter count", "[compiler]") {
  ModelGraph g = loadModel(readFile(modelPath("gpt2.json")), "gpt2.json");
  int64_t params = 0;
  for (const auto &v : g.values)
    if (v.kind == remat::model::ValueKind::Param)
      params += v.type.numElements();
  // 124,439,808 in GPT-2 small (tied embedding, 1024 positions).
  CHECK(params == 124439808);
  CHECK(g.tokensPerSample == 1024);
  CHECK(g.batch == 8);
}

TEST_CASE("a repeated block is expanded with per-layer parameters",
          "[compiler]") {
  ModelOptions options;
  options.overrides = {{"n_layer", "3"}, {"width", "8"}};
  ModelGraph g = loadModel(readFile(modelPath("mlp_deep.json")), "m", options);
  CHECK(g.findValue("body.0.w") >= 0);
  CHECK(g.findValue("body.2.b") >= 0);
  CHECK(g.findValue("body.3.w") < 0);
  CHECK(g.ops.size() == 3 * 3 + 1);
}

TEST_CASE("--set and presets override config variables", "[compiler]") {
  ModelOptions options;
  options.preset = "wide";
  options.overrides = {{"batch", "5"}};
  ModelGraph g = loadModel(kBase, "m", options);
  CHECK(g.values[g.findValue("x")].type.shape ==
        std::vector<int64_t>{5, 8});
}

TEST_CASE("dropout seeds differ between layers and are stable", "[compiler]") {
  ModelOptions options;
  options.preset = "tiny";
  std::string text = readFile(modelPath("gpt2.json"));
  ModelGraph a = loadModel(text, "g", options);
  ModelGraph b = loadModel(text, "g", options);
  std::vector<int64_t> seeds;
  for (const auto &op : a.ops)
    if (op.kind == "dropout")
      seeds.push_back(op.attrs["seed"]);
  REQUIRE(seeds.size() == 1 + 2 * 2);
  std::sort(seeds.begin(), seeds.end());
  CHECK(std::adjacent_find(seeds.begin(), seeds.end()) == seeds.end());
  for (size_t i = 0; i < a.ops.size(); ++i)
    CHECK(a.ops[i].attrs == b.ops[i].attrs);
}

TEST_CASE("config expressions evaluate with precedence and sqrt",
          "[compiler]") {
  std::map<std::string, double> config{{"d", 768}, {"h", 12}};
  CHECK(remat::model::evaluateExpression("d/h", config) == 64);
  CHECK(remat::model::evaluateExpression("4*d + 1", config) == 3073);
  CHECK(remat::model::evaluateExpression("-(2+3)*2", config) == -10);
  CHECK(remat::model::evaluateExpression("1/sqrt(d/h)", config) ==
        Approx(0.125));
  CHECK_THROWS_AS(remat::model::evaluateExpression("d/", config),
                  std::invalid_argument);
  CHECK_THROWS_AS(remat::model::evaluateExpression("e", config),
                  std::invalid_argument);
}

TEST_CASE("malformed models each give one located message", "[compiler]") {
  struct Case {
    const char *what;
    std::string text;
    std::string expected;
    ModelOptions options = {};
  };
  std::vector<Case> cases = {
      {"malformed JSON", edit("\"loss\": \"loss\"", "\"loss\": "),
       "m.json:12:1: malformed JSON"},
      {"unknown op", edit("\"op\": \"matmul\"", "\"op\": \"matmull\""),
       "m.json: /ops/0 'y': unknown op 'matmull'"},
      {"unknown field in an op", edit("\"name\": \"y\",", "\"name\": \"y\", \"inptus\": [],"),
       "m.json: /ops/0/inptus: unknown field 'inptus'; did you mean 'inputs'?"},
      {"unknown top-level field", edit("\"name\": \"t\",", "\"name\": \"t\", \"layers\": 3,"),
       "m.json: /layers: unknown field 'layers'"},
      {"wrong operand count", edit("[\"x\", \"w\"]", "[\"x\"]"),
       "m.json: /ops/0 'y': matmul takes 2 operands, got 1"},
      {"shape mismatch", edit("[\"width\", \"width\"]", "[5, \"width\"]"),
       "m.json: /ops/0 'y': matmul: operand b 'w' has shape [5,4] but expects "
       "K=4 (the first of its last two dims) to match operand a 'x' [2,4]"},
      {"dtype mismatch",
       edit("\"shape\": [\"batch\", \"width\"] }",
            "\"shape\": [\"batch\", \"width\"], \"dtype\": \"i32\", \"data\": "
            "{ \"kind\": \"randint\", \"high\": 3 } }"),
       "m.json: /ops/0 'y': matmul: operand a 'x' has dtype i32 but expects a "
       "float dtype (f32|f16|bf16)"},
      {"an op that does not reach the loss",
       edit("{ \"name\": \"loss\"",
            "{ \"name\": \"unused\", \"op\": \"relu\", \"inputs\": "
            "[\"x\"] },\n    { \"name\": \"loss\""),
       "m.json: /ops/1 'unused': its result does not reach the loss 'loss'"},
      {"name used before it is defined", edit("[\"x\", \"w\"]", "[\"x\", \"z\"]"),
       "m.json: /ops/0 'y': 'z' is not defined"},
      {"name defined twice", edit("\"name\": \"loss\"", "\"name\": \"y\""),
       "m.json: /ops/1 'y': 'y' is defined twice (first at /ops/0)"},
      {"a cycle",
       edit("{ \"name\": \"y\", \"op\": \"matmul\", \"inputs\": [\"x\", \"w\"] }",
            "{ \"name\": \"y\", \"op\": \"matmul\", \"inputs\": [\"y2\", \"w\"] },"
            "{ \"name\": \"y2\", \"op\": \"relu\", \"inputs\": [\"y\"] }"),
       "cycle: y -> y2 -> y"},
      {"zero dimension", edit("[\"width\", \"width\"]", "[0, \"width\"]"),
       "m.json: /params/0/shape/0: dimension 0 must be positive"},
      {"negative dimension", edit("[\"width\", \"width\"]", "[\"width\", \"-3\"]"),
       "m.json: /params/0/shape/1: dimension -3 must be positive"},
      {"overflowing shape",
       edit("[\"width\", \"width\"]", "[4000000000, 4000000000]"),
       "m.json: /params/0/shape: shape f32[4000000000, 4000000000] has more "
       "than 2^62 elements"},
      {"unknown config variable", edit("[\"width\", \"width\"]", "[\"widht\", \"width\"]"),
       "m.json: /params/0/shape/0: in expression \"widht\": unknown config "
       "variable 'widht'"},
      {"unknown preset", kBase,
       "m.json: /presets: unknown preset 'huge' (available: wide)",
       ModelOptions{"huge", {}, {}}},
      {"unknown --set variable", kBase,
       "--set depth=3: unknown config variable 'depth' (known: batch, width)",
       ModelOptions{"", {{"depth", "3"}}, {}}},
      {"unsupported version", edit("\"version\": 1", "\"version\": 2"),
       "m.json: /version: unsupported model format version 2; this remat "
       "reads version 1"},
      {"non-scalar loss", edit("\"loss\": \"loss\"", "\"loss\": \"y\""),
       "m.json: /loss: 'y' is f32[2, 4]; the loss must be a float scalar"},
      {"unknown attribute",
       edit("\"inputs\": [\"x\", \"w\"] }",
            "\"inputs\": [\"x\", \"w\"], \"attrs\": { \"transpose\": true } }"),
       "m.json: /ops/0 'y': matmul has no attribute 'transpose'; did you mean "
       "'transpose_a'? (it takes: transpose_a, transpose_b, sum_batch)"},
      {"broadcast mismatch",
       edit("{ \"name\": \"loss\"",
            "{ \"name\": \"bad\", \"op\": \"add\", \"inputs\": [\"y\", \"c\"] },"
            "{ \"name\": \"c\", \"op\": \"constant\", \"shape\": [3], \"attrs\": "
            "{ \"value\": 1 } }, { \"name\": \"loss\""),
       "m.json: /ops/1 'bad': add: operand a 'y' [2,4] and operand b 'c' [3] "
       "do not broadcast: dim 1 of the broadcast shape is 4 vs 3"},
      {"unknown block",
       edit("{ \"name\": \"y\", \"op\": \"matmul\", \"inputs\": [\"x\", \"w\"] }",
            "{ \"name\": \"y\", \"op\": \"block\", \"block\": \"lyr\", \"inputs\": [\"x\"] }"),
       "m.json: /ops/0 'y': unknown block 'lyr'"},
      {"not a model file", "[1, 2]", "m.json: expected an object, got an array"},
      // Found by tests/fuzz/fuzz_inputs.py: each crashed remat compile (stack
      // overflow) or ended it with an unlocated nlohmann message.
      {"number literal out of range", edit("\"batch\": 2", "\"batch\": 1e999"),
       "m.json: /config/batch: malformed JSON: number overflow parsing "
       "'1e999'"},
      {"JSON nested too deep",
       edit("\"axes\": [0, 1]", "\"axes\": " + std::string(100000, '[') +
                                   std::string(100000, ']')),
       "m.json: malformed JSON: nested more than 100 levels deep"},
      {"expression nested too deep",
       edit("[\"width\", \"width\"]", "[\"" + std::string(100000, '(') + "4" +
                                          std::string(100000, ')') +
                                          "\", \"width\"]"),
       "m.json: /params/0/shape/0: in expression \"" + std::string(80, '(') +
           "...\": nested more than 200 levels deep"},
      {"number out of range in an expression",
       edit("[\"width\", \"width\"]", "[\"1e999\", \"width\"]"),
       "m.json: /params/0/shape/0: in expression \"1e999\": number out of "
       "range at '1e999'"},
      {"dimension below -2^63", edit("[\"width\", \"width\"]", "[-1e19, \"width\"]"),
       "m.json: /params/0/shape/0: dimension -10000000000000000000.000000 "
       "must be positive"},
      {"data kind not a string",
       edit("\"shape\": [\"batch\", \"width\"] }",
            "\"shape\": [\"batch\", \"width\"], \"data\": { \"kind\": 5 } }"),
       "m.json: /inputs/0/data/kind: expected a string, got a number"},
      {"optimizer kind not a string",
       edit("\"loss\": \"loss\"", "\"loss\": \"loss\", \"optimizer\": { \"kind\": [] }"),
       "m.json: /optimizer/kind: expected a string, got an array"},
  };
  // The cases check the cause; most leave the line and column out (the
  // test below checks those), so they are matched with and without them.
  for (const Case &c : cases) {
    INFO(c.what);
    std::string message = errorOf(c.text, c.options);
    INFO(message);
    std::string unplaced = std::regex_replace(
        message, std::regex("^m\\.json:[0-9]+:[0-9]+: "), "m.json: ");
    CHECK((message.find(c.expected) != std::string::npos ||
           unplaced.find(c.expected) != std::string::npos));
  }
}

TEST_CASE("an error inside a block names the block's op", "[compiler]") {
  std::string text = R"({
    "format": "remat-model", "version": 1, "name": "b",
    "config": { "d": 64 },
    "inputs": [ { "name": "x", "shape": [2, "d"] } ],
    "blocks": { "attn": {
      "inputs": ["h"],
      "params": [ { "name": "wq", "shape": ["d", "d"] }, { "name": "wk", "shape": [128, "d"] } ],
      "ops": [
        { "name": "q", "op": "matmul", "inputs": ["h", "wq"] },
        { "name": "kk", "op": "relu", "inputs": ["q"] },
        { "name": "k", "op": "relu", "inputs": ["kk"] },
        { "name": "qk", "op": "matmul", "inputs": ["k", "wk"] }
      ],
      "outputs": ["qk"] } },
    "ops": [ { "name": "a", "op": "block", "block": "attn", "inputs": ["x"] },
             { "name": "loss", "op": "mse", "inputs": ["a", "x"] } ],
    "loss": "loss" })";
  CHECK(errorOf(text) ==
        "m.json:12:9: /blocks/attn/ops/3 'qk': matmul: operand b 'a.0.wk' has "
        "shape [128,64] but expects K=64 (the first of its last two dims) to "
        "match operand a 'a.0.k' [2,64]; param 'a.0.wk' is declared with "
        "shape [128,64] at m.json:7:83 (/blocks/attn/params/1/shape)");
}

TEST_CASE("model errors give line and column and suggest close names",
          "[compiler]") {
  // kBase's lines: 6 "params", 8 op "y", 9 op "loss", 11 "loss".
  CHECK(errorOf(edit("[\"x\", \"w\"]", "[\"x\", \"ww\"]")) ==
        "m.json:8:5: /ops/0 'y': 'ww' is not defined; did you mean 'w'?");
  CHECK(errorOf(edit("\"op\": \"matmul\"", "\"op\": \"mat_mul\"")) ==
        "m.json:8:5: /ops/0 'y': unknown op 'mat_mul'; did you mean 'matmul'? "
        "(ops: docs/ops.md)");
  CHECK(errorOf(edit("\"loss\": \"loss\"", "\"loss\": \"los\"")) ==
        "m.json:11:11: /loss: 'los' is not defined; did you mean 'loss'?");
  CHECK(errorOf(edit("\"batch\": 2", "\"batch\": 1e999")) ==
        "m.json:3:24: /config/batch: malformed JSON: number overflow parsing "
        "'1e999' (beyond the largest double, about 1.8e308)");
  // A missing field is placed at its object and says what it must be.
  CHECK(errorOf(edit(",\n  \"loss\": \"loss\"", "")) ==
        "m.json:1:1: /loss: missing field 'loss': the name of the float scalar "
        "(shape []) an op computes, which the training step minimizes, e.g. "
        "\"loss\": \"loss\"");
  // A broadcast error says where the parameter was declared, with which
  // shape.
  std::string broadcast = edit(
      "{ \"name\": \"loss\"",
      "{ \"name\": \"yb\", \"op\": \"add\", \"inputs\": [\"y\", \"b\"] },\n"
      "    { \"name\": \"loss\"",
      edit("\"shape\": [\"width\", \"width\"] }",
           "\"shape\": [\"width\", \"width\"] },\n"
           "              { \"name\": \"b\", \"shape\": [3] }"));
  CHECK_THAT(errorOf(broadcast),
             Catch::StartsWith("m.json:10:5: /ops/1 'yb': add: operand a 'y' "
                               "[2,4] and operand b 'b' [3] do not broadcast"));
  CHECK_THAT(errorOf(broadcast),
             Catch::EndsWith("; param 'b' is declared with shape [3] at "
                             "m.json:7:39 (/params/1/shape)"));
  // Unknown config variables, in expressions and presets, are suggested.
  CHECK_THAT(errorOf(edit("[\"width\", \"width\"]", "[\"widht\", \"width\"]")),
             Catch::EndsWith("unknown config variable 'widht'; did you mean "
                             "'width'?"));
  CHECK(errorOf(kBase, ModelOptions{"wdie", {}, {}}) ==
        "m.json:4:14: /presets: unknown preset 'wdie'; did you mean 'wide'? "
        "(available: wide)");
  CHECK(errorOf(kBase, ModelOptions{"", {{"widht", "3"}}, {}}) ==
        "m.json: --set widht=3: unknown config variable 'widht'; did you "
        "mean 'width'? (known: batch, width)");
}

TEST_CASE("a preset or --set the model lacks is an option error",
          "[compiler]") {
  CHECK_THROWS_AS(loadModel(kBase, "m.json", ModelOptions{"huge", {}, {}}),
                  remat::model::OptionError);
  CHECK_THROWS_AS(loadModel(kBase, "m.json", ModelOptions{"", {{"d", "1"}}, {}}),
                  remat::model::OptionError);
}

TEST_CASE("a parameter no op reads is a located warning", "[compiler]") {
  std::string text =
      edit("\"shape\": [\"width\", \"width\"] }",
           "\"shape\": [\"width\", \"width\"] },\n"
           "              { \"name\": \"unused\", \"shape\": [3] }");
  ModelGraph g = loadModel(text, "m.json");
  REQUIRE(g.warnings.size() == 1);
  CHECK(g.warnings[0] ==
        "m.json:7:15: /params/1 'unused': parameter 'unused' is not read by "
        "any op: it gets no gradient and only takes memory (use it, or "
        "remove it)");
  CHECK(loadModel(kBase, "m.json").warnings.empty());
}

TEST_CASE("a plan file given as a model says what it is", "[compiler]") {
  CHECK(errorOf("{\"format\": \"remat-plan\", \"version\": 1, "
                "\"alignment\": 64}") ==
        "m.json:1:12: /format: this is a remat plan (format \"remat-plan\"), "
        "not a model: run it with `remat run m.json`");
}
