//===- OnnxImporter.cpp - Read an ONNX model into a ModelGraph ------------===//
//
// The import works in five steps:
//   1. parse the protobuf, check the opset (13-17 of the default domain),
//      run the ONNX checker; fix dynamic input dims from --input-shape and
//      run ONNX shape inference (whose shapes cross-check ours, step 3);
//   2. define the graph's inputs (float or integer, static shapes) as
//      model inputs; initializers are looked up lazily: a float one is a
//      parameter with its value unless --frozen names it, frozen and
//      integer ones are constant data;
//   3. walk the nodes in their (topological) order: nodes whose inputs are
//      constant (Constant, Shape, Gather, Unsqueeze, Concat, Slice,
//      arithmetic...) are evaluated here; every other node is mapped onto
//      graph ops (Gemm -> matmul [+ add]), each result type inferred by
//      the op's type rule (ops/ShapeRules.h), so a type error names the
//      ONNX node. Constant data a graph op reads becomes a `constant` op
//      (all elements equal) or an input fed from the weights file;
//   4. add the input `labels` and the loss on the graph's first output,
//      drop what does not reach it, and set the optimizer;
//   5. return the graph with the values of every parameter and fixed
//      input.
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
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <set>
#include <sstream>

#include <sys/wait.h>
#include <unistd.h>

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

/// Whether `s` is valid UTF-8 (protobuf does not check the strings of a
/// proto2 file; names reach JSON, the plan and the weights file's header).
bool isValidUtf8(const std::string &s) {
  // RFC 3629: no overlong forms, surrogates or code points past U+10FFFF.
  size_t i = 0;
  auto in = [&](size_t k, unsigned lo, unsigned hi) {
    if (k >= s.size())
      return false;
    unsigned c = static_cast<unsigned char>(s[k]);
    return c >= lo && c <= hi;
  };
  while (i < s.size()) {
    unsigned c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      i += 1;
    } else if (c >= 0xC2 && c <= 0xDF && in(i + 1, 0x80, 0xBF)) {
      i += 2;
    } else if (c >= 0xE0 && c <= 0xEF &&
               in(i + 1, c == 0xE0 ? 0xA0 : 0x80, c == 0xED ? 0x9F : 0xBF) &&
               in(i + 2, 0x80, 0xBF)) {
      i += 3;
    } else if (c >= 0xF0 && c <= 0xF4 &&
               in(i + 1, c == 0xF0 ? 0x90 : 0x80, c == 0xF4 ? 0x8F : 0xBF) &&
               in(i + 2, 0x80, 0xBF) && in(i + 3, 0x80, 0xBF)) {
      i += 4;
    } else {
      return false;
    }
  }
  return true;
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
      {"Dropout", {"seed"}},
      {"Erf", {}},
      {"Flatten", {"axis"}},
      {"Gather", {"axis"}},
      {"Gemm", {"alpha", "beta", "transA", "transB"}},
      {"Identity", {}},
      {"LayerNormalization", {"axis", "epsilon", "stash_type"}},
      {"MatMul", {}},
      {"Mul", {}},
      {"Pow", {}},
      {"ReduceMean", {"axes", "keepdims"}},
      {"Relu", {}},
      {"Reshape", {"allowzero"}},
      {"Resize",
       {"coordinate_transformation_mode", "cubic_coeff_a", "exclude_outside",
        "extrapolation_value", "mode", "nearest_mode"}},
      {"Shape", {"start", "end"}},
      {"Sigmoid", {}},
      {"Slice", {}},
      {"Softmax", {"axis"}},
      {"Split", {"axis"}},
      {"Sqrt", {}},
      {"Squeeze", {}},
      {"Sub", {}},
      {"Tanh", {}},
      {"Transpose", {"perm"}},
      {"Unsqueeze", {}},
      // Convolution and pooling (2-D, NCHW).
      {"AveragePool",
       {"auto_pad", "ceil_mode", "count_include_pad", "kernel_shape", "pads",
        "strides"}},
      {"Conv",
       {"auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"}},
      {"GlobalAveragePool", {}},
      {"MaxPool",
       {"auto_pad", "ceil_mode", "dilations", "kernel_shape", "pads",
        "storage_order", "strides"}},
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
  /// Outputs of imported nodes that remat does not compute (Dropout's
  /// mask, LayerNormalization's mean), with the words for the error when a
  /// node reads one.
  std::map<std::string, std::string> unavailable;
  /// Constant data read as a tensor operand: the fixed input made for it.
  std::map<std::string, int> fixedInputs;
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
  void checkStrings();
  void checkAndInferShapes();
  std::string isolated(const std::string &what,
                       const std::function<std::string()> &work,
                       bool &failed);
  void readInputs();
  void importNode();
  void addLoss();
  void pruneToLoss();
  void readOptimizer();

  std::string uniqueName(const std::string &wanted);
  int64_t elementCount(const onnx::TensorProto &t);
  std::vector<float> initializerFloats(const onnx::TensorProto &t);
  Constant tensorConstant(const onnx::TensorProto &t);
  void checkFrozen();
  int parameter(const onnx::TensorProto &t);
  int fixedInput(const std::string &onnxName, const Constant &c);

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

  // Nodes of transformer models.
  double scalarInput(int i, const std::string &what, double fallback);
  void importEmbedding();
  void importSlice();
  void importSplit();
  void importConcat();
  void importLayerNorm();
  void importReduceMean();
  void importDropout();
  void importPow();
  void importWindowOp();
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
  checkStrings();
  if (opset < kMinOnnxOpset || opset > kMaxOnnxOpset)
    fail("opset " + std::to_string(opset) +
         " is not supported: this remat reads opsets " +
         std::to_string(kMinOnnxOpset) + " to " +
         std::to_string(kMaxOnnxOpset) +
         " (export with torch.onnx.export(..., opset_version=17))");
}

