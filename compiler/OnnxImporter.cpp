//===- OnnxImporter.cpp - Read an ONNX model into a ModelGraph ------------===//
//
// The import works in five steps:
//   1. parse the protobuf, check the opset (13-17 of the default domain),
//      run the ONNX checker; fix dynamic input dims from --input-shape and
//      run ONNX shape inference (whose shapes cross-check ours, step 3);
//   2. define the graph's inputs (float, static shapes) as model inputs;
//      initializers are looked up lazily: a float one read by a compute op
//      becomes a parameter with its value, any one read by a shape
//      computation is constant data;
//   3. walk the nodes in their (topological) order: shape-only nodes whose
//      inputs are constant (Constant, Shape, Gather, Unsqueeze, Concat,
//      arithmetic on integers...) are evaluated here; every other node is
//      mapped onto graph ops (Gemm -> matmul [+ add]), each result type
//      inferred by the op's type rule (ops/ShapeRules.h), so a type error
//      names the ONNX node;
//   4. add the input `labels` and the loss on the graph's first output,
//      drop what does not reach it, and set the optimizer;
//   5. return the graph with every parameter's value.
// Ops are named after their ONNX node (`/fc1/Gemm`); a node mapped to
// several ops names the last one so and its helpers `/fc1/Gemm/matmul`.
//
//===----------------------------------------------------------------------===//

#include "compiler/OnnxImporter.h"

#include "ops/OpTable.h"
#include "ops/ShapeRules.h"
#include "ops/Suggest.h"

#include <onnx/checker.h>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <set>
#include <sstream>

using nlohmann::json;

namespace remat::model {

namespace {

/// Constant data of a shape computation, every element held as a double
/// (exact for the integers shapes are made of).
struct Constant {
  std::vector<int64_t> shape;
  std::vector<double> values;
  bool isFloat = false;
};

/// What an ONNX value name stands for: a model value, or constant data.
struct Symbol {
  int value = -1;
  std::optional<Constant> constant;
};

int64_t product(const std::vector<int64_t> &dims, size_t begin, size_t end) {
  int64_t n = 1;
  for (size_t i = begin; i < end; ++i)
    n *= dims[i];
  return n;
}

std::string dimsText(const std::vector<int64_t> &dims) {
  std::string s;
  for (size_t i = 0; i < dims.size(); ++i)
    s += (i ? "," : "") + std::to_string(dims[i]);
  return s;
}

bool isFloatTensorType(int elemType) {
  return elemType == onnx::TensorProto::FLOAT ||
         elemType == onnx::TensorProto::DOUBLE ||
         elemType == onnx::TensorProto::FLOAT16 ||
         elemType == onnx::TensorProto::BFLOAT16;
}

const char *elemTypeName(int elemType) {
  return onnx::TensorProto::DataType_IsValid(elemType)
             ? onnx::TensorProto::DataType_Name(
                   onnx::TensorProto::DataType(elemType))
                   .c_str()
             : "unknown";
}

/// The compute ops (mapped onto graph ops) and the ops folded when their
/// inputs are constant; each with the attributes it accepts.
const std::map<std::string, std::set<std::string>> &onnxOpAttributes() {
  static const std::map<std::string, std::set<std::string>> table = {
      {"Add", {}},
      {"BatchNormalization", {"epsilon", "momentum", "training_mode"}},
      {"Cast", {"to"}},
      {"Clip", {}},
      {"Concat", {"axis"}},
      {"Constant",
       {"value", "value_float", "value_floats", "value_int", "value_ints"}},
      {"Div", {}},
      {"Flatten", {"axis"}},
      {"Gather", {"axis"}},
      {"Gemm", {"alpha", "beta", "transA", "transB"}},
      {"Identity", {}},
      {"MatMul", {}},
      {"Mul", {}},
      {"Relu", {}},
      {"Reshape", {"allowzero"}},
      {"Resize",
       {"coordinate_transformation_mode", "cubic_coeff_a", "exclude_outside",
        "extrapolation_value", "mode", "nearest_mode"}},
      {"Shape", {"start", "end"}},
      {"Sigmoid", {}},
      {"Softmax", {"axis"}},
      {"Squeeze", {}},
      {"Sub", {}},
      {"Tanh", {}},
      {"Transpose", {"perm"}},
      {"Unsqueeze", {}},
  };
  return table;
}

class OnnxReader {
public:
  OnnxReader(const std::string &path, const ModelOptions &options)
      : path(path), options(options) {}

