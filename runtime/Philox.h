//===- Philox.h - Philox4x32-10 counter-based random numbers -------------===//
//
// Salmon et al., "Parallel random numbers: as easy as 1, 2, 3" (SC 2011).
// Header-only and free of host-only code so the CUDA backend can include it
// from device code (mark with REMAT_HOST_DEVICE).
//
// Dropout (docs/ops.md): key = (seed_lo, seed_hi), counter = (i/4 lo,
// i/4 hi, step, 0); word i%4 becomes a float in [0,1) as (w >> 8) * 2^-24;
// element i is kept when that float >= rate.
//
//===----------------------------------------------------------------------===//
#ifndef REMAT_RUNTIME_PHILOX_H
#define REMAT_RUNTIME_PHILOX_H

#include <array>
#include <cstdint>

#ifdef __CUDACC__
#define REMAT_HOST_DEVICE __host__ __device__
#else
#define REMAT_HOST_DEVICE
#endif

namespace remat::runtime {

struct PhiloxBlock {
  uint32_t word[4];
};

/// Philox4x32 with 10 rounds.
REMAT_HOST_DEVICE inline PhiloxBlock
philox4x32_10(PhiloxBlock counter, uint32_t key0, uint32_t key1) {
  constexpr uint32_t kMul0 = 0xD2511F53u, kMul1 = 0xCD9E8D57u;
  constexpr uint32_t kWeyl0 = 0x9E3779B9u, kWeyl1 = 0xBB67AE85u;
  uint32_t *c = counter.word;
  for (int round = 0; round < 10; ++round) {
    uint64_t p0 = uint64_t(kMul0) * c[0];
    uint64_t p1 = uint64_t(kMul1) * c[2];
    uint32_t hi0 = uint32_t(p0 >> 32), lo0 = uint32_t(p0);
    uint32_t hi1 = uint32_t(p1 >> 32), lo1 = uint32_t(p1);
    PhiloxBlock next = {{hi1 ^ c[1] ^ key0, lo1, hi0 ^ c[3] ^ key1, lo0}};
    counter = next;
    key0 += kWeyl0;
    key1 += kWeyl1;
  }
  return counter;
}

/// (w >> 8) * 2^-24: a float in [0, 1) with 24 random bits.
REMAT_HOST_DEVICE inline float philoxWordToUnit(uint32_t word) {
  return float(word >> 8) * (1.0f / 16777216.0f);
}

/// The Philox block of dropout elements 4 block .. 4 block + 3.
REMAT_HOST_DEVICE inline PhiloxBlock dropoutBlock(uint64_t seed, uint64_t step,
                                                  uint64_t block) {
  PhiloxBlock ctr = {
      {uint32_t(block), uint32_t(block >> 32), uint32_t(step), 0u}};
  return philox4x32_10(ctr, uint32_t(seed), uint32_t(seed >> 32));
}

/// The dropout uniform of element `index` at training step `step`.
REMAT_HOST_DEVICE inline float dropoutUniform(uint64_t seed, uint64_t step,
                                              uint64_t index) {
  return philoxWordToUnit(dropoutBlock(seed, step, index / 4).word[index % 4]);
}

/// Whether dropout keeps element `index` (philox(seed, step, i) >= rate).
REMAT_HOST_DEVICE inline bool dropoutKeeps(uint64_t seed, uint64_t step,
                                           uint64_t index, float rate) {
  return dropoutUniform(seed, step, index) >= rate;
}

} // namespace remat::runtime

#endif // REMAT_RUNTIME_PHILOX_H
