//===- Values.cpp - The model values of an ONNX graph ---------------------===//
//
// Step 2 of the ONNX import and what every node's import uses: the graph's
// inputs; initializers read (external data too) as parameters, state,
// fixed inputs or constant data; a node's inputs and attributes; the
// graph ops made for a node, each typed by its rule (ops/ShapeRules.h);
// and Pad, whose constant blocks are such ops.
//
//===----------------------------------------------------------------------===//

#include "compiler/onnx/OnnxReader.h"

#include "ops/OpTable.h"
#include "ops/ShapeRules.h"
#include "ops/Suggest.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>

namespace remat::model::onnx_reader {

//===----------------------------------------------------------------------===//
// Inputs and initializers
//===----------------------------------------------------------------------===//

std::string OnnxReader::uniqueName(const std::string &wanted) {
  std::string name = wanted.empty() ? "op" : wanted;
  for (int k = 1; names.count(name); ++k)
    name = wanted + "." + std::to_string(k);
  names.insert(name);
  return name;
}

void OnnxReader::readInputs() {
  for (const onnx::ValueInfoProto &input : proto.graph().input()) {
    if (initializers.count(input.name()))
      continue;
    // checkAndInferShapes refused every other element type.
    const auto &tensor = input.type().tensor_type();
    int elemType = tensor.elem_type();
    Value v;
    v.kind = ValueKind::Input;
    v.name = input.name();
    // float16 and bfloat16 inputs are float32 in the step.
    v.type.dtype = readsAsFloat32(elemType)               ? "f32"
                   : elemType == onnx::TensorProto::INT64 ? "i64"
                                                          : "i32";
    for (const auto &dim : tensor.shape().dim())
      v.type.shape.push_back(dim.dim_value());
    try {
      v.type.bytes(); // a size past 2^62 bytes is refused here
    } catch (const std::overflow_error &e) {
      fail("input '" + input.name() + "': " + e.what());
    }
    // Integer inputs (token ids) get their generator where an embedding
    // reads them (its table's rows bound them; importEmbedding).
    if (readsAsFloat32(elemType))
      v.data = json{{"kind", "randn"}, {"std", 1.0}};
    v.pointer = "input '" + v.name + "'";
    if (names.count(v.name))
      fail("input '" + v.name + "' is defined twice");
    names.insert(v.name);
    symbols[v.name].value = int(graph.values.size());
    graph.values.push_back(std::move(v));
  }
}

/// The element count of an initializer or constant tensor, checked before
/// anything is allocated for it: no negative dimension and fewer than 2^59
/// elements, so that byte counts of 8-byte elements fit int64. (Its data,
/// checked against the count next, bounds what is allocated.)
int64_t OnnxReader::elementCount(const onnx::TensorProto &t) {
  int64_t n = 1;
  for (int64_t d : t.dims()) {
    if (d < 0)
      fail("tensor '" + t.name() + "' has a negative dimension " +
           std::to_string(d));
    if (d > 0 && n > (int64_t(1) << 59) / d)
      fail("tensor '" + t.name() + "' has " +
           std::to_string(t.dims_size()) +
           " dimensions whose product overflows (more than 2^59 elements)");
    n *= d;
  }
  return n;
}

namespace {

/// An IEEE half's value as float (exact: every half is a float).
float halfToFloat(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000) << 16, exponent = (h >> 10) & 0x1f,
           mantissa = h & 0x3ff, bits;
  if (exponent == 0x1f) // inf, NaN
    bits = sign | 0x7f800000u | (mantissa << 13);
  else if (exponent != 0) // normal
    bits = sign | ((exponent + 112) << 23) | (mantissa << 13);
  else if (mantissa == 0) // zero
    bits = sign;
  else { // subnormal: mantissa * 2^-24
    float f = std::ldexp(float(mantissa), -24);
    return sign ? -f : f;
  }
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

/// Values stored 16 bits each (float16 or bfloat16) as floats.
std::vector<float> widen16(int dataType, const uint16_t *bits, size_t count) {
  std::vector<float> values(count);
  for (size_t i = 0; i < count; ++i) {
    if (dataType == onnx::TensorProto::FLOAT16) {
      values[i] = halfToFloat(bits[i]);
    } else {
      uint32_t u = uint32_t(bits[i]) << 16;
      std::memcpy(&values[i], &u, sizeof u);
    }
  }
  return values;
}

} // namespace

std::vector<float> OnnxReader::initializerFloats(const onnx::TensorProto &t) {
  int64_t count = elementCount(t);
  std::string where = "initializer '" + t.name() + "'";
  // float16 and bfloat16 are read as float32 (exactly).
  const int type = t.data_type();
  const int64_t width = type == onnx::TensorProto::FLOAT ? 4 : 2;
  auto fromBytes = [&](const char *bytes) {
    if (width == 4) {
      std::vector<float> values(size_t(count), 0.0f);
      std::memcpy(values.data(), bytes, size_t(count) * 4);
      return values;
    }
    std::vector<uint16_t> bits(static_cast<size_t>(count));
    std::memcpy(bits.data(), bytes, size_t(count) * 2);
    return widen16(type, bits.data(), bits.size());
  };
  if (t.data_location() == onnx::TensorProto::EXTERNAL) {
    std::string location;
    int64_t offset = 0, length = -1;
    auto number = [&](const std::string &key, const std::string &text) {
      int64_t v = -1;
      auto [end, ec] =
          std::from_chars(text.data(), text.data() + text.size(), v);
      if (ec != std::errc() || end != text.data() + text.size() || v < 0)
        fail(where + ": its external data has " + key + " '" + text +
             "', not a non-negative integer");
      return v;
    };
    for (const auto &entry : t.external_data()) {
      if (entry.key() == "location")
        location = entry.value();
      else if (entry.key() == "offset")
        offset = number("offset", entry.value());
      else if (entry.key() == "length")
        length = number("length", entry.value());
    }
    std::filesystem::path relative(location);
    if (location.empty() || relative.is_absolute() ||
        location.find('\0') != std::string::npos)
      fail(where + ": its external data has no relative 'location'");
    for (const auto &part : relative)
      if (part == "..")
        fail(where + ": its external data file '" + location +
             "' is outside the model's folder");
    std::filesystem::path file =
        std::filesystem::path(path).parent_path() / relative;
    std::error_code ec;
    if (!std::filesystem::is_regular_file(file, ec))
      fail(where + ": cannot open its external data file '" + file.string() +
           "'");
    int64_t bytes = count * width;
    if (length >= 0 && length != bytes)
      fail(where + ": its external data has " + std::to_string(length) +
           " bytes, expected " + std::to_string(bytes));
    auto size = std::filesystem::file_size(file, ec);
    if (ec || offset > int64_t(size) || int64_t(size) - offset < bytes)
      fail(where + ": its external data file '" + file.string() +
           "' ends before offset " + std::to_string(offset) + " + " +
           std::to_string(bytes) + " bytes");
    std::ifstream in(file, std::ios::binary);
    if (!in)
      fail(where + ": cannot open its external data file '" + file.string() +
           "'");
    std::vector<char> data(static_cast<size_t>(bytes));
    in.seekg(offset);
    in.read(data.data(), bytes);
    if (in.gcount() != bytes)
      fail(where + ": its external data file '" + file.string() +
           "' ends before offset " + std::to_string(offset + bytes));
    return fromBytes(data.data());
  }
  if (!t.raw_data().empty()) {
    if (int64_t(t.raw_data().size()) != count * width)
      fail(where + ": raw data of " + std::to_string(t.raw_data().size()) +
           " bytes, expected " + std::to_string(count * width));
    return fromBytes(t.raw_data().data());
  }
  if (width == 2) {
    // float16 and bfloat16 values outside raw_data: one to an int32_data
    // entry, in its low 16 bits.
    if (t.int32_data_size() != count)
      fail(where + ": " + std::to_string(t.int32_data_size()) +
           " values, expected " + std::to_string(count));
    std::vector<uint16_t> bits;
    for (int32_t v : t.int32_data())
      bits.push_back(uint16_t(v & 0xffff));
    return widen16(type, bits.data(), bits.size());
  }
  if (t.float_data_size() != count)
    fail(where + ": " + std::to_string(t.float_data_size()) +
         " values, expected " + std::to_string(count));
  return std::vector<float>(t.float_data().begin(), t.float_data().end());
}

ConstantData OnnxReader::tensorConstant(const onnx::TensorProto &t) {
  ConstantData c;
  c.shape.assign(t.dims().begin(), t.dims().end());
  int64_t count = elementCount(t);
  auto raw = [&](auto tag) {
    using T = decltype(tag);
    // The size is checked before anything is allocated for it.
    if (t.raw_data().size() != size_t(count) * sizeof(T))
      fail("tensor '" + t.name() + "': raw data of " +
           std::to_string(t.raw_data().size()) + " bytes, expected " +
           std::to_string(count * int64_t(sizeof(T))));
    std::vector<T> data(static_cast<size_t>(count));
    std::memcpy(data.data(), t.raw_data().data(), t.raw_data().size());
    return data;
  };
  switch (t.data_type()) {
  case onnx::TensorProto::FLOAT:
  case onnx::TensorProto::FLOAT16:
  case onnx::TensorProto::BFLOAT16:
    c.isFloat = true;
    for (float f : initializerFloats(t))
      c.values.push_back(f);
    break;
  case onnx::TensorProto::DOUBLE:
    c.isFloat = true;
    if (!t.raw_data().empty())
      for (double d : raw(double()))
        c.values.push_back(d);
    else
      c.values.assign(t.double_data().begin(), t.double_data().end());
    break;
  case onnx::TensorProto::INT64:
    if (!t.raw_data().empty())
      for (int64_t v : raw(int64_t()))
        c.values.push_back(double(v));
    else
      for (int64_t v : t.int64_data())
        c.values.push_back(double(v));
    break;
  case onnx::TensorProto::INT32:
    if (!t.raw_data().empty())
      for (int32_t v : raw(int32_t()))
        c.values.push_back(double(v));
    else
      for (int32_t v : t.int32_data())
        c.values.push_back(double(v));
    break;
  case onnx::TensorProto::BOOL: // Dropout's training_mode
    if (!t.raw_data().empty())
      for (uint8_t v : raw(uint8_t()))
        c.values.push_back(v ? 1.0 : 0.0);
    else
      for (int32_t v : t.int32_data())
        c.values.push_back(v ? 1.0 : 0.0);
    break;
  default:
    fail(
        "tensor '" + t.name() + "' has element type " +
        elemTypeName(t.data_type()) +
        "; this remat folds float (float32, float16, bfloat16, double), int32, "
        "int64 and bool constants only");
  }
  if (int64_t(c.values.size()) != count)
    fail("tensor '" + t.name() + "' holds " + std::to_string(c.values.size()) +
         " values, expected " + std::to_string(count));
  return c;
}

/// Every --frozen name is a float initializer.
void OnnxReader::checkFrozen() {
  std::vector<std::string> floats;
  for (const auto &[name, t] : initializers)
    if (readsAsFloat32(t->data_type()))
      floats.push_back(name);
  for (const std::string &name : options.training.frozen) {
    auto it = initializers.find(name);
    if (it == initializers.end())
      throw OptionError(graph.sourceName + ": --frozen " + name +
                        ": the model has no initializer '" + name + "'" +
                        didYouMean(name, floats));
    if (!readsAsFloat32(it->second->data_type()))
      throw OptionError(graph.sourceName + ": --frozen " + name +
                        ": initializer '" + name + "' is " +
                        elemTypeName(it->second->data_type()) +
                        ", which is never trained (only float initializers "
                        "are)");
  }
}

namespace {

/// Whether input `index` of an ONNX node of type `op` gets no gradient:
/// comparisons, logic, Where's condition, Dropout's ratio and mode,
/// Resize's roi and scales, shapes and sizes, casts to a non-float type,
/// and ops whose derivative is zero wherever defined.
bool nonDifferentiableUse(const onnx::NodeProto &node, int index) {
  static const std::set<std::string> noGradient = {
      "Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual", "Not",
      "And", "Or", "Xor", "Shape", "Size", "ArgMax", "ArgMin", "IsNaN",
      "IsInf", "Sign", "Floor", "Ceil", "Round", "NonZero"};
  const std::string &op = node.op_type();
  if (noGradient.count(op))
    return true;
  if (op == "Where")
    return index == 0;
  // Dropout's ratio and mode, Resize's roi and scales.
  if (op == "Dropout" || op == "Resize")
    return index >= 1;
  if (op == "Cast")
    for (const onnx::AttributeProto &a : node.attribute())
      if (a.name() == "to")
        return a.i() != onnx::TensorProto::FLOAT &&
               a.i() != onnx::TensorProto::DOUBLE &&
               a.i() != onnx::TensorProto::FLOAT16 &&
               a.i() != onnx::TensorProto::BFLOAT16;
  return false;
}

/// Ops that only move or select their input 0's elements: a value read
/// through them gets a gradient only where their result does.
bool movesElements(const onnx::NodeProto &node, int index) {
  static const std::set<std::string> views = {
      "Slice", "Reshape", "Unsqueeze", "Squeeze", "Transpose", "Identity",
      "Expand", "Flatten"};
  return index == 0 && views.count(node.op_type());
}

} // namespace

std::optional<std::string>
OnnxReader::frozenReason(const onnx::TensorProto &t,
                         const std::vector<float> &values) {
  const std::string &name = t.name();
  if (options.training.frozen.count(name))
    return std::string("--frozen");
  // torch's buffers are plain initializers in the file: a mask of -inf
  // (no trained parameter holds one), or data read only where no gradient
  // flows (a boolean mask's comparison, Where's condition).
  if (!std::all_of(values.begin(), values.end(),
                   [](float x) { return std::isfinite(x); }))
    return std::string("holds inf or NaN: a buffer such as a mask");
  // Its readers, and through slices and reshapes (nanoGPT's
  // bias[:, :, :T, :T] == 0) those of what they make.
  std::set<std::string> readers;
  bool any = false;
  std::vector<std::string> reached = {name};
  for (size_t k = 0; k < reached.size(); ++k)
    for (const onnx::NodeProto &n : proto.graph().node())
      for (int i = 0; i < n.input_size(); ++i) {
        if (n.input(i) != reached[k])
          continue;
        any = true;
        if (movesElements(n, i) && n.output_size() == 1 &&
            reached.size() < 64) {
          reached.push_back(n.output(0));
          continue;
        }
        if (!nonDifferentiableUse(n, i))
          return std::nullopt;
        readers.insert(n.op_type());
      }
  if (!any || readers.empty())
    return std::nullopt;
  std::string list;
  for (const std::string &r : readers)
    list += (list.empty() ? "" : ", ") + r;
  return "read only where no gradient flows (" + list + ")";
}

/// 2. A float initializer that is trained: a parameter with its `values`.
int OnnxReader::parameter(const onnx::TensorProto &t,
                          const std::vector<float> &values) {
  const std::string &name = t.name();
  Value v;
  v.kind = ValueKind::Param;
  v.name = name;
  v.type.shape.assign(t.dims().begin(), t.dims().end());
  if (v.type.shape.empty())
    failNode("initializer '" + name +
             "' is a scalar; remat's parameters have rank >= 1 (name it "
             "with --frozen " + name + " if torch does not train it)");
  // The values come from the weights file the plan names (docs/onnx.md).
  v.init = json{{"kind", "zeros"}};
  v.pointer = "initializer '" + name + "'";
  if (names.count(name))
    failNode("initializer '" + name + "' has the name of another value");
  names.insert(name);
  runtime::NamedTensor tensor{"F32", v.type.shape,
                              std::vector<char>(values.size() * 4)};
  if (!values.empty()) // (an empty initializer: no bytes, no copy)
    std::memcpy(tensor.bytes.data(), values.data(), tensor.bytes.size());
  out.weights[name] = std::move(tensor);
  int id = int(graph.values.size());
  graph.values.push_back(std::move(v));
  return id;
}

/// Constant data of differing values (or integers) read as a tensor
/// operand: an input without a generator, fed every step with these values
/// from the weights file (a causal mask, position ids).
int OnnxReader::fixedInput(const std::string &onnxName, const ConstantData &c) {
  if (auto known = fixedInputs.find(onnxName); known != fixedInputs.end())
    return known->second;
  if (c.values.empty())
    failNode("operand '" + onnxName + "' is an empty constant tensor");
  Value v;
  v.kind = ValueKind::Input;
  v.name = uniqueName(onnxName);
  v.type = ValueType{c.isFloat ? "f32" : "i64", c.shape};
  v.pointer = "constant '" + onnxName + "'";
  runtime::NamedTensor tensor{c.isFloat ? "F32" : "I64", c.shape, {}};
  for (double x : c.values) {
    char bytes[8];
    size_t size = c.isFloat ? 4 : 8;
    if (c.isFloat) {
      float f = float(x);
      std::memcpy(bytes, &f, 4);
    } else {
      int64_t k = int64_t(x);
      std::memcpy(bytes, &k, 8);
    }
    tensor.bytes.insert(tensor.bytes.end(), bytes, bytes + size);
  }
  out.weights[v.name] = std::move(tensor);
  int id = int(graph.values.size());
  graph.values.push_back(std::move(v));
  fixedInputs[onnxName] = id;
  return id;
}

int OnnxReader::stateInput(int i, const std::string &what) {
  const std::string &name = node->input(i);
  auto init = initializers.find(name);
  if (!hasInput(i) || init == initializers.end() ||
      !readsAsFloat32(init->second->data_type()))
    failNode(what + " '" + name +
             "' must be a float initializer (remat keeps it as state the "
             "step updates)");
  if (symbols.count(name))
    failNode(what + " '" + name +
             "' is read by another node too; remat updates each running "
             "statistic from one BatchNormalization only");
  const onnx::TensorProto &t = *init->second;
  Value v;
  v.kind = ValueKind::State;
  v.name = name;
  v.type.shape.assign(t.dims().begin(), t.dims().end());
  v.init = json{{"kind", "zeros"}}; // the weights file holds the value
  v.pointer = "initializer '" + name + "'";
  if (names.count(name))
    failNode("initializer '" + name + "' has the name of another value");
  names.insert(name);
  std::vector<float> values = initializerFloats(t);
  runtime::NamedTensor tensor{"F32", v.type.shape,
                              std::vector<char>(values.size() * 4)};
  if (!values.empty()) // (an empty initializer: no bytes, no copy)
    std::memcpy(tensor.bytes.data(), values.data(), tensor.bytes.size());
  out.weights[name] = std::move(tensor);
  int id = int(graph.values.size());
  graph.values.push_back(std::move(v));
  symbols[name] = Symbol{id, std::nullopt};
  return id;
}

//===----------------------------------------------------------------------===//
// A node's inputs and attributes
//===----------------------------------------------------------------------===//

const Symbol &OnnxReader::symbolOf(int i) {
  const std::string &name = node->input(i);
  auto it = symbols.find(name);
  if (it != symbols.end())
    return it->second;
  if (auto gone = unavailable.find(name); gone != unavailable.end())
    failNode("input '" + name + "' is " + gone->second);
  auto init = initializers.find(name);
  if (init == initializers.end() && statisticsOutputs.count(name))
    failNode("input '" + name + "' is a statistics output of a "
             "BatchNormalization, which remat does not compute as a value "
             "(the running statistics are state it updates itself)");
  if (init == initializers.end())
    failNode("input '" + name + "' is not defined by an earlier node, an "
             "input or an initializer");
  // A float initializer is a trained parameter unless it is frozen
  // (--frozen, or the buffer rule of frozenReason); frozen and integer ones
  // are constant data.
  // Its values are read once for both (a parameter's may be large).
  if (readsAsFloat32(init->second->data_type())) {
    std::vector<float> values = initializerFloats(*init->second);
    if (std::optional<std::string> why = frozenReason(*init->second, values))
      graph.frozen[name] = *why;
    else {
      int id = parameter(*init->second, values);
      return symbols[name] = Symbol{id, std::nullopt};
    }
  }
  Symbol &symbol = symbols[name];
  symbol.constantData = tensorConstant(*init->second);
  return symbol;
}

const ConstantData *OnnxReader::constantInput(int i) {
  const Symbol &symbol = symbolOf(i);
  return symbol.value < 0 ? &*symbol.constantData : nullptr;
}

const ConstantData &OnnxReader::requireConstant(int i,
                                                 const std::string &what) {
  if (const ConstantData *c = constantInput(i))
    return *c;
  failNode(what + " '" + node->input(i) +
           "' is computed from the data; this remat needs it constant "
           "(export with fixed input shapes)");
}

/// Input `i` as one number: constant data whose elements are all equal
/// (`fallback` when the input is absent).
double OnnxReader::scalarInput(int i, const std::string &what,
                               double fallback) {
  if (!hasInput(i))
    return fallback;
  const ConstantData &c = requireConstant(i, what);
  if (c.values.empty() ||
      !std::all_of(c.values.begin(), c.values.end(),
                   [&](double v) { return v == c.values.front(); }))
    failNode(what + " '" + node->input(i) +
             "' must be one number (a constant of equal elements)");
  return c.values.front();
}

std::vector<int64_t> OnnxReader::shapeOfInput(int i) {
  const Symbol &symbol = symbolOf(i);
  return symbol.value >= 0 ? typeOf(symbol.value).shape
                           : symbol.constantData->shape;
}

int OnnxReader::valueInput(int i) {
  const std::string &name = node->input(i);
  const Symbol &symbol = symbolOf(i);
  if (symbol.value >= 0)
    return symbol.value;
  return constantValue(*symbol.constantData, name);
}

int OnnxReader::constantValue(const ConstantData &c,
                              const std::string &onnxName) {
  // A `constant` op when uniform and float, else a fixed input.
  bool uniform = std::all_of(c.values.begin(), c.values.end(),
                             [&](double v) { return v == c.values.front(); });
  if (c.values.empty() || !uniform || !c.isFloat ||
      !std::isfinite(c.values.front()))
    return fixedInput(onnxName, c);
  std::string helper =
      nodeName + "/constant" +
      (nodeConstants ? std::to_string(nodeConstants) : std::string());
  ++nodeConstants;
  return uniformConstant(c.values.front(), c.shape, helper);
}

const onnx::AttributeProto *
OnnxReader::attribute(const std::string &name) const {
  for (const onnx::AttributeProto &a : node->attribute())
    if (a.name() == name)
      return &a;
  return nullptr;
}

int64_t OnnxReader::intAttribute(const std::string &name,
                                 int64_t fallback) const {
  const onnx::AttributeProto *a = attribute(name);
  if (!a)
    return fallback;
  if (a->type() != onnx::AttributeProto::INT)
    failNode("attribute '" + name + "' must be an integer");
  return a->i();
}

std::string OnnxReader::stringAttribute(const std::string &name,
                                        const std::string &fallback) const {
  const onnx::AttributeProto *a = attribute(name);
  if (!a)
    return fallback;
  if (a->type() != onnx::AttributeProto::STRING)
    failNode("attribute '" + name + "' must be a string");
  return a->s();
}

double OnnxReader::floatAttribute(const std::string &name,
                                  double fallback) const {
  const onnx::AttributeProto *a = attribute(name);
  if (!a)
    return fallback;
  if (a->type() != onnx::AttributeProto::FLOAT)
    failNode("attribute '" + name + "' must be a float");
  return a->f();
}

//===----------------------------------------------------------------------===//
// The graph ops made for a node
//===----------------------------------------------------------------------===//

int OnnxReader::emit(const std::string &name, const std::string &kind,
                     const std::vector<int> &operands, json attrs,
                     const std::vector<int64_t> *given) {
  std::optional<ops::OpKind> opKind = ops::parseOpKind(kind);
  const ops::OpInfo &info = ops::opInfo(*opKind);
  for (const ops::AttrInfo &a : info.attrs)
    if (!attrs.contains(a.name))
      setDefinedDefault(attrs, a);
  ValueType result;
  try {
    result = inferResultType(graph, *opKind, ops::parseAttrs(*opKind, attrs),
                             operands, given);
  } catch (const std::exception &e) {
    failNode(kind + ": " + e.what());
  }
  if (given)
    attrs["shape"] = *given;
  Op op;
  op.name = name;
  op.kind = kind;
  op.pointer = node->op_type() + " node";
  op.operands = operands;
  op.attrs = std::move(attrs);
  return graph.appendOp(std::move(op), result);
}

int OnnxReader::uniformConstant(double value,
                                const std::vector<int64_t> &shape,
                                const std::string &name) {
  return emit(uniqueName(name), "constant", {}, json{{"value", value}},
              &shape);
}

int OnnxReader::scalarConstant(double value, const std::string &name) {
  return uniformConstant(value, {}, name);
}

const Op *OnnxReader::producerOf(int value) const {
  if (graph.values[size_t(value)].kind != ValueKind::Op)
    return nullptr; // an input, a parameter or state: no op, no scan
  for (auto it = graph.ops.rbegin(); it != graph.ops.rend(); ++it)
    if (it->result == value)
      return &*it;
  return nullptr;
}

std::optional<double> OnnxReader::uniformValue(int value) const {
  const Op *op = producerOf(value);
  if (!op || op->kind != "constant")
    return std::nullopt;
  return op->attrs.at("value").get<double>();
}

std::optional<std::vector<float>> OnnxReader::fixedFloats(int value) const {
  const Value &v = graph.values[size_t(value)];
  auto data = out.weights.find(v.name);
  if (v.kind != ValueKind::Input || data == out.weights.end() ||
      data->second.dtype != "F32")
    return std::nullopt;
  std::vector<float> floats(data->second.bytes.size() / sizeof(float));
  std::memcpy(floats.data(), data->second.bytes.data(),
              floats.size() * sizeof(float));
  return floats;
}

void OnnxReader::define(int output, int value) {
  const std::string &name = node->output(output);
  auto inferred = inferredShapes.find(name);
  if (inferred != inferredShapes.end() &&
      inferred->second != typeOf(value).shape)
    failNode("remat's result shape " + ops::formatShape(typeOf(value).shape) +
             " differs from ONNX's " + ops::formatShape(inferred->second) +
             " for '" + name + "' (an importer bug; please report it)");
  symbols[name] = Symbol{value, std::nullopt};
}

void OnnxReader::defineConstant(int output, ConstantData c) {
  symbols[node->output(output)] = Symbol{-1, std::move(c)};
}

/// Pad with pads >= 0 (opset 11+: pads and the value as inputs; `axes` of
/// opset 18 is past the opsets read): each padded axis of a computed x is
/// joined with blocks around it: constant ones (mode constant, whose
/// gradient slices them off), or one-position slices of x (edge: the edge
/// repeated; reflect: the positions next to it in mirror order), whose
/// gradients add into x's; constant data is not padded here (the exporter
/// pads activations).
void OnnxReader::importPad() {
  std::string mode = stringAttribute("mode", "constant");
  if (mode != "constant" && mode != "edge" && mode != "reflect")
    failNode("mode '" + mode + "' is not supported (constant, edge or "
             "reflect)");
  std::vector<int64_t> shape = shapeOfInput(0);
  size_t rank = shape.size();
  std::vector<int64_t> pads;
  for (double v : requireConstant(1, "pads").values)
    pads.push_back(int64_t(v));
  if (pads.size() != 2 * rank)
    failNode("pads holds " + std::to_string(pads.size()) +
             " values; a rank-" + std::to_string(rank) + " input needs " +
             std::to_string(2 * rank));
  double value = mode == "constant"
                     ? scalarInput(2, "the constant value", 0.0)
                     : 0.0;
  if (!std::isfinite(value))
    failNode("the constant value must be finite");
  int x = valueInput(0);
  for (size_t axis = 0; axis < rank; ++axis) {
    int64_t before = pads[axis], after = pads[axis + rank];
    if (before < 0 || after < 0)
      failNode("negative pads (cropping) are not supported");
    int64_t size = typeOf(x).shape[axis];
    if (mode == "reflect" && (before >= size || after >= size))
      failNode("reflect pads of " + std::to_string(std::max(before, after)) +
               " on axis " + std::to_string(axis) + " of size " +
               std::to_string(size) + " (each must be below the size)");
    // A block of `width` values along the axis, joined before or after x:
    // the constant; the edge position repeated; or the positions next to
    // the edge in mirror order (reflect, the edge itself left out).
    int source = x; // this axis's positions before it is padded
    auto join = [&](int64_t width, bool first) {
      int filler = -1;
      if (mode == "constant") {
        std::vector<int64_t> block = typeOf(x).shape;
        block[axis] = width;
        filler = uniformConstant(value, block, nodeName + "/fill");
      }
      for (int64_t k = 0; mode != "constant" && k < width; ++k) {
        // The k-th position out from the edge.
        int64_t at = mode == "edge" ? (first ? 0 : size - 1)
                     : first        ? width - k
                                    : size - 2 - k;
        int part = sliceAlong(source, int64_t(axis), at, at + 1,
                              nodeName + "/" + mode);
        filler = filler < 0 ? part
                            : joinAlong(filler, part, int64_t(axis),
                                        nodeName + "/" + mode);
      }
      x = first ? joinAlong(filler, x, int64_t(axis), nodeName + "/pad")
                : joinAlong(x, filler, int64_t(axis), nodeName + "/pad");
    };
    if (before > 0)
      join(before, true);
    if (after > 0)
      join(after, false);
  }
  define(0, x);
}

} // namespace remat::model::onnx_reader
