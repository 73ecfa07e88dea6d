//===- ExecutorBackendTest.cpp - How the executor drives a backend -------===//
//
// The Backend calls the executor makes, in order; inputs generated in place
// by the backend; the next batch copied before a step synchronizes on a
// backend with one ordered queue; gradients averaged through a backend's
// device comm (--comm nccl) on one rank.
//
//===----------------------------------------------------------------------===//
#include "ExecutorTestUtil.h"
#include "TestUtil.h"
#include "TinyPlan.h"

#include "runtime/Executor.h"
#include "runtime/ForwardingBackend.h"
#include "runtime/GradientComm.h"
#include "runtime/Synthetic.h"
#include "runtime/backends/cpu/CpuBackend.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <set>

using namespace remat::runtime;
using namespace remat::runtime::test;

namespace {

/// Records the Backend calls the executor makes, forwarding to the CPU.
class RecordingBackend : public CpuBackend {
public:
  std::vector<std::string> calls;
  std::string name() const override { return "recording"; }
  void *allocateArena(uint64_t bytes, uint64_t alignment) override {
    calls.push_back("allocateArena " + std::to_string(bytes) + " " +
                    std::to_string(alignment));
    return CpuBackend::allocateArena(bytes, alignment);
  }
  void freeArena(void *base) override {
    calls.push_back("freeArena");
    CpuBackend::freeArena(base);
  }
  void prepare(const LoadedPlan &plan) override {
    calls.push_back("prepare");
    CpuBackend::prepare(plan);
  }
  void beginTrainingStep(int64_t t) override {
    calls.push_back("begin " + std::to_string(t));
  }
  void endTrainingStep(int64_t t) override {
    calls.push_back("end " + std::to_string(t));
  }
  void runStep(const KernelCall &call) override {
    calls.push_back(std::string("run ") + opName(call.op) + " t" +
                    std::to_string(call.trainingStep));
    CpuBackend::runStep(call);
  }
};

} // namespace

TEST_CASE("the executor drives a backend through the documented call order",
          "[runtime]") {
  LoadedPlan plan = loadPlanText(kTinyLinearPlan, "tiny.plan");
  RecordingBackend backend;
  {
    Executor exec(plan, backend);
    exec.runStep();
    exec.runStep();
  }
  const auto &c = backend.calls;
  REQUIRE(c.size() == 2 + 2 * (2 + 10) + 1);
  CHECK(c[0] == "allocateArena 896 64");
  CHECK(c[1] == "prepare");
  CHECK(c[2] == "begin 0");
  CHECK(c[3] == "run matmul t0");
  CHECK(c[12] == "run sgd_update t0");
  CHECK(c[13] == "end 0");
  CHECK(c[14] == "begin 1");
  CHECK(c[15] == "run matmul t1");
  CHECK(c.back() == "freeArena");
}

namespace {

/// A CPU backend that generates randn/randint inputs in place, as the CUDA
/// backend does on the device, through writeSyntheticBlock.
class GeneratingCpuBackend : public CpuBackend {
public:
  bool generateInput(void *dst, const SyntheticRequest &r) override {
    for (uint64_t block = 0; block * 4 < r.numElements; ++block)
      writeSyntheticBlock(r, block, dst);
    ++generated;
    return true;
  }
  int generated = 0;
};

} // namespace

TEST_CASE("a backend that generates inputs in place trains bitwise like the "
          "host generator",
          "[runtime]") {
  LoadedPlan plan = loadPlanText(kTinyLinearPlan, "tiny.plan");
  std::vector<double> expected = runLosses(plan, 5);
  GeneratingCpuBackend backend;
  Executor exec(plan, backend);
  std::vector<double> losses;
  for (int i = 0; i < 5; ++i)
    losses.push_back(exec.runStep().loss);
  CHECK(backend.generated == 5); // the tiny plan's one randn input, per step
  CHECK(losses == expected);
}

namespace {

/// A CPU backend that claims one ordered queue (as CUDA's stream): the
/// executor then fills step t+1's inputs before synchronizing step t.
class PrefetchingCpuBackend : public RecordingBackend {
public:
  bool overlapsInputCopies() const override { return true; }
  bool copyInputAsync(void *dst, const void *src, uint64_t bytes,
                      int64_t trainingStep) override {
    calls.push_back("input t" + std::to_string(trainingStep));
    copyIn(dst, src, bytes);
    return true;
  }
  void synchronize() override {
    calls.push_back("sync");
    CpuBackend::synchronize();
  }
};

NpyArray stackedBatches(int batches, float scale) {
  std::vector<float> values(size_t(batches) * 32);
  for (size_t i = 0; i < values.size(); ++i)
    values[i] = std::sin(float(i) * scale);
  NpyArray data{DType::F32, {int64_t(batches) * 8, 4},
                std::vector<char>(values.size() * 4)};
  std::memcpy(data.bytes.data(), values.data(), data.bytes.size());
  return data;
}

} // namespace

