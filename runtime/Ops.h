//===- Ops.h - Runtime-side op rules: attributes, operand counts, shapes -===//
//
// The runtime's own reading of docs/ops.md: for every op, how many operands
// and results it has, which attributes it takes (typed, with defaults), and
// which dtypes and shapes its operands and results must have. The loader
// runs these rules on every step before anything executes, so a kernel can
// trust its shapes.
//
//===----------------------------------------------------------------------===//
#ifndef REMAT_RUNTIME_OPS_H
#define REMAT_RUNTIME_OPS_H

#include "runtime/PlanFormat.h"

#include <string>
#include <vector>

namespace remat::runtime {

/// Attributes of a step, parsed and typed. Fields an op does not take keep
/// their defaults.
struct OpAttrs {
  bool transposeA = false, transposeB = false;          ///< matmul
  float epsilon = 1e-5f;                                ///< layer_norm(_grad)
  std::vector<int64_t> permutation;                     ///< transpose
  std::vector<int64_t> axes;                            ///< reduce_*
  bool keepDims = false;                                ///< reduce_*
  float rate = 0.0f;                                    ///< dropout
  uint64_t seed = 0;                                    ///< dropout (64-bit)
  bool causal = false;                                  ///< attention(_grad)
  float scale = 1.0f;                                   ///< attention(_grad)
  float value = 0.0f;                                   ///< constant
  float lr = 0.0f, momentum = 0.0f, weightDecay = 0.0f; ///< optimizers
  float beta1 = 0.9f, beta2 = 0.999f, eps = 1e-8f;      ///< adamw
};

/// The dtype and shape of one operand or result.
struct TensorType {
  DType dtype = DType::F32;
  Shape shape;
};

/// Number of operands and results of `op`.
struct OpArity {
  int numInputs;
  int numOutputs;
};
OpArity opArity(OpKind op);

/// True for the optimizer updates, whose results must be their state
/// operands' buffers (in place).
bool isOptimizerOp(OpKind op);

/// Parses and type-checks the attributes of `op`: unknown names, missing
/// required attributes and wrong types are errors. Throws PlanError with
/// `where` as the message prefix.
OpAttrs parseOpAttrs(OpKind op, const nlohmann::json &attrs,
                     const std::string &where);

/// Checks dtypes and shapes of operands and results against the rules of
/// docs/ops.md. Counts must already match opArity. Throws PlanError with
/// `where` as the prefix, e.g. "input 1 has shape [64,32] but expects K=64".
void checkOpTypes(OpKind op, const OpAttrs &attrs,
                  const std::vector<TensorType> &inputs,
                  const std::vector<TensorType> &outputs,
                  const std::string &where);

/// NumPy broadcast of two shapes, or nullopt when they do not broadcast.
std::optional<Shape> broadcastShapes(const Shape &a, const Shape &b);

} // namespace remat::runtime

#endif // REMAT_RUNTIME_OPS_H
