//===- Expression.h - The model format's config expressions -----*- C++ -*-===//
//
// Numbers in a model file may be expressions over its config variables
// ("4*d", "sqrt(2/width)"; docs/model-format.md). A recursive-descent
// evaluator, MLIR-free.
//
//===----------------------------------------------------------------------===//
#ifndef REMAT_COMPILER_EXPRESSION_H
#define REMAT_COMPILER_EXPRESSION_H

#include <map>
#include <string>

namespace remat::model {

/// Evaluates an integer/float expression over config variables
/// (+ - * / %, parentheses, unary minus, sqrt()). Throws
/// std::invalid_argument with a plain message; callers add the place.
double evaluateExpression(const std::string &text,
                          const std::map<std::string, double> &config);

} // namespace remat::model

#endif // REMAT_COMPILER_EXPRESSION_H
