//===- CostKey.cpp - The key of an op's measured cost ---------------------===//
#include "ops/CostKey.h"

namespace remat::ops {

namespace {
std::string shapesText(const std::vector<Shape> &shapes) {
  std::string s;
  for (size_t i = 0; i < shapes.size(); ++i) {
    s += i ? ",[" : "[";
    for (size_t d = 0; d < shapes[i].size(); ++d)
      s += (d ? "," : "") + std::to_string(shapes[i][d]);
    s += "]";
  }
  return s;
}
} // namespace

std::string opCostKey(const std::string &op, const nlohmann::json &attrs,
                      const std::vector<Shape> &inputs,
                      const std::vector<Shape> &outputs) {
  // json::dump orders object keys, so equal attributes give equal text.
  std::string a = attrs.is_object() && !attrs.empty() ? attrs.dump() : "{}";
  return op + " " + a + " " + shapesText(inputs) + " -> " +
         shapesText(outputs);
}

} // namespace remat::ops
