//===- PhiloxHostTest.cpp - nvcc's Philox build equals g++'s --------------===//
//
// Runs without a GPU: the dropout uniforms of runtime/Philox.h compiled by
// nvcc (the same source the dropout kernel uses) against the g++ build the
// CPU backend uses, over many seeds, steps and indices. The GPU test in
// CudaOpsTest.cpp then checks the kernel's masks bitwise on a device.
//
//===----------------------------------------------------------------------===//
#include "runtime/Philox.h"

#include <catch2/catch.hpp>

namespace remat::runtime::test {
float nvccDropoutUniform(uint64_t seed, uint64_t step, uint64_t index);
}

using namespace remat::runtime;

TEST_CASE("philox built by nvcc gives the cpu's dropout uniforms",
          "[cuda-host]") {
  int mismatches = 0;
  for (uint64_t seed :
       {uint64_t(0), uint64_t(42), uint64_t(0x1234567890ULL), ~uint64_t(0)})
    for (uint64_t step : {0, 1, 7, 100000})
      for (uint64_t index = 0; index < 4099; ++index)
        if (test::nvccDropoutUniform(seed, step, index) !=
            dropoutUniform(seed, step, index))
          ++mismatches;
  CHECK(mismatches == 0);
  // Known answer: philox4x32-10 of counter 0, key 0 (Random123 kat_vectors).
  PhiloxBlock out = philox4x32_10({{0, 0, 0, 0}}, 0, 0);
  CHECK(out.word[0] == 0x6627e8d5u);
  CHECK(out.word[1] == 0xe169c58du);
  CHECK(out.word[2] == 0xbc57ac4cu);
  CHECK(out.word[3] == 0x9b00dbd8u);
}
