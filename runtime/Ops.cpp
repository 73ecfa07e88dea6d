//===- Ops.cpp - Runtime-side op rules --------------------------------===//
#include "runtime/Ops.h"

#include <algorithm>

namespace remat::runtime {

using nlohmann::json;

namespace {

enum class AttrType { Bool, F32, I64, I64Array };

struct AttrRule {
  const char *name;
  AttrType type;
  bool required;
};

std::vector<AttrRule> attrRules(OpKind op) {
  switch (op) {
  case OpKind::Matmul:
    return {{"transpose_a", AttrType::Bool, false},
            {"transpose_b", AttrType::Bool, false}};
  case OpKind::LayerNorm:
  case OpKind::LayerNormGrad:
    return {{"epsilon", AttrType::F32, false}};
  case OpKind::Transpose:
    return {{"permutation", AttrType::I64Array, true}};
  case OpKind::ReduceSum:
  case OpKind::ReduceMean:
    return {{"axes", AttrType::I64Array, true},
            {"keep_dims", AttrType::Bool, false}};
  case OpKind::Dropout:
    return {{"rate", AttrType::F32, true}, {"seed", AttrType::I64, true}};
  case OpKind::Attention:
  case OpKind::AttentionGrad:
    return {{"causal", AttrType::Bool, true}, {"scale", AttrType::F32, true}};
  case OpKind::Constant:
    return {{"value", AttrType::F32, true}};
  case OpKind::SgdUpdate:
    return {{"lr", AttrType::F32, true},
            {"momentum", AttrType::F32, true},
            {"weight_decay", AttrType::F32, true}};
  case OpKind::AdamwUpdate:
    return {{"lr", AttrType::F32, true},
            {"beta1", AttrType::F32, true},
            {"beta2", AttrType::F32, true},
            {"eps", AttrType::F32, true},
            {"weight_decay", AttrType::F32, true}};
  default:
    return {};
  }
}

const char *attrTypeName(AttrType t) {
  switch (t) {
  case AttrType::Bool:
    return "a boolean";
  case AttrType::F32:
    return "a number";
  case AttrType::I64:
    return "an integer";
  case AttrType::I64Array:
    return "an array of integers";
  }
  return "?";
}

bool hasType(const json &v, AttrType t) {
  switch (t) {
  case AttrType::Bool:
    return v.is_boolean();
  case AttrType::F32:
    return v.is_number();
  case AttrType::I64:
    return v.is_number_integer();
  case AttrType::I64Array:
    if (!v.is_array())
      return false;
    for (const json &e : v)
      if (!e.is_number_integer())
        return false;
    return true;
  }
  return false;
}

[[noreturn]] void fail(const std::string &where, const std::string &msg) {
  throw PlanError(where + ": " + msg);
}

std::string in(int i) { return "input " + std::to_string(i); }
std::string out(int i) { return "output " + std::to_string(i); }

void expectFloat(const TensorType &t, const std::string &what,
                 const std::string &where) {
  if (!isFloatDType(t.dtype))
    fail(where, what + " has dtype " + dtypeName(t.dtype) +
                    " but expects a float dtype (f32|f16|bf16)");
}
void expectIndex(const TensorType &t, const std::string &what,
                 const std::string &where) {
  if (!isIndexDType(t.dtype))
    fail(where, what + " has dtype " + dtypeName(t.dtype) +
                    " but expects an index dtype (i32|i64)");
}
void expectSameDType(const TensorType &t, DType d, const std::string &what,
                     const std::string &where) {
  if (t.dtype != d)
    fail(where, what + " has dtype " + dtypeName(t.dtype) + " but expects " +
                    dtypeName(d));
}
void expectShape(const TensorType &t, const Shape &s, const std::string &what,
                 const std::string &where, const std::string &why = "") {
  if (t.shape != s)
    fail(where, what + " has shape " + formatShape(t.shape) + " but expects " +
                    formatShape(s) + (why.empty() ? "" : " (" + why + ")"));
}
void expectRankAtLeast(const TensorType &t, size_t rank,
                       const std::string &what, const std::string &where) {
  if (t.shape.size() < rank)
    fail(where, what + " has shape " + formatShape(t.shape) +
                    " but expects rank >= " + std::to_string(rank));
}

/// All operands and results float with the dtype of input 0 and the same
/// shape as input 0 (elementwise unary ops and their gradients).
void checkSameAll(const std::vector<TensorType> &ins,
                  const std::vector<TensorType> &outs,
                  const std::string &where) {
  expectFloat(ins[0], in(0), where);
  for (size_t i = 1; i < ins.size(); ++i) {
    expectSameDType(ins[i], ins[0].dtype, in(int(i)), where);
    expectShape(ins[i], ins[0].shape, in(int(i)), where);
  }
  for (size_t i = 0; i < outs.size(); ++i) {
    expectSameDType(outs[i], ins[0].dtype, out(int(i)), where);
    expectShape(outs[i], ins[0].shape, out(int(i)), where);
  }
}

void checkMatmul(const OpAttrs &attrs, const std::vector<TensorType> &ins,
                 const std::vector<TensorType> &outs,
                 const std::string &where) {
  const TensorType &a = ins[0], &b = ins[1];
  expectFloat(a, in(0), where);
  expectSameDType(b, a.dtype, in(1), where);
  expectSameDType(outs[0], a.dtype, out(0), where);
  expectRankAtLeast(a, 2, in(0), where);
  expectRankAtLeast(b, 2, in(1), where);
  size_t ra = a.shape.size(), rb = b.shape.size();
  int64_t m = attrs.transposeA ? a.shape[ra - 1] : a.shape[ra - 2];
  int64_t k = attrs.transposeA ? a.shape[ra - 2] : a.shape[ra - 1];
  int64_t kb = attrs.transposeB ? b.shape[rb - 1] : b.shape[rb - 2];
  int64_t n = attrs.transposeB ? b.shape[rb - 2] : b.shape[rb - 1];
  Shape batch(a.shape.begin(), a.shape.end() - 2);
  if (rb != 2) {
    Shape batchB(b.shape.begin(), b.shape.end() - 2);
    if (batchB != batch)
      fail(where, in(1) + " has shape " + formatShape(b.shape) +
                      " but expects batch dims " + formatShape(batch) +
                      " of input 0 (or rank 2)");
  }
  if (kb != k)
    fail(where, in(1) + " has shape " + formatShape(b.shape) +
                    " but expects K=" + std::to_string(k));
  Shape c = batch;
  c.push_back(m);
  c.push_back(n);
  expectShape(outs[0], c, out(0), where);
}

void checkBinary(const std::vector<TensorType> &ins,
                 const std::vector<TensorType> &outs,
                 const std::string &where) {
  expectFloat(ins[0], in(0), where);
  expectSameDType(ins[1], ins[0].dtype, in(1), where);
  expectSameDType(outs[0], ins[0].dtype, out(0), where);
  auto shape = broadcastShapes(ins[0].shape, ins[1].shape);
  if (!shape)
    fail(where, "input shapes " + formatShape(ins[0].shape) + " and " +
                    formatShape(ins[1].shape) + " do not broadcast");
  expectShape(outs[0], *shape, out(0), where, "the broadcast shape");
}

void checkLayerNorm(const std::vector<TensorType> &ins,
                    const std::vector<TensorType> &outs, bool grad,
                    const std::string &where) {
  // layer_norm: x, gamma, beta -> y; layer_norm_grad: x, gamma, dy -> dx,
  // dgamma, dbeta.
  const TensorType &x = ins[0];
  expectFloat(x, in(0), where);
  expectRankAtLeast(x, 1, in(0), where);
  Shape d = {x.shape.back()};
  expectSameDType(ins[1], x.dtype, in(1), where);
  expectShape(ins[1], d, in(1), where, "gamma [D]");
  expectSameDType(ins[2], x.dtype, in(2), where);
  if (grad) {
    expectShape(ins[2], x.shape, in(2), where, "dy like x");
    expectShape(outs[0], x.shape, out(0), where);
    expectShape(outs[1], d, out(1), where, "dgamma [D]");
    expectShape(outs[2], d, out(2), where, "dbeta [D]");
  } else {
    expectShape(ins[2], d, in(2), where, "beta [D]");
    expectShape(outs[0], x.shape, out(0), where);
  }
  for (size_t i = 0; i < outs.size(); ++i)
    expectSameDType(outs[i], x.dtype, out(int(i)), where);
}

void checkReduce(const OpAttrs &attrs, const std::vector<TensorType> &ins,
                 const std::vector<TensorType> &outs,
                 const std::string &where) {
  const TensorType &x = ins[0];
  expectFloat(x, in(0), where);
  expectSameDType(outs[0], x.dtype, out(0), where);
  int64_t rank = int64_t(x.shape.size());
  for (size_t i = 0; i < attrs.axes.size(); ++i) {
    int64_t a = attrs.axes[i];
    if (a < 0 || a >= rank)
      fail(where, "attribute 'axes' has axis " + std::to_string(a) +
                      " outside [0, " + std::to_string(rank) + ")");
    if (i > 0 && a <= attrs.axes[i - 1])
      fail(where, "attribute 'axes' must be sorted and unique");
  }
  Shape y;
  for (int64_t d = 0; d < rank; ++d) {
    bool reduced =
        std::find(attrs.axes.begin(), attrs.axes.end(), d) != attrs.axes.end();
    if (!reduced)
      y.push_back(x.shape[d]);
    else if (attrs.keepDims)
      y.push_back(1);
  }
  expectShape(outs[0], y, out(0), where);
}

void checkAttention(const std::vector<TensorType> &ins,
                    const std::vector<TensorType> &outs,
                    const std::string &where) {
  const TensorType &q = ins[0];
  expectFloat(q, in(0), where);
  if (q.shape.size() != 4)
    fail(where, in(0) + " has shape " + formatShape(q.shape) +
                    " but expects rank 4 [B,H,S,Dh]");
  for (size_t i = 1; i < ins.size(); ++i) {
    expectSameDType(ins[i], q.dtype, in(int(i)), where);
    expectShape(ins[i], q.shape, in(int(i)), where, "like q");
  }
  for (size_t i = 0; i < outs.size(); ++i) {
    expectSameDType(outs[i], q.dtype, out(int(i)), where);
    expectShape(outs[i], q.shape, out(int(i)), where, "like q");
  }
}

} // namespace

OpArity opArity(OpKind op) {
  switch (op) {
  case OpKind::Matmul:
  case OpKind::Add:
  case OpKind::Sub:
  case OpKind::Mul:
  case OpKind::Div:
  case OpKind::Embedding:
  case OpKind::CrossEntropy:
  case OpKind::Mse:
  case OpKind::ReluGrad:
  case OpKind::GeluGrad:
  case OpKind::TanhGrad:
  case OpKind::SoftmaxGrad:
  case OpKind::EmbeddingGrad:
    return {2, 1};
  case OpKind::Relu:
  case OpKind::Gelu:
  case OpKind::Tanh:
  case OpKind::Exp:
  case OpKind::Softmax:
  case OpKind::Reshape:
  case OpKind::Transpose:
  case OpKind::ReduceSum:
  case OpKind::ReduceMean:
  case OpKind::BroadcastTo:
  case OpKind::SumTo:
  case OpKind::Dropout:
    return {1, 1};
  case OpKind::LayerNorm:
  case OpKind::Attention:
  case OpKind::CrossEntropyGrad:
  case OpKind::MseGrad:
    return {3, 1};
  case OpKind::Constant:
    return {0, 1};
  case OpKind::LayerNormGrad:
    return {3, 3};
  case OpKind::AttentionGrad:
    return {4, 3};
  case OpKind::SgdUpdate:
    return {3, 2};
  case OpKind::AdamwUpdate:
    return {4, 3};
  }
  return {0, 0};
}

bool isOptimizerOp(OpKind op) {
  return op == OpKind::SgdUpdate || op == OpKind::AdamwUpdate;
}

std::optional<Shape> broadcastShapes(const Shape &a, const Shape &b) {
  size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1)
      return std::nullopt;
    out[i] = da == 1 ? db : da;
  }
  return out;
}

