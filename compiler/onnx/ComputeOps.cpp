//===- ComputeOps.cpp - ONNX ops that compute -----------------------------===//
//
// The nodes mapped onto graph ops that compute: Add, Sub, Mul, Div (folded
// on constant data), the activations, Pow, Clip, Dropout, MatMul and Gemm,
// Conv and the pools, ReduceMean, LayerNormalization, BatchNormalization
// and Resize; and Slice and Split, strided slices of a tensor.
//
//===----------------------------------------------------------------------===//

#include "compiler/onnx/OnnxReader.h"

#include <algorithm>
#include <cmath>
#include <limits>
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
  define(0, emit(uniqueName(nodeName), kind, {lhs, rhs}));
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
  define(0, emit(uniqueName(nodeName), "matmul", {a, b}));
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

//===----------------------------------------------------------------------===//
// Slices
//===----------------------------------------------------------------------===//

/// Slice with constant starts/ends/axes/steps: folded on constant data
/// (negative steps too), else `slice` with positive steps (nothing when it
/// keeps the whole tensor).
void OnnxReader::importSlice() {
  std::vector<int64_t> shape = shapeOfInput(0);
  int64_t rank = int64_t(shape.size());
  const ConstantData &starts = requireConstant(1, "the starts");
  const ConstantData &ends = requireConstant(2, "the ends");
  size_t n = starts.values.size();
  std::vector<double> axes, steps(n, 1.0);
  if (hasInput(3))
    axes = requireConstant(3, "the axes").values;
  else
    for (size_t k = 0; k < n; ++k)
      axes.push_back(double(k));
  if (hasInput(4))
    steps = requireConstant(4, "the steps").values;
  if (ends.values.size() != n || axes.size() != n || steps.size() != n)
    failNode("starts, ends, axes and steps have different lengths");
  std::vector<int64_t> begin(size_t(rank), 0), end = shape,
                                               stride(size_t(rank), 1);
  // Constant data (bounded: folded at import): each axis's kept positions,
  // in order (a negative step too, as the exporter's reversal of F.pad's
  // pads). A computed tensor's axes are begin, end and stride only: its
  // dims may be huge.
  const ConstantData *data = constantInput(0);
  std::vector<std::vector<int64_t>> kept(static_cast<size_t>(rank));
  for (size_t d = 0; data && d < size_t(rank); ++d)
    for (int64_t i = 0; i < shape[d]; ++i)
      kept[d].push_back(i);
  std::set<int64_t> seen;
  for (size_t k = 0; k < n; ++k) {
    auto axis = normalizeAxis(int64_t(axes[k]), rank);
    if (!axis || !seen.insert(*axis).second)
      failNode("axis " + std::to_string(int64_t(axes[k])) +
               " is out of range or repeated");
    int64_t dim = shape[size_t(*axis)];
    if (steps[k] <= -1 && data) {
      // ONNX: start clamped to [0, dim - 1], end to [-1, dim - 1].
      auto position = [&](double v, double low) {
        if (v < 0)
          v += double(dim);
        return int64_t(std::clamp(v, low, double(dim - 1)));
      };
      int64_t from = position(starts.values[k], 0.0);
      int64_t to = position(ends.values[k], -1.0);
      std::vector<int64_t> &positions = kept[size_t(*axis)];
      positions.clear();
      for (int64_t i = from; i > to; i += int64_t(steps[k]))
        positions.push_back(i);
      continue;
    }
    if (steps[k] < 1)
      failNode("step " + std::to_string(int64_t(steps[k])) + " on axis " +
               std::to_string(*axis) +
               " is not supported (only positive steps)");
    // ONNX: negative positions count from the end; then clamp to [0, dim].
    auto clampPosition = [&](double v) {
      if (v < 0)
        v += double(dim);
      return int64_t(std::clamp(v, 0.0, double(dim)));
    };
    size_t a = size_t(*axis);
    begin[a] = clampPosition(starts.values[k]);
    end[a] = clampPosition(ends.values[k]);
    stride[a] = int64_t(steps[k]);
    if (!data)
      continue;
    kept[a].clear();
    for (int64_t i = begin[a]; i < end[a]; i += stride[a])
      kept[a].push_back(i);
  }
  std::vector<int64_t> result;
  for (size_t d = 0; d < size_t(rank); ++d)
    result.push_back(data ? int64_t(kept[d].size())
                     : end[d] > begin[d]
                         ? (end[d] - begin[d] + stride[d] - 1) / stride[d]
                         : 0);
  if (product(result, 0, result.size()) == 0) {
    // An empty slice (torch.roll by 0 writes one): empty constant data,
    // which Concat leaves out; any other reader refuses it.
    ConstantData r;
    r.isFloat = data ? data->isFloat
                     : model::isFloatDType(typeOf(valueInput(0)).dtype);
    r.shape = result;
    defineConstant(0, std::move(r));
    return;
  }
  if (data) {
    ConstantData r;
    r.isFloat = data->isFloat;
    r.shape = result;
    int64_t count = product(result, 0, result.size());
    for (int64_t i = 0; i < count; ++i) {
      // Result index i -> source index through each axis's positions.
      int64_t rest = i, source = 0, stride = 1;
      for (size_t d = size_t(rank); d-- > 0;) {
        source += kept[d][size_t(rest % result[d])] * stride;
        rest /= result[d];
        stride *= shape[d];
      }
      r.values.push_back(data->values[size_t(source)]);
    }
    defineConstant(0, std::move(r));
    return;
  }
  int x = valueInput(0);
  if (result == shape) {
    define(0, x);
    return;
  }
  define(0, emit(uniqueName(nodeName), "slice", {x},
                 json{{"starts", begin}, {"ends", end}, {"steps", stride}}));
}