/// Every name in the graph is valid UTF-8 (a flipped byte in a name would
/// otherwise surface as a JSON library error far from the file).
void OnnxReader::checkStrings() {
  auto check = [&](const std::string &text, const std::string &what) {
    if (!isValidUtf8(text))
      fail(what + " is not valid UTF-8 (a corrupt file)");
  };
  const onnx::GraphProto &g = proto.graph();
  check(g.name(), "the graph's name");
  for (int i = 0; i < g.node_size(); ++i) {
    const onnx::NodeProto &n = g.node(i);
    std::string where = "the name or an input or output of node " +
                        std::to_string(i);
    check(n.name(), where);
    check(n.op_type(), where);
    check(n.domain(), where);
    for (const std::string &name : n.input())
      check(name, where);
    for (const std::string &name : n.output())
      check(name, where);
    for (const onnx::AttributeProto &a : n.attribute()) {
      check(a.name(), "an attribute name of node " + std::to_string(i));
      check(a.s(), "a string attribute of node " + std::to_string(i));
    }
  }
  for (const auto *list : {&g.input(), &g.output(), &g.value_info()})
    for (const onnx::ValueInfoProto &v : *list) {
      check(v.name(), "the name of a graph input, output or value_info");
      for (const auto &dim : v.type().tensor_type().shape().dim())
        check(dim.dim_param(), "a dimension name of '" + v.name() + "'");
    }
  for (const onnx::TensorProto &t : g.initializer()) {
    check(t.name(), "the name of an initializer");
    for (const auto &entry : t.external_data())
      check(entry.value(), "the external data of initializer '" + t.name() +
                               "'");
  }
}

/// Runs `work` in a child process and returns what it wrote: libonnx's
/// checker and shape inference functions can crash on a malformed model
/// (an input without a type, a rank they assume; onnx/onnx#6180, #6185),
/// and such a crash must be an error about the file, not a crash of remat.
/// `work` returns its result, or throws for an error (whose message is
/// returned with `failed` set).
std::string OnnxReader::isolated(const std::string &what,
                                 const std::function<std::string()> &work,
                                 bool &failed) {
  int fds[2];
  if (pipe(fds) != 0)
    fail("cannot create a pipe for " + what);
  std::fflush(nullptr);
  pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    fail("cannot fork for " + what);
  }
  if (pid == 0) {
    close(fds[0]);
    std::string result;
    try {
      result = "O" + work();
    } catch (const std::exception &e) {
      result = std::string("E") + e.what();
    } catch (...) {
      result = "Eunknown exception";
    }
    const char *p = result.data();
    size_t left = result.size();
    while (left > 0) {
      ssize_t n = ::write(fds[1], p, left);
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0)
        _exit(3);
      p += n;
      left -= size_t(n);
    }
    _exit(0);
  }
  close(fds[1]);
  std::string result;
  char buffer[65536];
  for (;;) {
    ssize_t n = ::read(fds[0], buffer, sizeof buffer);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      break;
    result.append(buffer, size_t(n));
  }
  close(fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFSIGNALED(status))
    fail(what + " crashed on the model (" + strsignal(WTERMSIG(status)) +
         "): the file is malformed (check it with onnx.checker."
         "check_model(..., full_check=True))");
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || result.empty())
    fail(what + " failed on the model (exit status " +
         std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1) + ")");
  failed = result[0] == 'E';
  std::string text = result.substr(1);
  if (failed) {
    // One line: libonnx lists an error per node, most of them consequences
    // of the first.
    while (!text.empty() && (text.back() == '\n' || text.back() == ' '))
      text.pop_back();
    size_t newline = text.find('\n');
    if (newline != std::string::npos) {
      size_t more = size_t(std::count(text.begin() + long(newline),
                                      text.end(), '\n'));
      text = text.substr(0, newline) + " (and " + std::to_string(more) +
             " more line" + (more == 1 ? "" : "s") + ")";
    }
  }
  return text;
}