  OnnxModel read();

private:
  const std::string &path;
  const ModelOptions &options;
  onnx::ModelProto proto;
  int opset = 0;
  OnnxModel out;
  ModelGraph &graph = out.graph;
  std::map<std::string, Symbol> symbols;
  std::map<std::string, const onnx::TensorProto *> initializers;
  /// ONNX's inferred shapes of intermediate values (value_info).
  std::map<std::string, std::vector<int64_t>> inferredShapes;
  std::set<std::string> names; ///< every model value's name so far
  /// BatchNormalization's outputs 1-4, which are no values of the graph.
  std::set<std::string> statisticsOutputs;
  const onnx::NodeProto *node = nullptr;
  std::string nodeName; ///< unique name of the node being imported
  int nodeConstants = 0; ///< helper constants made for the current node

  [[noreturn]] void fail(const std::string &why) const {
    throw ModelError(graph.sourceName + ": " + why);
  }
  [[noreturn]] void failNode(const std::string &why) const {
    fail("node '" + nodeName + "' (" + node->op_type() + ", opset " +
         std::to_string(opset) + "): " + why);
  }

  void parse();
  void checkAndInferShapes();
  void readInputs();
  void importNode();
  void addLoss();
  void pruneToLoss();
  void readOptimizer();

  std::string uniqueName(const std::string &wanted);
  std::vector<float> initializerFloats(const onnx::TensorProto &t);
  Constant tensorConstant(const onnx::TensorProto &t);

  /// The node's input `i`: whether it is given, as constant data, as a value.
  bool hasInput(int i) const {
    return i < node->input_size() && !node->input(i).empty();
  }
  const Symbol &symbolOf(int i);
  const Constant *constantInput(int i);
  const Constant &requireConstant(int i, const std::string &what);
  int valueInput(int i);
  /// The node's input `i` as state (batch_norm's running statistics): a
  /// float initializer, its value kept with the weights.
  int stateInput(int i, const std::string &what);
  const ValueType &typeOf(int value) const {
    return graph.values[size_t(value)].type;
  }
  std::vector<int64_t> shapeOfInput(int i);

  /// Appends graph op `kind` named `name`; `given` is the result shape of
  /// reshape/constant. Returns the result's value id.
  int emit(const std::string &name, const std::string &kind,
           const std::vector<int> &operands, json attrs = json::object(),
           const std::vector<int64_t> *given = nullptr);
  int scalarConstant(double value, const std::string &name);
  int reshapeTo(int value, const std::vector<int64_t> &shape,
                const std::string &name);
  void define(int output, int value);
  void defineConstant(int output, Constant c);

  // Attributes.
  const onnx::AttributeProto *attribute(const std::string &name) const;
  int64_t intAttribute(const std::string &name, int64_t fallback) const;
  double floatAttribute(const std::string &name, double fallback) const;

