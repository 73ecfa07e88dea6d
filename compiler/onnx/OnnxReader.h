//===- OnnxReader.h - The state of one ONNX import --------------*- C++ -*-===//
//
// The reader of compiler/OnnxImporter.h, private to its files: the constant
// data of shape computations, the symbols of ONNX value names, and the
// OnnxReader whose steps are written in OnnxImporter.cpp (the steps in
// order, the node dispatch, the loss) and compiler/onnx/: ProtoReading.cpp
// (step 1), Values.cpp (step 2, node inputs and the graph ops made for a
// node), ShapeOps.cpp (shape folding and layout ops), ComputeOps.cpp
// (arithmetic, activations, linear algebra and attention, convolution),
// NormOps.cpp (normalization, Resize) and SliceOps.cpp (Slice, Split,
// Gather by constants).
//
//===----------------------------------------------------------------------===//
#ifndef REMAT_COMPILER_ONNX_ONNXREADER_H
#define REMAT_COMPILER_ONNX_ONNXREADER_H

#include "compiler/OnnxImporter.h"

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace remat::model::onnx_reader {

using nlohmann::json;

/// Constant data of a shape computation, every element held as a double
/// (exact for the integers shapes are made of).
struct ConstantData {
  std::vector<int64_t> shape;
  std::vector<double> values;
  bool isFloat = false;
};

/// What an ONNX value name stands for: a model value, or constant data.
struct Symbol {
  int value = -1;
  std::optional<ConstantData> constantData;
};

/// The most runs of consecutive indices a Gather by constant indices reads
/// as slices; more are one embedding lookup of a fixed index input.
inline constexpr int64_t kSliceRuns = 8;

/// The most elements a tensor folded at import may have (2^24).
inline constexpr int64_t kMaxFoldedElements = int64_t(1) << 24;

/// The product of dims [begin, end).
inline int64_t product(const std::vector<int64_t> &dims, size_t begin,
                       size_t end) {
  int64_t n = 1;
  for (size_t i = begin; i < end; ++i)
    n *= dims[i];
  return n;
}

/// "D0,D1,..." as --input-shape takes it.
inline std::string dimsText(const std::vector<int64_t> &dims) {
  std::string s;
  for (size_t i = 0; i < dims.size(); ++i)
    s += (i ? "," : "") + std::to_string(dims[i]);
  return s;
}

/// Whether an ONNX element type is a float type.
inline bool isFloatTensorType(int elemType) {
  return elemType == onnx::TensorProto::FLOAT ||
         elemType == onnx::TensorProto::DOUBLE ||
         elemType == onnx::TensorProto::FLOAT16 ||
         elemType == onnx::TensorProto::BFLOAT16;
}

/// Whether an initializer or input of this element type is read as float32:
/// float, and float16 and bfloat16, each value widened exactly (a trained
/// initializer becomes a float32 master weight; an input is float32 data).
inline bool readsAsFloat32(int elemType) {
  return elemType == onnx::TensorProto::FLOAT ||
         elemType == onnx::TensorProto::FLOAT16 ||
         elemType == onnx::TensorProto::BFLOAT16;
}

/// The name of an ONNX element type ("unknown" for an invalid one).
inline const char *elemTypeName(int elemType) {
  return onnx::TensorProto::DataType_IsValid(elemType)
             ? onnx::TensorProto::DataType_Name(
                   onnx::TensorProto::DataType(elemType))
                   .c_str()
             : "unknown";
}

/// Normalizes an axis in [-rank, rank) (or [-rank-1, rank] when inserting).
inline std::optional<int64_t> normalizeAxis(int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank)
    return std::nullopt;
  return axis < 0 ? axis + rank : axis;
}

