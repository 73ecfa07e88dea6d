//===- InputDataTest.cpp - Synthetic input generators and .npy user data -===//
//
// The generators of a plan's inputs (randn, randint, sequence, labels_of,
// teacher), whole and in pieces, and user data from an .npy array or file
// in their place.
//
//===----------------------------------------------------------------------===//
#include "ExecutorTestUtil.h"
#include "TestUtil.h"
#include "TinyPlan.h"

#include "runtime/Executor.h"
#include "runtime/Synthetic.h"
#include "runtime/backends/cpu/CpuBackend.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <fstream>
#include <set>

using namespace remat::runtime;
using namespace remat::runtime::test;
using nlohmann::json;

TEST_CASE("user data from .npy replaces an input's generator", "[runtime]") {
  LoadedPlan plan = loadPlanText(kTinyLinearPlan, "tiny.plan");
  CpuBackend cpu;
  Executor exec(plan, cpu);
  // Two batches stacked: step 0 sees the first, step 1 the second.
  std::vector<float> values(64);
  for (size_t i = 0; i < values.size(); ++i)
    values[i] = float(i) / 64.0f;
  NpyArray data{DType::F32, {16, 4}, std::vector<char>(256)};
  std::memcpy(data.bytes.data(), values.data(), 256);
  exec.setInputData("x", data);
  exec.runStep();
  CHECK(asFloats(exec.readBuffer(0)) ==
        std::vector<float>(values.begin(), values.begin() + 32));
  exec.runStep();
  CHECK(asFloats(exec.readBuffer(0)) ==
        std::vector<float>(values.begin() + 32, values.end()));
  NpyArray wrong{DType::F32, {8, 3}, std::vector<char>(96)};
  CHECK_THROWS_WITH(exec.setInputData("x", wrong),
                    Catch::Contains("array has shape [8,3] but input 'x' has "
                                    "shape [8,4]"));
  NpyArray ints{DType::I32, {8, 4}, std::vector<char>(128)};
  CHECK_THROWS_WITH(
      exec.setInputData("x", ints),
      Catch::Contains("array has dtype i32 but input 'x' is f32"));
}

TEST_CASE("user data read from an opened .npy file each step gives the "
          "array's batches",
          "[runtime]") {
  LoadedPlan plan = loadPlanText(kTinyLinearPlan, "tiny.plan");
  // Three batches stacked: steps 0, 1, 2, 3 see batches 0, 1, 2, 0.
  std::vector<float> values(96);
  for (size_t i = 0; i < values.size(); ++i)
    values[i] = std::sin(float(i) * 0.3f);
  NpyArray data{DType::F32, {24, 4}, std::vector<char>(384)};
  std::memcpy(data.bytes.data(), values.data(), 384);
  std::string path = tempPath("stream.npy");
  writeNpy(path, data);
  CpuBackend cpu;
  Executor fromArray(plan, cpu), fromFile(plan, cpu);
  fromArray.setInputData("x", data);
  fromFile.setInputData("x", NpyFile::open(path));
  for (int step = 0; step < 4; ++step) {
    StepResult a = fromArray.runStep(), f = fromFile.runStep();
    CHECK(a.loss == f.loss);
    size_t batch = size_t(step % 3);
    CHECK(asFloats(fromFile.readBuffer(0)) ==
          std::vector<float>(values.begin() + int64_t(batch * 32),
                             values.begin() + int64_t(batch * 32 + 32)));
  }
  // The checks of an array, on the file's header.
  NpyArray wrong{DType::F32, {8, 3}, std::vector<char>(96)};
  writeNpy(path, wrong);
  CHECK_THROWS_WITH(fromFile.setInputData("x", NpyFile::open(path)),
                    Catch::Contains("array has shape [8,3] but input 'x' has "
                                    "shape [8,4]"));
  // Cut short after it was opened: the step names the file.
  writeNpy(path, data);
  fromFile.setInputData("x", NpyFile::open(path));
  std::ofstream(path, std::ios::binary | std::ios::trunc).write("x", 1);
  CHECK_THROWS_WITH(fromFile.runStep(),
                    Catch::Contains(path + ": cannot read"));
}

