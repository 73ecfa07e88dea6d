//===- CudaGraphTest.cpp - Training steps and CUDA-graph fallbacks -------===//
//
// Found by coverage (CudaCoverageTest.cpp): each call's training step on an
// eager backend, and the CUDA-graph fallbacks: a host read during a
// capture, a replay that departs from the captured calls, three
// interrupted captures, a capture a failed step left open, the arena freed
// during a capture, a call that throws during a capture.
//
//===----------------------------------------------------------------------===//
#include "CudaOpSession.h"
#include "CudaTestUtil.h"

#include "runtime/backends/cuda/CudaBackend.h"

#include <vector>

using namespace remat::runtime;
using namespace remat::runtime::test;

TEST_CASE("an eager cuda backend gives each call its own training step",
          "[cuda]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  CudaBackend gpu;
  OpSession s(gpu, dropoutCase());
  for (int64_t t : {3, 3, 0, 5}) {
    s.run(0, t);
    INFO("training step " << t);
    CHECK(s.output().values == cpuDropout(t).values);
  }
}

TEST_CASE("a host read during a captured step ends the capture and sees the "
          "step's earlier calls",
          "[cuda]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  // Without the read, step 1 is captured (the control).
  {
    CudaBackend gpu;
    OpSession s(gpu, dropoutCase());
    s.trainingStep(0);
    s.trainingStep(1);
    CHECK(gpu.graphsCaptured() == 1);
  }
  CudaBackend gpu;
  OpSession s(gpu, dropoutCase());
  s.trainingStep(0);
  gpu.beginTrainingStep(1); // captures: step 0 had no host access
  s.run(0, 1);
  HostTensor mid = s.output(); // the recorded dropout must run first
  s.run(1, 1);
  gpu.endTrainingStep(1);
  CHECK(mid.values == cpuDropout(1).values);
  CHECK(gpu.graphsCaptured() == 0);
  s.trainingStep(2); // eager: step 1 touched the host
  CHECK(s.output().values == cpuDropout(2).values);
}

TEST_CASE("a replayed step that departs from the captured calls runs them "
          "eagerly and ends graph replay",
          "[cuda]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  CudaBackend gpu;
  OpSession s(gpu, dropoutCase());
  s.trainingStep(0);
  s.trainingStep(1); // captured
  s.trainingStep(2); // replayed
  REQUIRE(gpu.graphsCaptured() == 1);
  REQUIRE(gpu.graphReplays() == 1);
  CHECK(s.output().values == cpuDropout(2).values);
  gpu.beginTrainingStep(3);
  SECTION("another call where the graph has the constant") {
    s.run(0, 3);
    s.run(0, 3); // queued dropout runs, then this one, eagerly
    gpu.endTrainingStep(3);
  }
  SECTION("fewer calls than the graph") {
    s.run(0, 3);
    gpu.endTrainingStep(3); // the queued dropout runs eagerly
  }
  CHECK(s.output().values == cpuDropout(3).values);
  CHECK(gpu.graphReplays() == 1);
  s.trainingStep(4); // eager from now on
  s.trainingStep(5);
  CHECK(s.output().values == cpuDropout(5).values);
  CHECK(gpu.graphReplays() == 1);
  CHECK(gpu.graphsCaptured() == 1);
}

TEST_CASE("cuda graphs are given up after three interrupted captures",
          "[cuda]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  CudaBackend gpu;
  OpSession s(gpu, dropoutCase());
  // Odd steps 1, 3, 5 start a capture (the step before was clean) and a
  // host read interrupts it; even steps are clean. Step 7 would capture
  // and step 8 replay but for the limit of three attempts.
  for (int64_t t = 0; t <= 8; ++t) {
    gpu.beginTrainingStep(t);
    s.run(0, t);
    if (t % 2 == 1 && t <= 5) {
      INFO("training step " << t);
      CHECK(s.output().values == cpuDropout(t).values);
    }
    s.run(1, t);
    gpu.endTrainingStep(t);
  }
  CHECK(gpu.graphsCaptured() == 0);
  CHECK(gpu.graphReplays() == 0);
  CHECK(s.output().values == cpuDropout(8).values);
}

TEST_CASE("a capture a failed step left open is dropped and graphs stay off",
          "[cuda]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  CudaBackend gpu;
  OpSession s(gpu, dropoutCase());
  s.trainingStep(0);
  gpu.beginTrainingStep(1); // captures
  s.run(0, 1);
  // No endTrainingStep: the step threw. The next step starts over.
  s.trainingStep(2);
  CHECK(s.output().values == cpuDropout(2).values);
  s.trainingStep(3);
  s.trainingStep(4);
  CHECK(s.output().values == cpuDropout(4).values);
  CHECK(gpu.graphsCaptured() == 0);
}

TEST_CASE("freeing the arena during a capture drops the capture; the backend "
          "runs the next plan eagerly",
          "[cuda]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  CudaBackend gpu;
  {
    OpSession s(gpu, dropoutCase());
    s.trainingStep(0);
    gpu.beginTrainingStep(1); // captures
    s.run(0, 1);
  }                                // freeArena while capturing
  OpSession s(gpu, dropoutCase()); // prepare: stream work outside a capture
  for (int64_t t = 0; t <= 3; ++t)
    s.trainingStep(t);
  CHECK(s.output().values == cpuDropout(3).values);
  CHECK(gpu.graphsCaptured() == 0);
}

TEST_CASE("a call that throws during a capture runs the step's earlier calls, "
          "then throws again eagerly",
          "[cuda]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  CudaBackend gpu;
  OpSession s(gpu, dropoutCase());
  // An attention call this plan did not prepare for: its workspace has no
  // scratch, so the launcher refuses before touching memory. (A real
  // capture failure, a call the driver cannot capture, takes the same path.)
  std::vector<TensorRef> qkvo(4,
                              TensorRef{s.base, DType::F32, {1, 1, 4, 2}, 8});
  OpAttrs attrs;
  KernelCall attention;
  attention.op = OpKind::Attention;
  attention.attrs = &attrs;
  attention.inputs = qkvo.data();
  attention.numInputs = 3;
  attention.outputs = qkvo.data() + 3;
  attention.numOutputs = 1;
  attention.trainingStep = 1;
  const char *refusal =
      "attention needs 64 B of scratch per (batch, head) but the workspace "
      "reserved 0 B";
  CHECK_THROWS_WITH(gpu.runStep(attention), Catch::Contains(refusal));
  s.trainingStep(0);
  gpu.beginTrainingStep(1); // captures
  s.run(0, 1);
  CHECK_THROWS_WITH(gpu.runStep(attention), Catch::Contains(refusal));
  gpu.endTrainingStep(1);
  CHECK(s.output().values == cpuDropout(1).values);
  s.trainingStep(2);
  s.trainingStep(3);
  CHECK(gpu.graphsCaptured() == 0); // graphs stay off
  CHECK(s.output().values == cpuDropout(3).values);
}
