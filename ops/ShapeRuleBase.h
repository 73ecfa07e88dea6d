//===- ShapeRuleBase.h - One application of a type rule ---------*- C++ -*-===//
//
// The state and the message helpers that every type rule shares, private
// to the rule files: ShapeRules.cpp (the entry points and the dispatch),
// TensorShapeRules.cpp and WindowShapeRules.cpp (the rules by family).
//
//===----------------------------------------------------------------------===//
#ifndef REMAT_OPS_SHAPERULEBASE_H
#define REMAT_OPS_SHAPERULEBASE_H

#include "ops/ShapeRules.h"

#include <optional>
#include <string>
#include <vector>

namespace remat::ops::shaperules {

/// A result type and, for messages, why it must be so ("the broadcast
/// shape"); empty when obvious.
struct Expected {
  TensorType type;
  std::string why;
};

/// One rule application: the inputs with their labels, the given result
/// types, and helpers that word the errors. The rule families derive from
/// it.
class Rule {
public:
  Rule(OpKind op, const OpAttrs &attrs, const LabeledTypes &ins,
       const std::vector<TensorType> &given,
       const std::vector<std::string> &givenLabels)
      : op(op), attrs(attrs), ins(ins), given(given),
        givenLabels(givenLabels) {}

  /// The expected result types by the op's rule. Throws TypeRuleError.
  std::vector<Expected> apply();

protected:
  const TensorType &in(size_t i) const { return ins.types[i]; }
  std::string inLabel(size_t i) const {
    return i < ins.labels.size() ? ins.labels[i]
                                 : "input " + std::to_string(i);
  }
  [[noreturn]] void fail(const std::string &message) const {
    throw TypeRuleError(message);
  }
  void expectFloat(size_t i) const {
    if (!isFloatDType(in(i).dtype))
      fail(inLabel(i) + " has dtype " + dtypeName(in(i).dtype) +
           " but expects a float dtype (f32|f16|bf16)");
  }
  void expectIndex(size_t i) const {
    if (!isIndexDType(in(i).dtype))
      fail(inLabel(i) + " has dtype " + dtypeName(in(i).dtype) +
           " but expects an index dtype (i32|i64)");
  }
  void expectDType(size_t i, DType d) const {
    if (in(i).dtype != d)
      fail(inLabel(i) + " has dtype " + dtypeName(in(i).dtype) +
           " but expects " + dtypeName(d));
  }
  void expectShape(size_t i, const Shape &s, const std::string &why = "") const {
    if (in(i).shape != s)
      fail(inLabel(i) + " has shape " + formatShape(in(i).shape) +
           " but expects " + formatShape(s) +
           (why.empty() ? "" : " (" + why + ")"));
  }
  void expectRankAtLeast(size_t i, size_t rank) const {
    if (in(i).shape.size() < rank)
      fail(inLabel(i) + " has shape " + formatShape(in(i).shape) +
           " but expects rank >= " + std::to_string(rank));
  }
  /// The given result type `i`, with its element count checked.
  const TensorType &givenType(size_t i) const {
    if (i >= given.size())
      fail(std::string("'") + opName(op) + "' needs its result type given");
    if (!checkedNumElements(given[i].shape))
      fail("result shape " + formatShape(given[i].shape) +
           " has a negative dim or too many elements");
    return given[i];
  }

  OpKind op;
  const OpAttrs &attrs;
  const LabeledTypes &ins;
  const std::vector<TensorType> &given;
  const std::vector<std::string> &givenLabels;

  std::string outLabel(size_t i) const {
    return i < givenLabels.size() ? givenLabels[i]
                                  : "output " + std::to_string(i);
  }
};

/// The result types by the rules of matmul, elementwise ops, normalization
/// over the last dim, gather, layout, reductions, losses, attention, fill,
/// slices and joins (TensorShapeRules.cpp); nullopt for another rule.
std::optional<std::vector<Expected>> applyTensorRule(const Rule &rule);

/// The result types by the rules of convolution, pooling, per-channel
/// normalization, upsampling and running statistics (WindowShapeRules.cpp);
/// nullopt for another rule.
std::optional<std::vector<Expected>> applyWindowRule(const Rule &rule);

} // namespace remat::ops::shaperules

#endif // REMAT_OPS_SHAPERULEBASE_H