TEST_CASE("on a backend with one ordered queue the next batch is filled "
          "before the step synchronizes, with the same results",
          "[runtime]") {
  LoadedPlan plan = loadPlanText(kTinyLinearPlan, "tiny.plan");
  auto run = [&](Backend &backend) {
    Executor exec(plan, backend);
    std::vector<double> losses;
    exec.setInputData("x", stackedBatches(3, 0.37f));
    for (int i = 0; i < 4; ++i)
      losses.push_back(exec.runStep().loss);
    // New data after a prefetch: the prefetched batch is not used.
    exec.setInputData("x", stackedBatches(2, 0.11f));
    losses.push_back(exec.runStep().loss);
    losses.push_back(exec.runStep(/*prefetchNext=*/false).loss);
    return losses;
  };
  CpuBackend cpu;
  std::vector<double> expected = run(cpu);
  PrefetchingCpuBackend backend;
  CHECK(run(backend) == expected);
  const auto &c = backend.calls;
  auto at = [&](const std::string &call, std::ptrdiff_t from = 0) {
    return std::find(c.begin() + from, c.end(), call) - c.begin();
  };
  // Step 1's batch is copied after step 0's calls, before its sync.
  CHECK(at("input t0") < at("begin 0"));
  CHECK(at("end 0") < at("input t1"));
  CHECK(at("input t1") < at("sync", at("end 0")));
  CHECK(at("input t1") < at("begin 1"));
  // Step 4 refills (new data), step 5 prefetches nothing after it.
  CHECK(std::count(c.begin(), c.end(), "input t4") == 2);
  CHECK(std::count(c.begin(), c.end(), "input t6") == 0);
}

namespace {

/// A one-rank "device" comm on the CPU backend's host arena that records
/// what the executor asks of it (GradientComm.h).
struct RecordingComm final : GradientComm {
  std::map<size_t, std::pair<float *, uint64_t>> open; ///< started, not waited
  int means = 0, waits = 0, unknownWaits = 0;
  std::set<float *> buffers;
  std::string name() const override { return "recording"; }
  int size() const override { return 1; }
  size_t startMean(float *data, uint64_t count) override {
    ++means;
    buffers.insert(data);
    open[size_t(means)] = {data, count};
    return size_t(means);
  }
  size_t startGather(float *, uint64_t, uint64_t) override {
    FAIL("no sharded update in a one-rank plan");
    return 0;
  }
  double wait(size_t handle) override {
    ++waits;
    unknownWaits += open.erase(handle) == 0;
    return 0;
  }
};

/// The CPU backend with RecordingComm as its device comm.
class CommBackend final : public ForwardingBackend {
public:
  CommBackend() : ForwardingBackend(createCpuBackend()) {}
  RecordingComm *comm = nullptr;
  bool hasDeviceComm() const override { return true; }
  std::unique_ptr<GradientComm> createDeviceComm(Ranks *ranks) override {
    CHECK(ranks == nullptr); // one rank: no MPI
    auto c = std::make_unique<RecordingComm>();
    comm = c.get();
    return c;
  }
};

} // namespace

TEST_CASE("--comm nccl's path on one rank: every gradient through the "
          "backend's comm, each start waited for once, the plain run's "
          "losses",
          "[runtime]") {
  LoadedPlan plan = loadPlan(std::string(REMAT_SOURCE_DIR) +
                             "/tests/e2e/plans/gpt2_tiny_520k.plan");
  std::vector<double> plain = runLosses(plan, 3);
  CommBackend backend;
  ExecutorOptions options;
  options.comm = CommChoice::Device;
  std::vector<double> losses;
  size_t grads = 0;
  for (const BufferDesc &b : plan.plan.buffers)
    grads += b.role == BufferRole::Grad;
  {
    Executor exec(plan, backend, options);
    REQUIRE(backend.comm != nullptr);
    CHECK(exec.commName() == "recording");
    for (int i = 0; i < 3; ++i)
      losses.push_back(exec.runStep().loss);
    CHECK(backend.comm->means > 0);
    CHECK(backend.comm->means % 3 == 0);
    CHECK(size_t(backend.comm->means / 3) <= grads);
    CHECK(backend.comm->waits == backend.comm->means);
    CHECK(backend.comm->unknownWaits == 0);
    CHECK(backend.comm->open.empty());
    // (Gradients whose lifetimes do not overlap share arena bytes.)
    CHECK(backend.comm->buffers.size() <= size_t(backend.comm->means / 3));
  }
  CHECK(losses == plain);

  // A backend without a device comm refuses --comm nccl.
  CpuBackend cpu;
  CHECK_THROWS_WITH(Executor(plan, cpu, options),
                    Catch::Contains("cpu backend of this build has no NCCL"));
  // Auto on one rank communicates nothing.
  CommBackend quiet;
  Executor plainExec(plan, quiet, ExecutorOptions{});
  plainExec.runStep();
  CHECK(quiet.comm == nullptr);
  CHECK(plainExec.commName().empty());
}