/// One import: read() runs the steps (OnnxImporter.cpp).
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
  /// Ops whose result an import read past (fuseAttention's chain, a
  /// transposed matrix under MatMul): pruneToLoss drops them silently.
  std::set<std::string> replaced;
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
  void warnOfEvalExport();
  void importPad();
  /// `first` and `second` joined along `axis` (graph op concat), named
  /// after `name`.
  int joinAlong(int first, int second, int64_t axis, const std::string &name);

  std::string uniqueName(const std::string &wanted);
  int64_t elementCount(const onnx::TensorProto &t);
  std::vector<float> initializerFloats(const onnx::TensorProto &t);
  ConstantData tensorConstant(const onnx::TensorProto &t);
  void checkFrozen();
  /// Why the float initializer `t` (of `values`) is not trained, or
  /// nullopt when it is a parameter (docs/onnx.md, "Initializers:
  /// parameters and buffers").
  std::optional<std::string> frozenReason(const onnx::TensorProto &t,
                                          const std::vector<float> &values);
  int parameter(const onnx::TensorProto &t, const std::vector<float> &values);
  int fixedInput(const std::string &onnxName, const ConstantData &c);

  /// The node's input `i`: whether it is given, as constant data, as a value.
  bool hasInput(int i) const {
    return i < node->input_size() && !node->input(i).empty();
  }
  const Symbol &symbolOf(int i);
  const ConstantData *constantInput(int i);
  const ConstantData &requireConstant(int i, const std::string &what);
  double scalarInput(int i, const std::string &what, double fallback);
  int valueInput(int i);
  /// Constant data read as a tensor: a constant op when it is uniform and
  /// float, else a fixed input named after `onnxName` (one per name).
  int constantValue(const ConstantData &c, const std::string &onnxName);
  /// The node's input `i` as state (BatchNormalization's running
  /// statistics): a float initializer, its value kept with the weights.
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
  /// A graph op of shape `shape` whose elements are all `value`, named
  /// after `name`.
  int uniformConstant(double value, const std::vector<int64_t> &shape,
                      const std::string &name);
  int scalarConstant(double value, const std::string &name);
  /// The op that computes `value` (null for inputs and parameters).
  const Op *producerOf(int value) const;
  /// The element of a uniform constant op's result (nullopt otherwise).
  std::optional<double> uniformValue(int value) const;
  /// The data of a float fixed input (constant data read as a tensor).
  std::optional<std::vector<float>> fixedFloats(int value) const;
  /// `value` reshaped to `shape` (itself when it has that shape).
  int reshapeTo(int value, const std::vector<int64_t> &shape,
                const std::string &name);
  void define(int output, int value);
  void defineConstant(int output, ConstantData c);

  // Attributes.
  const onnx::AttributeProto *attribute(const std::string &name) const;
  int64_t intAttribute(const std::string &name, int64_t fallback) const;
  double floatAttribute(const std::string &name, double fallback) const;
  std::string stringAttribute(const std::string &name,
                              const std::string &fallback) const;

  // Shape folding and layout ops (ShapeOps.cpp).
  ConstantData foldElementwise(const ConstantData &a, const ConstantData &b);
  void importShapeOp();
  void importIdentity();
  void importReshape();
  void importTranspose();
  void importEmbedding();
  /// The element count of data folded at import to `shape`; a count past
  /// kMaxFoldedElements (or that overflows) fails the node: a huge input
  /// dim reaching a mask's shape must not allocate it.
  int64_t foldedCount(const std::vector<int64_t> &shape);
  void importConcat();
  void importWhereSelect(const ConstantData &condition);
  /// A value made by permuting the dims of another: that one and the
  /// permutation (y.shape[i] = source.shape[permutation[i]]).
  struct Permuted {
    int source = -1;
    std::vector<int64_t> permutation;
  };
  std::optional<Permuted> permutedFrom(int value) const;
  /// `value` with its dims permuted, named `name`.
  int permute(int value, const std::vector<int64_t> &permutation,
              const std::string &name);

  // Arithmetic, activations, linear algebra, convolution and pooling
  // (ComputeOps.cpp); normalization and resizing (NormOps.cpp); slices
  // (SliceOps.cpp).
  void importArithmetic();
  /// Reads the product `lhs`·`rhs` being imported as nn.GELU() where its
  /// factors spell it out; false (nothing emitted) otherwise.
  bool fuseGelu(int lhs, int rhs);
  /// x·scale + shift (broadcast), each left out where its value id is -1;
  /// the last op named `name`.
  int scaleShift(int x, int scale, int shift, const std::string &name);
  void importActivation();
  void importPow();
  void importClip();
  void importDropout();
  void importMatMul();
  void importGemm();
  void importEinsum();
  /// Reads softmax(c·q·kᵀ [+ mask]) · v, the product of `probabilities`
  /// and `v` being imported, as one attention op; false (nothing emitted)
  /// when the operands are not made so.
  bool fuseAttention(int probabilities, int v);
  /// The value that positive scalar factors (mul, div) were applied to, to
  /// make `value`; their product goes into `scale`, their ops into `chain`.
  int stripScaling(int value, double &scale, std::vector<std::string> &chain);
  /// `mask` added to scores [..., S, S]: no mask (all zeros: false), the
  /// causal mask (true), or another (nullopt).
  std::optional<bool> attentionMask(int mask, const std::vector<int64_t> &scores);
  void importWindowOp();
  void importReduceMean();
  void importLayerNorm();
  void importInstanceNorm();
  void importBatchNormalization();
  void importResize();
  void importResizeLinear(const std::string &transform);
  void importSlice();
  void importSplit();
  void importGatherConstant();
  /// Constant Gather `indices` into `size` entries on `axis`, negative ones
  /// counted from the end; an index out of range fails the node.
  std::vector<int64_t> gatherIndices(const ConstantData &indices, int64_t size,
                                     int64_t axis);
  /// Positions [begin, end) of `value` along `axis`.
  int sliceAlong(int value, int64_t axis, int64_t begin, int64_t end,
                 const std::string &name);
};

} // namespace remat::model::onnx_reader

#endif // REMAT_COMPILER_ONNX_ONNXREADER_H
