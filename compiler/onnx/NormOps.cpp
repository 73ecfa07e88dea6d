//===- NormOps.cpp - ONNX normalization and resizing ----------------------===//
//
// LayerNormalization, InstanceNormalization (nn.InstanceNorm, and
// nn.GroupNorm as the exporter writes it) and BatchNormalization (with its
// running statistics as state updates) mapped onto the normalization ops,
// and Resize onto resize_nearest and resize_linear.
//
//===----------------------------------------------------------------------===//

#include "compiler/onnx/OnnxReader.h"

#include <algorithm>
#include <cmath>

namespace remat::model::onnx_reader {

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

/// InstanceNormalization: each [n, c] slice of X [N, C, D1, ...] normalized
/// over the rest, as layer_norm (no affine part) of X viewed as [N, C, S],
/// then scale and B per channel, each left out when it is constant 1 or 0
/// (nn.InstanceNorm without affine; the normalization inside nn.GroupNorm,
/// which the exporter writes as this node on X reshaped to [N, G, -1]
/// followed by its weight and bias as Mul and Add).
void OnnxReader::importInstanceNorm() {
  int x = valueInput(0);
  std::vector<int64_t> shape = typeOf(x).shape;
  size_t rank = shape.size();
  if (rank < 3)
    failNode("X has shape " + ops::formatShape(shape) +
             "; InstanceNormalization needs [N, C, D1, ...]");
  int64_t channels = shape[1];
  int64_t rest = product(shape, 2, rank);
  for (int i = 1; i <= 2; ++i)
    if (!hasInput(i) ||
        shapeOfInput(i) != std::vector<int64_t>{channels})
      failNode(std::string(i == 1 ? "scale" : "B") + " must have shape [" +
               std::to_string(channels) + "] (one value per channel)");
  std::vector<int64_t> rows = {shape[0], channels, rest};
  int y = emit(uniqueName(nodeName + "/normalized"), "layer_norm",
               {reshapeTo(x, rows, uniqueName(nodeName + "/rows")),
                uniformConstant(1.0, {rest}, nodeName + "/unit_scale"),
                uniformConstant(0.0, {rest}, nodeName + "/zero_shift")},
               json{{"epsilon", floatAttribute("epsilon", 1e-5)}});
  y = reshapeTo(y, shape, uniqueName(nodeName + "/unrows"));
  // scale and B as [C, 1, ...], unless they change nothing.
  std::vector<int64_t> perChannel(rank - 1, 1);
  perChannel[0] = channels;
  auto channelValue = [&](int i, double identity) {
    if (const ConstantData *c = constantInput(i);
        c && std::all_of(c->values.begin(), c->values.end(),
                         [&](double v) { return v == identity; }))
      return -1;
    return reshapeTo(valueInput(i), perChannel,
                     uniqueName(nodeName + (i == 1 ? "/scale_c" : "/b_c")));
  };
  int scale = channelValue(1, 1.0), shift = channelValue(2, 0.0);
  define(0, scale < 0 && shift < 0
                ? y
                : scaleShift(y, scale, shift, nodeName));
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
