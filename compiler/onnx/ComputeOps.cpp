//===- ComputeOps.cpp - ONNX ops that compute -----------------------------===//
//
// The nodes mapped onto graph ops that compute: Add, Sub, Mul, Div (folded
// on constant data; nn.GELU()'s spelled-out product read as one op), the
// activations, Pow, Clip, Dropout, MatMul and Gemm (the attention the
// exporter spells out read as one op), Conv and the pools, ReduceMean.
//
//===----------------------------------------------------------------------===//

#include "compiler/onnx/OnnxReader.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <sstream>

namespace remat::model::onnx_reader {

//===----------------------------------------------------------------------===//
// Elementwise ops and activations
//===----------------------------------------------------------------------===//

void OnnxReader::importArithmetic() {
  const std::string &op = node->op_type();
  const ConstantData *a = constantInput(0), *b = constantInput(1);
  if (a && b && !(a->isFloat && initializers.count(node->input(0))) &&
      !(b->isFloat && initializers.count(node->input(1)))) {
    defineConstant(0, foldElementwise(*a, *b));
    return;
  }
  std::string kind = op == "Add" ? "add" : op == "Sub" ? "sub"
                                     : op == "Mul" ? "mul" : "div";
  int lhs = valueInput(0), rhs = valueInput(1);
  if (kind == "mul" && fuseGelu(lhs, rhs))
    return;
  define(0, emit(uniqueName(nodeName), kind, {lhs, rhs}));
}

int OnnxReader::scaleShift(int x, int scale, int shift,
                           const std::string &name) {
  if (scale >= 0)
    x = emit(uniqueName(shift >= 0 ? name + "/scale" : name), "mul",
             {x, scale});
  if (shift >= 0)
    x = emit(uniqueName(name), "add", {x, shift});
  return x;
}

/// nn.GELU() as the exporter writes it, x·(1 + erf(x/√2))·0.5 (the
/// factors in any order and grouping, x/√2 as a division by √2 or a product
/// with 1/√2, each constant as float32 rounds it): one `gelu_exact` op,
/// which computes it as PyTorch does, with 1/√2 to the float type's
/// precision, and whose backward keeps x alone instead of every factor.
bool OnnxReader::fuseGelu(int lhs, int rhs) {
  auto near = [](std::optional<double> c, double want) {
    return c && std::abs(*c - want) <= 1e-7 * want;
  };
  // The three factors: {lhs, rhs} with one of them split if it is a product.
  std::vector<std::pair<std::vector<int>, std::vector<std::string>>> splits;
  for (int side = 0; side < 2; ++side) {
    int whole = side ? lhs : rhs, split = side ? rhs : lhs;
    const Op *op = producerOf(split);
    if (op && op->kind == "mul")
      splits.push_back({{whole, op->operands[0], op->operands[1]}, {op->name}});
  }
  for (auto &[factors, chain] : splits) {
    // 0.5, and 1 + erf(z) with z = x/√2 or x·(1/√2).
    int half = -1, cdf = -1;
    const Op *sum = nullptr, *erf = nullptr, *scaled = nullptr;
    for (int f : factors) {
      if (near(uniformValue(f), 0.5)) {
        half = f;
        continue;
      }
      const Op *op = producerOf(f);
      for (int k = 0; op && op->kind == "add" && cdf < 0 && k < 2; ++k) {
        const Op *e = producerOf(op->operands[size_t(k)]);
        if (e && e->kind == "erf" &&
            near(uniformValue(op->operands[size_t(1 - k)]), 1.0)) {
          cdf = f;
          sum = op;
          erf = e;
          scaled = producerOf(e->operands[0]);
        }
      }
    }
    if (half < 0 || cdf < 0 || !scaled)
      continue;
    int x = -1;
    if (scaled->kind == "div" &&
        near(uniformValue(scaled->operands[1]), std::sqrt(2.0)))
      x = scaled->operands[0];
    for (int k = 0; k < 2 && scaled->kind == "mul" && x < 0; ++k)
      if (near(uniformValue(scaled->operands[size_t(1 - k)]),
               std::sqrt(0.5)))
        x = scaled->operands[size_t(k)];
    // The remaining factor is x itself.
    int rest = -1;
    for (int f : factors)
      if (f != half && f != cdf)
        rest = f;
    // The product has x's shape: the other factors are scalars or x-sized.
    bool shaped = x >= 0;
    for (int f : factors)
      shaped = shaped && (typeOf(f).shape == typeOf(x).shape ||
                          (f == half && typeOf(f).numElements() == 1));
    if (rest != x || !shaped)
      continue;
    replaced.insert(chain.begin(), chain.end());
    for (const Op *op : {sum, erf, scaled})
      replaced.insert(op->name);
    // The constants 0.5, 1 and √2 (or 1/√2).
    for (int c : {half, sum->operands[0], sum->operands[1],
                  scaled->operands[0], scaled->operands[1]})
      if (const Op *op = producerOf(c); op && uniformValue(c))
        replaced.insert(op->name);
    define(0, emit(uniqueName(nodeName), "gelu_exact", {x}));
    return true;
  }
  return false;
}

/// Erf, Sqrt, Relu, Tanh, Sigmoid and Softmax: elementwise graph ops (Sqrt
/// as pow, Sigmoid as tanh, mul and add).
void OnnxReader::importActivation() {
  const std::string &op = node->op_type();
  if (op == "Erf") {
    int x = valueInput(0);
    define(0, emit(uniqueName(nodeName), "erf", {x}));
    return;
  }
  if (op == "Sqrt") { // x^0.5: the C library's pow, within an ulp of sqrt
    int x = valueInput(0);
    define(0, emit(uniqueName(nodeName), "pow", {x},
                   json{{"exponent", 0.5}}));
    return;
  }
  if (op == "Relu" || op == "Tanh") {
    int x = valueInput(0);
    define(0, emit(uniqueName(nodeName), op == "Relu" ? "relu" : "tanh", {x}));
    return;
  }
  if (op == "Sigmoid") {
    // sigmoid(x) = 0.5·tanh(0.5·x) + 0.5: exact, and made of graph ops that
    // have kernels and gradients.
    int x = valueInput(0);
    int half = scalarConstant(0.5, nodeName + "/half");
    int scaled = emit(uniqueName(nodeName + "/scale"), "mul", {x, half});
    int t = emit(uniqueName(nodeName + "/tanh"), "tanh", {scaled});
    int halfT = emit(uniqueName(nodeName + "/mul"), "mul", {t, half});
    define(0, emit(uniqueName(nodeName), "add", {halfT, half}));
    return;
  }
  if (op == "HardSigmoid" || op == "HardSwish") {
    // max(0, min(1, alpha·x + beta)), HardSwish x times it with alpha 1/6
    // and beta 0.5: a clip of an affine map, made of graph ops that have
    // kernels and gradients. With alpha 1/6 (HardSwish, or HardSigmoid
    // whose float attribute is float32(1/6), as torch exports
    // F.hardsigmoid) and beta 0.5 the map is relu6(x + 3) / 6, torch's
    // own form, whose constants are exact in any precision.
    bool swish = op == "HardSwish";
    double slope = swish ? 1.0 / 6.0 : floatAttribute("alpha", 0.2);
    double offset = swish ? 0.5 : floatAttribute("beta", 0.5);
    bool sixth = float(slope) == float(1.0 / 6.0) && offset == 0.5;
    int x = valueInput(0), gate = -1;
    std::string gateName = uniqueName(swish ? nodeName + "/gate" : nodeName);
    if (sixth) {
      int three = scalarConstant(3.0, nodeName + "/three");
      int six = scalarConstant(6.0, nodeName + "/six");
      int shifted = emit(uniqueName(nodeName + "/shift"), "add", {x, three});
      int relu6 = emit(uniqueName(nodeName + "/relu6"), "clip", {shifted},
                       json{{"min", 0.0}, {"max", 6.0}});
      gate = emit(gateName, "div", {relu6, six});
    } else {
      int alpha = scalarConstant(slope, nodeName + "/alpha");
      int beta = scalarConstant(offset, nodeName + "/beta");
      int scaled = emit(uniqueName(nodeName + "/scale"), "mul", {x, alpha});
      int shifted = emit(uniqueName(nodeName + "/shift"), "add", {scaled, beta});
      gate = emit(gateName, "clip", {shifted}, json{{"min", 0.0}, {"max", 1.0}});
    }
    define(0, swish ? emit(uniqueName(nodeName), "mul", {x, gate}) : gate);
    return;
  }
  if (op == "LeakyRelu") {
    // relu(x) + alpha·(x - relu(x)): x itself where x > 0 (the second
    // term is 0 there), alpha·x elsewhere, and the gradient 1 or alpha
    // (relu's is 0 at 0, as torch's leaky_relu).
    int x = valueInput(0);
    int alpha = scalarConstant(floatAttribute("alpha", 0.01),
                               nodeName + "/alpha");
    int positive = emit(uniqueName(nodeName + "/relu"), "relu", {x});
    int negative = emit(uniqueName(nodeName + "/negative"), "sub",
                        {x, positive});
    int scaled = emit(uniqueName(nodeName + "/scaled"), "mul",
                      {negative, alpha});
    define(0, emit(uniqueName(nodeName), "add", {positive, scaled}));
    return;
  }
  if (op == "Softmax") {
    int x = valueInput(0);
    int64_t rank = int64_t(typeOf(x).shape.size());
    auto axis = normalizeAxis(intAttribute("axis", -1), rank);
    if (!axis || *axis != rank - 1)
      failNode("softmax over axis " +
               std::to_string(intAttribute("axis", -1)) +
               " is not supported (only the last axis)");
    define(0, emit(uniqueName(nodeName), "softmax", {x}));
    return;
  }
}

/// Pow by a constant exponent: `pow` (folded on constant data).
void OnnxReader::importPow() {
  double exponent = scalarInput(1, "the exponent", 1.0);
  if (const ConstantData *c = constantInput(0)) {
    ConstantData r = *c;
    for (double &v : r.values)
      v = std::pow(v, exponent);
    defineConstant(0, std::move(r));
    return;
  }
  int x = valueInput(0);
  define(0, emit(uniqueName(nodeName), "pow", {x},
                 json{{"exponent", exponent}}));
}

/// Clip with constant min / max inputs (absent: unbounded on that side).
void OnnxReader::importClip() {
  int x = valueInput(0);
  auto bound = [&](int i, const char *what, float fallback) {
    if (!hasInput(i))
      return fallback;
    const ConstantData &c = requireConstant(i, what);
    if (c.values.size() != 1)
      failNode(std::string(what) + " must be a scalar");
    return float(c.values.front());
  };
  float lo = bound(1, "min", -std::numeric_limits<float>::max());
  float hi = bound(2, "max", std::numeric_limits<float>::max());
  if (!(lo <= hi))
    failNode("min " + std::to_string(lo) + " exceeds max " +
             std::to_string(hi));
  define(0, emit(uniqueName(nodeName), "clip", {x},
                 json{{"min", lo}, {"max", hi}}));
}

/// Dropout: `dropout` in training mode with a positive ratio, else the
/// identity (inference mode, or ratio 0). The seed is the node's `seed`
/// attribute, or a hash of its name.
void OnnxReader::importDropout() {
  int x = valueInput(0);
  double ratio = scalarInput(1, "the ratio", 0.5);
  bool training = scalarInput(2, "training_mode", 0.0) != 0.0;
  if (!training || ratio == 0.0) {
    // A positive rate in inference mode: the trace of an eval-mode export.
    if (!training && ratio > 0.0) {
      std::ostringstream rate;
      rate << ratio;
      graph.warnings.push_back(
          graph.sourceName + ": node '" + nodeName + "' (Dropout, ratio " +
          rate.str() + ") is in inference mode, so the step runs "
          "without it: a model exported in eval mode; export with "
          "training=torch.onnx.TrainingMode.TRAINING (docs/onnx.md, "
          "\"Eval-mode exports\")");
    }
    define(0, x);
    return;
  }
  if (!(ratio > 0.0 && ratio < 1.0))
    failNode("ratio " + std::to_string(ratio) + " is outside [0, 1)");
  uint64_t hash = 1469598103934665603ull; // FNV-1a of the node's name
  for (unsigned char ch : nodeName)
    hash = (hash ^ ch) * 1099511628211ull;
  int64_t seed = intAttribute("seed", int64_t(hash >> 1));
  define(0, emit(uniqueName(nodeName), "dropout", {x},
                 json{{"rate", ratio}, {"seed", seed}}));
}

//===----------------------------------------------------------------------===//
// Matrix products
//===----------------------------------------------------------------------===//

void OnnxReader::importMatMul() {
  int a = valueInput(0), b = valueInput(1);
  if (typeOf(a).shape.size() < 2 || typeOf(b).shape.size() < 2)
    failNode("MatMul of a 1-D operand is not supported yet");
  if (fuseAttention(a, b))
    return;
  // A 2-D operand that is a transposed matrix (nn.Linear's weight under
  // torch.matmul, a tied embedding) is read as it is stored, with the
  // product's transpose flag, instead of a transposed copy.
  bool flags[2] = {false, false};
  int *operands[2] = {&a, &b};
  for (int side = 0; side < 2; ++side)
    if (std::optional<Permuted> p = permutedFrom(*operands[side]);
        p && p->permutation == std::vector<int64_t>{1, 0}) {
      replaced.insert(graph.values[size_t(*operands[side])].name);
      *operands[side] = p->source;
      flags[side] = true;
    }
  define(0, emit(uniqueName(nodeName), "matmul", {a, b},
                 json{{"transpose_a", flags[0]}, {"transpose_b", flags[1]}}));
}

/// Einsum of two operands without repeated labels or ellipsis, every label
/// of one operand alone kept in the output ("bhid,bhjd->bhij"): one
/// batched `matmul`. The labels of both operands and the output are the
/// batch, those of both alone are contracted, the others are free; each
/// operand is permuted (only where needed) to [batch, free, contracted] or
/// [batch, contracted, free] (the product's transpose flag), viewed as 3-D,
/// multiplied, viewed as [batch, free of A, free of B] and permuted to the
/// output's order.
void OnnxReader::importEinsum() {
  std::string equation;
  for (char ch : stringAttribute("equation", ""))
    if (ch != ' ')
      equation += ch;
  size_t arrow = equation.find("->"), comma = equation.find(',');
  if (node->input_size() != 2 || arrow == std::string::npos ||
      comma == std::string::npos || comma > arrow ||
      equation.find("...") != std::string::npos)
    failNode("equation '" + equation + "': only two operands with an "
             "explicit output and no ellipsis are supported");
  std::string labels[3] = {equation.substr(0, comma),
                           equation.substr(comma + 1, arrow - comma - 1),
                           equation.substr(arrow + 2)};
  int operand[2] = {valueInput(0), valueInput(1)};
  std::map<char, int64_t> size;
  for (int k = 0; k < 3; ++k) {
    if (k < 2 && labels[k].size() != typeOf(operand[k]).shape.size())
      failNode("equation '" + equation + "': operand " + std::to_string(k) +
               " has rank " + std::to_string(typeOf(operand[k]).shape.size()) +
               ", its labels '" + labels[k] + "' name " +
               std::to_string(labels[k].size()) + " dims");
    for (size_t i = 0; i < labels[k].size(); ++i) {
      char l = labels[k][i];
      if (!std::isalpha(static_cast<unsigned char>(l)) ||
          labels[k].find(l) != i)
        failNode("equation '" + equation + "': label '" +
                 std::string(1, l) + "' is repeated or not a letter");
      if (k == 2 && !size.count(l))
        failNode("equation '" + equation + "': output label '" +
                 std::string(1, l) + "' is in no operand");
      if (k < 2) {
        int64_t d = typeOf(operand[k]).shape[i];
        if (size.count(l) && size[l] != d)
          failNode("equation '" + equation + "': label '" +
                   std::string(1, l) + "' has sizes " +
                   std::to_string(size[l]) + " and " + std::to_string(d));
        size[l] = d;
      }
    }
  }
  auto in = [&](int k, char l) {
    return labels[k].find(l) != std::string::npos;
  };
  std::string batch, contracted, free[2];
  for (char l : labels[2])
    (in(0, l) && in(1, l) ? batch : free[in(0, l) ? 0 : 1]) += l;
  for (char l : labels[0])
    if (in(1, l) && !in(2, l))
      contracted += l;
  for (int k = 0; k < 2; ++k)
    for (char l : labels[k])
      if (!in(1 - k, l) && !in(2, l))
        failNode("equation '" + equation + "': label '" + std::string(1, l) +
                 "' of one operand alone is summed out; only labels of both "
                 "operands may be");
  auto count = [&](const std::string &ls) {
    int64_t n = 1;
    for (char l : ls)
      n *= size[l];
    return n;
  };
  // Each operand as [batch, free, contracted] or, where that needs a
  // permutation and the other order does not, [batch, contracted, free].
  bool flags[2];
  int three[2];
  for (int k = 0; k < 2; ++k) {
    std::string plain = batch + free[k] + contracted;
    std::string swapped = batch + contracted + free[k];
    // A's plain order is [M, K] and B's is [K, N]: B's roles swap.
    if (k == 1)
      std::swap(plain, swapped);
    flags[k] = labels[k] != plain && labels[k] == swapped;
    const std::string &order = flags[k] ? swapped : plain;
    std::vector<int64_t> perm;
    for (char l : order)
      perm.push_back(int64_t(labels[k].find(l)));
    int x = operand[k];
    if (order != labels[k])
      x = permute(x, perm, uniqueName(nodeName + "/order" + char('a' + k)));
    int64_t rows = count(k == 0 ? free[0] : contracted);
    int64_t cols = count(k == 0 ? contracted : free[1]);
    if (flags[k])
      std::swap(rows, cols);
    three[k] = reshapeTo(x, {count(batch), rows, cols},
                         uniqueName(nodeName + "/view" + char('a' + k)));
  }
  int y = emit(uniqueName(nodeName + "/matmul"), "matmul",
               {three[0], three[1]},
               json{{"transpose_a", flags[0]}, {"transpose_b", flags[1]}});
  std::string produced = batch + free[0] + free[1];
  std::vector<int64_t> dims;
  for (char l : produced)
    dims.push_back(size[l]);
  y = reshapeTo(y, dims, uniqueName(nodeName + "/unview"));
  if (produced != labels[2]) {
    std::vector<int64_t> perm;
    for (char l : labels[2])
      perm.push_back(int64_t(produced.find(l)));
    y = permute(y, perm, uniqueName(nodeName));
  }
  define(0, y);
}

int OnnxReader::stripScaling(int value, double &scale,
                             std::vector<std::string> &chain) {
  for (;;) {
    const Op *op = producerOf(value);
    if (!op || (op->kind != "mul" && op->kind != "div"))
      return value;
    int found = -1, factorValue = -1;
    double factor = 1.0;
    for (int side = 0; side < 2 && found < 0; ++side) {
      if (side == 0 && op->kind == "div")
        continue; // c / x scales nothing
      std::optional<double> c = uniformValue(op->operands[size_t(side)]);
      int other = op->operands[size_t(1 - side)];
      if (c && *c > 0.0 && std::isfinite(*c) &&
          typeOf(other).shape == typeOf(value).shape) {
        found = other;
        factorValue = op->operands[size_t(side)];
        factor = op->kind == "mul" ? *c : 1.0 / *c;
      }
    }
    if (found < 0)
      return value;
    scale *= factor;
    chain.push_back(op->name);
    chain.push_back(producerOf(factorValue)->name);
    value = found;
  }
}

std::optional<bool>
OnnxReader::attentionMask(int mask, const std::vector<int64_t> &scores) {
  const std::vector<int64_t> &shape = typeOf(mask).shape;
  if (std::optional<double> c = uniformValue(mask))
    return *c == 0.0 ? std::optional<bool>(false) : std::nullopt;
  int64_t s = scores.back();
  if (shape.size() < 2 || shape.size() > scores.size() ||
      shape[shape.size() - 1] != s || shape[shape.size() - 2] != s ||
      product(shape, 0, shape.size() - 2) != 1)
    return std::nullopt;
  std::optional<std::vector<float>> data = fixedFloats(mask);
  if (!data || int64_t(data->size()) != s * s)
    return std::nullopt;
  // 0 on and below the diagonal; above it -inf, or a value so negative
  // (HuggingFace's float32 minimum) that exp() of it is 0 as it is of -inf.
  // (All zeros is a uniform constant, answered above.)
  for (int64_t i = 0; i < s; ++i)
    for (int64_t j = 0; j < s; ++j) {
      float m = (*data)[size_t(i * s + j)];
      if (j <= i ? m != 0.0f : !(m <= -1e30f))
        return std::nullopt;
    }
  return true;
}

/// What the exporter writes for nn.MultiheadAttention (PyTorch 1.13):
///   p = softmax(c·(q·kᵀ) + mask), y = p·v
/// with q, k, v of shape [B·H, S, Dh] (or [B, H, S, Dh]), kᵀ a
/// permutation of k, c scalar factors on q, k or the scores (1/sqrt(Dh),
/// baddbmm's alpha) and the mask absent, zeros or causal. As one
/// attention op (models/gpt2.json's), the backward recomputes p from q and
/// k instead of keeping the [B·H, S, S] tensors, which is what lets a
/// transformer's plan hold no score tensor between its passes. The ops the
/// fused op replaces are left to pruneToLoss, which drops them once
/// nothing reads them (`replaced` keeps them out of its warning).
bool OnnxReader::fuseAttention(int probabilities, int v) {
  const Op *softmax = producerOf(probabilities);
  if (!softmax || softmax->kind != "softmax")
    return false;
  std::vector<std::string> chain{softmax->name};
  double scale = 1.0;
  int scores = stripScaling(softmax->operands[0], scale, chain);
  bool causal = false;
  if (const Op *sum = producerOf(scores); sum && sum->kind == "add") {
    bool masked = false;
    for (int side = 0; side < 2 && !masked; ++side) {
      int mask = sum->operands[size_t(side)];
      int other = sum->operands[size_t(1 - side)];
      if (typeOf(other).shape != typeOf(scores).shape)
        continue;
      std::optional<bool> kind = attentionMask(mask, typeOf(scores).shape);
      if (!kind)
        continue;
      masked = true;
      causal = *kind;
      chain.push_back(sum->name);
      if (const Op *zeros = producerOf(mask))
        chain.push_back(zeros->name);
      scores = stripScaling(other, scale, chain);
    }
    if (!masked)
      return false;
  }
  const Op *product = producerOf(scores);
  if (!product || product->kind != "matmul" ||
      product->attrs.value("transpose_a", false))
    return false;
  chain.push_back(product->name);
  int query = stripScaling(product->operands[0], scale, chain);
  int key = stripScaling(product->operands[1], scale, chain);
  // The key as [..., S, Dh]: kᵀ permuted back, where kᵀ is itself a
  // permutation of a value, as one permutation of that value.
  std::vector<int64_t> keyOrder;
  if (!product->attrs.value("transpose_b", false)) {
    keyOrder.resize(typeOf(key).shape.size());
    for (size_t i = 0; i < keyOrder.size(); ++i)
      keyOrder[i] = int64_t(i);
    if (std::optional<Permuted> p = permutedFrom(key)) {
      chain.push_back(graph.values[size_t(key)].name);
      key = stripScaling(p->source, scale, chain);
      keyOrder = p->permutation;
    }
    std::swap(keyOrder[keyOrder.size() - 1], keyOrder[keyOrder.size() - 2]);
    bool identity = true;
    for (size_t i = 0; i < keyOrder.size(); ++i)
      identity &= keyOrder[i] == int64_t(i);
    if (identity)
      keyOrder.clear();
  }
  std::vector<int64_t> keyShape = typeOf(key).shape;
  for (size_t i = 0; i < keyOrder.size(); ++i)
    keyShape[i] = typeOf(key).shape[size_t(keyOrder[i])];
  std::vector<int64_t> shape = typeOf(query).shape;
  if ((shape.size() != 3 && shape.size() != 4) || keyShape != shape ||
      typeOf(v).shape != shape || typeOf(key).dtype != typeOf(query).dtype ||
      typeOf(v).dtype != typeOf(query).dtype)
    return false;
  replaced.insert(chain.begin(), chain.end());
  if (!keyOrder.empty())
    key = permute(key, keyOrder, uniqueName(nodeName + "/key_order"));
  // Rank 3: [B·H, S, Dh] as [1, B·H, S, Dh] for the op, and back.
  auto heads = [&](int x, const std::string &what) {
    if (shape.size() == 4)
      return x;
    std::vector<int64_t> four = shape;
    four.insert(four.begin(), 1);
    return reshapeTo(x, four, uniqueName(nodeName + "/" + what));
  };
  query = heads(query, "query");
  key = heads(key, "key");
  v = heads(v, "value");
  int y = emit(uniqueName(shape.size() == 3 ? nodeName + "/attention"
                                            : nodeName),
               "attention", {query, key, v},
               json{{"causal", causal}, {"scale", scale}});
  define(0, shape.size() == 3 ? reshapeTo(y, shape, uniqueName(nodeName)) : y);
  return true;
}

/// Gemm: alpha·(A·B) + beta·C as matmul, mul and add.
void OnnxReader::importGemm() {
  double alpha = floatAttribute("alpha", 1.0);
  double beta = floatAttribute("beta", 1.0);
  bool transA = intAttribute("transA", 0) != 0;
  bool transB = intAttribute("transB", 0) != 0;
  int a = valueInput(0), b = valueInput(1);
  bool bias = hasInput(2) && beta != 0;
  // alpha·(A·B) + beta·C, each scaling only where it is not 1.
  bool last = !bias && alpha == 1.0;
  int y = emit(uniqueName(last ? nodeName : nodeName + "/matmul"), "matmul",
               {a, b},
               json{{"transpose_a", transA}, {"transpose_b", transB}});
  if (alpha != 1.0)
    y = emit(uniqueName(bias ? nodeName + "/alpha" : nodeName), "mul",
             {y, scalarConstant(alpha, nodeName + "/alpha")});
  if (bias) {
    int c = valueInput(2);
    if (beta != 1.0)
      c = emit(uniqueName(nodeName + "/beta"), "mul",
               {c, scalarConstant(beta, nodeName + "/beta")});
    y = emit(uniqueName(nodeName), "add", {y, c});
  }
  define(0, y);
}

//===----------------------------------------------------------------------===//
// Convolution, pooling and reductions
//===----------------------------------------------------------------------===//

/// Conv, MaxPool, AveragePool (2-D, NCHW) and GlobalAveragePool: conv2d
/// (+ add of the bias reshaped to [O, 1, 1]), max_pool2d, avg_pool2d,
/// reduce_mean over H and W. auto_pad SAME_* becomes explicit pads, the
/// extra one at the end (SAME_UPPER) or the beginning (SAME_LOWER).
void OnnxReader::importWindowOp() {
  const std::string &op = node->op_type();
  int x = valueInput(0);
  std::vector<int64_t> xs = typeOf(x).shape;
  if (xs.size() != 4)
    failNode("input '" + node->input(0) + "' has shape " +
             ops::formatShape(xs) + "; this remat supports 2-D " + op +
             " only (a rank-4 [N,C,H,W] input)");
  if (op == "GlobalAveragePool") {
    define(0, emit(uniqueName(nodeName), "reduce_mean", {x},
                   json{{"axes", std::vector<int64_t>{2, 3}},
                        {"keep_dims", true}}));
    return;
  }
  auto ints = [&](const char *name, std::vector<int64_t> fallback,
                  size_t size) {
    const onnx::AttributeProto *a = attribute(name);
    if (!a)
      return fallback;
    if (a->type() != onnx::AttributeProto::INTS)
      failNode(std::string("attribute '") + name +
               "' must be a list of integers");
    std::vector<int64_t> v(a->ints().begin(), a->ints().end());
    if (v.size() != size)
      failNode(std::string("attribute '") + name + "' " + ops::formatShape(v) +
               " has " + std::to_string(v.size()) + " entries, expected " +
               std::to_string(size) + " (this remat supports 2-D " + op +
               " only)");
    return v;
  };

  int w = -1;
  std::vector<int64_t> kernel;
  if (op == "Conv") {
    w = valueInput(1);
    const std::vector<int64_t> &ws = typeOf(w).shape;
    if (ws.size() != 4)
      failNode("weight '" + node->input(1) + "' has shape " +
               ops::formatShape(ws) +
               "; this remat supports 2-D Conv only ([O,C/group,kh,kw])");
    kernel = {ws[2], ws[3]};
    if (attribute("kernel_shape") && ints("kernel_shape", {}, 2) != kernel)
      failNode("attribute 'kernel_shape' " +
               ops::formatShape(ints("kernel_shape", {}, 2)) +
               " differs from the weight's " + ops::formatShape(kernel));
  } else {
    if (!attribute("kernel_shape"))
      failNode("attribute 'kernel_shape' is missing");
    kernel = ints("kernel_shape", {}, 2);
  }
  std::vector<int64_t> strides = ints("strides", {1, 1}, 2);
  std::vector<int64_t> dilations = ints("dilations", {1, 1}, 2);
  for (size_t d = 0; d < 2; ++d)
    if (strides[d] < 1 || dilations[d] < 1 || kernel[d] < 1)
      failNode("strides " + ops::formatShape(strides) + ", dilations " +
               ops::formatShape(dilations) + " and kernel " +
               ops::formatShape(kernel) + " must be positive");

  std::string autoPad = "NOTSET";
  if (const onnx::AttributeProto *a = attribute("auto_pad")) {
    if (a->type() != onnx::AttributeProto::STRING)
      failNode("attribute 'auto_pad' must be a string");
    autoPad = a->s();
  }
  std::vector<int64_t> pads = {0, 0, 0, 0};
  if (autoPad == "NOTSET") {
    pads = ints("pads", pads, 4);
    for (int64_t p : pads)
      if (p < 0)
        failNode("attribute 'pads' " + ops::formatShape(pads) +
                 " has a negative pad");
  } else if (autoPad == "VALID" || autoPad == "SAME_UPPER" ||
             autoPad == "SAME_LOWER") {
    if (attribute("pads"))
      failNode("attribute 'pads' is given with auto_pad '" + autoPad +
               "'; ONNX allows only one of them");
    if (autoPad != "VALID")
      for (size_t d = 0; d < 2; ++d) {
        int64_t in = xs[2 + d], s = strides[d];
        int64_t out = (in + s - 1) / s;
        int64_t total = std::max<int64_t>(
            0, (out - 1) * s + (kernel[d] - 1) * dilations[d] + 1 - in);
        int64_t begin = autoPad == "SAME_UPPER" ? total / 2 : total - total / 2;
        pads[d] = begin;
        pads[2 + d] = total - begin;
      }
  } else {
    failNode("auto_pad '" + autoPad +
             "' is not supported (NOTSET, VALID, SAME_UPPER, SAME_LOWER)");
  }

  json attrs = {{"strides", strides}, {"pads", pads}};
  if (op == "Conv") {
    int64_t group = intAttribute("group", 1);
    if (group < 1)
      failNode("attribute 'group' " + std::to_string(group) +
               " must be positive");
    attrs["dilations"] = dilations;
    attrs["groups"] = group;
    bool bias = hasInput(2);
    int y = emit(uniqueName(bias ? nodeName + "/conv" : nodeName), "conv2d",
                 {x, w}, attrs);
    if (bias) {
      int b = valueInput(2);
      int64_t channels = typeOf(w).shape[0];
      if (typeOf(b).shape != std::vector<int64_t>{channels})
        failNode("bias '" + node->input(2) + "' has shape " +
                 ops::formatShape(typeOf(b).shape) + " but expects [" +
                 std::to_string(channels) + "]");
      std::vector<int64_t> column = {channels, 1, 1};
      int b3 = reshapeTo(b, column, uniqueName(nodeName + "/bias"));
      y = emit(uniqueName(nodeName), "add", {y, b3});
    }
    define(0, y);
    return;
  }
  attrs["kernel_shape"] = kernel;
  attrs["ceil_mode"] = intAttribute("ceil_mode", 0) != 0;
  if (op == "MaxPool") {
    if (intAttribute("storage_order", 0) != 0)
      failNode("storage_order 1 (column-major indices) is not supported");
    attrs["dilations"] = dilations;
    define(0, emit(uniqueName(nodeName), "max_pool2d", {x}, attrs));
    return;
  }
  attrs["count_include_pad"] = intAttribute("count_include_pad", 0) != 0;
  define(0, emit(uniqueName(nodeName), "avg_pool2d", {x}, attrs));
}

/// ReduceMean over the `axes` attribute (opsets 13-17; all axes without
/// it): `reduce_mean`.
void OnnxReader::importReduceMean() {
  int x = valueInput(0);
  int64_t rank = int64_t(typeOf(x).shape.size());
  std::set<int64_t> axes;
  if (const onnx::AttributeProto *a = attribute("axes")) {
    for (int64_t axis : a->ints()) {
      auto normalized = normalizeAxis(axis, rank);
      if (!normalized)
        failNode("axis " + std::to_string(axis) + " is out of range");
      axes.insert(*normalized);
    }
  } else {
    for (int64_t d = 0; d < rank; ++d)
      axes.insert(d);
  }
  bool keep = intAttribute("keepdims", 1) != 0;
  define(0, emit(uniqueName(nodeName), "reduce_mean", {x},
                 json{{"axes", std::vector<int64_t>(axes.begin(), axes.end())},
                      {"keep_dims", keep}}));
}

} // namespace remat::model::onnx_reader