OpAttrs parseOpAttrs(OpKind op, const json &attrs, const std::string &where) {
  std::vector<AttrRule> rules = attrRules(op);
  if (!attrs.is_null() && !attrs.is_object())
    fail(where, "attrs must be an object");
  if (attrs.is_object())
    for (auto it = attrs.begin(); it != attrs.end(); ++it) {
      bool known = false;
      for (const AttrRule &r : rules)
        known |= it.key() == r.name;
      if (!known)
        fail(where, "unknown attribute '" + it.key() + "' for op '" +
                        opName(op) + "'");
    }
  for (const AttrRule &r : rules) {
    bool present = attrs.is_object() && attrs.contains(r.name);
    if (!present && r.required)
      fail(where, std::string("missing attribute '") + r.name + "' (" +
                      attrTypeName(r.type) + ")");
    if (present && !hasType(attrs[r.name], r.type))
      fail(where, std::string("attribute '") + r.name + "' must be " +
                      attrTypeName(r.type) + ", got " + attrs[r.name].dump());
  }
  OpAttrs a;
  auto get = [&](const char *name) -> const json * {
    if (attrs.is_object() && attrs.contains(name))
      return &attrs[name];
    return nullptr;
  };
  if (auto v = get("transpose_a"))
    a.transposeA = v->get<bool>();
  if (auto v = get("transpose_b"))
    a.transposeB = v->get<bool>();
  if (auto v = get("epsilon"))
    a.epsilon = v->get<float>();
  if (auto v = get("permutation"))
    a.permutation = v->get<std::vector<int64_t>>();
  if (auto v = get("axes"))
    a.axes = v->get<std::vector<int64_t>>();
  if (auto v = get("keep_dims"))
    a.keepDims = v->get<bool>();
  if (auto v = get("rate"))
    a.rate = v->get<float>();
  if (auto v = get("seed"))
    a.seed = v->is_number_unsigned() ? v->get<uint64_t>()
                                     : uint64_t(v->get<int64_t>());
  if (auto v = get("causal"))
    a.causal = v->get<bool>();
  if (auto v = get("scale"))
    a.scale = v->get<float>();
  if (auto v = get("value"))
    a.value = v->get<float>();
  if (auto v = get("lr"))
    a.lr = v->get<float>();
  if (auto v = get("momentum"))
    a.momentum = v->get<float>();
  if (auto v = get("weight_decay"))
    a.weightDecay = v->get<float>();
  if (auto v = get("beta1"))
    a.beta1 = v->get<float>();
  if (auto v = get("beta2"))
    a.beta2 = v->get<float>();
  if (auto v = get("eps"))
    a.eps = v->get<float>();
  if (op == OpKind::Dropout && !(a.rate >= 0.0f && a.rate < 1.0f))
    fail(where,
         "attribute 'rate' must be in [0, 1), got " + std::to_string(a.rate));
  if ((op == OpKind::LayerNorm || op == OpKind::LayerNormGrad) &&
      !(a.epsilon >= 0.0f))
    fail(where, "attribute 'epsilon' must be non-negative");
  return a;
}

