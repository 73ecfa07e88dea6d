//===- SyntheticDraw.h - Synthetic values of one Philox block -----------===//
//
// The arithmetic that turns a Philox block into synthetic values (Box-Muller
// normals, integers in a range), header-only and free of host-only code so
// the CUDA backend generates randn / randint inputs on the device with the
// very functions the host uses (Synthetic.cpp). Integers are bitwise equal
// across backends; normals go through double log/sqrt/cos/sin, which glibc
// and CUDA round within an ulp of each other, so an f32 normal may differ in
// its last bit on rare elements (docs/cuda.md).
//
//===----------------------------------------------------------------------===//
#ifndef REMAT_RUNTIME_SYNTHETICDRAW_H
#define REMAT_RUNTIME_SYNTHETICDRAW_H

#include "runtime/Philox.h"

#include <math.h>
#include <stdint.h>

namespace remat::runtime {

/// Philox counter word 3 of parameter/optimizer init ("INIT").
inline constexpr uint32_t kInitDomain = 0x494E4954u;
/// Philox counter word 3 of input data ("DATA").
inline constexpr uint32_t kDataDomain = 0x44415441u;
/// Philox counter word 3 of a teacher's weights ("TEAC").
inline constexpr uint32_t kTeacherDomain = 0x54454143u;

/// Block `block` of the stream (seed, id, step, domain): counter
/// (block, id, step, domain), key (seed lo, seed hi). `block` < 2^32.
REMAT_HOST_DEVICE inline PhiloxBlock syntheticBlock(uint64_t seed, uint32_t id,
                                                    uint32_t step,
                                                    uint32_t domain,
                                                    uint32_t block) {
  return philox4x32_10({{block, id, step, domain}}, uint32_t(seed),
                       uint32_t(seed >> 32));
}

/// Box-Muller on two words: u1 = ((w0 >> 8) + 1) * 2^-24 in (0, 1],
/// u2 = (w1 >> 8) * 2^-24.
REMAT_HOST_DEVICE inline void boxMuller(uint32_t w0, uint32_t w1, double &z0,
                                        double &z1) {
  double u1 = double((w0 >> 8) + 1) * (1.0 / 16777216.0);
  double u2 = double(w1 >> 8) * (1.0 / 16777216.0);
  double r = ::sqrt(-2.0 * ::log(u1));
  const double twoPi = 6.283185307179586;
  z0 = r * ::cos(twoPi * u2);
  z1 = r * ::sin(twoPi * u2);
}

/// The four f32 normals of a block: mean + std * z, words (0,1) and (2,3).
REMAT_HOST_DEVICE inline void normalBlock(PhiloxBlock blk, double mean,
                                          double std, float out[4]) {
  double z[4];
  boxMuller(blk.word[0], blk.word[1], z[0], z[1]);
  boxMuller(blk.word[2], blk.word[3], z[2], z[3]);
  for (int k = 0; k < 4; ++k)
    out[k] = float(mean + std * z[k]);
}

/// low + ((word * (high - low)) >> 32); one word covers only 2^32 values,
/// so wider ranges give low + word.
REMAT_HOST_DEVICE inline int64_t drawInt(uint32_t word, int64_t low,
                                         int64_t high) {
  uint64_t range = uint64_t(high - low);
  if (range > 0xFFFFFFFFull)
    return low + int64_t(word);
  return low + int64_t((uint64_t(word) * range) >> 32);
}

/// A randn or randint input generated where it lives (Backend::
/// generateInput): element i of the stream (seed, streamId, step,
/// kDataDomain), as Synthetic.cpp's syntheticInput computes it.
struct SyntheticRequest {
  enum class Kind : int { Randn, Randint } kind = Kind::Randn;
  /// randint: int64 elements when set, int32 otherwise; randn: f32.
  bool int64Elements = false;
  uint64_t numElements = 0;
  uint64_t seed = 0;
  uint32_t streamId = 0;
  uint32_t step = 0;
  double mean = 0, std = 1;  ///< randn
  int64_t low = 0, high = 0; ///< randint
};

/// Writes the elements of Philox block `block` (4 elements, fewer at the
/// end) of request `r` into `dst`, an array of r's element type.
REMAT_HOST_DEVICE inline void writeSyntheticBlock(const SyntheticRequest &r,
                                                  uint64_t block, void *dst) {
  PhiloxBlock blk = syntheticBlock(r.seed, r.streamId, r.step, kDataDomain,
                                   uint32_t(block));
  uint64_t base = block * 4;
  int count = r.numElements - base < 4 ? int(r.numElements - base) : 4;
  if (r.kind == SyntheticRequest::Kind::Randn) {
    float v[4];
    normalBlock(blk, r.mean, r.std, v);
    for (int k = 0; k < count; ++k)
      static_cast<float *>(dst)[base + k] = v[k];
    return;
  }
  for (int k = 0; k < count; ++k) {
    int64_t v = drawInt(blk.word[k], r.low, r.high);
    if (r.int64Elements)
      static_cast<int64_t *>(dst)[base + k] = v;
    else
      static_cast<int32_t *>(dst)[base + k] = int32_t(v);
  }
}

} // namespace remat::runtime

#endif // REMAT_RUNTIME_SYNTHETICDRAW_H
