//===- CostKey.h - The key of an op's measured cost ------------*- C++ -*-===//
//
// A measured device profile (`remat profile`, docs/planner.md) gives the
// seconds of each kind of op call: the op, its attributes and its operand
// and result types. The compiler looks its ops up by this key, the
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

/// "matmul {"transpose_b":true} [4,16,64],[64,64] -> [4,16,64]": each
/// operand's and result's shape, after its dtype where that is not f32
/// ("bf16[4,16,64]"), so a bf16 call and a float32 one differ.
std::string opCostKey(const std::string &op, const nlohmann::json &attrs,
                      const std::vector<TensorType> &inputs,
                      const std::vector<TensorType> &outputs);

} // namespace remat::ops

#endif // REMAT_OPS_COSTKEY_H
