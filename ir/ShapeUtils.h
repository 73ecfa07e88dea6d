//===- ShapeUtils.h - MLIR-free shape arithmetic ----------------*- C++ -*-===//
//
// Element counts with overflow checks, saturating arithmetic and shape
// printing for the graph dialect's verifier and cost model. Header-only and
// free of MLIR and LLVM: shapes are passed as a ShapeRef view that binds to a
// std::vector or an llvm::ArrayRef/SmallVector.
//
//===----------------------------------------------------------------------===//

#ifndef REMAT_IR_SHAPEUTILS_H
#define REMAT_IR_SHAPEUTILS_H

#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

namespace remat::shape {

/// A non-owning view of a shape (a list of dimension sizes). It must not
/// outlive the storage it was made from.
class ShapeRef {
public:
  ShapeRef() = default;
  /// Any contiguous container of int64_t: std::vector, llvm::ArrayRef, ...
  template <typename Container,
            typename = decltype(std::declval<const Container &>().data()),
            typename = decltype(std::declval<const Container &>().size())>
  ShapeRef(const Container &container)
      : dims(container.data()), count(container.size()) {}

  const int64_t *begin() const { return dims; }
  const int64_t *end() const { return dims + count; }
  size_t size() const { return count; }
  bool empty() const { return count == 0; }
  int64_t operator[](size_t i) const { return dims[i]; }
  std::vector<int64_t> vec() const { return {begin(), end()}; }

private:
  const int64_t *dims = nullptr;
  size_t count = 0;
};

/// a + b for non-negative counts, saturating at INT64_MAX.
inline int64_t saturatingAdd(int64_t a, int64_t b) {
  int64_t sum;
  if (__builtin_add_overflow(a, b, &sum))
    return std::numeric_limits<int64_t>::max();
  return sum;
}

/// a * b for non-negative counts, saturating at INT64_MAX.
inline int64_t saturatingMul(int64_t a, int64_t b) {
  int64_t product;
  if (__builtin_mul_overflow(a, b, &product))
    return std::numeric_limits<int64_t>::max();
  return product;
}

/// The product of the dims; std::nullopt when a dim is negative (dynamic) or
/// the product overflows int64_t. The empty shape (a scalar) has 1 element.
inline std::optional<int64_t> elementCount(ShapeRef shape) {
  int64_t count = 1;
  for (int64_t dim : shape) {
    if (dim < 0 || __builtin_mul_overflow(count, dim, &count))
      return std::nullopt;
  }
  return count;
}

/// The product of the dims, saturating at INT64_MAX; 0 when a dim is
/// negative (dynamic).
inline int64_t saturatingElementCount(ShapeRef shape) {
  int64_t count = 1;
  for (int64_t dim : shape) {
    if (dim < 0)
      return 0;
    count = saturatingMul(count, dim);
  }
  return count;
}

/// "[2, 4]"; a dynamic dim prints as "?".
inline std::string formatShape(ShapeRef shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i)
      text += ", ";
    text += shape[i] < 0 ? std::string("?") : std::to_string(shape[i]);
  }
  return text + "]";
}

} // namespace remat::shape

#endif // REMAT_IR_SHAPEUTILS_H
