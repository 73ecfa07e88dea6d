//===- ShapeOps.cpp - ONNX shape computations and layout ops --------------===//
//
// The nodes of shape computations, evaluated when their inputs are
// constant (Constant, Shape, Gather, Squeeze, Unsqueeze, Concat, Cast,
// ConstantOfShape, Expand, Mod, Equal, Less, Greater, Where, and the
// arithmetic of ComputeOps.cpp), and the layout ops: Reshape, Flatten,
// Transpose (folded on constant data too), Identity, Concat, Expand as
// broadcast_to, and Gather as an embedding lookup.
//
//===----------------------------------------------------------------------===//

#include "compiler/onnx/OnnxReader.h"
#include "ops/ShapeRules.h"

#include <algorithm>
#include <cmath>
#include <set>

namespace remat::model::onnx_reader {

/// Index of the element of a broadcast operand of shape `from` that feeds
/// element `index` of a result of shape `to` (NumPy rules).
static int64_t broadcastIndex(int64_t index, const std::vector<int64_t> &to,
                              const std::vector<int64_t> &from) {
  int64_t source = 0, stride = 1;
  for (size_t k = 0; k < to.size(); ++k) {
    size_t axis = to.size() - 1 - k;
    int64_t coordinate = index % to[axis];
    index /= to[axis];
    if (k < from.size()) {
      int64_t dim = from[from.size() - 1 - k];
      source += (dim == 1 ? 0 : coordinate) * stride;
      stride *= dim;
    }
  }
  return source;
}

int64_t OnnxReader::foldedCount(const std::vector<int64_t> &shape) {
  int64_t count = 1;
  for (int64_t d : shape) {
    if (d < 0)
      failNode("a negative dimension in " + ops::formatShape(shape));
    if (d != 0 && count > kMaxFoldedElements / d)
      failNode("folding it at import would make a tensor of shape " +
               ops::formatShape(shape) + ", more than 2^24 elements");
    count *= d;
  }
  return count;
}

ConstantData OnnxReader::foldElementwise(const ConstantData &a,
                                         const ConstantData &b) {
  ConstantData r;
  r.isFloat = a.isFloat || b.isFloat;
  size_t rank = std::max(a.shape.size(), b.shape.size());
  r.shape.assign(rank, 1);
  for (size_t k = 0; k < rank; ++k) {
    int64_t da = k < a.shape.size() ? a.shape[a.shape.size() - 1 - k] : 1;
    int64_t db = k < b.shape.size() ? b.shape[b.shape.size() - 1 - k] : 1;
    if (da != db && da != 1 && db != 1)
      failNode("operand shapes " + ops::formatShape(a.shape) + " and " +
               ops::formatShape(b.shape) + " do not broadcast");
    r.shape[rank - 1 - k] = da == 1 ? db : da;
  }
  const std::string &op = node->op_type();
  int64_t count = foldedCount(r.shape);
  for (int64_t i = 0; i < count; ++i) {
    double x = a.values[size_t(broadcastIndex(i, r.shape, a.shape))];
    double y = b.values[size_t(broadcastIndex(i, r.shape, b.shape))];
    double v = op == "Add" ? x + y : op == "Sub" ? x - y : op == "Mul" ? x * y
                                                                       : 0;
    if (op == "Div") {
      if (!r.isFloat && y == 0)
        failNode("integer division by zero in a shape computation");
      v = r.isFloat ? x / y : std::trunc(x / y);
    }
    if (op == "Mod") {
      // fmod=0 takes the divisor's sign (Python's %), fmod=1 the
      // dividend's (C's fmod).
      if (y == 0)
        failNode("Mod by zero in a shape computation");
      v = std::fmod(x, y);
      if (intAttribute("fmod", 0) == 0 && v != 0 && (v < 0) != (y < 0))
        v += y;
    }
    if (op == "Equal" || op == "Less" || op == "Greater")
      v = op == "Equal" ? x == y : op == "Less" ? x < y : x > y;
    r.values.push_back(v);
  }
  if (op == "Equal" || op == "Less" || op == "Greater")
    r.isFloat = false;
  return r;
}

void OnnxReader::importShapeOp() {
  const std::string &op = node->op_type();
  if (op == "Constant") {
    const onnx::AttributeProto &a = node->attribute(0);
    ConstantData c;
    if (a.name() == "value") {
      c = tensorConstant(a.t());
    } else if (a.name() == "value_float" || a.name() == "value_int") {
      c.isFloat = a.name() == "value_float";
      c.values.push_back(c.isFloat ? double(a.f()) : double(a.i()));
    } else if (a.name() == "value_floats") {
      c.isFloat = true;
      c.values.assign(a.floats().begin(), a.floats().end());
      c.shape = {int64_t(c.values.size())};
    } else {
      for (int64_t v : a.ints())
        c.values.push_back(double(v));
      c.shape = {int64_t(c.values.size())};
    }
    defineConstant(0, std::move(c));
    return;
  }
  if (op == "Shape") {
    std::vector<int64_t> shape = shapeOfInput(0);
    int64_t rank = int64_t(shape.size());
    int64_t start = intAttribute("start", 0), end = intAttribute("end", rank);
    start = std::clamp<int64_t>(start < 0 ? start + rank : start, 0, rank);
    end = std::clamp<int64_t>(end < 0 ? end + rank : end, 0, rank);
    ConstantData c;
    for (int64_t k = start; k < end; ++k)
      c.values.push_back(double(shape[size_t(k)]));
    c.shape = {int64_t(c.values.size())};
    defineConstant(0, std::move(c));
    return;
  }
  if (op == "Gather") {
    const ConstantData &data =
        requireConstant(0, "Gather of a computed tensor: data");
    const ConstantData &indices = requireConstant(1, "indices");
    int64_t rank = int64_t(data.shape.size());
    auto axis = normalizeAxis(intAttribute("axis", 0), rank);
    if (!axis)
      failNode("axis out of range");
    ConstantData r;
    r.isFloat = data.isFloat;
    r.shape.assign(data.shape.begin(), data.shape.begin() + *axis);
    r.shape.insert(r.shape.end(), indices.shape.begin(), indices.shape.end());
    r.shape.insert(r.shape.end(), data.shape.begin() + *axis + 1,
                   data.shape.end());
    int64_t outer = product(data.shape, 0, size_t(*axis));
    int64_t dim = data.shape[size_t(*axis)];
    int64_t inner = product(data.shape, size_t(*axis) + 1, data.shape.size());
    for (int64_t o = 0; o < outer; ++o)
      for (double index : indices.values) {
        int64_t k = int64_t(index) < 0 ? int64_t(index) + dim : int64_t(index);
        if (k < 0 || k >= dim)
          failNode("index " + std::to_string(int64_t(index)) +
                   " is out of range for a dimension of " +
                   std::to_string(dim));
        for (int64_t in = 0; in < inner; ++in)
          r.values.push_back(data.values[size_t((o * dim + k) * inner + in)]);
      }
    defineConstant(0, std::move(r));
    return;
  }
  if (op == "Unsqueeze" || op == "Squeeze") {
    std::vector<int64_t> shape = shapeOfInput(0);
    std::vector<int64_t> result;
    bool squeeze = op == "Squeeze";
    std::vector<int64_t> axes;
    if (hasInput(1))
      for (double v : requireConstant(1, "axes").values)
        axes.push_back(int64_t(v));
    if (squeeze) {
      int64_t rank = int64_t(shape.size());
      std::set<int64_t> drop;
      for (int64_t axis : axes) {
        auto a = normalizeAxis(axis, rank);
        if (!a || shape[size_t(*a)] != 1)
          failNode("cannot squeeze axis " + std::to_string(axis) + " of " +
                   ops::formatShape(shape));
        drop.insert(*a);
      }
      for (int64_t k = 0; k < rank; ++k)
        if (axes.empty() ? shape[size_t(k)] != 1 : !drop.count(k))
          result.push_back(shape[size_t(k)]);
    } else {
      int64_t rank = int64_t(shape.size() + axes.size());
      std::set<int64_t> insert;
      for (int64_t axis : axes) {
        auto a = normalizeAxis(axis, rank);
        if (!a || !insert.insert(*a).second)
          failNode("bad axis " + std::to_string(axis));
      }
      size_t next = 0;
      for (int64_t k = 0; k < rank; ++k)
        result.push_back(insert.count(k) ? 1 : shape[next++]);
    }
    if (const ConstantData *c = constantInput(0)) {
      ConstantData r = *c;
      r.shape = result;
      defineConstant(0, std::move(r));
    } else {
      define(0, reshapeTo(valueInput(0), result, uniqueName(nodeName)));
    }
    return;
  }
  if (op == "Concat") {
    ConstantData r;
    std::vector<const ConstantData *> parts;
    for (int i = 0; i < node->input_size(); ++i)
      parts.push_back(&requireConstant(
          i, "Concat of computed tensors is not supported yet: input"));
    int64_t rank = int64_t(parts[0]->shape.size());
    auto axis = normalizeAxis(intAttribute("axis", 0), rank);
    if (!axis)
      failNode("axis out of range");
    r.shape = parts[0]->shape;
    r.shape[size_t(*axis)] = 0;
    for (const ConstantData *p : parts) {
      r.isFloat |= p->isFloat;
      r.shape[size_t(*axis)] += p->shape[size_t(*axis)];
    }
    int64_t outer = product(r.shape, 0, size_t(*axis));
    for (int64_t o = 0; o < outer; ++o)
      for (const ConstantData *p : parts) {
        int64_t block = product(p->shape, size_t(*axis), p->shape.size());
        for (int64_t k = 0; k < block; ++k)
          r.values.push_back(p->values[size_t(o * block + k)]);
      }
    defineConstant(0, std::move(r));
    return;
  }
  if (op == "ConstantOfShape") {
    // A tensor of the (constant) shape filled with `value` (default 0.0f).
    ConstantData r;
    for (double d : requireConstant(0, "the shape").values) {
      if (d < 0)
        failNode("a negative dimension " + std::to_string(int64_t(d)));
      r.shape.push_back(int64_t(d));
    }
    r.isFloat = true;
    double fill = 0.0;
    for (const onnx::AttributeProto &a : node->attribute())
      if (a.name() == "value") {
        ConstantData v = tensorConstant(a.t());
        if (v.values.size() != 1)
          failNode("value must hold one element");
        r.isFloat = v.isFloat;
        fill = v.values.front();
      }
    r.values.assign(size_t(foldedCount(r.shape)), fill);
    defineConstant(0, std::move(r));
    return;
  }
  if (op == "ScatterND") {
    // On constant data (a mask built by index assignment, as swin's
    // shifted windows): data with the updates written at the indices.
    const std::string what =
        "ScatterND of computed tensors is not supported: input";
    ConstantData r = requireConstant(0, what);
    const ConstantData &indices = requireConstant(1, what);
    const ConstantData &updates = requireConstant(2, what);
    if (stringAttribute("reduction", "none") != "none")
      failNode("ScatterND with a reduction is not supported");
    size_t rank = r.shape.size();
    if (indices.shape.empty() || size_t(indices.shape.back()) > rank)
      failNode("ScatterND's indices have shape " +
               ops::formatShape(indices.shape) + " for data " +
               ops::formatShape(r.shape));
    size_t k = size_t(indices.shape.back());
    int64_t block = product(r.shape, k, rank);
    int64_t tuples = product(indices.shape, 0, indices.shape.size() - 1);
    if (int64_t(updates.values.size()) != tuples * block)
      failNode("ScatterND's updates have shape " +
               ops::formatShape(updates.shape) + ", not indices' and data's");
    for (int64_t t = 0; t < tuples; ++t) {
      int64_t at = 0;
      for (size_t d = 0; d < k; ++d) {
        int64_t i = int64_t(indices.values[size_t(t) * k + d]);
        int64_t dim = r.shape[d];
        if (i < -dim || i >= dim)
          failNode("ScatterND index " + std::to_string(i) +
                   " is out of range");
        at = at * dim + (i < 0 ? i + dim : i);
      }
      for (int64_t e = 0; e < block; ++e)
        r.values[size_t(at * block + e)] = updates.values[size_t(t * block + e)];
    }
    defineConstant(0, std::move(r));
    return;
  }
  if (op == "Not") {
    // On constant data (a mask's complement).
    ConstantData r = requireConstant(
        0, "Not of a computed tensor is not supported: input");
    for (double &v : r.values)
      v = v == 0;
    r.isFloat = false;
    defineConstant(0, std::move(r));
    return;
  }
  if (op == "Range") {
    // On constant data: start, start + delta, ... before limit (torch.arange
    // of sizes the exporter knows).
    const std::string what = "Range of computed bounds is not supported: input";
    const ConstantData &start = requireConstant(0, what);
    const ConstantData &limit = requireConstant(1, what);
    const ConstantData &delta = requireConstant(2, what);
    if (start.values.size() != 1 || limit.values.size() != 1 ||
        delta.values.size() != 1 || delta.values[0] == 0)
      failNode("Range needs scalar start, limit and a non-zero delta");
    double first = start.values[0], step = delta.values[0];
    double count = std::ceil((limit.values[0] - first) / step);
    if (!(count <= double(kMaxFoldedElements)))
      failNode("Range of more than 2^24 values is not supported");
    ConstantData r;
    r.isFloat = start.isFloat;
    for (int64_t i = 0; i < int64_t(std::max(0.0, count)); ++i)
      r.values.push_back(first + double(i) * step);
    r.shape = {int64_t(r.values.size())};
    defineConstant(0, std::move(r));
    return;
  }
  if (op == "Mod" || op == "Equal" || op == "Less" || op == "Greater") {
    // On constant data (shape arithmetic, the exporter's -1 handling).
    const std::string what = op + " of computed tensors is not supported: input";
    defineConstant(0, foldElementwise(requireConstant(0, what),
                                      requireConstant(1, what)));
    return;
  }
  if (op == "Where") {
    // On constant data: condition ? x : y, broadcast.
    const std::string what = "Where of computed tensors is not supported: input";
    const ConstantData &c = requireConstant(
        0, "Where with a condition computed from the data is not supported "
           "(masked_fill by a mask fixed at export is): input");
    if (!constantInput(1) || !constantInput(2)) {
      importWhereSelect(c);
      return;
    }
    const ConstantData &x = requireConstant(1, what);
    const ConstantData &y = requireConstant(2, what);
    auto xy = ops::broadcastShapes(x.shape, y.shape);
    auto shape = xy ? ops::broadcastShapes(c.shape, *xy) : std::nullopt;
    if (!shape)
      failNode("the shapes of Where's inputs do not broadcast");
    ConstantData r;
    r.isFloat = x.isFloat || y.isFloat;
    r.shape = *shape;
    int64_t count = foldedCount(r.shape);
    for (int64_t i = 0; i < count; ++i)
      r.values.push_back(
          c.values[size_t(broadcastIndex(i, r.shape, c.shape))] != 0
              ? x.values[size_t(broadcastIndex(i, r.shape, x.shape))]
              : y.values[size_t(broadcastIndex(i, r.shape, y.shape))]);
    defineConstant(0, std::move(r));
    return;
  }
  if (op == "Expand") {
    // x broadcast (NumPy rules, aligned on the right) with the constant
    // shape: folded on constant data, else `broadcast_to`.
    std::vector<int64_t> wanted;
    for (double d : requireConstant(1, "the shape").values)
      wanted.push_back(int64_t(d));
    std::vector<int64_t> from = shapeOfInput(0);
    auto shape = ops::broadcastShapes(from, wanted);
    if (!shape)
      failNode("cannot expand " + ops::formatShape(from) + " to " +
               ops::formatShape(wanted));
    if (const ConstantData *c = constantInput(0)) {
      ConstantData r;
      r.isFloat = c->isFloat;
      r.shape = *shape;
      int64_t count = foldedCount(r.shape);
      for (int64_t i = 0; i < count; ++i)
        r.values.push_back(
            c->values[size_t(broadcastIndex(i, r.shape, c->shape))]);
      defineConstant(0, std::move(r));
      return;
    }
    int x = valueInput(0);
    define(0, *shape == from ? x
                             : emit(uniqueName(nodeName), "broadcast_to", {x},
                                    json::object(), &*shape));
    return;
  }
  if (op == "Cast") {
    int64_t to = intAttribute("to", 0);
    if (const ConstantData *c = constantInput(0)) {
      ConstantData r = *c;
      r.isFloat = isFloatTensorType(int(to));
      if (!r.isFloat)
        for (double &v : r.values)
          v = std::trunc(v);
      defineConstant(0, std::move(r));
      return;
    }
    if (to != onnx::TensorProto::FLOAT)
      failNode("Cast of a computed tensor to " + std::string(elemTypeName(int(to))) +
               " is not supported (remat computes in f32)");
    define(0, valueInput(0));
    return;
  }
}

/// Identity: its input, a value or constant data.
void OnnxReader::importIdentity() {
  const Symbol &s = symbolOf(0);
  if (s.value >= 0)
    define(0, s.value);
  else
    defineConstant(0, *s.constantData);
}

/// Reshape (to a constant shape, 0 and -1 read as ONNX reads them) and
/// Flatten: folded on constant data, else a reshape of the value (none
/// when the shape stays).
void OnnxReader::importReshape() {
  const std::string &op = node->op_type();
  std::vector<int64_t> shape = shapeOfInput(0), result;
  if (op == "Flatten") {
    int64_t rank = int64_t(shape.size());
    int64_t axis = intAttribute("axis", 1);
    if (axis < -rank || axis > rank)
      failNode("axis " + std::to_string(axis) + " out of range");
    if (axis < 0)
      axis += rank;
    result = {product(shape, 0, size_t(axis)),
              product(shape, size_t(axis), shape.size())};
  } else {
    const ConstantData &target = requireConstant(1, "the shape");
    bool allowZero = intAttribute("allowzero", 0) != 0;
    int64_t known = 1, inferAt = -1;
    for (size_t k = 0; k < target.values.size(); ++k) {
      int64_t d = int64_t(target.values[k]);
      if (d == 0 && !allowZero) {
        if (k >= shape.size())
          failNode("shape entry 0 at " + std::to_string(k) +
                   " copies a dimension the input lacks");
        d = shape[k];
      }
      if (d == -1) {
        if (inferAt >= 0)
          failNode("the shape has more than one -1");
        inferAt = int64_t(k);
      } else if (d <= 0) {
        failNode("shape entry " + std::to_string(d) + " is not supported");
      } else {
        known *= d;
      }
      result.push_back(d);
    }
    int64_t total = product(shape, 0, shape.size());
    if (inferAt >= 0) {
      if (total % known)
        failNode("cannot reshape " + ops::formatShape(shape) + " to " +
                 ops::formatShape(result));
      result[size_t(inferAt)] = total / known;
    }
  }
  if (const ConstantData *c = constantInput(0)) {
    ConstantData r = *c;
    r.shape = result;
    defineConstant(0, std::move(r));
    return;
  }
  define(0, reshapeTo(valueInput(0), result, uniqueName(nodeName)));
}

int OnnxReader::reshapeTo(int value, const std::vector<int64_t> &shape,
                          const std::string &name) {
  if (typeOf(value).shape == shape)
    return value;
  return emit(name, "reshape", {value}, json::object(), &shape);
}

/// Transpose by `perm` (default: the reversed dims).
void OnnxReader::importTranspose() {
  std::vector<int64_t> shape = shapeOfInput(0);
  int64_t rank = int64_t(shape.size());
  std::vector<int64_t> perm;
  if (const onnx::AttributeProto *a = attribute("perm"))
    perm.assign(a->ints().begin(), a->ints().end());
  else
    for (int64_t k = rank - 1; k >= 0; --k)
      perm.push_back(k);
  if (const ConstantData *c = constantInput(0)) {
    // Folded on constant data (the exporter's reordering of F.pad's pads).
    if (int64_t(perm.size()) != rank)
      failNode("perm has " + std::to_string(perm.size()) +
               " entries for a rank-" + std::to_string(rank) + " input");
    ConstantData r;
    r.isFloat = c->isFloat;
    for (int64_t p : perm) {
      if (p < 0 || p >= rank)
        failNode("perm entry " + std::to_string(p) + " is out of range");
      r.shape.push_back(shape[size_t(p)]);
    }
    int64_t count = product(r.shape, 0, r.shape.size());
    std::vector<int64_t> at(static_cast<size_t>(rank));
    for (int64_t i = 0; i < count; ++i) {
      // Result index i: its coordinate d is the source's coordinate perm[d].
      int64_t rest = i, source = 0;
      for (int64_t d = rank - 1; d >= 0; --d) {
        at[size_t(perm[size_t(d)])] = rest % r.shape[size_t(d)];
        rest /= r.shape[size_t(d)];
      }
      for (int64_t d = 0; d < rank; ++d)
        source = source * shape[size_t(d)] + at[size_t(d)];
      r.values.push_back(c->values[size_t(source)]);
    }
    defineConstant(0, std::move(r));
    return;
  }
  int x = valueInput(0);
  define(0, permute(x, perm, uniqueName(nodeName)));
}

int OnnxReader::permute(int value, const std::vector<int64_t> &permutation,
                        const std::string &name) {
  return emit(name, "transpose", {value}, json{{"permutation", permutation}});
}

std::optional<OnnxReader::Permuted> OnnxReader::permutedFrom(int value) const {
  const Op *op = producerOf(value);
  if (!op || op->kind != "transpose")
    return std::nullopt;
  return Permuted{op->operands[0],
                  op->attrs.at("permutation").get<std::vector<int64_t>>()};
}

/// Where with a constant condition c and a computed x or y (masked_fill by
/// a constant mask: nanoGPT's causal mask, a padding mask fixed at export)
/// as a sum of the sides' selected parts: a constant side contributes its
/// values where it is selected (0 elsewhere); a computed side is
/// multiplied by c (x) or 1 - c (y), except beside a constant side that is
/// ±inf wherever it is selected, where it is taken whole:
///   where(c, -inf, s) = s + M,  M = c ? -inf : 0
/// (the additive mask that fuseAttention reads) and
///   where(c, x, y) = x·c + y·(1 - c);
/// both are exact for finite computed values.
void OnnxReader::importWhereSelect(const ConstantData &c) {
  std::optional<std::vector<int64_t>> shape = c.shape;
  for (int k = 1; k <= 2 && shape; ++k)
    shape = ops::broadcastShapes(*shape, shapeOfInput(k));
  if (!shape)
    failNode("the shapes of Where's inputs do not broadcast");
  // c, or 1 - c, as float, with one side's values where it is selected
  // (1 without a side); `infinite`: whether each selected value is ±inf.
  auto part = [&](bool xSide, const ConstantData *side, bool *infinite) {
    ConstantData r;
    r.isFloat = true;
    r.shape = side ? *ops::broadcastShapes(c.shape, side->shape) : c.shape;
    int64_t count = foldedCount(r.shape);
    for (int64_t i = 0; i < count; ++i) {
      bool selected =
          (c.values[size_t(broadcastIndex(i, r.shape, c.shape))] != 0) ==
          xSide;
      double v = side ? side->values[size_t(
                            broadcastIndex(i, r.shape, side->shape))]
                      : 1.0;
      if (infinite && selected && std::isfinite(v))
        *infinite = false;
      r.values.push_back(selected ? v : 0.0);
    }
    return r;
  };
  int computed[2] = {-1, -1};
  ConstantData fixedPart[2];
  bool infinite[2] = {true, true};
  for (int k = 0; k < 2; ++k) {
    if (const ConstantData *side = constantInput(k + 1))
      fixedPart[k] = part(k == 0, side, &infinite[k]);
    else
      computed[k] = valueInput(k + 1);
  }
  const char *names[2] = {"/x_part", "/y_part"};
  int sum = -1;
  for (int k = 0; k < 2; ++k) {
    if (computed[k] >= 0)
      continue;
    int value = constantValue(fixedPart[k], nodeName + names[k]);
    sum = sum < 0 ? value : scaleShift(sum, -1, value, nodeName + "/sum");
  }
  for (int k = 0; k < 2; ++k) {
    if (computed[k] < 0)
      continue;
    // Taken whole beside a constant side that is ±inf where selected.
    int scale = infinite[1 - k] && computed[1 - k] < 0
                    ? -1
                    : constantValue(part(k == 0, nullptr, nullptr),
                                    nodeName + (k == 0 ? "/c" : "/not_c"));
    sum = scaleShift(computed[k], scale, sum,
                     k == 1 || computed[1] < 0 ? nodeName : nodeName + "/x");
  }
  // Every part has c's shape broadcast with its side's: the sum has the
  // result's.
  define(0, sum);
}

/// Gather of rows of a table (a parameter, or computed) by integer
/// indices: `embedding`. Indices that are a model input without a
/// generator get randint in [0, rows). Constant indices along any axis
/// (x[:, 0], qkv[1]) are slices instead (importGatherConstant).
void OnnxReader::importEmbedding() {
  std::vector<int64_t> table = shapeOfInput(0);
  int64_t rank = int64_t(table.size());
  int64_t axis = intAttribute("axis", 0);
  if (const ConstantData *c = constantInput(1)) {
    // Indices in many runs of consecutive rows (swin's relative-position
    // bias table read by an index buffer: 2,401 rows in 2,401 runs a
    // block at window 7) are one lookup of a fixed index input; a few
    // runs (x[:, 0], qkv[1]) are slices.
    if (rank != 2 || (axis != 0 && axis != -2)) {
      importGatherConstant();
      return;
    }
    std::vector<int64_t> picked = gatherIndices(*c, table[0], 0);
    int64_t runs = 0;
    for (size_t k = 0; k < picked.size(); ++k)
      runs += k == 0 || picked[k] != picked[k - 1] + 1 ? 1 : 0;
    if (runs <= kSliceRuns) {
      importGatherConstant();
      return;
    }
    ConstantData rows = *c;
    rows.values.assign(picked.begin(), picked.end());
    define(0, emit(uniqueName(nodeName), "embedding",
                   {valueInput(0), fixedInput(node->input(1), rows)}));
    return;
  }
  if (rank != 2 || (axis != 0 && axis != -2))
    failNode("Gather of a computed tensor or parameter by computed indices "
             "is supported as an embedding lookup only: data of rank 2, axis "
             "0 (got " +
             ops::formatShape(table) + ", axis " + std::to_string(axis) + ")");
  int data = valueInput(0), indices = valueInput(1);
  Value &ids = graph.values[size_t(indices)];
  if (ids.kind == ValueKind::Input && ids.data.is_null() &&
      !fixedInputs.count(node->input(1)))
    ids.data = json{{"kind", "randint"}, {"low", 0}, {"high", table[0]}};
  define(0, emit(uniqueName(nodeName), "embedding", {data, indices}));
}

/// Concat with a computed (or parameter) part: a chain of `concat`s.
void OnnxReader::importConcat() {
  std::vector<int64_t> shape = shapeOfInput(0);
  auto axis = normalizeAxis(intAttribute("axis", 0), int64_t(shape.size()));
  if (!axis)
    failNode("axis " + std::to_string(intAttribute("axis", 0)) +
             " is out of range");
  // Empty parts (an empty Slice: importSlice) add nothing.
  std::vector<int> parts;
  for (int i = 0; i < node->input_size(); ++i)
    if (const ConstantData *c = constantInput(i);
        !c || product(c->shape, 0, c->shape.size()) != 0)
      parts.push_back(i);
  if (parts.empty())
    failNode("every input is empty");
  int joined = valueInput(parts[0]);
  for (size_t k = 1; k < parts.size(); ++k) {
    std::string name = k + 1 == parts.size()
                           ? nodeName
                           : nodeName + "/concat" + std::to_string(k);
    joined = joinAlong(joined, valueInput(parts[k]), *axis, name);
  }
  define(0, joined);
}

int OnnxReader::joinAlong(int first, int second, int64_t axis,
                          const std::string &name) {
  return emit(uniqueName(name), "concat", {first, second},
              json{{"axis", axis}});
}

} // namespace remat::model::onnx_reader
