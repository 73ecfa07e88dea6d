//===- ExecutorTestUtil.cpp - Helpers of the executor tests --------------===//
#include "ExecutorTestUtil.h"

#include "runtime/backends/cpu/CpuBackend.h"

namespace remat::runtime::test {

using nlohmann::json;

std::vector<double> runLosses(const LoadedPlan &plan, int steps,
                              ExecutorOptions options) {
  CpuBackend cpu;
  Executor exec(plan, cpu, options);
  std::vector<double> losses;
  for (int i = 0; i < steps; ++i)
    losses.push_back(exec.runStep().loss);
  return losses;
}

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

} // namespace remat::runtime::test
