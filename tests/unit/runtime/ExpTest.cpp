//===- ExpTest.cpp - The CPU kernels' exponential, row sums and maxima ----===//
#include "runtime/backends/cpu/kernels/Common.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

using remat::runtime::cpu::fastExp;
using remat::runtime::cpu::laneMax;
using remat::runtime::cpu::laneSum;

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

TEST_CASE("laneSum adds lane by lane in its documented order, and laneMax "
          "is the row's max",
          "[runtime]") {
  // Terms whose double sum depends on the order: 1e16 and 1s, which one
  // running sum drops and a lane of 1s keeps.
  for (int64_t n : {1, 3, 8, 13, 16, 37, 1000}) {
    std::vector<double> x(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i)
      x[size_t(i)] = i % 9 == 0 ? 1e16 * (i % 2 ? -1 : 1) : 1.0 + i % 5;
    auto term = [&](int64_t i) { return x[size_t(i)]; };
    // The documented order, written out: lane l adds terms l, l + 8, ...;
    // the tail's go to lane 0; lanes added pairwise.
    double lane[8] = {};
    int64_t whole = n / 8 * 8;
    for (int64_t i = 0; i < whole; ++i)
      lane[i % 8] += x[size_t(i)];
    for (int64_t i = whole; i < n; ++i)
      lane[0] += x[size_t(i)];
    double want = ((lane[0] + lane[1]) + (lane[2] + lane[3])) +
                  ((lane[4] + lane[5]) + (lane[6] + lane[7]));
    INFO("n " << n);
    CHECK(laneSum(n, term) == want);
    double four[4] = {};
    for (int64_t i = 0; i < n / 4 * 4; ++i)
      four[i % 4] += x[size_t(i)];
    for (int64_t i = n / 4 * 4; i < n; ++i)
      four[0] += x[size_t(i)];
    CHECK(laneSum<double, 4>(n, term) ==
          (four[0] + four[1]) + (four[2] + four[3]));
    std::vector<float> f(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i)
      f[size_t(i)] = float(-1000 + (i * 7919) % 1013) - 0.5f;
    CHECK(laneMax<float>(n, [&](int64_t i) { return f[size_t(i)]; }) ==
          *std::max_element(f.begin(), f.end()));
  }
  // The tail's terms go to lane 0, not to lane i % 8: 1e16 in lane 1
  // would lose a 1 that lane 0 keeps (1e16 + 2 is a double; + 1 is not).
  std::vector<double> tail = {0, 1e16, 0, 0, 0, 0, 0, 0, 1, 1, 0, 0, 0};
  CHECK(laneSum(13, [&](int64_t i) { return tail[size_t(i)]; }) == 1e16 + 2);
}
