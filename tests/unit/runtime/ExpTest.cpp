//===- ExpTest.cpp - The CPU kernels' vectorizable exponential ------------===//
#include "runtime/backends/cpu/kernels/Common.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <limits>

using remat::runtime::cpu::fastExp;

namespace {

/// |got - exact| in units of the last place of the float nearest `exact`.
double ulpError(float got, double exact) {
  float nearest = float(exact);
  double ulp =
      double(std::nextafter(nearest, std::numeric_limits<float>::max())) -
      double(nearest);
  return std::abs(double(got) - exact) / ulp;
}

} // namespace

TEST_CASE("fastExp is within 2 ulp of e^x on every 97th float of "
          "[-87.3, 88.3], 1 at 0, and 0 below -87.3",
          "[runtime]") {
  double worst = 0;
  float worstAt = 0;
  for (float end : {-87.33f, 88.3f}) {
    // The floats from 0 towards `end`, every 97th bit pattern.
    uint32_t last;
    std::memcpy(&last, &end, sizeof last);
    for (uint32_t bits = end < 0 ? 0x80000000u : 0u; bits <= last; bits += 97) {
      float x;
      std::memcpy(&x, &bits, sizeof x);
      double error = ulpError(fastExp(x), std::exp(double(x)));
      if (error > worst)
        worst = error, worstAt = x;
    }
  }
  INFO("worst " << worst << " ulp at x = " << worstAt);
  CHECK(worst <= 2.0);
  CHECK(fastExp(0.0f) == 1.0f);
  CHECK(fastExp(-88.0f) == 0.0f);
  CHECK(fastExp(-1e30f) == 0.0f);
  CHECK(fastExp(-std::numeric_limits<float>::infinity()) == 0.0f);
  CHECK(std::isnan(fastExp(std::numeric_limits<float>::quiet_NaN())));
  // Above 88.3 it stays finite (the kernels call it on x - max <= 0).
  CHECK(std::isfinite(fastExp(1e30f)));
}
