//===- VectorLevelTest.cpp - The element loops at every vector level -----===//
//
// The cpu kernels' element and row loops run compiled for AVX-512, AVX2 or
// the baseline x86-64 (kernels/Common.h, vectorLevel), whichever the CPU
// has. Every level must give the same bits: each op of the table (its
// sample, and its bf16 variants), and large cases of the element and row
// kernels whose main loops the samples barely reach, run at each level
// this CPU has and are compared bitwise with the baseline's.
//
//===----------------------------------------------------------------------===//
#include "BackendRun.h"
#include "OpSamples.h"

#include "runtime/backends/cpu/kernels/Common.h"

#include <catch2/catch.hpp>

#include <vector>

using namespace remat::runtime;
using namespace remat::runtime::test;
using nlohmann::json;
using remat::runtime::cpu::VectorLevel;

namespace {

/// Restores the vector level the test found.
struct SavedLevel {
  VectorLevel saved = cpu::vectorLevel();
  ~SavedLevel() { cpu::setVectorLevel(saved); }
};

/// Runs `c` at the baseline and at every wider level this CPU has; each
/// result's bits must be the baseline's. Returns the levels compared.
int sameBitsAtEveryLevel(Backend &cpuBackend, const OpCase &c) {
  SavedLevel restore;
  cpu::setVectorLevel(VectorLevel::Baseline);
  std::vector<HostTensor> expected = runOnBackend(cpuBackend, c);
  int compared = 0;
  for (VectorLevel level : {VectorLevel::Avx2, VectorLevel::Avx512}) {
    cpu::setVectorLevel(level);
    if (cpu::vectorLevel() != level)
      continue; // the CPU lacks it
    INFO("level " << cpu::vectorLevelName(level));
    std::vector<HostTensor> got = runOnBackend(cpuBackend, c);
    REQUIRE(got.size() == expected.size());
    for (size_t i = 0; i < got.size(); ++i) {
      INFO("result " << i);
      CHECK(got[i].values == expected[i].values);
    }
    ++compared;
  }
  return compared;
}

} // namespace

TEST_CASE("every op gives the same bits at every vector level the cpu has",
          "[runtime]") {
  std::mt19937 rng(71);
  auto cpuBackend = createCpuBackend();
  for (int k = 0; k < kNumOpKinds; ++k) {
    OpKind op = OpKind(k);
    INFO("op '" << opName(op) << "'");
    std::optional<OpSample> sample = sampleFor(op, rng);
    REQUIRE(sample);
    sameBitsAtEveryLevel(*cpuBackend,
                         {op, sample->attrs, sample->inputs, sample->outputs});
  }
  forEachBf16Case(
      rng, [](OpKind) { return false; },
      [&](const OpCase &c) { sameBitsAtEveryLevel(*cpuBackend, c); });
}

TEST_CASE("large element and row kernels give the same bits at every vector "
          "level the cpu has",
          "[runtime]") {
  std::mt19937 rng(72);
  auto cpuBackend = createCpuBackend();
  const Shape rows = {37, 515}; // remainders at every vector width
  HostTensor x = randomTensor(rows, rng, -4, 4), dy = randomTensor(rows, rng),
             row = randomTensor({515}, rng),
             gamma = randomTensor({515}, rng, 0.5, 1.5);
  std::vector<double> classes;
  for (int i = 0; i < 37; ++i)
    classes.push_back(double((i * 7) % 515));
  HostTensor labels = tensorOf({37}, classes, DType::I64);
  HostTensor one = tensorOf({}, {1.0});
  std::vector<OpCase> cases = {
      {OpKind::Gelu, json::object(), {x}, {typeOf(rows)}},
      {OpKind::GeluGrad, json::object(), {x, dy}, {typeOf(rows)}},
      {OpKind::Relu, json::object(), {x}, {typeOf(rows)}},
      {OpKind::Add, json::object(), {x, row}, {typeOf(rows)}},
      {OpKind::Mul, json::object(), {x, dy}, {typeOf(rows)}},
      {OpKind::Softmax, json::object(), {x}, {typeOf(rows)}},
      {OpKind::LayerNorm, {{"epsilon", 1e-5}}, {x, gamma, row}, {typeOf(rows)}},
      {OpKind::LayerNormGrad,
       {{"epsilon", 1e-5}},
       {x, gamma, dy},
       {typeOf(rows), typeOf({515}), typeOf({515})}},
      {OpKind::CrossEntropy, json::object(), {x, labels}, {typeOf({})}},
      {OpKind::CrossEntropyGrad,
       json::object(),
       {x, labels, one},
       {typeOf(rows)}},
      {OpKind::SumTo, json::object(), {x}, {typeOf({515})}},
  };
  int compared = 0;
  for (const OpCase &c : cases) {
    INFO("op '" << opName(c.op) << "'");
    compared += sameBitsAtEveryLevel(*cpuBackend, c);
    for (bool activationsOnly : {false, true})
      if (std::optional<OpCase> bf16 =
              bf16Variant(c.op, c.attrs, c.inputs, c.outputs, activationsOnly))
        compared += sameBitsAtEveryLevel(*cpuBackend, *bf16);
  }
  SavedLevel restore;
  cpu::setVectorLevel(VectorLevel::Avx512);
  INFO("this cpu's widest level: " << cpu::vectorLevelName(cpu::vectorLevel()));
  if (cpu::vectorLevel() == VectorLevel::Baseline)
    WARN("only the baseline level on this cpu: nothing compared");
  else
    CHECK(compared > 0);
}