/// Gather by constant indices along an axis: each run of consecutive
/// indices a `slice`, the runs joined along the axis (joinAlong); a
/// scalar index then drops the axis (reshapeTo), as the exporter writes
/// x[:, 0] and qkv[1].
void OnnxReader::importGatherConstant() {
  std::vector<int64_t> shape = shapeOfInput(0);
  int64_t rank = int64_t(shape.size());
  auto axis = normalizeAxis(intAttribute("axis", 0), rank);
  if (!axis)
    failNode("axis " + std::to_string(intAttribute("axis", 0)) +
             " is out of range for data " + ops::formatShape(shape));
  const ConstantData &indices = *constantInput(1);
  if (indices.shape.size() > 1 || indices.values.empty())
    failNode("Gather by indices of shape " + ops::formatShape(indices.shape) +
             " known at import is not supported (a scalar or a non-empty "
             "list)");
  int64_t size = shape[size_t(*axis)];
  std::vector<int64_t> picked;
  for (double v : indices.values) {
    int64_t i = int64_t(v);
    if (i < -size || i >= size)
      failNode("index " + std::to_string(i) + " is out of range for " +
               std::to_string(size) + " entries on axis " +
               std::to_string(*axis));
    picked.push_back(i < 0 ? i + size : i);
  }
  int x = valueInput(0), joined = -1;
  for (size_t k = 0; k < picked.size();) {
    size_t run = k + 1;
    while (run < picked.size() && picked[run] == picked[run - 1] + 1)
      ++run;
    int part = sliceAlong(x, *axis, picked[k], picked[run - 1] + 1,
                          nodeName + "/slice");
    joined = joined < 0 ? part : joinAlong(joined, part, *axis, nodeName);
    k = run;
  }
  std::vector<int64_t> result = shape;
  if (indices.shape.empty())
    result.erase(result.begin() + *axis);
  else
    result[size_t(*axis)] = int64_t(picked.size());
  define(0, reshapeTo(joined, result, uniqueName(nodeName)));
}

int OnnxReader::sliceAlong(int value, int64_t axis, int64_t begin,
                           int64_t end, const std::string &name) {
  std::vector<int64_t> shape = typeOf(value).shape;
  std::vector<int64_t> starts(shape.size(), 0), steps(shape.size(), 1);
  starts[size_t(axis)] = begin;
  shape[size_t(axis)] = end;
  return emit(uniqueName(name), "slice", {value},
              json{{"starts", starts}, {"ends", shape}, {"steps", steps}});
}

/// Split into consecutive parts along an axis: one `slice` per output.
void OnnxReader::importSplit() {
  int x = valueInput(0);
  std::vector<int64_t> shape = typeOf(x).shape;
  int64_t rank = int64_t(shape.size());
  auto axis = normalizeAxis(intAttribute("axis", 0), rank);
  if (!axis)
    failNode("axis " + std::to_string(intAttribute("axis", 0)) +
             " is out of range");
  int64_t dim = shape[size_t(*axis)];
  int parts = node->output_size();
  std::vector<int64_t> sizes;
  if (hasInput(1)) {
    for (double v : requireConstant(1, "the split sizes").values)
      sizes.push_back(int64_t(v));
  } else {
    if (dim % parts != 0)
      failNode("dimension " + std::to_string(dim) + " of axis " +
               std::to_string(*axis) + " does not split into " +
               std::to_string(parts) + " equal parts");
    sizes.assign(size_t(parts), dim / parts);
  }
  int64_t total = 0;
  for (int64_t size : sizes) {
    if (size <= 0)
      failNode("split sizes must be positive");
    total += size;
  }
  if (int(sizes.size()) != parts || total != dim)
    failNode("split sizes do not add up to dimension " + std::to_string(dim) +
             " in " + std::to_string(parts) + " parts");
  std::vector<int64_t> begin(size_t(rank), 0), end = shape,
                                               steps(size_t(rank), 1);
  int64_t offset = 0;
  for (int k = 0; k < parts; ++k) {
    begin[size_t(*axis)] = offset;
    end[size_t(*axis)] = offset + sizes[size_t(k)];
    offset += sizes[size_t(k)];
    if (node->output(k).empty())
      continue;
    std::string name = k + 1 == parts ? nodeName
                                      : nodeName + "/part" + std::to_string(k);
    define(k, emit(uniqueName(name), "slice", {x},
                   json{{"starts", begin}, {"ends", end}, {"steps", steps}}));
  }
}

