// Tests of --precision bf16's rewrite of a model (compiler/Precision.h):
// which ops compute in bf16, where the conversions go, and that each value
// is converted once.

#include "compiler/Precision.h"
#include "compiler/ModelGraph.h"

#include <catch2/catch.hpp>

#include <fstream>
#include <map>
#include <sstream>

using namespace remat::model;

namespace {

ModelGraph gpt2Tiny() {
  std::ifstream in(std::string(REMAT_SOURCE_DIR) + "/models/gpt2.json");
  REQUIRE(in);
  std::stringstream s;
  s << in.rdbuf();
  ModelOptions options;
  options.preset = "tiny";
  return loadModel(s.str(), "gpt2.json", options);
}

/// The model file at `path` under the source tree, loaded.
ModelGraph loadSourceModel(const std::string &path) {
  std::ifstream in(std::string(REMAT_SOURCE_DIR) + "/" + path);
  REQUIRE(in);
  std::stringstream s;
  s << in.rdbuf();
  return loadModel(s.str(), path.substr(path.rfind('/') + 1));
}

const std::string &dtypeOf(const ModelGraph &g, int value) {
  return g.values[size_t(value)].type.dtype;
}

} // namespace

TEST_CASE("bf16: GEMMs and their bias adds compute in bf16, norms and the "
          "loss in float32, every operand of another type through one "
          "conversion",
          "[compiler]") {
  ModelGraph f32 = gpt2Tiny();
  ModelGraph bf16 = withBf16Compute(f32);
  REQUIRE(bf16.ops.size() > f32.ops.size());
  std::map<std::pair<int, std::string>, int> conversions;
  int bf16Ops = 0;
  for (const Op &op : bf16.ops) {
    INFO(op.where());
    if (op.kind == "convert") {
      REQUIRE(op.operands.size() == 1);
      // Each value converted to each type once.
      CHECK(++conversions[{op.operands[0], dtypeOf(bf16, op.result)}] == 1);
      CHECK(dtypeOf(bf16, op.operands[0]) != dtypeOf(bf16, op.result));
      continue;
    }
    const std::string &result = dtypeOf(bf16, op.result);
    if (op.kind == "matmul" || op.kind == "attention") {
      ++bf16Ops;
      CHECK(result == "bf16");
      for (int v : op.operands)
        CHECK(dtypeOf(bf16, v) == "bf16");
    }
    // layer_norm reads the float32 residual stream; the loss reads the
    // bf16 logits as they are and is float32.
    if (op.kind == "layer_norm") {
      CHECK(result == "f32");
      CHECK(dtypeOf(bf16, op.operands[0]) == "f32");
    }
    if (op.kind == "cross_entropy") {
      CHECK(result == "f32");
      CHECK(dtypeOf(bf16, op.operands[0]) == "bf16");
    }
    // A bias add after a GEMM stays bf16; the residual add (a float32
    // stream plus a bf16 branch) is float32.
    if (op.kind == "add" &&
        bf16.values[size_t(op.operands[1])].kind == ValueKind::Param &&
        op.name.find("bias") != std::string::npos)
      CHECK(result == "bf16");
    if (op.name.find("res1") != std::string::npos && op.kind == "add")
      CHECK(result == "f32");
    // Every op's float operands share its type.
    for (int v : op.operands)
      if (isFloatDType(dtypeOf(bf16, v)) && isFloatDType(result) &&
          op.kind != "embedding")
        CHECK(dtypeOf(bf16, v) == dtypeOf(bf16, op.operands[0]));
  }
  // 2 layers x (q, k, v, o, fc, proj matmuls + attention) + the logits.
  CHECK(bf16Ops == 2 * 7 + 1);
  // Parameters, inputs and the loss stay float32.
  for (const Value &v : bf16.values)
    if (v.kind == ValueKind::Param || v.kind == ValueKind::Input)
      CHECK(v.type.dtype ==
            f32.values[size_t(bf16.findValue(v.name))].type.dtype);
  CHECK(dtypeOf(bf16, bf16.loss) == "f32");
  // The tied embedding table: one bf16 copy for the logits, read as float32
  // by the embedding.
  int wte = bf16.findValue("wte");
  CHECK(conversions.count({wte, "bf16"}) == 1);
}

TEST_CASE("bf16: batch norm after a convolution reads its bf16 output and "
          "gives a bf16 result, with float32 parameters and statistics",
          "[compiler]") {
  ModelGraph bf16 =
      withBf16Compute(loadSourceModel("tests/e2e/models/norm.json"));
  int norms = 0, bf16Norms = 0;
  for (const Op &op : bf16.ops) {
    INFO(op.where());
    if (op.kind != "batch_norm" && op.kind != "running_mean_update" &&
        op.kind != "running_var_update")
      continue;
    ++norms;
    for (int v : op.operands) {
      const Value &operand = bf16.values[size_t(v)];
      // Parameters and running statistics stay float32, unconverted.
      if (operand.kind != ValueKind::Op)
        CHECK(operand.type.dtype == "f32");
    }
    if (op.kind == "batch_norm") {
      const std::string &x = dtypeOf(bf16, op.operands[0]);
      CHECK(dtypeOf(bf16, op.result) == x);
      bf16Norms += x == "bf16";
    }
  }
  CHECK(norms > 0);
  // The first batch norm reads a matmul's output.
  CHECK(bf16Norms > 0);
}

TEST_CASE("bf16: a convolution reads its float32 weights as they are, "
          "without a bf16 copy, and its bf16 input through a conversion",
          "[compiler]") {
  ModelGraph bf16 =
      withBf16Compute(loadSourceModel("tests/e2e/models/conv.json"));
  int convs = 0;
  for (const Op &op : bf16.ops) {
    INFO(op.where());
    if (op.kind == "convert")
      // No parameter is converted: the convolutions read theirs as float32.
      CHECK(bf16.values[size_t(op.operands[0])].kind != ValueKind::Param);
    if (op.kind != "conv2d")
      continue;
    ++convs;
    CHECK(dtypeOf(bf16, op.result) == "bf16");
    CHECK(dtypeOf(bf16, op.operands[0]) == "bf16");
    const Value &w = bf16.values[size_t(op.operands[1])];
    CHECK(w.kind == ValueKind::Param);
    CHECK(w.type.dtype == "f32");
  }
  CHECK(convs == 2);
}