TEST_CASE("sequence data follows its rule and labels_of is the next token",
          "[runtime]") {
  Plan plan = sequenceModelPlan();
  plan.buffers[0].data->a = 5;
  plan.buffers[0].data->c = 3;
  auto tokens = syntheticInput(plan, 0, 1, 0, nullptr);
  auto labels = syntheticInput(plan, 1, 1, 0, &tokens);
  std::vector<int32_t> x(32);
  std::vector<int64_t> y(32);
  std::memcpy(x.data(), tokens.data(), 128);
  std::memcpy(y.data(), labels.data(), 256);
  std::set<int32_t> starts;
  for (int row = 0; row < 4; ++row) {
    starts.insert(x[row * 8]);
    for (int t = 0; t < 8; ++t) {
      int32_t tok = x[row * 8 + t];
      CHECK(tok >= 0);
      CHECK(tok < 16);
      CHECK(y[row * 8 + t] == (5 * tok + 3) % 16);
      if (t < 7)
        CHECK(x[row * 8 + t + 1] == (5 * tok + 3) % 16);
    }
  }
  CHECK(starts.size() > 1); // rows start at random tokens
  // Another step draws other starts.
  CHECK(syntheticInput(plan, 0, 1, 1, nullptr) != tokens);
}

TEST_CASE("an input without a generator or user data is an error",
          "[runtime]") {
  json j = json::parse(kTinyLinearPlan);
  j["buffers"][0].erase("data");
  LoadedPlan plan = loadPlanText(j.dump(), "nodata.plan");
  CpuBackend cpu;
  Executor exec(plan, cpu);
  CHECK_THROWS_WITH(exec.runStep(),
                    Catch::Contains("input has no data generator; pass "
                                    "--data x=FILE.npy"));
}

TEST_CASE("a large input filled in pieces equals the whole-tensor generator",
          "[runtime]") {
  using namespace remat::runtime;
  Plan plan;
  BufferDesc b;
  b.name = "x";
  b.role = BufferRole::Input;
  b.shape = {3, 100003};
  b.bytes = 3 * 100003 * 4;
  b.data = DataSpec{};
  plan.buffers.push_back(b);
  std::vector<char> whole = syntheticInput(plan, 0, 5, 2, nullptr);
  std::vector<char> pieces;
  uint64_t n = 3 * 100003;
  for (uint64_t begin = 0; begin < n; begin += 4096) {
    std::vector<char> piece = syntheticInputRange(
        plan, 0, 5, 2, begin, std::min<uint64_t>(4096, n - begin));
    pieces.insert(pieces.end(), piece.begin(), piece.end());
  }
  CHECK(pieces == whole);
  plan.buffers[0].dtype = DType::I32;
  plan.buffers[0].data->kind = DataSpec::Kind::Randint;
  plan.buffers[0].data->high = 1000;
  whole = syntheticInput(plan, 0, 5, 2, nullptr);
  pieces.clear();
  for (uint64_t begin = 0; begin < n; begin += 4096) {
    std::vector<char> piece = syntheticInputRange(
        plan, 0, 5, 2, begin, std::min<uint64_t>(4096, n - begin));
    pieces.insert(pieces.end(), piece.begin(), piece.end());
  }
  CHECK(pieces == whole);
}