//===----------------------------------------------------------------------===//
// Normalization and resizing
//===----------------------------------------------------------------------===//

/// LayerNormalization over the last axis: `layer_norm` (a zero bias when
/// the node has none).
void OnnxReader::importLayerNorm() {
  int x = valueInput(0);
  std::vector<int64_t> shape = typeOf(x).shape;
  int64_t rank = int64_t(shape.size());
  int64_t axisAttr = intAttribute("axis", -1);
  auto axis = normalizeAxis(axisAttr, rank);
  if (!axis || *axis != rank - 1)
    failNode("normalization from axis " + std::to_string(axisAttr) +
             " is not supported (only over the last axis, axis -1)");
  int gamma = valueInput(1);
  int beta = -1;
  if (hasInput(2)) {
    beta = valueInput(2);
  } else {
    std::vector<int64_t> d = {shape.back()};
    beta = uniformConstant(0.0, d, nodeName + "/zero_bias");
  }
  double epsilon = floatAttribute("epsilon", 1e-5);
  define(0, emit(uniqueName(nodeName), "layer_norm", {x, gamma, beta},
                 json{{"epsilon", epsilon}}));
}

/// BatchNormalization in training mode: batch_norm with the batch
/// statistics, and the running mean and variance (inputs 3 and 4) as state
/// updated by running_mean_update / running_var_update with the node's
/// momentum (ONNX's convention, as PyTorch exports it: 1 - torch's). The
/// node's outputs 1-4 (the updated statistics, opset 9's saved ones) are
/// not values of the graph: remat writes the update into the state itself.
void OnnxReader::importBatchNormalization() {
  bool training = opset >= 14 ? intAttribute("training_mode", 0) != 0
                              : node->output_size() > 1;
  if (!training)
    failNode("inference mode (" +
             std::string(opset >= 14 ? "training_mode=0"
                                     : "a single output") +
             ") is not supported: remat trains with batch statistics; "
             "export with torch.onnx.export(..., "
             "training=torch.onnx.TrainingMode.TRAINING)");
  for (int i = 0; i < 5; ++i)
    if (!hasInput(i))
      failNode("input " + std::to_string(i) + " is missing");
  int x = valueInput(0);
  if (typeOf(x).shape.size() < 2)
    failNode("X has shape " + ops::formatShape(typeOf(x).shape) +
             "; BatchNormalization needs [N, C, ...]");
  int gamma = valueInput(1), beta = valueInput(2);
  double epsilon = floatAttribute("epsilon", 1e-5);
  double momentum = floatAttribute("momentum", 0.9);
  if (!(momentum >= 0.0 && momentum <= 1.0))
    failNode("momentum " + std::to_string(momentum) + " is not in [0, 1]");
  for (int i = 1; i < node->output_size(); ++i)
    statisticsOutputs.insert(node->output(i));
  int mean = stateInput(3, "input_mean");
  int var = stateInput(4, "input_var");
  define(0, emit(uniqueName(nodeName), "batch_norm", {x, gamma, beta},
                 json{{"epsilon", epsilon}}));
  emit(uniqueName(nodeName + "/running_mean"), "running_mean_update",
       {mean, x}, json{{"momentum", momentum}});
  emit(uniqueName(nodeName + "/running_var"), "running_var_update", {var, x},
       json{{"momentum", momentum}});
}

