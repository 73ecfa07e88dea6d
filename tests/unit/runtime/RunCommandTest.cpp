//===- RunCommandTest.cpp - `remat run`: output, log, dumps, flags -------===//
#include "ExecutorTestUtil.h"
#include "TestUtil.h"
#include "TinyPlan.h"

#include "ops/BFloat16.h"
#include "runtime/Executor.h"
#include "runtime/backends/cpu/CpuBackend.h"
#include "runtime/cli/RunCommand.h"

#include <catch2/catch.hpp>

#include <cstring>
#include <fstream>
#include <sstream>

using namespace remat::runtime;
using namespace remat::runtime::test;
using nlohmann::json;

namespace {

/// `remat run` with `args` (argv[0] first), its output in `out` and `err`
/// (cleared first); returns the exit status.
int runArgs(std::vector<std::string> args, std::ostringstream &out,
            std::ostringstream &err) {
  std::vector<char *> argv;
  for (std::string &a : args)
    argv.push_back(a.data());
  out.str("");
  err.str("");
  return remat::runMain(int(argv.size()), argv.data(), out, err);
}

std::string slurp(const std::string &path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

} // namespace

TEST_CASE("remat run prints step lines, logs JSONL and dumps step-1 grads",
          "[runtime]") {
  std::string plan = tempPath("run.plan");
  {
    std::ofstream out(plan);
    out << kTinyLinearPlan;
  }
  remat::RunOptions opt;
  opt.planPath = plan;
  opt.steps = 3;
  opt.logPath = tempPath("run.jsonl");
  opt.dumpGradsPath = tempPath("grads.safetensors");
  opt.savePath = tempPath("final.safetensors");
  std::ostringstream out, err;
  opt.out = &out;
  opt.err = &err;
  REQUIRE(remat::runCommand(opt) == 0);

  std::istringstream lines(out.str());
  std::string line;
  int n = 0;
  while (std::getline(lines, line)) {
    ++n;
    CHECK_THAT(line,
               Catch::Matches("step " + std::to_string(n) +
                              R"( \| loss [0-9]+\.[0-9]{6} \| [0-9.]+ ms )"
                              R"(\| [0-9]+ samples/s \| arena 896 B)"));
  }
  CHECK(n == 3);

  std::istringstream log(slurp(opt.logPath));
  n = 0;
  while (std::getline(log, line)) {
    json entry = json::parse(line);
    CHECK(entry["step"] == ++n);
    for (const char *key : {"loss", "ms", "peak_rss_bytes"})
      CHECK(entry.contains(key));
    CHECK(entry["peak_rss_bytes"].get<uint64_t>() > 0);
  }
  CHECK(n == 3);

  // The dumped grads are step 1's: rerun step 1 and copy them by hand.
  SafetensorsFile grads = SafetensorsFile::read(opt.dumpGradsPath);
  CHECK(grads.tensors().size() == 2);
  LoadedPlan lp = loadPlan(plan);
  CpuBackend cpu;
  Executor exec(lp, cpu);
  std::vector<char> gradW;
  exec.onStepExecuted = [&](size_t i) {
    if (i == 6)
      gradW = exec.readBuffer(6);
  };
  exec.runStep();
  CHECK(grads.getF32("w", {4, 2}).bytes == gradW);
  CHECK(grads.getF32("b", {2}).bytes.size() == 8);

  SafetensorsFile saved = SafetensorsFile::read(opt.savePath);
  CHECK(saved.contains("w"));
  CHECK(saved.contains("momentum:b"));
}

TEST_CASE("remat run reports a bad plan as an error, not a crash",
          "[runtime]") {
  std::string plan = tempPath("bad.plan");
  {
    std::ofstream out(plan);
    out << std::string(kTinyLinearPlan).substr(0, 200);
  }
  remat::RunOptions opt;
  opt.planPath = plan;
  std::ostringstream out, err;
  opt.out = &out;
  opt.err = &err;
  CHECK(remat::runCommand(opt) == 1);
  CHECK_THAT(err.str(), Catch::StartsWith("remat run: error: " + plan +
                                          ": truncated JSON"));
  opt.planPath = tempPath("absent.plan");
  CHECK(remat::runCommand(opt) == 1);
  CHECK_THAT(err.str(), Catch::Contains("cannot open the plan file: No such "
                                        "file or directory"));
}

TEST_CASE("remat run parses its flags", "[runtime]") {
  std::ostringstream out, err;
  auto run = [&](std::vector<std::string> args) {
    return runArgs(std::move(args), out, err);
  };
  CHECK(run({"run", "--help"}) == 0);
  CHECK_THAT(out.str(), Catch::StartsWith("usage: remat run PLAN"));
  CHECK(run({"run", "x.plan", "--steps", "many"}) == 2);
  CHECK_THAT(err.str(), Catch::Contains("--steps needs a non-negative "
                                        "integer, got 'many'"));
  CHECK(run({"run", "--steps", "2"}) == 2);
  CHECK_THAT(err.str(), Catch::Contains("missing the plan file"));
  CHECK(run({"run", "x.plan", "--budget", "1"}) == 2);
  CHECK_THAT(err.str(), Catch::Contains("unknown option '--budget'"));
  CHECK(run({"run", "x.plan", "--data", "x"}) == 2);
  CHECK(run({"run", "x.plan", "--steps"}) == 2);
  CHECK_THAT(err.str(), Catch::Contains("--steps needs a value"));

  // A full run through the flags: --save, then --weights, --data, --seed.
  std::string plan = tempPath("flags.plan");
  {
    std::ofstream f(plan);
    f << kTinyLinearPlan;
  }
  std::string saved = tempPath("flags.safetensors");
  REQUIRE(run({"run", plan, "--steps=2", "--save", saved}) == 0);
  std::string npy = tempPath("x.npy");
  writeNpy(npy, NpyArray{DType::F32, {8, 4}, std::vector<char>(128, 0)});
  REQUIRE(run({"run", plan, "--steps", "1", "--seed", "3", "--weights", saved,
               "--data", "x=" + npy, "--backend", "cpu"}) == 0);
  // x = 0 and target = x @ w_teacher = 0, so the loss is |b|^2 averaged.
  CHECK_THAT(out.str(), Catch::StartsWith("step 1 | loss "));
  CHECK_THAT(err.str(), Catch::Contains("seed 3"));
  CHECK(run({"run", plan, "--backend", "tpu"}) == 2);
  CHECK_THAT(err.str(), Catch::Contains("unknown backend 'tpu'; did you mean "
                                        "'cpu'? (available: "));
}

TEST_CASE("remat run --save-dtype bf16 rounds the saved floats to BF16, and "
          "--weights reads BF16 back exactly",
          "[runtime]") {
  std::ostringstream out, err;
  auto run = [&](std::vector<std::string> args) {
    return runArgs(std::move(args), out, err);
  };
  std::string plan = tempPath("bf16save.plan");
  {
    std::ofstream f(plan);
    f << kTinyLinearPlan;
  }
  std::string f32 = tempPath("save-f32.safetensors");
  std::string bf16 = tempPath("save-bf16.safetensors");
  REQUIRE(run({"run", plan, "--steps", "2", "--save", f32}) == 0);
  REQUIRE(run({"run", plan, "--steps", "2", "--save", bf16, "--save-dtype",
               "bf16"}) == 0);
  SafetensorsFile wide = SafetensorsFile::read(f32);
  SafetensorsFile narrow = SafetensorsFile::read(bf16);
  REQUIRE(narrow.tensors().size() == wide.tensors().size());
  for (const auto &[name, t] : wide.tensors()) {
    INFO(name);
    const NamedTensor &h = narrow.tensors().at(name);
    REQUIRE(t.dtype == "F32");
    CHECK(h.dtype == "BF16");
    CHECK(h.shape == t.shape);
    REQUIRE(h.bytes.size() * 2 == t.bytes.size());
    // Each value the float's nearest bf16 (ties to even).
    for (size_t i = 0; i < h.bytes.size() / 2; ++i) {
      float v;
      uint16_t bits;
      std::memcpy(&v, t.bytes.data() + 4 * i, 4);
      std::memcpy(&bits, h.bytes.data() + 2 * i, 2);
      CHECK(bits == remat::ops::floatToBf16(v));
    }
  }
  // Loaded (0 steps) and saved as f32 again: every value widened exactly.
  std::string back = tempPath("save-back.safetensors");
  REQUIRE(run({"run", plan, "--steps", "0", "--weights", bf16, "--save",
               back}) == 0);
  SafetensorsFile again = SafetensorsFile::read(back);
  for (const auto &[name, h] : narrow.tensors()) {
    INFO(name);
    const NamedTensor &t = again.tensors().at(name);
    REQUIRE(t.dtype == "F32");
    for (size_t i = 0; i < h.bytes.size() / 2; ++i) {
      float v;
      uint16_t bits;
      std::memcpy(&v, t.bytes.data() + 4 * i, 4);
      std::memcpy(&bits, h.bytes.data() + 2 * i, 2);
      CHECK(v == remat::ops::bf16ToFloat(bits));
    }
  }
  CHECK(run({"run", plan, "--save-dtype", "f16", "--save", back}) == 2);
  CHECK_THAT(err.str(), Catch::Contains("--save-dtype needs f32 or bf16, got "
                                        "'f16'"));
  CHECK(run({"run", plan, "--save-dtype", "bf16"}) == 2);
  CHECK_THAT(err.str(), Catch::Contains("--save-dtype needs --save FILE"));
}
