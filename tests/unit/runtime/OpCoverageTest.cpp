//===- OpCoverageTest.cpp - Every op of the table runs on the CPU -------===//
//
// Walks every op kind of the op table (ops/OpTable.h): each has a sample
// call (OpSamples.h), the CPU backend computes it in f32 and f64 with
// finite results, and the loader accepts the sample's types. The CUDA half
// of the walk is tests/unit/cuda/CudaOpCoverageTest.cpp.
//
//===----------------------------------------------------------------------===//
#include "OpSamples.h"

#include <catch2/catch.hpp>

#include <cmath>

using namespace remat::runtime;
using namespace remat::runtime::test;

TEST_CASE("every op of the table has a sample and a cpu kernel",
          "[runtime]") {
  std::mt19937 rng(5);
  for (int k = 0; k < kNumOpKinds; ++k) {
    OpKind op = OpKind(k);
    INFO("op '" << opName(op) << "'");
    std::optional<OpSample> sample = sampleFor(op, rng);
    REQUIRE(sample); // add its type rule to tests/unit/runtime/OpSamples.cpp
    OpAttrs attrs = parseOpAttrs(op, sample->attrs, "sample");
    std::vector<TensorType> ins;
    for (const HostTensor &t : sample->inputs)
      ins.push_back({t.dtype, t.shape});
    CHECK_NOTHROW(checkOpTypes(op, attrs, ins, sample->outputs, "sample"));
    std::vector<HostTensor> f32, f64;
    REQUIRE_NOTHROW(
        f32 = runOp<float>(op, attrs, sample->inputs, sample->outputs));
    REQUIRE_NOTHROW(
        f64 = runOp<double>(op, attrs, sample->inputs, sample->outputs));
    REQUIRE(f32.size() == sample->outputs.size());
    for (size_t i = 0; i < f32.size(); ++i) {
      INFO("output " << i);
      bool finite = true;
      for (double v : f32[i].values)
        finite &= std::isfinite(v);
      CHECK(finite);
      // The same kernel in f32 and f64 agrees to f32 rounding.
      CHECK(normalizedError(f32[i], f64[i]) < 1e-4);
    }
  }
}
