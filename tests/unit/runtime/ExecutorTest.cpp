//===- ExecutorTest.cpp - Executor, synthetic data and `remat run` -------===//
#include "TestUtil.h"
#include "TinyPlan.h"

#include "runtime/Executor.h"
#include "runtime/ForwardingBackend.h"
#include "runtime/GradientComm.h"
#include "runtime/Synthetic.h"
#include "runtime/backends/cpu/CpuBackend.h"
#include "runtime/cli/RunCommand.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

using namespace remat::runtime;
using namespace remat::runtime::test;
using nlohmann::json;

namespace {

std::vector<float> asFloats(const std::vector<char> &bytes) {
  std::vector<float> out(bytes.size() / 4);
  std::memcpy(out.data(), bytes.data(), bytes.size());
  return out;
}

std::vector<double> runLosses(const LoadedPlan &plan, int steps,
                              ExecutorOptions options = {}) {
  CpuBackend cpu;
  Executor exec(plan, cpu, options);
  std::vector<double> losses;
  for (int i = 0; i < steps; ++i)
    losses.push_back(exec.runStep().loss);
  return losses;
}

/// Lays buffers out back to back (aligned) while a test builds a plan.
struct PlanBuilder {
  Plan plan;
  int64_t add(const std::string &name, BufferRole role, DType dtype,
              Shape shape) {
    BufferDesc b;
    b.name = name;
    b.role = role;
    b.dtype = dtype;
    b.shape = shape;
    b.bytes = *checkedByteSize(shape, dtype);
    b.offset = (plan.arenaBytes + plan.alignment - 1) / plan.alignment *
               plan.alignment;
    plan.arenaBytes = b.offset + b.bytes;
    if (role == BufferRole::Param || role == BufferRole::Optimizer)
      b.init = InitSpec{};
    plan.buffers.push_back(b);
    return int64_t(plan.buffers.size() - 1);
  }
  void step(const std::string &op, std::vector<int64_t> ins,
            std::vector<int64_t> outs, json attrs = json::object(),
            Phase phase = Phase::Forward) {
    plan.steps.push_back({op, ins, outs, attrs, phase, false});
  }
};

/// A one-layer language model on the synthetic sequence task: embedding ->
/// layer_norm -> matmul -> cross_entropy, backward, adamw on every param.
Plan sequenceModelPlan() {
  PlanBuilder pb;
  pb.plan.model = "tiny_lm";
  pb.plan.batch = 4;
  pb.plan.tokensPerSample = 8;
  const int64_t b = 4, t = 8, v = 16, d = 16;
  auto f32 = DType::F32;
  int64_t x = pb.add("tokens", BufferRole::Input, DType::I32, {b, t});
  DataSpec seq;
  seq.kind = DataSpec::Kind::Sequence;
  seq.vocab = v;
  pb.plan.buffers[x].data = seq;
  int64_t y = pb.add("labels", BufferRole::Input, DType::I64, {b, t});
  DataSpec labels;
  labels.kind = DataSpec::Kind::LabelsOf;
  labels.of = x;
  pb.plan.buffers[y].data = labels;
  int64_t emb = pb.add("emb", BufferRole::Param, f32, {v, d});
  pb.plan.buffers[emb].init = InitSpec{InitSpec::Kind::Normal, 0, 1, 0, 1};
  int64_t gamma = pb.add("gamma", BufferRole::Param, f32, {d});
  pb.plan.buffers[gamma].init = InitSpec{InitSpec::Kind::Ones, 0, 1, 0, 1};
  int64_t beta = pb.add("beta", BufferRole::Param, f32, {d});
  int64_t w = pb.add("w_out", BufferRole::Param, f32, {d, v});
  pb.plan.buffers[w].init =
      InitSpec{InitSpec::Kind::Uniform, 0, 1, -0.25, 0.25};
  std::vector<int64_t> params = {emb, gamma, beta, w};
  std::vector<int64_t> grads, ms, vs;
  for (int64_t p : params) {
    const BufferDesc desc = pb.plan.buffers[p];
    grads.push_back(
        pb.add(gradBufferName(desc.name), BufferRole::Grad, f32, desc.shape));
    ms.push_back(pb.add(optimizerStateName("adam_m", desc.name),
                        BufferRole::Optimizer, f32, desc.shape));
    vs.push_back(pb.add(optimizerStateName("adam_v", desc.name),
                        BufferRole::Optimizer, f32, desc.shape));
  }
  auto act = [&](const std::string &name, Shape shape) {
    return pb.add(name, BufferRole::Activation, f32, shape);
  };
  int64_t e = act("e", {b, t, d}), n = act("n", {b, t, d});
  int64_t logits = act("logits", {b, t, v}), loss = act("loss", {});
  int64_t dloss = act("dloss", {}), dlogits = act("dlogits", {b, t, v});
  int64_t nFlat = act("n_flat", {b * t, d});
  int64_t dFlat = act("dlogits_flat", {b * t, v});
  int64_t dn = act("dn", {b, t, d}), de = act("de", {b, t, d});
  pb.plan.loss = loss;

  pb.step("embedding", {emb, x}, {e});
  pb.step("layer_norm", {e, gamma, beta}, {n}, {{"epsilon", 1e-5}});
  pb.step("matmul", {n, w}, {logits});
  pb.step("cross_entropy", {logits, y}, {loss});
  Phase bw = Phase::Backward;
  pb.step("constant", {}, {dloss}, {{"value", 1.0}}, bw);
  pb.step("cross_entropy_grad", {logits, y, dloss}, {dlogits}, {}, bw);
  pb.step("reshape", {n}, {nFlat}, {}, bw);
  pb.step("reshape", {dlogits}, {dFlat}, {}, bw);
  pb.step("matmul", {nFlat, dFlat}, {grads[3]}, {{"transpose_a", true}}, bw);
  pb.step("matmul", {dlogits, w}, {dn}, {{"transpose_b", true}}, bw);
  pb.step("layer_norm_grad", {e, gamma, dn}, {de, grads[1], grads[2]},
          {{"epsilon", 1e-5}}, bw);
  pb.step("embedding_grad", {x, de}, {grads[0]}, {}, bw);
  for (size_t i = 0; i < params.size(); ++i)
    pb.step("adamw_update", {params[i], grads[i], ms[i], vs[i]},
            {params[i], ms[i], vs[i]},
            {{"lr", 0.05},
             {"beta1", 0.9},
             {"beta2", 0.999},
             {"eps", 1e-8},
             {"weight_decay", 0.0}},
            Phase::Optimizer);
  return pb.plan;
}

std::string slurp(const std::string &path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

} // namespace

TEST_CASE("the tiny linear plan trains for 20 steps and its loss decreases",
          "[runtime]") {
  LoadedPlan plan = loadPlanText(kTinyLinearPlan, "tiny.plan");
  std::vector<double> losses = runLosses(plan, 20);
  INFO("first loss " << losses.front() << ", last " << losses.back());
  CHECK(losses.back() < 0.05 * losses.front());
  double early = 0, late = 0;
  for (int i = 0; i < 5; ++i) {
    early += losses[i];
    late += losses[15 + i];
  }
  CHECK(late < early);
}

TEST_CASE("the example plan file in tests/e2e/plans loads and runs",
          "[runtime]") {
  LoadedPlan plan = loadPlan(std::string(REMAT_SOURCE_DIR) +
                             "/tests/e2e/plans/tiny_linear.plan");
  CHECK(runLosses(plan, 3).size() == 3);
}

TEST_CASE("the shipped GPT-2 tiny plan (recomputation, dropout, the loss "
          "gradient over the logits) runs deterministically",
          "[runtime]") {
  // tests/e2e/plans/gpt2_tiny_520k.plan: `remat compile models/gpt2.json
  // --preset tiny --budget 4720000 --workspace-reserve 4200000 --emit=plan`
  // (the arena under 520,000 B; the reserve holds the CUDA backend's least
  // workspace); the CUDA tests run it on both backends.
  LoadedPlan plan = loadPlan(std::string(REMAT_SOURCE_DIR) +
                             "/tests/e2e/plans/gpt2_tiny_520k.plan");
  const Plan &p = plan.plan;
  int recomputed = 0;
  bool shared = false;
  for (const StepDesc &s : p.steps) {
    recomputed += s.recompute;
    if (s.op == "cross_entropy_grad")
      shared = p.buffers[size_t(s.outputs[0])].offset ==
               p.buffers[size_t(s.inputs[0])].offset;
  }
  CHECK(recomputed > 0);
  CHECK(shared);
  std::vector<double> first = runLosses(plan, 3), second = runLosses(plan, 3);
  CHECK(first == second);
  for (double loss : first)
    CHECK((loss > 0 && loss < 10));
}

TEST_CASE("the arena is one allocation of exactly arena_bytes", "[runtime]") {
  LoadedPlan plan = loadPlanText(kTinyLinearPlan, "tiny.plan");
  CpuBackend cpu;
  {
    Executor exec(plan, cpu);
    for (int i = 0; i < 3; ++i)
      exec.runStep();
    CHECK(exec.arenaBytes() == 896);
    CHECK(exec.workspaceBytes() == 0);
  }
  CHECK(cpu.arenaAllocations() == 1);
  CHECK(cpu.lastArenaBytes() == 896);
}

TEST_CASE("a run is a pure function of plan and seed", "[runtime]") {
  LoadedPlan plan = loadPlanText(kTinyLinearPlan, "tiny.plan");
  CHECK(runLosses(plan, 5) == runLosses(plan, 5));
  ExecutorOptions other;
  other.seed = 8;
  CHECK(runLosses(plan, 5) != runLosses(plan, 5, other));
}

TEST_CASE("parameters are initialized once, from their init spec",
          "[runtime]") {
  LoadedPlan plan = loadPlanText(kTinyLinearPlan, "tiny.plan");
  CpuBackend cpu;
  Executor exec(plan, cpu);
  auto teacher = asFloats(exec.readBuffer(3));
  for (float v : teacher) {
    CHECK(v >= -1.0f);
    CHECK(v < 1.0f);
  }
  CHECK(teacher != std::vector<float>(8, 0.0f));
  exec.runStep();
  // w_teacher has no optimizer step, so it never changes; w does.
  CHECK(asFloats(exec.readBuffer(3)) == teacher);
  auto state = exec.stateTensors();
  CHECK(state.count("momentum:w") == 1);
  CHECK(asFloats(state["momentum:w"].bytes) != std::vector<float>(8, 0.0f));
}

TEST_CASE("weights load from safetensors and a missing param is rejected",
          "[runtime]") {
  LoadedPlan plan = loadPlanText(kTinyLinearPlan, "tiny.plan");
  CpuBackend cpu;
  Executor exec(plan, cpu);
  auto state = exec.stateTensors();
  std::vector<float> ones(8, 1.0f);
  std::memcpy(state["w"].bytes.data(), ones.data(), 32);
  std::string path = tempPath("weights.safetensors");
  writeSafetensors(path, state);
  exec.loadWeights(SafetensorsFile::read(path));
  CHECK(asFloats(exec.readBuffer(1)) == ones);
  // The same from a file opened lazily (remat run's way).
  std::vector<float> twos(8, 2.0f);
  std::memcpy(state["w"].bytes.data(), twos.data(), 32);
  writeSafetensors(path, state);
  exec.loadWeights(SafetensorsFile::open(path));
  CHECK(asFloats(exec.readBuffer(1)) == twos);
  state.erase("b");
  writeSafetensors(path, state);
  CHECK_THROWS_WITH(exec.loadWeights(SafetensorsFile::read(path)),
                    path + ": missing tensor 'b'");
}

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

TEST_CASE("a language model on the sequence task learns with adamw",
          "[runtime]") {
  LoadedPlan plan = validatePlan(sequenceModelPlan(), "lm.plan");
  std::vector<double> losses = runLosses(plan, 40);
  INFO("first loss " << losses.front() << ", last " << losses.back());
  CHECK(losses.front() > 1.5); // about log(16) = 2.77 at init
  CHECK(losses.back() < 0.25 * losses.front());
}

TEST_CASE("onStepExecuted sees every plan step in order", "[runtime]") {
  LoadedPlan plan = loadPlanText(kTinyLinearPlan, "tiny.plan");
  CpuBackend cpu;
  Executor exec(plan, cpu);
  std::vector<size_t> seen;
  exec.onStepExecuted = [&](size_t i) { seen.push_back(i); };
  exec.runStep();
  CHECK(seen == std::vector<size_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
}

TEST_CASE("an embedding index outside the table stops the run with the step "
          "named",
          "[runtime]") {
  Plan p = sequenceModelPlan();
  p.buffers[0].data->vocab = 32; // tokens up to 31, table has 16 rows
  LoadedPlan plan = validatePlan(p, "lm.plan");
  CpuBackend cpu;
  Executor exec(plan, cpu);
  CHECK_THROWS_AS(exec.runStep(), ExecutionError);
  try {
    exec.runStep();
  } catch (const ExecutionError &e) {
    CHECK_THAT(e.what(), Catch::StartsWith("lm.plan: /steps/0 'embedding': "
                                           "index"));
  }
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
  CHECK_THAT(err.str(), Catch::Contains("cannot open plan file"));
}

TEST_CASE("remat run parses its flags", "[runtime]") {
  std::ostringstream out, err;
  auto run = [&](std::vector<std::string> args) {
    std::vector<char *> argv;
    for (std::string &a : args)
      argv.push_back(a.data());
    out.str("");
    err.str("");
    return remat::runMain(int(argv.size()), argv.data(), out, err);
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

TEST_CASE("the plan's parameter gradients match finite differences of its "
          "loss",
          "[runtime]") {
  // Whole-plan check of the autodiff steps of the language model: for a
  // sample of elements of each param, perturb it in a fresh executor (same
  // seed, so the same init and step-0 data) and difference the step-0 loss,
  // which is computed before the optimizer runs. f32 forward with eps 1e-2:
  // rounding ~1e-7 * 3 / 1e-2 = 3e-5 and truncation ~eps^2 = 1e-4, so the
  // check is |analytic - fd| <= 1e-3 + 5e-2 |fd|.
  LoadedPlan plan = validatePlan(sequenceModelPlan(), "lm.plan");
  CpuBackend cpu;
  std::map<size_t, std::vector<float>> grads;
  {
    Executor exec(plan, cpu);
    exec.onStepExecuted = [&](size_t stepIndex) {
      for (size_t b = 0; b < plan.plan.buffers.size(); ++b)
        if (plan.plan.buffers[b].role == BufferRole::Grad &&
            plan.lastWriter[b] == int64_t(stepIndex))
          grads[b] = asFloats(exec.readBuffer(b));
    };
    exec.runStep();
  }
  REQUIRE(grads.size() == 4);
  auto lossWith = [&](size_t param, size_t element, float delta) {
    CpuBackend backend;
    Executor exec(plan, backend);
    std::vector<float> values = asFloats(exec.readBuffer(param));
    values[element] += delta;
    std::vector<char> bytes(values.size() * 4);
    std::memcpy(bytes.data(), values.data(), bytes.size());
    exec.writeBuffer(param, bytes);
    return exec.runStep().loss;
  };
  for (const auto &[gradIndex, grad] : grads) {
    std::string paramName = paramNameOfGrad(plan.plan.buffers[gradIndex].name);
    size_t param = 0;
    while (plan.plan.buffers[param].name != paramName)
      ++param;
    for (size_t element = 0; element < grad.size();
         element += std::max<size_t>(1, grad.size() / 7)) {
      double fd =
          (lossWith(param, element, 1e-2f) - lossWith(param, element, -1e-2f)) /
          2e-2;
      INFO(paramName << "[" << element << "]: analytic " << grad[element]
                     << ", finite difference " << fd);
      CHECK(std::abs(grad[element] - fd) <= 1e-3 + 5e-2 * std::abs(fd));
    }
  }
}

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