TEST_CASE("writeSyntheticBlock equals the host generator for randn and "
          "randint",
          "[runtime]") {
  for (uint64_t n : {uint64_t(1), uint64_t(7), uint64_t(4099)}) {
    for (int variant = 0; variant < 3; ++variant) {
      Plan plan;
      BufferDesc b;
      b.name = "input" + std::to_string(variant);
      b.role = BufferRole::Input;
      b.shape = {int64_t(n)};
      b.data = DataSpec{};
      b.data->mean = 0.25;
      b.data->std = 3.0;
      SyntheticRequest r;
      r.numElements = n;
      r.seed = 0x123456789abcULL;
      r.streamId = bufferStreamId(b.name);
      r.step = 3;
      r.mean = 0.25;
      r.std = 3.0;
      if (variant > 0) {
        b.dtype = variant == 1 ? DType::I32 : DType::I64;
        b.data->kind = DataSpec::Kind::Randint;
        b.data->low = -5;
        b.data->high = 70000;
        r.kind = SyntheticRequest::Kind::Randint;
        r.int64Elements = variant == 2;
        r.low = -5;
        r.high = 70000;
      }
      b.bytes = n * dtypeSize(b.dtype);
      plan.buffers.push_back(b);
      std::vector<char> expected =
          syntheticInput(plan, 0, r.seed, r.step, nullptr);
      std::vector<char> got(expected.size(), 0);
      for (uint64_t block = 0; block * 4 < n; ++block)
        writeSyntheticBlock(r, block, got.data());
      INFO("n " << n << " variant " << variant);
      CHECK(got == expected);
    }
  }
}

TEST_CASE("teacher data labels each row by a fixed linear map of its "
          "features",
          "[runtime]") {
  PlanBuilder pb;
  const int64_t rows = 64, features = 5, classes = 3;
  int64_t x = pb.add("x", BufferRole::Input, DType::F32, {rows, features});
  pb.plan.buffers[x].data = DataSpec{};
  int64_t y = pb.add("labels", BufferRole::Input, DType::I32, {rows});
  DataSpec teacher;
  teacher.kind = DataSpec::Kind::Teacher;
  teacher.of = x;
  teacher.classes = classes;
  pb.plan.buffers[y].data = teacher;
  int64_t t = pb.add("targets", BufferRole::Input, DType::F32, {rows, 2});
  teacher.classes = 0;
  pb.plan.buffers[t].data = teacher;

  auto labelsAt = [&](uint64_t seed, int64_t step,
                      const std::vector<char> &features) {
    std::vector<char> bytes = syntheticInput(pb.plan, 1, seed, step, &features);
    std::vector<int32_t> labels(rows);
    std::memcpy(labels.data(), bytes.data(), bytes.size());
    return labels;
  };
  std::vector<char> x0 = syntheticInput(pb.plan, 0, 7, 0, nullptr);
  std::vector<char> x1 = syntheticInput(pb.plan, 0, 7, 1, nullptr);
  std::vector<int32_t> y0 = labelsAt(7, 0, x0);
  std::set<int32_t> seen(y0.begin(), y0.end());
  for (int32_t label : y0) {
    CHECK(label >= 0);
    CHECK(label < classes);
  }
  CHECK(seen.size() == size_t(classes)); // 64 rows reach every class

  // One map for every step: the labels are a function of the features
  // (a step's own rows, relabelled as another step's, keep their labels).
  CHECK(labelsAt(7, 1, x0) == y0);
  CHECK(labelsAt(7, 0, x1) != y0);
  // The map is linear: scaling a row by a positive factor keeps its label.
  std::vector<char> scaled = x0;
  for (size_t i = 0; i < scaled.size() / 4; ++i) {
    float v;
    std::memcpy(&v, scaled.data() + 4 * i, 4);
    v *= 3.0f;
    std::memcpy(scaled.data() + 4 * i, &v, 4);
  }
  CHECK(labelsAt(7, 0, scaled) == y0);
  // Another seed is another teacher.
  CHECK(labelsAt(8, 0, x0) != y0);

  // Float targets: linear in the features, x·W / sqrt(features).
  std::vector<char> t0 = syntheticInput(pb.plan, 2, 7, 0, &x0);
  std::vector<char> t3 = syntheticInput(pb.plan, 2, 7, 0, &scaled);
  REQUIRE(t0.size() == size_t(rows * 2 * 4));
  for (size_t i = 0; i < size_t(rows * 2); ++i) {
    float a, b;
    std::memcpy(&a, t0.data() + 4 * i, 4);
    std::memcpy(&b, t3.data() + 4 * i, 4);
    CHECK(b == Approx(3.0 * a).margin(1e-5));
  }
}