  // Folding of constant shape data.
  Constant foldElementwise(const Constant &a, const Constant &b);
  void importShapeOp();
  void importArithmetic();
  void importBatchNormalization();
  void importClip();
  void importResize();
};

//===----------------------------------------------------------------------===//
// 1. Parse and check
//===----------------------------------------------------------------------===//

void OnnxReader::parse() {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    fail("is a directory, not an ONNX model");
  std::ifstream in(path, std::ios::binary);
  if (!in)
    fail("cannot open the file");
  std::string bytes{std::istreambuf_iterator<char>(in),
                    std::istreambuf_iterator<char>()};
  if (bytes.empty())
    fail("the file is empty, not an ONNX model");
  if (!proto.ParseFromString(bytes))
    fail("not a valid ONNX model: the protobuf does not parse (a truncated "
         "or corrupt file, or not ONNX)");
  if (!proto.has_graph() || proto.ir_version() == 0)
    fail("not a valid ONNX model: it has no " +
         std::string(proto.has_graph() ? "ir_version" : "graph") +
         " (a truncated or corrupt file, or not ONNX)");
  for (const onnx::OperatorSetIdProto &set : proto.opset_import())
    if (set.domain().empty() || set.domain() == "ai.onnx")
      opset = int(set.version());
  if (opset == 0)
    fail("the model imports no opset of the default ONNX domain");
  if (opset < kMinOnnxOpset || opset > kMaxOnnxOpset)
    fail("opset " + std::to_string(opset) +
         " is not supported: this remat reads opsets " +
         std::to_string(kMinOnnxOpset) + " to " +
         std::to_string(kMaxOnnxOpset) +
         " (export with torch.onnx.export(..., opset_version=17))");
}

void OnnxReader::checkAndInferShapes() {
  try {
    onnx::checker::check_model(path);
  } catch (const std::exception &e) {
    std::string what = e.what();
    while (!what.empty() && (what.back() == '\n' || what.back() == ' '))
      what.pop_back();
    fail("the ONNX checker rejects the model: " + what);
  }

  // Inputs with dynamic dims get theirs from --input-shape.
  std::set<std::string> inputNames;
  for (const onnx::TensorProto &t : proto.graph().initializer())
    initializers[t.name()] = &t;
  for (const onnx::ValueInfoProto &input : proto.graph().input())
    if (!initializers.count(input.name()))
      inputNames.insert(input.name());
  for (const auto &[name, dims] : options.training.inputShapes)
    if (!inputNames.count(name))
      throw OptionError(
          graph.sourceName + ": --input-shape " + name + "=" + dimsText(dims) +
          ": the model has no input '" + name + "'" +
          didYouMean(name, std::vector<std::string>(inputNames.begin(),
                                                    inputNames.end())));
  for (onnx::ValueInfoProto &input : *proto.mutable_graph()->mutable_input()) {
    if (initializers.count(input.name()))
      continue;
    if (!input.type().has_tensor_type())
      fail("input '" + input.name() + "' is not a tensor");
    onnx::TensorShapeProto *shape =
        input.mutable_type()->mutable_tensor_type()->mutable_shape();
    auto given = options.training.inputShapes.find(input.name());
    if (given == options.training.inputShapes.end()) {
      for (int d = 0; d < shape->dim_size(); ++d)
        if (!shape->dim(d).has_dim_value() || shape->dim(d).dim_value() <= 0) {
          std::string symbol = shape->dim(d).has_dim_param()
                                   ? " ('" + shape->dim(d).dim_param() + "')"
                                   : "";
          std::string example;
          for (int k = 0; k < shape->dim_size(); ++k)
            example += std::string(k ? "," : "") +
                       (shape->dim(k).has_dim_value() &&
                                shape->dim(k).dim_value() > 0
                            ? std::to_string(shape->dim(k).dim_value())
                            : "N");
          fail("input '" + input.name() + "' has a dynamic dimension " +
               std::to_string(d) + symbol +
               ": give its shape with --input-shape " + input.name() + "=" +
               example);
        }
      continue;
    }
    const std::vector<int64_t> &dims = given->second;
    if (int(dims.size()) != shape->dim_size())
      throw OptionError(graph.sourceName + ": --input-shape " + input.name() +
                        "=" + dimsText(dims) + ": input '" + input.name() +
                        "' has rank " + std::to_string(shape->dim_size()) +
                        ", not " + std::to_string(dims.size()));
    for (int d = 0; d < shape->dim_size(); ++d) {
      if (shape->dim(d).has_dim_value() && shape->dim(d).dim_value() > 0 &&
          shape->dim(d).dim_value() != dims[size_t(d)])
        throw OptionError(graph.sourceName + ": --input-shape " +
                          input.name() + "=" + dimsText(dims) +
                          ": dimension " + std::to_string(d) + " of input '" +
                          input.name() + "' is fixed at " +
                          std::to_string(shape->dim(d).dim_value()));
      shape->mutable_dim(d)->set_dim_value(dims[size_t(d)]);
    }
  }

  try {
    onnx::ShapeInferenceOptions inference(/*check_type=*/true,
                                          /*strict_mode=*/1,
                                          /*data_prop=*/true);
    onnx::shape_inference::InferShapes(proto, onnx::OpSchemaRegistry::Instance(),
                                       inference);
  } catch (const std::exception &e) {
    fail(std::string("ONNX shape inference fails: ") + e.what());
  }
  for (const onnx::ValueInfoProto &info : proto.graph().value_info()) {
    if (!info.type().has_tensor_type() ||
        !info.type().tensor_type().has_shape())
      continue;
    std::vector<int64_t> dims;
    bool known = true;
    for (const auto &dim : info.type().tensor_type().shape().dim()) {
      known &= dim.has_dim_value();
      dims.push_back(dim.dim_value());
    }
    if (known)
      inferredShapes[info.name()] = dims;
  }
}

//===----------------------------------------------------------------------===//
// 2. Inputs and initializers
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
    const auto &tensor = input.type().tensor_type();
    if (tensor.elem_type() != onnx::TensorProto::FLOAT)
      fail("input '" + input.name() + "' is " +
           elemTypeName(tensor.elem_type()) +
           "; this remat imports float (f32) inputs only");
    Value v;
    v.kind = ValueKind::Input;
    v.name = input.name();
    for (const auto &dim : tensor.shape().dim())
      v.type.shape.push_back(dim.dim_value());
    v.data = json{{"kind", "randn"}, {"std", 1.0}};
    v.pointer = "input '" + v.name + "'";
    if (names.count(v.name))
      fail("input '" + v.name + "' is defined twice");
    names.insert(v.name);
    symbols[v.name].value = int(graph.values.size());
    graph.values.push_back(std::move(v));
  }
}

