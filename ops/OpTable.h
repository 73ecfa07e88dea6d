//===- OpTable.h - Every graph op as the MLIR-free code sees it -*- C++ -*-===//
//
// The op table generated from ir/GraphOps.td (ops/generated/OpTable.inc):
// for every op its name, operand and result names, attributes with their
// types and defaults, shape rule, kernel family and in-place safety. The
// runtime, the model reader and the compiler's passes ask this table
// instead of keeping their own lists; docs/adding-an-op.md.
//
//===----------------------------------------------------------------------===//
#ifndef REMAT_OPS_OPTABLE_H
#define REMAT_OPS_OPTABLE_H

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace remat::ops {

// F64: the CPU backend's float64 mode (--precision fp64, for testing).
enum class DType { F32, F16, BF16, I32, I64, F64 };
using Shape = std::vector<int64_t>;

/// The dtype and shape of one operand or result.
struct TensorType {
  DType dtype = DType::F32;
  Shape shape;
};

const char *dtypeName(DType dtype); ///< "f32", ...
std::optional<DType> parseDType(const std::string &name);
/// "f32|f16|bf16|i32|i64|f64", for messages.
std::string dtypeNames();
uint64_t dtypeSize(DType dtype);
bool isFloatDType(DType dtype);
bool isIndexDType(DType dtype);
/// "[64,32]"; "[]" for a scalar.
std::string formatShape(const Shape &shape);
/// Element count, or nullopt on a negative dim or 64-bit overflow.
std::optional<uint64_t> checkedNumElements(const Shape &shape);

/// Every op of the graph dialect, in the order of ir/GraphOps.td.
enum class OpKind {
#define REMAT_OP(Kind, ...) Kind,
#include "ops/generated/OpTable.inc"
};
inline constexpr int kNumOpKinds = 0
#define REMAT_OP(...) +1
#include "ops/generated/OpTable.inc"
    ;

/// How an op's operand and result types are checked (ops/ShapeRules.h).
enum class ShapeRule {
#define REMAT_SHAPE_RULE(Rule) Rule,
#include "ops/generated/OpTable.inc"
};

/// The entry point of an op's kernel in every backend.
enum class KernelFamily {
#define REMAT_KERNEL_FAMILY(Family) Family,
#include "ops/generated/OpTable.inc"
};

enum class AttrType { Bool, F32, I64, I64Array };

/// An op's compute type under `--precision bf16` (GraphOpBase.td
/// `autocast`; compiler/Precision.h).
enum class Autocast {
  Promote, ///< bf16 when every float operand is bf16, else float32
  Bf16,    ///< GEMMs and convolutions
  Float32, ///< softmax, losses, sums: float32 operands
  /// normalization: computes in float32 on its operands as they are (bf16
  /// x, float32 parameters), its result of x's type
  Float32Compute,
  BiasAdd, ///< bf16 for a parameter added to a Bf16 op's result
};

/// One attribute an op takes.
struct AttrInfo {
  const char *name; ///< as in ODS and the plan file, e.g. "transpose_a"
  AttrType type;
  bool required;    ///< no default in ODS
  /// The ODS default as written there ("false", "1.0e-5f"); "{}" if none.
  const char *defaultText;
};

/// What the table says of one op.
struct OpInfo {
  OpKind kind;
  const char *name; ///< "attention_grad"
  int numInputs;
  int numOutputs;
  ShapeRule shapeRule;
  KernelFamily family;
  bool inPlace;         ///< a result may take exactly an operand's bytes
  bool inModelFormat;   ///< model files may use it
  bool resultTypeGiven; ///< the result type is given, not inferred
  /// An optimizer update: (param, grad, state...) -> (param', state'...),
  /// each result in its operand's bytes (GraphOps.td `updatesParam`).
  bool updatesParam;
  /// A state update: (state, ...) -> state', result 0 in operand 0's bytes
  /// (GraphOps.td `updatesState`: batch normalization's running
  /// statistics).
  bool updatesState;
  /// The op's reduction is a mean, not a sum (GraphOps.td `averages`:
  /// the mean reduction and the mean losses).
  bool averages;
  Autocast autocast;
  /// The kernels move bf16 elements themselves (GraphOps.td `bf16Native`).
  bool bf16Native;
  std::vector<const char *> operandNames;
  std::vector<const char *> resultNames;
  std::vector<AttrInfo> attrs;
};

const OpInfo &opInfo(OpKind op);
const char *opName(OpKind op); ///< "dropout", "attention_grad", ...
std::optional<OpKind> parseOpKind(const std::string &name);
const char *kernelFamilyName(KernelFamily family);

/// Attributes of an op, typed. Every field of every op is here; the fields
/// an op does not take keep the values below. parseOpAttrs (runtime/plan/Ops.h)
/// fills the fields an op takes, defaults included.
struct OpAttrs {
#define REMAT_ATTR_FIELD(field, type, defaultValue)                            \
  REMAT_ATTR_CTYPE_##type field = defaultValue;
#define REMAT_ATTR_CTYPE_Bool bool
#define REMAT_ATTR_CTYPE_F32 float
#define REMAT_ATTR_CTYPE_I64 uint64_t
#define REMAT_ATTR_CTYPE_I64Array std::vector<int64_t>
#include "ops/generated/OpTable.inc"
};

/// Sets every attribute `op` takes to its ODS default (required ones stay
/// zero).
void setDefaultAttrs(OpKind op, OpAttrs &attrs);

} // namespace remat::ops

#endif // REMAT_OPS_OPTABLE_H
