//===- BFloat16.h - bfloat16 <-> float conversions --------------*- C++ -*-===//
//
// bfloat16 is the upper half of an IEEE float: 1 sign, 8 exponent and 7
// mantissa bits. Widening is exact; narrowing rounds to the nearest bf16,
// ties to even, as PyTorch's and oneDNN's conversions do; a NaN stays a
// (quiet) NaN. Header-only: the compiler, the runtime and the tests share
// it.
//
//===----------------------------------------------------------------------===//
#ifndef REMAT_OPS_BFLOAT16_H
#define REMAT_OPS_BFLOAT16_H

#include <cstdint>
#include <cstring>

namespace remat::ops {

[[gnu::always_inline]] inline float bf16ToFloat(uint16_t h) {
  uint32_t u = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

[[gnu::always_inline]] inline uint16_t floatToBf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  if ((u & 0x7fffffffu) > 0x7f800000u) // NaN: keep it one, quiet
    return uint16_t((u >> 16) | 0x40);
  u += 0x7fffu + ((u >> 16) & 1u);
  return uint16_t(u >> 16);
}

} // namespace remat::ops

#endif // REMAT_OPS_BFLOAT16_H
