//===- DeviceProfile.cpp - The modeled cost of an op on a device ----------===//
#include "ops/DeviceProfile.h"

#include <algorithm>

namespace remat {

double DeviceProfile::opSeconds(int64_t flops, int64_t bytes, bool bf16) const {
  double rate =
      bf16 && bf16FlopsPerSecond > 0 ? bf16FlopsPerSecond : flopsPerSecond;
  return std::max(double(flops) / rate, double(bytes) / bytesPerSecond) +
         launchSeconds;
}

std::optional<DeviceProfile> builtinDeviceProfile(const std::string &name) {
  // The GPU figures are 75% of the datasheet peaks of an H200 SXM (f32 67
  // TFLOP/s, tf32 tensor cores 494 TFLOP/s dense, bf16 tensor cores 989
  // TFLOP/s dense, HBM3e 4.8 TB/s), not measurements; the launch cost is an
  // eager kernel launch. The cpu backend computes a bf16 GEMM in float32 on
  // widened copies, so "cpu" has no bf16 rate of its own.
  if (name == "cpu")
    return DeviceProfile{};
  if (name == "h200")
    return DeviceProfile{"h200", 50e12, 3.6e12, 4e-6, {}, {}, 740e12};
  if (name == "h200-tf32")
    return DeviceProfile{"h200-tf32", 370e12, 3.6e12, 4e-6, {}, {}, 740e12};
  return std::nullopt;
}

std::string builtinDeviceProfileNames() { return "cpu, h200, h200-tf32"; }

} // namespace remat