void OnnxReader::checkAndInferShapes() {
  bool failed = false;
  std::string message = isolated(
      "the ONNX checker",
      [&] {
        onnx::checker::check_model(path);
        return std::string();
      },
      failed);
  if (failed)
    fail("the ONNX checker rejects the model: " + message);

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
    // (Before shape inference, whose error for this is less clear.)
    int elemType = input.type().tensor_type().elem_type();
    if (elemType != onnx::TensorProto::FLOAT &&
        elemType != onnx::TensorProto::INT64 &&
        elemType != onnx::TensorProto::INT32)
      fail("input '" + input.name() + "' is " + elemTypeName(elemType) +
           "; this remat imports float (f32) and integer (int64, int32) "
           "inputs only");
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

  // In a child process (isolated()); it sends back the inferred shapes.
  std::string inferred = isolated(
      "ONNX shape inference",
      [&] {
        onnx::ShapeInferenceOptions inference(/*check_type=*/true,
                                              /*strict_mode=*/1,
                                              /*data_prop=*/true);
        onnx::shape_inference::InferShapes(
            proto, onnx::OpSchemaRegistry::Instance(), inference);
        onnx::GraphProto shapes;
        *shapes.mutable_value_info() = proto.graph().value_info();
        return shapes.SerializeAsString();
      },
      failed);
  if (failed)
    fail("ONNX shape inference fails: " + inferred);
  onnx::GraphProto shapes;
  if (!shapes.ParseFromString(inferred))
    fail("ONNX shape inference returned no shapes");
  proto.mutable_graph()->mutable_value_info()->Swap(
      shapes.mutable_value_info());
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
    // checkAndInferShapes refused every other element type.
    const auto &tensor = input.type().tensor_type();
    int elemType = tensor.elem_type();
    Value v;
    v.kind = ValueKind::Input;
    v.name = input.name();
    v.type.dtype = elemType == onnx::TensorProto::FLOAT   ? "f32"
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
    if (elemType == onnx::TensorProto::FLOAT)
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

std::vector<float> OnnxReader::initializerFloats(const onnx::TensorProto &t) {
  int64_t count = elementCount(t);
  std::string where = "initializer '" + t.name() + "'";
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
    int64_t bytes = count * 4;
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
    std::vector<float> values(size_t(count), 0.0f);
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
    std::vector<float> values(size_t(count), 0.0f);
    std::memcpy(values.data(), t.raw_data().data(), t.raw_data().size());
    return values;
  }
  if (t.float_data_size() != count)
    fail(where + ": " + std::to_string(t.float_data_size()) +
         " values, expected " + std::to_string(count));
  return std::vector<float>(t.float_data().begin(), t.float_data().end());
}