std::vector<float> OnnxReader::initializerFloats(const onnx::TensorProto &t) {
  int64_t count = 1;
  for (int64_t d : t.dims())
    count *= d;
  std::string where = "initializer '" + t.name() + "'";
  std::vector<float> values(size_t(count), 0.0f);
  if (t.data_location() == onnx::TensorProto::EXTERNAL) {
    std::string location;
    int64_t offset = 0, length = -1;
    for (const auto &entry : t.external_data()) {
      if (entry.key() == "location")
        location = entry.value();
      else if (entry.key() == "offset")
        offset = std::stoll(entry.value());
      else if (entry.key() == "length")
        length = std::stoll(entry.value());
    }
    std::filesystem::path file =
        std::filesystem::path(path).parent_path() / location;
    if (location.empty() || std::filesystem::path(location).is_absolute())
      fail(where + ": its external data has no relative 'location'");
    std::ifstream in(file, std::ios::binary);
    if (!in)
      fail(where + ": cannot open its external data file '" + file.string() +
           "'");
    int64_t bytes = count * 4;
    if (length >= 0 && length != bytes)
      fail(where + ": its external data has " + std::to_string(length) +
           " bytes, expected " + std::to_string(bytes));
    in.seekg(offset);
    in.read(reinterpret_cast<char *>(values.data()), bytes);
    if (in.gcount() != bytes)
      fail(where + ": its external data file '" + file.string() +
           "' ends before offset " + std::to_string(offset + bytes));
    return values;
  }
  if (!t.raw_data().empty()) {
    if (int64_t(t.raw_data().size()) != count * 4)
      fail(where + ": raw data of " + std::to_string(t.raw_data().size()) +
           " bytes, expected " + std::to_string(count * 4));
    std::memcpy(values.data(), t.raw_data().data(), t.raw_data().size());
    return values;
  }
  if (t.float_data_size() != count)
    fail(where + ": " + std::to_string(t.float_data_size()) +
         " values, expected " + std::to_string(count));
  std::copy(t.float_data().begin(), t.float_data().end(), values.begin());
  return values;
}

Constant OnnxReader::tensorConstant(const onnx::TensorProto &t) {
  Constant c;
  c.shape.assign(t.dims().begin(), t.dims().end());
  int64_t count = product(c.shape, 0, c.shape.size());
  auto raw = [&](auto tag) {
    using T = decltype(tag);
    std::vector<T> data(static_cast<size_t>(count));
    if (!t.raw_data().empty()) {
      if (t.raw_data().size() != data.size() * sizeof(T))
        fail("tensor '" + t.name() + "': raw data has the wrong size");
      std::memcpy(data.data(), t.raw_data().data(), t.raw_data().size());
    }
    return data;
  };
  switch (t.data_type()) {
  case onnx::TensorProto::FLOAT:
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
  default:
    fail("tensor '" + t.name() + "' has element type " +
         elemTypeName(t.data_type()) +
         "; this remat folds float, int32 and int64 constants only");
  }
  if (int64_t(c.values.size()) != count)
    fail("tensor '" + t.name() + "' holds " + std::to_string(c.values.size()) +
         " values, expected " + std::to_string(count));
  return c;
}

const Symbol &OnnxReader::symbolOf(int i) {
  const std::string &name = node->input(i);
  auto it = symbols.find(name);
  if (it != symbols.end())
    return it->second;
  auto init = initializers.find(name);
  if (init == initializers.end() && statisticsOutputs.count(name))
    failNode("input '" + name + "' is a statistics output of a "
             "BatchNormalization, which remat does not compute as a value "
             "(the running statistics are state it updates itself)");
  if (init == initializers.end())
    failNode("input '" + name + "' is not defined by an earlier node, an "
             "input or an initializer");
  // A float initializer becomes a parameter when a compute op reads it
  // (valueInput); until then it is constant data as well.
  Symbol &symbol = symbols[name];
  symbol.constant = tensorConstant(*init->second);
  return symbol;
}

const Constant *OnnxReader::constantInput(int i) {
  const Symbol &symbol = symbolOf(i);
  return symbol.value < 0 ? &*symbol.constant : nullptr;
}

const Constant &OnnxReader::requireConstant(int i, const std::string &what) {
  if (const Constant *c = constantInput(i))
    return *c;
  failNode(what + " '" + node->input(i) +
           "' is computed from the data; this remat needs it constant "
           "(export with fixed input shapes)");
}

