//===- SliceOps.cpp - ONNX ops that take parts of a tensor -----------------===//
//
// Slice and Split, strided slices of a tensor (folded on constant data),
// and Gather by constant indices, read as slices and a concat.
//
//===----------------------------------------------------------------------===//

#include "compiler/onnx/OnnxReader.h"

#include <algorithm>
#include <numeric>

namespace remat::model::onnx_reader {

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
  std::vector<int64_t> picked =
      gatherIndices(indices, shape[size_t(*axis)], *axis);
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

std::vector<int64_t> OnnxReader::gatherIndices(const ConstantData &indices,
                                               int64_t size, int64_t axis) {
  std::vector<int64_t> picked;
  for (double v : indices.values) {
    int64_t i = int64_t(v);
    if (i < -size || i >= size)
      failNode("index " + std::to_string(i) + " is out of range for " +
               std::to_string(size) + " entries on axis " +
               std::to_string(axis));
    picked.push_back(i < 0 ? i + size : i);
  }
  return picked;
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
    failNode("split sizes do not sum to dimension " + std::to_string(dim) +
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

} // namespace remat::model::onnx_reader
