//===- Bf16CpuTest.cpp - bf16 operands on the cpu backend -----------------===//
//
// The cpu backend runs an op on bf16 tensors either on float copies of them
// (runtime/backends/cpu/Bf16Staging.h) or in a kernel that reads and
// writes bf16 itself (convert, reshape, transpose, the losses, batch
// normalization). Either way its results must be the bits of its float32
// kernel on the widened values, rounded to bf16: every op of the table is
// run both ways here and compared bitwise. GEMMs and convolutions are
// left to GemmTest and ConvPoolGradTest, which bound them (oneDNN's bf16
// kernels sum in another order than the float32 ones). Attention on
// oneDNN's bf16 GEMMs (kernels/attention.cpp) sums its scores and dP in
// oneDNN's order too: its results are bounded instead, within 2^-7 of the
// float32 kernel's (a sum in float32 that moves by float32's rounding can
// round to the neighbouring bf16: 2^-8 of a value near 1).
//
//===----------------------------------------------------------------------===//
#include "BackendRun.h"
#include "OpSamples.h"

#include "ops/BFloat16.h"
#include "ops/ShapeRules.h"
#include "runtime/backends/cpu/CpuWorkspace.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <set>
#include <string>

using namespace remat::runtime;
using namespace remat::runtime::test;

namespace {

/// The float32 twin of a bf16 case: the same (bf16-exact) values as f32
/// operands and f32 results.
OpCase float32Twin(const OpCase &c) {
  OpCase twin = c;
  for (HostTensor &t : twin.inputs)
    if (t.dtype == DType::BF16) {
      t = bf16Rounded(t);
      t.dtype = DType::F32;
    }
  for (TensorType &t : twin.outputs)
    if (t.dtype == DType::BF16)
      t.dtype = DType::F32;
  return twin;
}

} // namespace

TEST_CASE("every op of the table on bf16 operands gives on the cpu the bits "
          "of its float32 kernel on the widened values, rounded to bf16",
          "[runtime]") {
  std::mt19937 rng(61);
  auto cpu = createCpuBackend();
  // GEMMs and convolutions: GemmTest and ConvPoolGradTest.
  auto gemmOrConv = [](OpKind op) {
    const remat::ops::OpInfo &info = remat::ops::opInfo(op);
    return info.shapeRule == remat::ops::ShapeRule::Gemm ||
           info.family == remat::ops::KernelFamily::Conv;
  };
  std::set<std::string> covered =
      forEachBf16Case(rng, gemmOrConv, [&](const OpCase &c) {
        std::vector<HostTensor> got = runOnBackend(*cpu, c);
        std::vector<HostTensor> expected = runOnBackend(*cpu, float32Twin(c));
        REQUIRE(got.size() == expected.size());
        std::vector<remat::ops::TensorType> ins;
        for (const HostTensor &t : c.inputs)
          ins.push_back({t.dtype, t.shape});
        bool bounded =
            (c.op == OpKind::Attention || c.op == OpKind::AttentionGrad) &&
            cpu::cpuBf16Staging(c.op, remat::ops::parseAttrs(c.op, c.attrs),
                                ins, c.outputs)
                    .kind == cpu::Bf16Staging::Kind::Dnnl;
        for (size_t i = 0; i < got.size(); ++i) {
          INFO("result " << i << (bounded ? " (bounded)" : ""));
          if (c.outputs[i].dtype == DType::BF16)
            expected[i] = bf16Rounded(expected[i]);
          if (bounded)
            CHECK(normalizedError(got[i], expected[i]) <= std::ldexp(1.0, -7));
          else
            CHECK(normalizedError(got[i], expected[i]) == 0.0);
        }
      });
  // The ops whose cpu kernels read bf16 themselves are among those run.
  for (const char *name :
       {"batch_norm", "batch_norm_grad", "running_mean_update",
        "running_var_update", "cross_entropy", "cross_entropy_grad",
        "transpose", "reshape", "convert", "layer_norm", "add", "gelu_grad",
        "dropout", "attention", "attention_grad"}) {
    INFO("op '" << name << "' has no bf16 case");
    CHECK(covered.count(name) == 1);
  }
}