std::vector<int64_t> OnnxReader::shapeOfInput(int i) {
  const Symbol &symbol = symbolOf(i);
  return symbol.value >= 0 ? typeOf(symbol.value).shape
                           : symbol.constant->shape;
}

int OnnxReader::valueInput(int i) {
  const std::string &name = node->input(i);
  const Symbol &symbol = symbolOf(i);
  if (symbol.value >= 0)
    return symbol.value;
  auto init = initializers.find(name);
  if (init != initializers.end() &&
      init->second->data_type() == onnx::TensorProto::FLOAT) {
    // 2. A float initializer read by a compute op: a trained parameter.
    const onnx::TensorProto &t = *init->second;
    Value v;
    v.kind = ValueKind::Param;
    v.name = name;
    v.type.shape.assign(t.dims().begin(), t.dims().end());
    if (v.type.shape.empty())
      failNode("initializer '" + name +
               "' is a scalar; remat's parameters have rank >= 1");
    // The values come from the weights file the plan names (docs/onnx.md).
    v.init = json{{"kind", "zeros"}};
    v.pointer = "initializer '" + name + "'";
    if (names.count(name))
      failNode("initializer '" + name + "' has the name of another value");
    names.insert(name);
    std::vector<float> values = initializerFloats(t);
    runtime::NamedTensor tensor{"F32", v.type.shape,
                                std::vector<char>(values.size() * 4)};
    std::memcpy(tensor.bytes.data(), values.data(), tensor.bytes.size());
    out.weights[name] = std::move(tensor);
    int id = int(graph.values.size());
    graph.values.push_back(std::move(v));
    symbols[name] = Symbol{id, std::nullopt};
    return id;
  }
  // Other constant data read as a tensor: a `constant` op when uniform.
  const Constant &c = *symbol.constant;
  bool uniform = std::all_of(c.values.begin(), c.values.end(),
                             [&](double v) { return v == c.values.front(); });
  if (c.values.empty() || !uniform)
    failNode("operand '" + name +
             "' is a constant tensor of differing values; this remat has "
             "no op for it yet (only uniform constants and float "
             "initializers are tensor operands)");
  std::string helper =
      nodeName + "/constant" +
      (nodeConstants ? std::to_string(nodeConstants) : std::string());
  ++nodeConstants;
  return emit(uniqueName(helper), "constant", {},
              json{{"value", c.values.front()}}, &c.shape);
}

int OnnxReader::stateInput(int i, const std::string &what) {
  const std::string &name = node->input(i);
  auto init = initializers.find(name);
  if (!hasInput(i) || init == initializers.end() ||
      init->second->data_type() != onnx::TensorProto::FLOAT)
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
  std::memcpy(tensor.bytes.data(), values.data(), tensor.bytes.size());
  out.weights[name] = std::move(tensor);
  int id = int(graph.values.size());
  graph.values.push_back(std::move(v));
  symbols[name] = Symbol{id, std::nullopt};
  return id;
}

//===----------------------------------------------------------------------===//
// 3. Nodes
//===----------------------------------------------------------------------===//

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

double OnnxReader::floatAttribute(const std::string &name,
                                  double fallback) const {
  const onnx::AttributeProto *a = attribute(name);
  if (!a)
    return fallback;
  if (a->type() != onnx::AttributeProto::FLOAT)
    failNode("attribute '" + name + "' must be a float");
  return a->f();
}

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

int OnnxReader::scalarConstant(double value, const std::string &name) {
  std::vector<int64_t> scalar;
  return emit(uniqueName(name), "constant", {}, json{{"value", value}},
              &scalar);
}

int OnnxReader::reshapeTo(int value, const std::vector<int64_t> &shape,
                          const std::string &name) {
  if (typeOf(value).shape == shape)
    return value;
  return emit(name, "reshape", {value}, json::object(), &shape);
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

void OnnxReader::defineConstant(int output, Constant c) {
  symbols[node->output(output)] = Symbol{-1, std::move(c)};
}

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

Constant OnnxReader::foldElementwise(const Constant &a, const Constant &b) {
  Constant r;
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
  int64_t count = product(r.shape, 0, rank);
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
    r.values.push_back(v);
  }
  return r;
}

void OnnxReader::importArithmetic() {
  const std::string &op = node->op_type();
  const Constant *a = constantInput(0), *b = constantInput(1);
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

/// Normalizes an axis in [-rank, rank) (or [-rank-1, rank] when inserting).
static std::optional<int64_t> normalizeAxis(int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank)
    return std::nullopt;
  return axis < 0 ? axis + rank : axis;
}

