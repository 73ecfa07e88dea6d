//===- CostKey.cpp - The key of an op's measured cost ---------------------===//
#include "ops/CostKey.h"

namespace remat::ops {

namespace {
/// "[2,3],bf16[3]": a tensor's dtype before its shape unless it is f32 (a
/// float32 plan's keys are its shapes alone).
std::string typesText(const std::vector<TensorType> &types) {
  std::string s;
  for (size_t i = 0; i < types.size(); ++i) {
    if (i)
      s += ",";
    if (types[i].dtype != DType::F32)
      s += dtypeName(types[i].dtype);
    s += "[";
    for (size_t d = 0; d < types[i].shape.size(); ++d)
      s += (d ? "," : "") + std::to_string(types[i].shape[d]);
    s += "]";
  }
  return s;
}
} // namespace

std::string opCostKey(const std::string &op, const nlohmann::json &attrs,
                      const std::vector<TensorType> &inputs,
                      const std::vector<TensorType> &outputs) {
  // json::dump orders object keys, so equal attributes give equal text.
  std::string a = attrs.is_object() && !attrs.empty() ? attrs.dump() : "{}";
  return op + " " + a + " " + typesText(inputs) + " -> " + typesText(outputs);
}

} // namespace remat::ops
