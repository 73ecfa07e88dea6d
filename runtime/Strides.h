//===- Strides.h - Row-major strides and broadcasting, for every backend -===//
//
// The index arithmetic the CPU kernels and the CUDA launchers share: a
// shape's row-major strides, the strides that read a broadcast operand
// while walking the result, and whether an operand broadcasts by plain
// repetition (its trailing dims equal the result's).
//
//===----------------------------------------------------------------------===//
#ifndef REMAT_RUNTIME_STRIDES_H
#define REMAT_RUNTIME_STRIDES_H

#include "runtime/plan/PlanFormat.h"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace remat::runtime {

/// Row-major strides of `shape`.
inline std::vector<int64_t> stridesOf(const Shape &shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (int64_t d = int64_t(shape.size()) - 2; d >= 0; --d)
    s[size_t(d)] = s[size_t(d) + 1] * shape[size_t(d) + 1];
  return s;
}

/// Strides that read `small` while walking the broadcast shape `big`: right
/// aligned, 0 where `small` has a 1 or no dimension.
inline std::vector<int64_t> broadcastStrides(const Shape &small,
                                             const Shape &big) {
  std::vector<int64_t> own = stridesOf(small);
  std::vector<int64_t> out(big.size(), 0);
  size_t offset = big.size() - small.size();
  for (size_t d = 0; d < small.size(); ++d)
    out[offset + d] = small[d] == 1 ? 0 : own[d];
  return out;
}

/// Whether `small` broadcasts to `big` by repeating every numel(small)
/// elements: after its leading 1s it equals big's trailing dims (a scalar
/// and big's own shape included).
inline bool isSuffix(const Shape &small, const Shape &big) {
  size_t lead = 0;
  while (lead < small.size() && small[lead] == 1)
    ++lead;
  size_t rest = small.size() - lead;
  if (rest > big.size())
    return false;
  for (size_t i = 0; i < rest; ++i)
    if (small[lead + i] != big[big.size() - rest + i])
      return false;
  return true;
}

/// A box inside a row-major tensor: the offset of its first element and
/// the strides that walk it (slice reads one, slice_grad and concat write
/// one).
struct StridedBox {
  int64_t offset = 0;
  std::vector<int64_t> strides;
};

/// The box a slice with `starts` and `steps` reads in a tensor of `shape`.
inline StridedBox sliceBox(const Shape &shape,
                           const std::vector<int64_t> &starts,
                           const std::vector<int64_t> &steps) {
  StridedBox box{0, stridesOf(shape)};
  for (size_t d = 0; d < shape.size(); ++d) {
    box.offset += starts[d] * box.strides[d];
    box.strides[d] *= steps[d];
  }
  return box;
}

/// The box where operand `b` of `concat` lands in the result of `shape`,
/// `a` having `aDim` elements along `axis` (a's box: offset 0).
inline StridedBox concatSecondBox(const Shape &shape, size_t axis,
                                  int64_t aDim) {
  StridedBox box{0, stridesOf(shape)};
  box.offset = aDim * box.strides[axis];
  return box;
}

} // namespace remat::runtime

#endif // REMAT_RUNTIME_STRIDES_H
