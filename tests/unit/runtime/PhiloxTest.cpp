//===- PhiloxTest.cpp - Philox4x32-10 known answers and dropout masks ----===//
#include "TestUtil.h"

#include "runtime/Philox.h"

#include <catch2/catch.hpp>

using namespace remat::runtime;
using namespace remat::runtime::test;

TEST_CASE("philox4x32-10 matches the Random123 known answers", "[runtime]") {
  // Random123 kat_vectors: philox4x32 10 rounds.
  PhiloxBlock zero = philox4x32_10({{0, 0, 0, 0}}, 0, 0);
  CHECK(zero.word[0] == 0x6627e8d5u);
  CHECK(zero.word[1] == 0xe169c58du);
  CHECK(zero.word[2] == 0xbc57ac4cu);
  CHECK(zero.word[3] == 0x9b00dbd8u);

  PhiloxBlock ones =
      philox4x32_10({{0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu}},
                    0xffffffffu, 0xffffffffu);
  CHECK(ones.word[0] == 0x408f276du);
  CHECK(ones.word[1] == 0x41c83b0eu);
  CHECK(ones.word[2] == 0xa20bc7c6u);
  CHECK(ones.word[3] == 0x6d5451fdu);

  // The third Random123 vector (digits of pi).
  PhiloxBlock pi =
      philox4x32_10({{0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u}},
                    0xa4093822u, 0x299f31d0u);
  CHECK(pi.word[0] == 0xd16cfe09u);
  CHECK(pi.word[1] == 0x94fdccebu);
  CHECK(pi.word[2] == 0x5001e420u);
  CHECK(pi.word[3] == 0x24126ea1u);
}

TEST_CASE("dropout uniforms follow the counter layout of docs/ops.md",
          "[runtime]") {
  uint64_t seed = 0x0123456789abcdefull;
  // Element 9 is word 1 of block 2 at step 5.
  PhiloxBlock block =
      philox4x32_10({{2, 0, 5, 0}}, uint32_t(seed), uint32_t(seed >> 32));
  CHECK(dropoutUniform(seed, 5, 9) ==
        float(block.word[1] >> 8) * (1.0f / 16777216.0f));
  CHECK(dropoutUniform(seed, 5, 9) < 1.0f);
  CHECK(dropoutUniform(seed, 5, 9) >= 0.0f);
}

namespace {

std::vector<double> dropoutOf(const HostTensor &x, float rate, uint64_t seed,
                              int64_t step) {
  OpAttrs attrs;
  attrs.rate = rate;
  attrs.seed = seed;
  return runOp<float>(OpKind::Dropout, attrs, {x}, {typeOf(x.shape)}, step)[0]
      .values;
}

} // namespace

TEST_CASE("dropout mask replays identically for the same seed and step",
          "[runtime]") {
  HostTensor ones = tensorOf({1000}, std::vector<double>(1000, 1.0));
  auto first = dropoutOf(ones, 0.3f, 42, 7);
  auto again = dropoutOf(ones, 0.3f, 42, 7);
  CHECK(first == again);
  // Kept elements are scaled by 1/(1-rate); about 70% are kept.
  int kept = 0;
  for (double v : first) {
    if (v != 0.0) {
      ++kept;
      CHECK(v == Approx(1.0 / 0.7).epsilon(1e-6));
    }
  }
  CHECK(kept > 620);
  CHECK(kept < 780);
}

TEST_CASE("dropout mask differs across steps and seeds", "[runtime]") {
  HostTensor ones = tensorOf({256}, std::vector<double>(256, 1.0));
  auto step0 = dropoutOf(ones, 0.5f, 42, 0);
  auto step1 = dropoutOf(ones, 0.5f, 42, 1);
  auto otherSeed = dropoutOf(ones, 0.5f, 43, 0);
  CHECK(step0 != step1);
  CHECK(step0 != otherSeed);
}

TEST_CASE("dropout with rate 0 is the identity", "[runtime]") {
  std::mt19937 rng(1);
  HostTensor x = randomTensor({5, 7}, rng);
  CHECK(dropoutOf(x, 0.0f, 3, 0) == x.values);
}
