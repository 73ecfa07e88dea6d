//===- CostKey.h - The key of an op's measured cost ------------*- C++ -*-===//
//
// A measured device profile (`remat profile`, docs/planner.md) gives the
// seconds of each kind of op call: the op, its attributes and its operand
// and result shapes. The compiler looks its ops up by this key, the
// profiler times plan steps under it, so both must build it alike.
//
//===----------------------------------------------------------------------===//
#ifndef REMAT_OPS_COSTKEY_H
#define REMAT_OPS_COSTKEY_H

#include "ops/OpTable.h"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace remat::ops {

/// "matmul {"transpose_b":true} [4,16,64],[64,64] -> [4,16,64]".
std::string opCostKey(const std::string &op, const nlohmann::json &attrs,
                      const std::vector<Shape> &inputs,
                      const std::vector<Shape> &outputs);

} // namespace remat::ops

#endif // REMAT_OPS_COSTKEY_H
