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
//      ONNX node. Constant data a graph op reads becomes a constant op
//      (all elements equal) or an input fed from the weights file;
//   4. add the input `labels` and the loss on the graph's first output,
//      drop what does not reach it, and set the optimizer;
//   5. return the graph with the values of every parameter and fixed
//      input.
// Ops are named after their ONNX node (`/fc1/Gemm`); a node mapped to
// several ops names the last one so and its helpers `/fc1/Gemm/matmul`.
//
// This file runs the steps and holds the op table, the node dispatch and
// step 4; the reader's other parts are in compiler/onnx/ (OnnxReader.h).
//
//===----------------------------------------------------------------------===//

#include "compiler/OnnxImporter.h"

#include "compiler/onnx/OnnxReader.h"
#include "ops/Suggest.h"

#include <algorithm>
#include <filesystem>

namespace remat::model {

namespace onnx_reader {

namespace {

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
      {"ConstantOfShape", {"value"}},
      {"Expand", {}},
      {"Mod", {"fmod"}},
      {"Pad", {"mode"}},
      {"Equal", {}},
      {"Less", {}},
      {"Greater", {}},
      {"Where", {}},
      {"Range", {}},
      {"Not", {}},
      {"ScatterND", {"reduction"}},
      {"Div", {}},
      {"Dropout", {"seed"}},
      {"Einsum", {"equation"}},
      {"Erf", {}},
      {"Flatten", {"axis"}},
      {"Gather", {"axis"}},
      {"Gemm", {"alpha", "beta", "transA", "transB"}},
      {"Identity", {}},
      {"LayerNormalization", {"axis", "epsilon", "stash_type"}},
      {"InstanceNormalization", {"epsilon"}},
      {"MatMul", {}},
      {"Mul", {}},
      {"Pow", {}},
      {"ReduceMean", {"axes", "keepdims"}},
      {"HardSigmoid", {"alpha", "beta"}},
      {"HardSwish", {}},
      {"LeakyRelu", {"alpha"}},
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

} // namespace

//===----------------------------------------------------------------------===//
// 3. Nodes: the dispatch
//===----------------------------------------------------------------------===//

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
      op == "Unsqueeze" || op == "Squeeze" || op == "Concat" || op == "Cast" ||
      op == "ConstantOfShape" || op == "Mod" || op == "Expand" ||
      op == "Equal" || op == "Less" || op == "Greater" || op == "Where" ||
      op == "Range" || op == "ScatterND" || op == "Not") {
    importShapeOp();
    return;
  }
  // The other ops, each by its method.
  using Importer = void (OnnxReader::*)();
  static const std::map<std::string, Importer> kImporters = {
      {"Slice", &OnnxReader::importSlice},
      {"Split", &OnnxReader::importSplit},
      {"LayerNormalization", &OnnxReader::importLayerNorm},
      {"InstanceNormalization", &OnnxReader::importInstanceNorm},
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
      {"Resize", &OnnxReader::importResize},
      {"Pad", &OnnxReader::importPad},
      {"Erf", &OnnxReader::importActivation},
      {"Sqrt", &OnnxReader::importActivation},
      {"HardSigmoid", &OnnxReader::importActivation},
      {"HardSwish", &OnnxReader::importActivation},
      {"LeakyRelu", &OnnxReader::importActivation},
      {"Relu", &OnnxReader::importActivation},
      {"Tanh", &OnnxReader::importActivation},
      {"Sigmoid", &OnnxReader::importActivation},
      {"Softmax", &OnnxReader::importActivation},
      {"Identity", &OnnxReader::importIdentity},
      {"Reshape", &OnnxReader::importReshape},
      {"Flatten", &OnnxReader::importReshape},
      {"Transpose", &OnnxReader::importTranspose},
      {"MatMul", &OnnxReader::importMatMul},
      {"Gemm", &OnnxReader::importGemm},
      {"Einsum", &OnnxReader::importEinsum}};
  if (auto it = kImporters.find(op); it != kImporters.end())
    (this->*(it->second))();
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
      dropped += replaced.count(op.name) ? 0 : 1;
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
  // --ranks N: the inputs' batch dim was divided by N (checkAndInferShapes).
  graph.ranks = options.ranks;
  graph.shardOptimizer = options.shardOptimizer && options.ranks > 1;
  graph.microbatches = options.microbatches;
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
  warnOfEvalExport();
  // 5.
  return std::move(out);
}

/// torch.onnx.export in eval mode folds each batch norm into the
/// convolution before it (do_constant_folding, the default): the folded
/// weights are initializers the exporter names `onnx::Conv_N`, where a
/// training-mode export keeps the module's names (`layer1.0.conv1.weight`).
/// Nothing else of eval mode is left to refuse, so say what that trace
/// means.
void OnnxReader::warnOfEvalExport() {
  std::vector<std::string> folded;
  for (const onnx::NodeProto &n : proto.graph().node())
    if (n.op_type() == "Conv" && n.input_size() > 1 &&
        n.input(1).rfind("onnx::", 0) == 0 && initializers.count(n.input(1)))
      folded.push_back(n.input(1));
  if (folded.empty())
    return;
  graph.warnings.push_back(
      graph.sourceName + ": " + std::to_string(folded.size()) +
      " convolution weight(s) have names the exporter made ('" +
      folded.front() +
      "'...): torch.onnx.export in eval mode folds each batch norm into its "
      "convolution, and remat then trains the folded convolutions without "
      "batch norm; export with training=torch.onnx.TrainingMode.TRAINING, "
      "do_constant_folding=False (docs/onnx.md, \"Eval-mode exports\")");
}

} // namespace onnx_reader

const std::vector<std::string> &supportedOnnxOps() {
  static const std::vector<std::string> ops = [] {
    std::vector<std::string> names;
    for (const auto &entry : onnx_reader::onnxOpAttributes())
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
  return onnx_reader::OnnxReader(path, options).read();
}

} // namespace remat::model
