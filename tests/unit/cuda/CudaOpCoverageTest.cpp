//===- CudaOpCoverageTest.cpp - Every op of the table on the CUDA backend -===//
//
// Walks every op kind of the op table (ops/OpTable.h) and runs its sample
// call (tests/unit/runtime/OpSamples.h) on the CUDA backend against the
// CPU backend: an op without a CUDA kernel, or whose kernel disagrees with
// the CPU's, fails here by name. CudaOpsTest.cpp holds the deeper per-op
// cases (every broadcast form, transposes, scratch chunks).
//
//===----------------------------------------------------------------------===//
#include "CudaTestUtil.h"
#include "OpSamples.h"

using namespace remat::runtime;
using namespace remat::runtime::test;

TEST_CASE("every op of the table runs on the cuda backend and matches the cpu",
          "[cuda]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(6);
  for (int k = 0; k < kNumOpKinds; ++k) {
    OpKind op = OpKind(k);
    INFO("op '" << opName(op) << "'");
    std::optional<OpSample> sample = sampleFor(op, rng);
    REQUIRE(sample); // add its type rule to tests/unit/runtime/OpSamples.cpp
    checkAgainstCpu({op, sample->attrs, sample->inputs, sample->outputs},
                    backendTolerance(op));
  }
}
