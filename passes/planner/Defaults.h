//===- Defaults.h - The planner's option defaults, written once -*- C++ -*-===//
//
// What a compile plans with when the user names nothing: the CLI
// (tools/remat), the driver's CompileOptions, RematOptions, the passes'
// options (passes/Passes.td) and the solvers read these.
//
//===----------------------------------------------------------------------===//
#ifndef REMAT_PASSES_PLANNER_DEFAULTS_H
#define REMAT_PASSES_PLANNER_DEFAULTS_H

#include <cstdint>
#include <string>

namespace remat::defaults {

/// Bytes every buffer's offset and size are rounded up to.
inline constexpr int64_t kAlignment = 64;
/// The solver (planner::parseSolverKind's names).
inline constexpr const char *kSolver = "auto";
/// The exact MILP's time limit in seconds: within `auto` (which runs it on
/// small graphs), and alone (`--solver exact`).
inline constexpr double kTimeLimitSeconds = 1.0;
inline constexpr double kExactTimeLimitSeconds = 60.0;
/// With several ranks, how many ops later than planned each optimizer
/// update runs (--update-lag).
inline constexpr int kUpdateLag = 4;

/// The time limit of `solver` when the user gives none.
inline double timeLimitFor(const std::string &solver) {
  return solver == "exact" ? kExactTimeLimitSeconds : kTimeLimitSeconds;
}

} // namespace remat::defaults

#endif // REMAT_PASSES_PLANNER_DEFAULTS_H