void checkOpTypes(OpKind op, const OpAttrs &attrs,
                  const std::vector<TensorType> &ins,
                  const std::vector<TensorType> &outs,
                  const std::string &where) {
  switch (op) {
  case OpKind::Matmul:
    return checkMatmul(attrs, ins, outs, where);
  case OpKind::Add:
  case OpKind::Sub:
  case OpKind::Mul:
  case OpKind::Div:
    return checkBinary(ins, outs, where);
  case OpKind::Relu:
  case OpKind::Gelu:
  case OpKind::Tanh:
  case OpKind::Exp:
  case OpKind::Dropout:
  case OpKind::ReluGrad:
  case OpKind::GeluGrad:
  case OpKind::TanhGrad:
    return checkSameAll(ins, outs, where);
  case OpKind::Softmax:
  case OpKind::SoftmaxGrad:
    expectRankAtLeast(ins[0], 1, in(0), where);
    return checkSameAll(ins, outs, where);
  case OpKind::LayerNorm:
    return checkLayerNorm(ins, outs, false, where);
  case OpKind::LayerNormGrad:
    return checkLayerNorm(ins, outs, true, where);
  case OpKind::Embedding: {
    const TensorType &table = ins[0], &idx = ins[1];
    expectFloat(table, in(0), where);
    expectIndex(idx, in(1), where);
    if (table.shape.size() != 2)
      fail(where, in(0) + " has shape " + formatShape(table.shape) +
                      " but expects rank 2 [V,D]");
    Shape y = idx.shape;
    y.push_back(table.shape[1]);
    expectSameDType(outs[0], table.dtype, out(0), where);
    return expectShape(outs[0], y, out(0), where, "indices shape + [D]");
  }
  case OpKind::EmbeddingGrad: {
    const TensorType &idx = ins[0], &dy = ins[1];
    expectIndex(idx, in(0), where);
    expectFloat(dy, in(1), where);
    expectSameDType(outs[0], dy.dtype, out(0), where);
    if (outs[0].shape.size() != 2)
      fail(where, out(0) + " has shape " + formatShape(outs[0].shape) +
                      " but expects rank 2 [V,D]");
    Shape expectDy = idx.shape;
    expectDy.push_back(outs[0].shape[1]);
    return expectShape(dy, expectDy, in(1), where, "indices shape + [D]");
  }
  case OpKind::Reshape: {
    expectSameDType(outs[0], ins[0].dtype, out(0), where);
    auto nIn = checkedNumElements(ins[0].shape);
    auto nOut = checkedNumElements(outs[0].shape);
    if (nIn != nOut)
      fail(where, out(0) + " has shape " + formatShape(outs[0].shape) +
                      " but expects the element count of " +
                      formatShape(ins[0].shape));
    return;
  }
  case OpKind::Transpose: {
    const Shape &x = ins[0].shape;
    expectSameDType(outs[0], ins[0].dtype, out(0), where);
    if (attrs.permutation.size() != x.size())
      fail(where, "attribute 'permutation' has " +
                      std::to_string(attrs.permutation.size()) +
                      " entries but input 0 has rank " +
                      std::to_string(x.size()));
    std::vector<bool> seen(x.size(), false);
    Shape y;
    for (int64_t p : attrs.permutation) {
      if (p < 0 || p >= int64_t(x.size()) || seen[p])
        fail(where, "attribute 'permutation' is not a permutation of [0, " +
                        std::to_string(x.size()) + ")");
      seen[p] = true;
      y.push_back(x[p]);
    }
    return expectShape(outs[0], y, out(0), where);
  }
  case OpKind::ReduceSum:
  case OpKind::ReduceMean:
    return checkReduce(attrs, ins, outs, where);
  case OpKind::BroadcastTo: {
    expectFloat(ins[0], in(0), where);
    expectSameDType(outs[0], ins[0].dtype, out(0), where);
    auto b = broadcastShapes(ins[0].shape, outs[0].shape);
    if (!b || *b != outs[0].shape)
      fail(where, in(0) + " has shape " + formatShape(ins[0].shape) +
                      " which does not broadcast to output shape " +
                      formatShape(outs[0].shape));
    return;
  }
  case OpKind::SumTo: {
    expectFloat(ins[0], in(0), where);
    expectSameDType(outs[0], ins[0].dtype, out(0), where);
    auto b = broadcastShapes(outs[0].shape, ins[0].shape);
    if (!b || *b != ins[0].shape || outs[0].shape.size() > ins[0].shape.size())
      fail(where, out(0) + " has shape " + formatShape(outs[0].shape) +
                      " which does not broadcast to input shape " +
                      formatShape(ins[0].shape));
    return;
  }
  case OpKind::CrossEntropy:
  case OpKind::CrossEntropyGrad: {
    const TensorType &logits = ins[0], &labels = ins[1];
    expectFloat(logits, in(0), where);
    expectRankAtLeast(logits, 1, in(0), where);
    expectIndex(labels, in(1), where);
    Shape l(logits.shape.begin(), logits.shape.end() - 1);
    expectShape(labels, l, in(1), where, "logits shape without the last dim");
    expectSameDType(outs[0], logits.dtype, out(0), where);
    if (op == OpKind::CrossEntropy)
      return expectShape(outs[0], {}, out(0), where, "a scalar loss");
    expectSameDType(ins[2], logits.dtype, in(2), where);
    expectShape(ins[2], {}, in(2), where, "a scalar dloss");
    return expectShape(outs[0], logits.shape, out(0), where);
  }
  case OpKind::Mse:
  case OpKind::MseGrad: {
    expectFloat(ins[0], in(0), where);
    expectSameDType(ins[1], ins[0].dtype, in(1), where);
    expectShape(ins[1], ins[0].shape, in(1), where, "like input 0");
    expectSameDType(outs[0], ins[0].dtype, out(0), where);
    if (op == OpKind::Mse)
      return expectShape(outs[0], {}, out(0), where, "a scalar loss");
    expectSameDType(ins[2], ins[0].dtype, in(2), where);
    expectShape(ins[2], {}, in(2), where, "a scalar dloss");
    return expectShape(outs[0], ins[0].shape, out(0), where);
  }
  case OpKind::Attention:
  case OpKind::AttentionGrad:
    return checkAttention(ins, outs, where);
  case OpKind::Constant:
    return expectFloat(outs[0], out(0), where);
  case OpKind::SgdUpdate:
  case OpKind::AdamwUpdate:
    return checkSameAll(ins, outs, where);
  }
}

} // namespace remat::runtime
