//===- CudaTestUtil.cpp - Run one op on a backend -------------------------===//
#include "CudaTestUtil.h"

#include "runtime/plan/Loader.h"
#include "runtime/backends/cuda/CudaBackend.h"

#include <cstring>

namespace remat::runtime::test {

bool haveCudaDevice() {
  static const bool present = cudaDeviceCount() > 0;
  return present;
}

nlohmann::json opPlanJson(const OpCase &c) {
  using nlohmann::json;
  constexpr uint64_t kAlign = 256;
  json buffers = json::array();
  uint64_t offset = 0;
  auto addBuffer = [&](const std::string &name, const std::string &role,
                       DType dtype, const Shape &shape) {
    uint64_t bytes = *checkedNumElements(shape) * dtypeSize(dtype);
    json b = {{"name", name},   {"role", role},     {"dtype", dtypeName(dtype)},
              {"shape", shape}, {"offset", offset}, {"bytes", bytes}};
    if (role == "param" || role == "optimizer" || role == "state" ||
        role == "accumulator")
      b["init"] = {{"kind", "zeros"}};
    buffers.push_back(b);
    offset += (bytes + kAlign - 1) / kAlign * kAlign;
    return int64_t(buffers.size()) - 1;
  };
  bool optimizer = isOptimizerOp(c.op);
  // A state update (running statistics, or a micro-batch's gradient sum)
  // writes input 0, a state (accumulator) buffer.
  bool stateUpdate = ops::opInfo(c.op).updatesState;
  std::vector<int64_t> inputIds, outputIds;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    std::string role = "input";
    if (optimizer)
      role = i == 0 ? "param" : i == 1 ? "input" : "optimizer";
    if (stateUpdate && i == 0)
      role = c.op == OpKind::GradAccumulate ? "accumulator" : "state";
    inputIds.push_back(addBuffer("in" + std::to_string(i), role,
                                 c.inputs[i].dtype, c.inputs[i].shape));
  }
  if (optimizer) {
    outputIds.push_back(inputIds[0]);
    for (size_t i = 2; i < inputIds.size(); ++i)
      outputIds.push_back(inputIds[i]);
  } else if (stateUpdate) {
    outputIds.push_back(inputIds[0]);
  } else {
    for (size_t i = 0; i < c.outputs.size(); ++i)
      outputIds.push_back(addBuffer("out" + std::to_string(i), "activation",
                                    c.outputs[i].dtype, c.outputs[i].shape));
  }
  int64_t loss = addBuffer("loss", "activation", DType::F32, {});
  json steps = json::array();
  steps.push_back({{"op", opName(c.op)},
                   {"inputs", inputIds},
                   {"outputs", outputIds},
                   {"attrs", c.attrs},
                   {"phase", optimizer ? "optimizer" : "forward"},
                   {"recompute", false}});
  steps.push_back({{"op", "constant"},
                   {"inputs", json::array()},
                   {"outputs", {loss}},
                   {"attrs", {{"value", 0.0}}},
                   {"phase", "forward"},
                   {"recompute", false}});
  json plan = {
      {"format", "remat-plan"}, {"version", 1},          {"model", "op_test"},
      {"alignment", kAlign},    {"arena_bytes", offset}, {"buffers", buffers},
      {"steps", steps},         {"loss", loss},          {"batch", 1}};
  return plan;
}

std::vector<HostTensor> runOnBackend(Backend &backend, const OpCase &c) {
  LoadedPlan loaded = loadPlanText(opPlanJson(c).dump(), "op_test.plan");

  backend.checkSupport(loaded);
  backend.workspaceBytes(loaded);
  const std::vector<int64_t> &inputIds = loaded.plan.steps[0].inputs;
  const std::vector<int64_t> &outputIds = loaded.plan.steps[0].outputs;
  char *base = static_cast<char *>(
      backend.allocateArena(loaded.plan.arenaBytes, loaded.plan.alignment));
  std::vector<HostTensor> results;
  try {
    backend.prepare(loaded);
    auto refOf = [&](int64_t id) {
      const BufferDesc &b = loaded.plan.buffers[size_t(id)];
      return TensorRef{base + b.offset, b.dtype, b.shape,
                       int64_t(*checkedNumElements(b.shape))};
    };
    std::vector<TensorRef> ins, outs;
    for (size_t i = 0; i < c.inputs.size(); ++i) {
      std::vector<char> bytes = hostBytes(c.inputs[i]);
      backend.copyIn(base + loaded.plan.buffers[size_t(inputIds[i])].offset,
                     bytes.data(), bytes.size());
      ins.push_back(refOf(inputIds[i]));
    }
    for (int64_t id : outputIds)
      outs.push_back(refOf(id));
    KernelCall call;
    call.op = c.op;
    call.attrs = &loaded.steps[0].attrs;
    call.inputs = ins.data();
    call.numInputs = int(ins.size());
    call.outputs = outs.data();
    call.numOutputs = int(outs.size());
    call.trainingStep = c.trainingStep;
    call.microbatch = c.microbatch;
    call.stepIndex = 0;
    backend.runStep(call);
    backend.synchronize();
    for (size_t i = 0; i < outs.size(); ++i) {
      TensorType type{outs[i].dtype, outs[i].shape};
      std::vector<char> bytes(size_t(outs[i].numElements) *
                              dtypeSize(type.dtype));
      backend.copyOut(bytes.data(), outs[i].data, bytes.size());
      results.push_back(hostTensorFromBytes(type, bytes));
    }
  } catch (...) {
    backend.freeArena(base);
    throw;
  }
  backend.freeArena(base);
  return results;
}

