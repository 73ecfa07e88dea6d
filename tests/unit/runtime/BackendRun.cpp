//===- BackendRun.cpp - One op on a backend, as a one-step plan ----------===//
#include "BackendRun.h"

#include "OpSamples.h"

#include "ops/BFloat16.h"
#include "ops/ShapeRules.h"
#include "runtime/plan/Loader.h"

#include <catch2/catch.hpp>

namespace remat::runtime::test {

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
    call.sliceSamples = c.sliceSamples;
    call.firstSample = c.firstSample;
    call.padding = c.padding;
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

HostTensor asBf16(HostTensor t) {
  if (t.dtype == DType::F32)
    t.dtype = DType::BF16;
  return t;
}

std::optional<OpCase> bf16Variant(OpKind op, const nlohmann::json &attrs,
                                  const std::vector<HostTensor> &inputs,
                                  const std::vector<TensorType> &outputs,
                                  bool activationsOnly) {
  OpCase c{op, attrs, inputs, outputs};
  for (HostTensor &t : c.inputs)
    if (!activationsOnly || t.shape == c.inputs[0].shape)
      t = asBf16(t);
  remat::ops::LabeledTypes ins;
  for (const HostTensor &t : c.inputs)
    ins.types.push_back({t.dtype, t.shape});
  std::vector<TensorType> given = c.outputs;
  for (TensorType &t : given)
    if (t.dtype == DType::F32)
      t.dtype = DType::BF16;
  try {
    OpAttrs attrs = remat::ops::parseAttrs(op, c.attrs);
    c.outputs = remat::ops::inferResultTypes(op, attrs, ins, given);
  } catch (const remat::ops::TypeRuleError &) {
    return std::nullopt;
  }
  bool anyBf16 = false;
  for (const HostTensor &t : c.inputs)
    anyBf16 |= t.dtype == DType::BF16;
  for (const TensorType &t : c.outputs)
    anyBf16 |= t.dtype == DType::BF16;
  if (!anyBf16)
    return std::nullopt;
  return c;
}

HostTensor bf16Rounded(HostTensor t) {
  for (double &v : t.values)
    v = ops::bf16ToFloat(ops::floatToBf16(float(v)));
  return t;
}

std::set<std::string>
forEachBf16Case(std::mt19937 &rng, const std::function<bool(OpKind)> &skip,
                const std::function<void(const OpCase &)> &fn) {
  std::set<std::string> covered;
  for (int k = 0; k < kNumOpKinds; ++k) {
    OpKind op = OpKind(k);
    if (skip(op))
      continue;
    INFO("op '" << opName(op) << "'");
    std::optional<OpSample> sample = sampleFor(op, rng);
    REQUIRE(sample);
    for (bool activationsOnly : {false, true}) {
      std::optional<OpCase> c = bf16Variant(op, sample->attrs, sample->inputs,
                                            sample->outputs, activationsOnly);
      if (!c)
        continue;
      INFO((activationsOnly ? "activations bf16" : "every f32 operand bf16"));
      fn(*c);
      covered.insert(opName(op));
    }
  }
  return covered;
}

void checkPaddedSlice(Backend &backend) {
  using nlohmann::json;
  std::mt19937 rng(23);
  // 3 samples of 2 rows of 5 classes (4 values for mse); the slice holds 2
  // real samples and a padding one, a copy of the first.
  HostTensor logits = randomTensor({3, 2, 5}, rng, -2, 2);
  HostTensor labels = tensorOf({3, 2}, {4, 0, 2, 1, 4, 0}, DType::I64);
  HostTensor a = randomTensor({3, 4}, rng), b = randomTensor({3, 4}, rng);
  HostTensor dloss = tensorOf({}, {1.5});
  auto head = [](HostTensor t, int64_t samples) { // the first samples
    int64_t per = t.size() / t.shape[0];
    t.values.resize(size_t(samples * per));
    t.shape[0] = samples;
    return t;
  };
  auto padded = [](OpCase c) {
    c.microbatch = 1;
    c.sliceSamples = 3;
    c.firstSample = 3;
    c.padding = 1;
    return c;
  };
  const double share = 2.0 / 3.0; // real rows over the slice's rows
  struct Loss {
    OpKind op, grad;
    std::vector<HostTensor> in;
  };
  for (const Loss &l :
       {Loss{OpKind::CrossEntropy, OpKind::CrossEntropyGrad, {logits, labels}},
        Loss{OpKind::Mse, OpKind::MseGrad, {a, b}}}) {
    INFO(opName(l.op));
    std::vector<HostTensor> real = {head(l.in[0], 2), head(l.in[1], 2)};
    OpCase whole{l.op, json::object(), l.in, {typeOf({})}};
    OpCase part{l.op, json::object(), real, {typeOf({})}};
    double lossPadded = runOnBackend(backend, padded(whole))[0].values[0];
    double lossReal = runOnBackend(backend, part)[0].values[0];
    CHECK(lossPadded == Approx(lossReal * share).epsilon(1e-6));
    // Without the padding flag the third sample counts.
    CHECK(runOnBackend(backend, whole)[0].values[0] !=
          Approx(lossReal * share).epsilon(1e-3));
    whole = {l.grad,
             json::object(),
             {l.in[0], l.in[1], dloss},
             {typeOf(l.in[0].shape)}};
    part = {l.grad,
            json::object(),
            {real[0], real[1], dloss},
            {typeOf(real[0].shape)}};
    HostTensor gradPadded = runOnBackend(backend, padded(whole))[0];
    HostTensor gradReal = runOnBackend(backend, part)[0];
    for (int64_t i = 0; i < gradPadded.size(); ++i) {
      INFO("element " << i);
      double expected =
          i < gradReal.size() ? gradReal.values[size_t(i)] * share : 0.0;
      CHECK(gradPadded.values[size_t(i)] ==
            Approx(expected).epsilon(1e-6).margin(1e-12));
    }
  }
  // Dropout: a slice of 3 samples from sample 3 draws rows 3..5 of the
  // 6-sample batch's mask (the same as micro-batch 1 of 2 equal slices).
  HostTensor x = tensorOf({6, 64}, std::vector<double>(6 * 64, 1.0));
  json rate = {{"rate", 0.5}, {"seed", 7}};
  HostTensor all =
      runOnBackend(backend, {OpKind::Dropout, rate, {x}, {typeOf({6, 64})}})[0];
  OpCase second{OpKind::Dropout, rate, {head(x, 3)}, {typeOf({3, 64})}};
  second.sliceSamples = 3;
  second.firstSample = 3;
  second.microbatch = 1;
  HostTensor mask = runOnBackend(backend, second)[0];
  CHECK(mask.values ==
        std::vector<double>(all.values.begin() + 3 * 64, all.values.end()));
  CHECK(mask.values !=
        std::vector<double>(all.values.begin(), all.values.begin() + 3 * 64));
}

} // namespace remat::runtime::test