Constant OnnxReader::tensorConstant(const onnx::TensorProto &t) {
  Constant c;
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
    fail("tensor '" + t.name() + "' has element type " +
         elemTypeName(t.data_type()) +
         "; this remat folds float, int32, int64 and bool constants only");
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
  // A float initializer is a trained parameter unless --frozen names it;
  // frozen and integer ones are constant data.
  if (init->second->data_type() == onnx::TensorProto::FLOAT &&
      !options.training.frozen.count(name)) {
    int id = parameter(*init->second);
    return symbols[name] = Symbol{id, std::nullopt};
  }
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

/// Every --frozen name is a float initializer.
void OnnxReader::checkFrozen() {
  std::vector<std::string> floats;
  for (const auto &[name, t] : initializers)
    if (t->data_type() == onnx::TensorProto::FLOAT)
      floats.push_back(name);
  for (const std::string &name : options.training.frozen) {
    auto it = initializers.find(name);
    if (it == initializers.end())
      throw OptionError(graph.sourceName + ": --frozen " + name +
                        ": the model has no initializer '" + name + "'" +
                        didYouMean(name, floats));
    if (it->second->data_type() != onnx::TensorProto::FLOAT)
      throw OptionError(graph.sourceName + ": --frozen " + name +
                        ": initializer '" + name + "' is " +
                        elemTypeName(it->second->data_type()) +
                        ", which is never trained (only float initializers "
                        "are)");
  }
}

/// 2. A float initializer that is trained: a parameter with its values.
int OnnxReader::parameter(const onnx::TensorProto &t) {
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
  std::vector<float> values = initializerFloats(t);
  if (!std::all_of(values.begin(), values.end(),
                   [](float x) { return std::isfinite(x); }))
    failNode("initializer '" + name +
             "' holds inf or NaN, which a trained parameter cannot; if "
             "torch does not train it (a buffer, such as an attention "
             "mask), name it with --frozen " + name);
  names.insert(name);
  runtime::NamedTensor tensor{"F32", v.type.shape,
                              std::vector<char>(values.size() * 4)};
  std::memcpy(tensor.bytes.data(), values.data(), tensor.bytes.size());
  out.weights[name] = std::move(tensor);
  int id = int(graph.values.size());
  graph.values.push_back(std::move(v));
  return id;
}

/// Constant data of differing values (or integers) read as a tensor
/// operand: an input without a generator, fed every step with these values
/// from the weights file (a causal mask, position ids).
int OnnxReader::fixedInput(const std::string &onnxName, const Constant &c) {
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

int OnnxReader::valueInput(int i) {
  const std::string &name = node->input(i);
  const Symbol &symbol = symbolOf(i);
  if (symbol.value >= 0)
    return symbol.value;
  // Constant data read as a tensor: a `constant` op when uniform and
  // float, else a fixed input.
  const Constant &c = *symbol.constant;
  bool uniform = std::all_of(c.values.begin(), c.values.end(),
                             [&](double v) { return v == c.values.front(); });
  if (c.values.empty() || !uniform || !c.isFloat ||
      !std::isfinite(c.values.front()))
    return fixedInput(name, c);
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
  // Split defines every output; Dropout's mask and LayerNormalization's
  // saved statistics are not computed: an error only if a node reads them.
  // BatchNormalization's statistics outputs are checked by symbolOf.
  for (int i = 1; i < node->output_size() && op != "Split" &&
                  op != "BatchNormalization";
       ++i) {
    if (node->output(i).empty())
      continue;
    if (op != "Dropout" && op != "LayerNormalization")
      failNode("a second output ('" + node->output(i) +
               "') is not supported");
    unavailable[node->output(i)] =
        "output " + std::to_string(i) + " of node '" + nodeName + "' (" +
        op + "), which remat does not compute (" +
        (op == "Dropout" ? "the mask" : "the saved statistics") + ")";
  }
  if (op == "Constant" && node->attribute_size() != 1)
    failNode("a Constant needs exactly one value attribute");

  // Gather and Concat of computed tensors (or parameters) are compute ops;
  // of constant data they are folded like the other shape ops.
  // Only they look: symbolOf makes a parameter or constant of an
  // initializer, which BatchNormalization's running statistics must not be.
  bool readsValue = false;
  if (op == "Gather" || op == "Concat")
    for (int i = 0; i < node->input_size(); ++i)
      readsValue |= hasInput(i) && symbolOf(i).value >= 0;
  if (op == "Gather" && readsValue) {
    importEmbedding();
    return;
  }
  if (op == "Concat" && readsValue) {
    importConcat();
    return;
  }
  if (op == "Constant" || op == "Shape" || op == "Gather" ||
      op == "Unsqueeze" || op == "Squeeze" || op == "Concat" || op == "Cast") {
    importShapeOp();
    return;
  }
  // Ops imported by one method each.
  using Importer = void (OnnxReader::*)();
  static const std::map<std::string, Importer> kImporters = {
      {"Slice", &OnnxReader::importSlice},
      {"Split", &OnnxReader::importSplit},
      {"LayerNormalization", &OnnxReader::importLayerNorm},
      {"ReduceMean", &OnnxReader::importReduceMean},
      {"Dropout", &OnnxReader::importDropout},
      {"Pow", &OnnxReader::importPow},
      {"Add", &OnnxReader::importArithmetic},
      {"Sub", &OnnxReader::importArithmetic},
      {"Mul", &OnnxReader::importArithmetic},
      {"Div", &OnnxReader::importArithmetic},
      {"Conv", &OnnxReader::importWindowOp},
      {"MaxPool", &OnnxReader::importWindowOp},
      {"AveragePool", &OnnxReader::importWindowOp},
      {"GlobalAveragePool", &OnnxReader::importWindowOp},
      {"BatchNormalization", &OnnxReader::importBatchNormalization},
      {"Clip", &OnnxReader::importClip},
      {"Resize", &OnnxReader::importResize}};
  if (auto it = kImporters.find(op); it != kImporters.end()) {
    (this->*(it->second))();
    return;
  }
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
  if (op == "Identity") {
    const Symbol &s = symbolOf(0);
    if (s.value >= 0)
      define(0, s.value);
    else
      defineConstant(0, *s.constant);
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

//===----------------------------------------------------------------------===//
// 3b. Nodes of transformer models
//===----------------------------------------------------------------------===//

/// Input `i` as one number: constant data whose elements are all equal
/// (`fallback` when the input is absent).
double OnnxReader::scalarInput(int i, const std::string &what,
                               double fallback) {
  if (!hasInput(i))
    return fallback;
  const Constant &c = requireConstant(i, what);
  if (c.values.empty() ||
      !std::all_of(c.values.begin(), c.values.end(),
                   [&](double v) { return v == c.values.front(); }))
    failNode(what + " '" + node->input(i) +
             "' must be one number (a constant of equal elements)");
  return c.values.front();
}

/// Gather of rows of a table (a parameter, or computed) by integer
/// indices: `embedding`. Indices that are a model input without a
/// generator get randint in [0, rows).
void OnnxReader::importEmbedding() {
  std::vector<int64_t> table = shapeOfInput(0);
  int64_t rank = int64_t(table.size());
  int64_t axis = intAttribute("axis", 0);
  if (rank != 2 || (axis != 0 && axis != -2))
    failNode("Gather of a computed tensor or parameter is supported as an "
             "embedding lookup only: data of rank 2, axis 0 (got " +
             ops::formatShape(table) + ", axis " + std::to_string(axis) + ")");
  int data = valueInput(0), indices = valueInput(1);
  Value &ids = graph.values[size_t(indices)];
  if (ids.kind == ValueKind::Input && ids.data.is_null() &&
      !fixedInputs.count(node->input(1)))
    ids.data = json{{"kind", "randint"}, {"low", 0}, {"high", table[0]}};
  define(0, emit(uniqueName(nodeName), "embedding", {data, indices}));
}

namespace {
/// The element of `values` (row-major `shape`) that element `index` of a
/// slice with per-dim `starts` and `steps` and result `result` reads.
int64_t slicedIndex(int64_t index, const std::vector<int64_t> &shape,
                    const std::vector<int64_t> &result,
                    const std::vector<int64_t> &starts,
                    const std::vector<int64_t> &steps) {
  int64_t source = 0, stride = 1;
  for (size_t k = 0; k < shape.size(); ++k) {
    size_t d = shape.size() - 1 - k;
    int64_t i = index % result[d];
    index /= result[d];
    source += (starts[d] + i * steps[d]) * stride;
    stride *= shape[d];
  }
  return source;
}
} // namespace

/// Slice with constant starts/ends/axes/steps: folded on constant data,
/// else `slice` (nothing when it keeps the whole tensor).
void OnnxReader::importSlice() {
  std::vector<int64_t> shape = shapeOfInput(0);
  int64_t rank = int64_t(shape.size());
  const Constant &starts = requireConstant(1, "the starts");
  const Constant &ends = requireConstant(2, "the ends");
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
  std::set<int64_t> seen;
  for (size_t k = 0; k < n; ++k) {
    auto axis = normalizeAxis(int64_t(axes[k]), rank);
    if (!axis || !seen.insert(*axis).second)
      failNode("axis " + std::to_string(int64_t(axes[k])) +
               " is out of range or repeated");
    int64_t dim = shape[size_t(*axis)];
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
    if (end[a] <= begin[a])
      failNode("the slice of axis " + std::to_string(*axis) +
               " is empty, which remat does not support");
  }
  std::vector<int64_t> result;
  for (size_t d = 0; d < size_t(rank); ++d)
    result.push_back((end[d] - begin[d] + stride[d] - 1) / stride[d]);
  if (const Constant *c = constantInput(0)) {
    Constant r;
    r.isFloat = c->isFloat;
    r.shape = result;
    int64_t count = product(result, 0, result.size());
    for (int64_t i = 0; i < count; ++i)
      r.values.push_back(
          c->values[size_t(slicedIndex(i, shape, result, begin, stride))]);
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

/// Concat with a computed (or parameter) part: a chain of `concat`s.
void OnnxReader::importConcat() {
  std::vector<int64_t> shape = shapeOfInput(0);
  auto axis = normalizeAxis(intAttribute("axis", 0), int64_t(shape.size()));
  if (!axis)
    failNode("axis " + std::to_string(intAttribute("axis", 0)) +
             " is out of range");
  int joined = valueInput(0);
  for (int i = 1; i < node->input_size(); ++i) {
    std::string name = i + 1 == node->input_size()
                           ? nodeName
                           : nodeName + "/concat" + std::to_string(i);
    joined = emit(uniqueName(name), "concat", {joined, valueInput(i)},
                  json{{"axis", *axis}});
  }
  define(0, joined);
}

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
    beta = emit(uniqueName(nodeName + "/zero_bias"), "constant", {},
                json{{"value", 0.0}}, &d);
  }
  double epsilon = floatAttribute("epsilon", 1e-5);
  define(0, emit(uniqueName(nodeName), "layer_norm", {x, gamma, beta},
                 json{{"epsilon", epsilon}}));
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

/// Dropout: `dropout` in training mode with a positive ratio, else the
/// identity (inference mode, or ratio 0). The seed is the node's `seed`
/// attribute, or a hash of its name.
void OnnxReader::importDropout() {
  int x = valueInput(0);
  double ratio = scalarInput(1, "the ratio", 0.5);
  bool training = scalarInput(2, "training_mode", 0.0) != 0.0;
  if (!training || ratio == 0.0) {
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

/// Pow by a constant exponent: `pow` (folded on constant data).
void OnnxReader::importPow() {
  double exponent = scalarInput(1, "the exponent", 1.0);
  if (const Constant *c = constantInput(0)) {
    Constant r = *c;
    for (double &v : r.values)
      v = std::pow(v, exponent);
    defineConstant(0, std::move(r));
    return;
  }
  int x = valueInput(0);
  define(0, emit(uniqueName(nodeName), "pow", {x},
                 json{{"exponent", exponent}}));
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
    if (v.kind == ValueKind::Input && isFloatDType(v.type.dtype) &&
        !v.type.shape.empty() &&
        std::vector<int64_t>(v.type.shape.begin(), v.type.shape.end() - 1) ==
            rows) {
      teacherOf = v.name;
      break;
    }
  // A language model: token ids of the labels' shape drawn from the
  // output's classes. They become sequences and the labels the next
  // tokens, a task the model can learn.
  Value *tokens = nullptr;
  if (loss == "cross_entropy")
    for (Value &v : graph.values)
      if (v.kind == ValueKind::Input && v.type.shape == rows &&
          v.data.is_object() && v.data.value("kind", "") == "randint" &&
          v.data.value("high", int64_t(0)) == outType.shape.back()) {
        tokens = &v;
        break;
      }
  Value labels;
  labels.kind = ValueKind::Input;
  labels.name = labelsName;
  labels.pointer = "input 'labels'";
  if (tokens) {
    int64_t vocab = outType.shape.back();
    tokens->data = json{{"kind", "sequence"}, {"vocab", vocab}};
    labels.type = ValueType{"i64", rows};
    labels.data = json{{"kind", "labels_of"}, {"of", tokens->name}};
    graph.tokensPerSample = product(rows, 1, rows.size());
  } else if (loss == "cross_entropy") {
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
      teacherSource |= u.kind == ValueKind::Input && u.data.is_object() &&
                       u.data.value("of", "") == v.name;
    if (!needed[i] && !(v.kind == ValueKind::Input && teacherSource)) {
      out.weights.erase(v.name); // a parameter's or a fixed input's values
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
  checkFrozen();
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
  if (options.ranks > 1)
    throw OptionError(path + ": --ranks is not supported for ONNX models "
                             "yet (JSON models only; docs/distributed.md)");
  return OnnxReader(path, options).read();
}

} // namespace remat::model