void OnnxReader::importShapeOp() {
  const std::string &op = node->op_type();
  if (op == "Constant") {
    const onnx::AttributeProto &a = node->attribute(0);
    Constant c;
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
    Constant c;
    for (int64_t k = start; k < end; ++k)
      c.values.push_back(double(shape[size_t(k)]));
    c.shape = {int64_t(c.values.size())};
    defineConstant(0, std::move(c));
    return;
  }
  if (op == "Gather") {
    const Constant &data = requireConstant(0, "Gather of a computed tensor: data");
    const Constant &indices = requireConstant(1, "indices");
    int64_t rank = int64_t(data.shape.size());
    auto axis = normalizeAxis(intAttribute("axis", 0), rank);
    if (!axis)
      failNode("axis out of range");
    Constant r;
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
    if (const Constant *c = constantInput(0)) {
      Constant r = *c;
      r.shape = result;
      defineConstant(0, std::move(r));
    } else {
      define(0, reshapeTo(valueInput(0), result, uniqueName(nodeName)));
    }
    return;
  }
  if (op == "Concat") {
    Constant r;
    std::vector<const Constant *> parts;
    for (int i = 0; i < node->input_size(); ++i)
      parts.push_back(&requireConstant(
          i, "Concat of computed tensors is not supported yet: input"));
    int64_t rank = int64_t(parts[0]->shape.size());
    auto axis = normalizeAxis(intAttribute("axis", 0), rank);
    if (!axis)
      failNode("axis out of range");
    r.shape = parts[0]->shape;
    r.shape[size_t(*axis)] = 0;
    for (const Constant *p : parts) {
      r.isFloat |= p->isFloat;
      r.shape[size_t(*axis)] += p->shape[size_t(*axis)];
    }
    int64_t outer = product(r.shape, 0, size_t(*axis));
    for (int64_t o = 0; o < outer; ++o)
      for (const Constant *p : parts) {
        int64_t block = product(p->shape, size_t(*axis), p->shape.size());
        for (int64_t k = 0; k < block; ++k)
          r.values.push_back(p->values[size_t(o * block + k)]);
      }
    defineConstant(0, std::move(r));
    return;
  }
  if (op == "Cast") {
    int64_t to = intAttribute("to", 0);
    if (const Constant *c = constantInput(0)) {
      Constant r = *c;
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

/// Clip with constant min / max inputs (absent: unbounded on that side).
void OnnxReader::importClip() {
  int x = valueInput(0);
  auto bound = [&](int i, const char *what, float fallback) {
    if (!hasInput(i))
      return fallback;
    const Constant &c = requireConstant(i, what);
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

/// Resize with mode nearest by integer factors (constant scales or sizes),
/// with the coordinate mappings that give x[i / scale] for them:
/// asymmetric with nearest_mode floor (torch's nn.Upsample), half_pixel or
/// pytorch_half_pixel with rounding to the nearest.
void OnnxReader::importResize() {
  auto text = [&](const std::string &name, const std::string &fallback) {
    const onnx::AttributeProto *a = attribute(name);
    return a ? a->s() : fallback;
  };
  std::string mode = text("mode", "nearest");
  std::string transform =
      text("coordinate_transformation_mode", "half_pixel");
  std::string rounding = text("nearest_mode", "round_prefer_floor");
  if (mode != "nearest")
    failNode("mode '" + mode + "' is not supported (only 'nearest')");
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
    const Constant &c = requireConstant(2, "scales");
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
    const Constant &c = requireConstant(3, "sizes");
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

void OnnxReader::importNode() {
  const std::string &op = node->op_type();
  nodeConstants = 0;
  if (!node->domain().empty() && node->domain() != "ai.onnx")
    failNode("op of domain '" + node->domain() +
             "' is not supported (only the default ONNX domain is)");
  const auto &table = onnxOpAttributes();
  auto entry = table.find(op);
  if (entry == table.end()) {
    std::vector<std::string> known = supportedOnnxOps();
    std::string list;
    for (const std::string &k : known)
      list += (list.empty() ? "" : ", ") + k;
    failNode("unsupported op '" + op + "'" + didYouMean(op, known) +
             " (supported: " + list + "; docs/onnx.md)");
  }
  for (const onnx::AttributeProto &a : node->attribute())
    if (!entry->second.count(a.name()))
      failNode("unsupported attribute '" + a.name() + "'" +
               (entry->second.empty()
                    ? std::string(" (" + op + " takes none here)")
                    : didYouMean(a.name(), std::vector<std::string>(
                                               entry->second.begin(),
                                               entry->second.end()))));
  for (int i = 1; i < node->output_size() && op != "BatchNormalization"; ++i)
    if (!node->output(i).empty())
      failNode("a second output ('" + node->output(i) +
               "') is not supported");
  if (op == "Constant" && node->attribute_size() != 1)
    failNode("a Constant needs exactly one value attribute");

  if (op == "Constant" || op == "Shape" || op == "Gather" ||
      op == "Unsqueeze" || op == "Squeeze" || op == "Concat" || op == "Cast") {
    importShapeOp();
    return;
  }
  if (op == "Identity") {
    const Symbol &s = symbolOf(0);
    if (s.value >= 0)
      define(0, s.value);
    else
      defineConstant(0, *s.constant);
    return;
  }
  if (op == "Add" || op == "Sub" || op == "Mul" || op == "Div") {
    importArithmetic();
    return;
  }
  if (op == "BatchNormalization") {
    importBatchNormalization();
    return;
  }
  if (op == "Clip") {
    importClip();
    return;
  }
  if (op == "Resize") {
    importResize();
    return;
  }
  if (op == "Reshape" || op == "Flatten") {
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
      const Constant &target = requireConstant(1, "the shape");
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
    if (const Constant *c = constantInput(0)) {
      Constant r = *c;
      r.shape = result;
      defineConstant(0, std::move(r));
      return;
    }
    define(0, reshapeTo(valueInput(0), result, uniqueName(nodeName)));
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
  if (op == "Transpose") {
    int x = valueInput(0);
    int64_t rank = int64_t(typeOf(x).shape.size());
    std::vector<int64_t> perm;
    if (const onnx::AttributeProto *a = attribute("perm"))
      perm.assign(a->ints().begin(), a->ints().end());
    else
      for (int64_t k = rank - 1; k >= 0; --k)
        perm.push_back(k);
    define(0, emit(uniqueName(nodeName), "transpose", {x},
                   json{{"permutation", perm}}));
    return;
  }
  if (op == "MatMul") {
    int a = valueInput(0), b = valueInput(1);
    if (typeOf(a).shape.size() < 2 || typeOf(b).shape.size() < 2)
      failNode("MatMul of a 1-D operand is not supported yet");
    define(0, emit(uniqueName(nodeName), "matmul", {a, b}));
    return;
  }
  if (op == "Gemm") {
    double alpha = floatAttribute("alpha", 1.0), beta = floatAttribute("beta", 1.0);
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
    return;
  }
}

//===----------------------------------------------------------------------===//
// 4. Loss, pruning, optimizer
//===----------------------------------------------------------------------===//

void OnnxReader::addLoss() {
  if (proto.graph().output_size() == 0)
    fail("the graph has no output; remat trains the loss of its first output");
  const std::string &outputName = proto.graph().output(0).name();
  auto it = symbols.find(outputName);
  if (it == symbols.end() || it->second.value < 0 ||
      graph.values[size_t(it->second.value)].kind == ValueKind::Input)
    fail("the first output '" + outputName +
         "' is not computed from the inputs; there is nothing to train");
  int output = it->second.value;
  const ValueType outType = typeOf(output);
  if (outType.shape.empty())
    fail("the first output '" + outputName +
         "' is a scalar; remat adds the loss itself (export the model's "
         "output before the loss)");

  const std::vector<std::string> losses = {"cross_entropy", "mse"};
  std::string loss = options.training.loss;
  if (loss.empty())
    loss = outType.shape.back() == 1 ? "mse" : "cross_entropy";
  if (std::find(losses.begin(), losses.end(), loss) == losses.end())
    throw OptionError("--loss: unknown loss '" + loss + "'" +
                      didYouMean(loss, losses) +
                      " (available: cross_entropy, mse)");
  std::vector<int64_t> rows(outType.shape.begin(), outType.shape.end() - 1);
  const char *labelsName = "labels";
  if (names.count(labelsName))
    fail("the model already has a value named 'labels', the name of the "
         "labels input remat adds");
  names.insert(labelsName);

  // Labels from a fixed random linear teacher of the first float input
  // whose rows match, so that the loss can fall (docs/model-format.md).
  std::string teacherOf;
  for (const Value &v : graph.values)
    if (v.kind == ValueKind::Input && !v.type.shape.empty() &&
        std::vector<int64_t>(v.type.shape.begin(), v.type.shape.end() - 1) ==
            rows) {
      teacherOf = v.name;
      break;
    }
  Value labels;
  labels.kind = ValueKind::Input;
  labels.name = labelsName;
  labels.pointer = "input 'labels'";
  if (loss == "cross_entropy") {
    labels.type = ValueType{"i64", rows};
    int64_t classes = outType.shape.back();
    labels.data = teacherOf.empty()
                      ? json{{"kind", "randint"}, {"low", 0}, {"high", classes}}
                      : json{{"kind", "teacher"},
                             {"of", teacherOf},
                             {"classes", classes}};
  } else {
    labels.type = ValueType{"f32", outType.shape};
    labels.data = teacherOf.empty() ? json{{"kind", "randn"}, {"std", 1.0}}
                                    : json{{"kind", "teacher"}, {"of", teacherOf}};
  }
  int labelsId = int(graph.values.size());
  graph.values.push_back(labels);

  static const onnx::NodeProto lossNode = [] {
    onnx::NodeProto n;
    n.set_op_type("loss");
    return n;
  }();
  node = &lossNode;
  nodeName = "loss";
  graph.loss = emit(uniqueName("loss"), loss, {output, labelsId});
}

void OnnxReader::pruneToLoss() {
  // Only the loss of the first output is trained: ops that do not reach it
  // (other outputs) would be computed for nothing, so they are left out.
  std::vector<char> needed = valuesReachingLoss(graph);
  std::vector<int> newId(graph.values.size(), -1);
  std::vector<Value> values;
  for (size_t i = 0; i < graph.values.size(); ++i) {
    const Value &v = graph.values[i];
    bool teacherSource = false;
    for (const Value &u : graph.values)
      teacherSource |= u.kind == ValueKind::Input &&
                       u.data.value("of", "") == v.name;
    if (!needed[i] && !(v.kind == ValueKind::Input && teacherSource)) {
      if (v.kind == ValueKind::Param || v.kind == ValueKind::State)
        out.weights.erase(v.name);
      continue;
    }
    newId[i] = int(values.size());
    values.push_back(v);
  }
  std::vector<Op> ops;
  size_t dropped = 0;
  for (Op &op : graph.ops) {
    if (!needed[size_t(op.result)]) {
      ++dropped;
      continue;
    }
    for (int &v : op.operands)
      v = newId[size_t(v)];
    op.result = newId[size_t(op.result)];
    ops.push_back(std::move(op));
  }
  if (dropped)
    graph.warnings.push_back(
        graph.sourceName + ": " + std::to_string(dropped) +
        " op(s) do not reach the first output '" +
        proto.graph().output(0).name() + "' and are left out of the step");
  graph.loss = newId[size_t(graph.loss)];
  graph.values = std::move(values);
  graph.ops = std::move(ops);
}

void OnnxReader::readOptimizer() {
  const TrainingOptions &t = options.training;
  if (t.optimizer == "adamw")
    graph.optimizer = json{{"kind", "adamw"},      {"lr", t.lr.value_or(1e-3)},
                           {"beta1", 0.9},         {"beta2", 0.999},
                           {"eps", 1e-8},          {"weight_decay", 0.01}};
  else
    graph.optimizer = json{{"kind", "sgd"},
                           {"lr", t.lr.value_or(0.01)},
                           {"momentum", 0.0},
                           {"weight_decay", 0.0}};
}

OnnxModel OnnxReader::read() {
  graph.sourceName = path;
  graph.name = std::filesystem::path(path).stem().string();
  // 1.
  parse();
  checkAndInferShapes();
  // 2.
  readInputs();
  for (const Value &v : graph.values)
    if (v.kind == ValueKind::Input && !v.type.shape.empty()) {
      graph.batch = v.type.shape.front();
      break;
    }
  // 3.
  for (const onnx::NodeProto &n : proto.graph().node()) {
    node = &n;
    std::string wanted = n.name().empty() ? (n.output_size() ? n.output(0) : "")
                                          : n.name();
    nodeName = wanted;
    // The name the node's last op takes; helpers extend it.
    for (int k = 1; names.count(nodeName); ++k)
      nodeName = wanted + "." + std::to_string(k);
    importNode();
  }
  // 4.
  addLoss();
  pruneToLoss();
  readOptimizer();
  // 5.
  return std::move(out);
}

} // namespace

const std::vector<std::string> &supportedOnnxOps() {
  static const std::vector<std::string> ops = [] {
    std::vector<std::string> names;
    for (const auto &entry : onnxOpAttributes())
      names.push_back(entry.first);
    return names;
  }();
  return ops;
}

OnnxModel importOnnxFile(const std::string &path,
                         const ModelOptions &options) {
  if (!options.preset.empty() || !options.overrides.empty())
    throw OptionError(path + ": --preset and --set configure JSON models; an "
                             "ONNX model has no config (use --input-shape)");
  return OnnxReader(path, options).read();
}

} // namespace remat::model