/// Resize with mode nearest by integer factors (constant scales or sizes),
/// with the coordinate mappings that give x[i / scale] for them:
/// asymmetric with nearest_mode floor (torch's nn.Upsample), half_pixel or
/// pytorch_half_pixel with rounding to the nearest.
void OnnxReader::importResize() {
  std::string mode = stringAttribute("mode", "nearest");
  std::string transform =
      stringAttribute("coordinate_transformation_mode", "half_pixel");
  std::string rounding = stringAttribute("nearest_mode", "round_prefer_floor");
  if (mode == "linear") {
    importResizeLinear(transform);
    return;
  }
  if (mode != "nearest")
    failNode("mode '" + mode + "' is not supported ('nearest' or 'linear')");
  bool asymmetricFloor = transform == "asymmetric" && rounding == "floor";
  bool halfPixelRound =
      (transform == "half_pixel" || transform == "pytorch_half_pixel") &&
      (rounding == "round_prefer_floor" || rounding == "round_prefer_ceil");
  if (!asymmetricFloor && !halfPixelRound)
    failNode("coordinate_transformation_mode '" + transform +
             "' with nearest_mode '" + rounding +
             "' is not supported (asymmetric with floor, as torch's "
             "nn.Upsample exports it, or half_pixel with round_prefer_floor)");
  int x = valueInput(0);
  const std::vector<int64_t> &in = typeOf(x).shape;
  std::vector<int64_t> scales;
  bool haveScales = hasInput(2) && !requireConstant(2, "scales").values.empty();
  if (haveScales) {
    const ConstantData &c = requireConstant(2, "scales");
    if (c.values.size() != in.size())
      failNode("scales has " + std::to_string(c.values.size()) +
               " entries for an input of rank " + std::to_string(in.size()));
    for (double s : c.values) {
      if (!(s >= 1.0) || s != std::floor(s) || s > 1e6)
        failNode("scale " + std::to_string(s) +
                 " is not supported (only integer factors >= 1)");
      scales.push_back(int64_t(s));
    }
  } else if (hasInput(3)) {
    const ConstantData &c = requireConstant(3, "sizes");
    if (c.values.size() != in.size())
      failNode("sizes has " + std::to_string(c.values.size()) +
               " entries for an input of rank " + std::to_string(in.size()));
    for (size_t d = 0; d < in.size(); ++d) {
      int64_t size = int64_t(c.values[d]);
      if (size < in[d] || size % in[d] != 0)
        failNode("size " + std::to_string(size) + " of dim " +
                 std::to_string(d) + " is not a whole multiple of " +
                 std::to_string(in[d]) + " (only integer factors)");
      scales.push_back(size / in[d]);
    }
  } else {
    failNode("neither scales nor sizes is given");
  }
  define(0, emit(uniqueName(nodeName), "resize_nearest", {x},
                 json{{"scales", scales}}));
}

/// Resize with mode linear of NCHW's last two dims: `resize_linear` to
/// the sizes (from `sizes`, or `scales` that give whole sizes).
void OnnxReader::importResizeLinear(const std::string &transform) {
  bool align = transform == "align_corners";
  if (!align && transform != "pytorch_half_pixel" && transform != "half_pixel")
    failNode("mode 'linear' with coordinate_transformation_mode '" +
             transform + "' is not supported (pytorch_half_pixel, "
             "half_pixel or align_corners, as torch's F.interpolate "
             "exports bilinear resizing)");
  int x = valueInput(0);
  const std::vector<int64_t> &in = typeOf(x).shape;
  if (in.size() != 4)
    failNode("mode 'linear' of a rank-" + std::to_string(in.size()) +
             " input is not supported (NCHW, rank 4)");
  std::vector<int64_t> out;
  if (hasInput(2) && !requireConstant(2, "scales").values.empty()) {
    const ConstantData &c = requireConstant(2, "scales");
    if (c.values.size() != 4)
      failNode("scales has " + std::to_string(c.values.size()) +
               " entries for an input of rank 4");
    for (size_t d = 0; d < 4; ++d) {
      double size = double(in[d]) * c.values[d];
      if (!(size >= 1.0) || size != std::floor(size) || size > 1e9)
        failNode("scale " + std::to_string(c.values[d]) + " of dim " +
                 std::to_string(d) + " does not give a whole size");
      out.push_back(int64_t(size));
    }
  } else if (hasInput(3)) {
    const ConstantData &c = requireConstant(3, "sizes");
    if (c.values.size() != 4)
      failNode("sizes has " + std::to_string(c.values.size()) +
               " entries for an input of rank 4");
    for (double v : c.values)
      out.push_back(int64_t(v));
  } else {
    failNode("neither scales nor sizes is given");
  }
  if (out[0] != in[0] || out[1] != in[1])
    failNode("mode 'linear' resizes H and W only (sizes " +
             ops::formatShape(out) + " for an input " + ops::formatShape(in) +
             ")");
  // pytorch_half_pixel puts the one sample of a size of 1 at 0 where
  // torch (and half_pixel) put it at the middle: ambiguous, refused.
  if (transform == "pytorch_half_pixel" &&
      ((out[2] == 1 && in[2] > 1) || (out[3] == 1 && in[3] > 1)))
    failNode("mode 'linear' to a size of 1 with 'pytorch_half_pixel' is not "
             "supported (ONNX places that one sample at 0, torch at the "
             "middle; half_pixel is torch's)");
  define(0, emit(uniqueName(nodeName), "resize_linear", {x},
                 json{{"size", {out[2], out[3]}}, {"align_corners", align}}));
}

} // namespace remat::model::onnx_reader
