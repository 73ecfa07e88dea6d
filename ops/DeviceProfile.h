//===- DeviceProfile.h - The modeled cost of an op on a device -*- C++ -*-===//
//
// The planner weighs recomputations by a device profile: a roofline, and
// optionally measured seconds by op call (`remat profile`, ops/CostKey.h).
// MLIR-free, so that the runtime's profiler (remat-run profile, on a GPU
// machine without MLIR) writes profiles with the same built-in figures.
//
//===----------------------------------------------------------------------===//
#ifndef REMAT_OPS_DEVICEPROFILE_H
#define REMAT_OPS_DEVICEPROFILE_H

#include <cstdint>
#include <map>
#include <optional>
#include <string>

namespace remat {

/// A roofline device profile for the modeled cost of an op:
/// seconds = max(flops / flopsPerSecond, bytes / bytesPerSecond) + launch.
/// The default ("cpu") is this project's CPU machine; the planner weighs
/// recomputations by it, so plans for a GPU should use that GPU's profile
/// (`--device-profile`, docs/planner.md).
struct DeviceProfile {
  std::string name = "cpu";
  double flopsPerSecond = 100e9;
  double bytesPerSecond = 20e9;
  double launchSeconds = 2e-6;
  /// Measured seconds by op call (ops::opCostKey): `remat profile`'s
  /// table. An op found here costs what was measured, others the roofline.
  std::map<std::string, double> measured;
  /// Measured seconds of op calls as recomputations, in a planned step
  /// (`remat profile PLAN`'s `recompute_ops`): where a recomputation's
  /// operands and cache state differ from the first computation's. The
  /// planner charges a recomputation this, else what `measured` says.
  std::map<std::string, double> recomputeMeasured;
  /// The FLOP rate of an op whose float operands are all bf16 (--precision
  /// bf16's GEMMs, convolutions and attention); 0: flopsPerSecond.
  double bf16FlopsPerSecond = 0;
  /// The roofline's seconds; `bf16` for an op on bf16 operands.
  double opSeconds(int64_t flops, int64_t bytes, bool bf16 = false) const;
};

/// The built-in profiles by name ("cpu", "h200", "h200-tf32"); nullopt for
/// another name.
std::optional<DeviceProfile> builtinDeviceProfile(const std::string &name);
/// Their names, for messages: "cpu, h200, h200-tf32".
std::string builtinDeviceProfileNames();

} // namespace remat

#endif // REMAT_OPS_DEVICEPROFILE_H