void checkAgainstCpu(const OpCase &c, double tolerance) {
  auto cpu = createCpuBackend();
  auto gpu = createCudaBackend();
  std::vector<HostTensor> expected = runOnBackend(*cpu, c);
  std::vector<HostTensor> actual = runOnBackend(*gpu, c);
  REQUIRE(actual.size() == expected.size());
  for (size_t i = 0; i < actual.size(); ++i) {
    double err = normalizedError(actual[i], expected[i]);
    INFO(opName(c.op) << " result " << i << ": normalized error " << err
                      << " (tolerance " << tolerance << ")");
    if (tolerance == 0)
      CHECK(actual[i].values == expected[i].values);
    else
      CHECK(err <= tolerance);
  }
}

HostTensor indices(const Shape &shape, int64_t limit, std::mt19937 &rng,
                   DType dtype) {
  std::uniform_int_distribution<int64_t> dist(0, limit - 1);
  HostTensor t{dtype, shape, {}};
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  for (int64_t i = 0; i < n; ++i)
    t.values.push_back(double(dist(rng)));
  return t;
}

void checkMatmulFormsAgainstCpu(DType dtype, double tolerance,
                                std::mt19937 &rng) {
  auto random = [&](const Shape &s) {
    HostTensor t = randomTensor(s, rng);
    t.dtype = dtype;
    return t;
  };
  auto check = [&](const nlohmann::json &attrs, const Shape &a, const Shape &b,
                   const Shape &c) {
    checkAgainstCpu(
        {OpKind::Matmul, attrs, {random(a), random(b)}, {typeOf(c, dtype)}},
        tolerance);
  };
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      Shape a = ta ? Shape{2, 3, 37, 19} : Shape{2, 3, 19, 37};
      Shape b = tb ? Shape{2, 3, 23, 37} : Shape{2, 3, 37, 23};
      Shape shared = tb ? Shape{23, 37} : Shape{37, 23};
      nlohmann::json attrs = {{"transpose_a", ta}, {"transpose_b", tb}};
      check(attrs, a, b, {2, 3, 19, 23});
      check(attrs, a, shared, {2, 3, 19, 23});
    }
  check(nlohmann::json::object(), {64, 300}, {300, 129}, {64, 129});
  // More rows than columns (the cpu's bf16 GEMM then copies B whole), and
  // a transposed A wider than deep (it then copies B whole, C by rows).
  check(nlohmann::json::object(), {2, 3, 40, 17}, {17, 11}, {2, 3, 40, 11});
  check({{"transpose_a", true}}, {2, 3, 8, 40}, {2, 3, 8, 23}, {2, 3, 40, 23});
  // sum_batch: a shared weight's gradient, one GEMM over the rows (deep,
  // then wide).
  check({{"transpose_a", true}, {"sum_batch", true}}, {2, 3, 37, 19},
        {2, 3, 37, 23}, {19, 23});
  check({{"transpose_a", true}, {"sum_batch", true}}, {2, 3, 5, 40},
        {2, 3, 5, 23}, {40, 23});
}

void checkAttentionAgainstCpu(const Shape &s, const nlohmann::json &attrs,
                              std::mt19937 &rng) {
  HostTensor q = randomTensor(s, rng), k = randomTensor(s, rng),
             v = randomTensor(s, rng), dout = randomTensor(s, rng);
  TensorType t{DType::F32, s};
  checkAgainstCpu({OpKind::Attention, attrs, {q, k, v}, {t}}, kReductionTol);
  checkAgainstCpu({OpKind::AttentionGrad, attrs, {q, k, v, dout}, {t, t, t}},
                  kReductionTol);
}

} // namespace remat::runtime::test