TEST_CASE("sum_to of a bias gradient reads and writes bf16 on the cpu with "
          "the bits of its float32 kernel on the widened values",
          "[runtime]") {
  // The suffix shape (y's shape ends x's) runs on the bf16 tensors
  // themselves; 130 columns are three blocks of the threads' columns.
  std::mt19937 rng(67);
  auto cpu = createCpuBackend();
  HostTensor x = bf16Rounded(randomTensor({3, 7, 130}, rng));
  x.dtype = DType::BF16;
  OpCase c{
      OpKind::SumTo, nlohmann::json::object(), {x}, {{DType::BF16, {130}}}};
  std::vector<remat::ops::TensorType> ins = {{DType::BF16, x.shape}};
  CHECK(cpu::cpuBf16Staging(OpKind::SumTo, {}, ins, c.outputs).kind ==
        cpu::Bf16Staging::Kind::None);
  HostTensor got = runOnBackend(*cpu, c)[0];
  HostTensor expected = bf16Rounded(runOnBackend(*cpu, float32Twin(c))[0]);
  CHECK(normalizedError(got, expected) == 0.0);
}

TEST_CASE("bf16 attention on oneDNN takes its heads a group at a time, each "
          "head with its own causal mask, within 2^-7 of the float32 kernel",
          "[runtime]") {
  // 6 heads of 6 rows make one group; 6 heads of 600 rows groups of 3
  // (kAttentionBf16GroupRows); 5 heads of 600 one at a time.
  CHECK(cpu::attentionBf16Group(6, 6) == 6);
  CHECK(cpu::attentionBf16Group(6, 600) == 3);
  CHECK(cpu::attentionBf16Group(5, 600) == 1);
  CHECK(cpu::attentionBf16Group(96, 256) == 8);
  std::mt19937 rng(71);
  auto cpu = createCpuBackend();
  for (Shape shape : {Shape{2, 3, 6, 4}, Shape{1, 6, 600, 4}}) {
    for (bool causal : {true, false}) {
      for (OpKind op : {OpKind::Attention, OpKind::AttentionGrad}) {
        INFO("shape [" << shape[0] << ", " << shape[1] << ", " << shape[2]
                       << ", " << shape[3] << "], causal " << causal << ", "
                       << remat::ops::opInfo(op).name);
        OpCase c{op, {{"causal", causal}, {"scale", 0.5}}, {}, {}};
        int inputs = op == OpKind::Attention ? 3 : 4;
        for (int i = 0; i < inputs; ++i) {
          c.inputs.push_back(bf16Rounded(randomTensor(shape, rng)));
          c.inputs.back().dtype = DType::BF16;
        }
        for (int i = 0; i < (op == OpKind::Attention ? 1 : 3); ++i)
          c.outputs.push_back({DType::BF16, shape});
        std::vector<remat::ops::TensorType> ins;
        for (const HostTensor &t : c.inputs)
          ins.push_back({t.dtype, t.shape});
        bool onDnnl =
            cpu::cpuBf16Staging(op, remat::ops::parseAttrs(op, c.attrs), ins,
                                c.outputs)
                .kind == cpu::Bf16Staging::Kind::Dnnl;
        if (!onDnnl)
          WARN("no bf16 GEMMs on this CPU: attention runs on float copies");
        std::vector<HostTensor> got = runOnBackend(*cpu, c);
        std::vector<HostTensor> expected = runOnBackend(*cpu, float32Twin(c));
        REQUIRE(got.size() == expected.size());
        for (size_t i = 0; i < got.size(); ++i) {
          INFO("result " << i);
          double error = normalizedError(got[i], bf16Rounded(expected[i]));
          if (onDnnl)
            CHECK(error <= std::ldexp(1.0, -7));
          else
            CHECK(error == 0.0);
        }
      }
    }
  }
}
