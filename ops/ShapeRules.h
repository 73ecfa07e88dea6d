//===- ShapeRules.h - Attributes, operand and result types of every op -*-===//
//
// One implementation of each op's type rule (the `shapeRule` of its ODS
// record) and of its attribute checks, shared by the graph dialect's
// verifier, the model reader, which infers result types with it, and the
// plan loader, which checks every step against it.
//
//===----------------------------------------------------------------------===//
#ifndef REMAT_OPS_SHAPERULES_H
#define REMAT_OPS_SHAPERULES_H

#include "ops/OpTable.h"

#include <nlohmann/json.hpp>

#include <stdexcept>
#include <string>
#include <vector>

namespace remat::ops {

/// A type error. The message names the operand or result by the label the
/// caller gave it ("input 1 has shape [3,2] but expects K=4"); the caller
/// adds the place.
class TypeRuleError : public std::invalid_argument {
public:
  using std::invalid_argument::invalid_argument;
};

/// One operand or result list with the words that name each entry in
/// messages: the loader says "input 0", the model reader the value's name.
struct LabeledTypes {
  std::vector<TensorType> types;
  std::vector<std::string> labels; ///< empty: "input i" / "output i"
};

/// The result types of `op` applied to `inputs`. For ops whose result type
/// is given (OpInfo::resultTypeGiven) `given` holds it and is checked, for
/// the others it is ignored. Operand counts must match the table. Throws
/// TypeRuleError.
std::vector<TensorType> inferResultTypes(OpKind op, const OpAttrs &attrs,
                                         const LabeledTypes &inputs,
                                         const std::vector<TensorType> &given);

/// Checks `outputs` against the result types inferred from `inputs`.
/// Throws TypeRuleError ("output 0 has shape [2,8] but expects [2,4]").
void checkTypes(OpKind op, const OpAttrs &attrs, const LabeledTypes &inputs,
                const LabeledTypes &outputs);

/// The attributes of `op` from a JSON object (a plan step's `attrs`, the
/// model reader's normalized attributes): unknown names, missing required
/// attributes and wrong types are errors; attributes not given take their
/// ODS defaults; ranges are checked (checkAttrValues). Throws TypeRuleError.
OpAttrs parseAttrs(OpKind op, const nlohmann::json &attrs);

/// Checks the ranges of attribute values, by attribute name: `rate`,
/// `beta1` and `beta2` in [0, 1), `epsilon` positive. Throws TypeRuleError.
void checkAttrValues(OpKind op, const OpAttrs &attrs);

/// The NumPy broadcast of two shapes, or nullopt when they do not broadcast.
std::optional<Shape> broadcastShapes(const Shape &a, const Shape &b);

/// Under --precision bf16 a convolution of bf16 activations reads float32
/// weights, which its kernels round to bf16 as they read them
/// (docs/precision.md): the operand that holds them (the convolution's 1,
/// its input gradient's 0) when `in0`, `in1` and `out` are such a mix;
/// else -1.
int roundedWeightsOperand(OpKind op, DType in0, DType in1, DType out);
/// The same for an op's operand and result types (-1 unless two and one).
int roundedWeightsOperand(OpKind op, const std::vector<TensorType> &inputs,
                          const std::vector<TensorType> &outputs);

} // namespace remat::ops

#endif // REMAT_OPS_SHAPERULES_H
