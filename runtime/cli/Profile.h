//===- Profile.h - Measured op costs of a plan (remat profile) --*- C++ -*-===//
//
// Times every step of a plan on a backend: warm-up training steps, then
// timed ones; each plan step's time is from the end of the previous step to
// its own end (the backend synchronized), and the median over the timed
// steps is its cost. Steps that make the same op call (ops::opCostKey: op,
// attributes, operand and result shapes) pool their samples. The result is
// the `ops` table of a device profile (docs/planner.md, "Measured costs");
// recomputations pool apart, into `recompute_ops`.
//
//===----------------------------------------------------------------------===//
#ifndef REMAT_TOOLS_REMAT_PROFILE_H
#define REMAT_TOOLS_REMAT_PROFILE_H

#include <nlohmann/json.hpp>

#include <ostream>
#include <string>
#include <vector>

namespace remat::runtime {
class Backend;
struct DeviceMemoryReport;
struct Plan;
struct StepDesc;
}

namespace remat::tools {

/// The median of `v` (the mean of the middle two for an even count); 0
/// when empty.
double median(std::vector<double> v);

/// The op call a plan step makes, as profiles key their costs
/// (ops::opCostKey of its op, attributes, operand and result shapes).
std::string stepCostKey(const runtime::Plan &plan,
                        const runtime::StepDesc &step);

/// {"backend", "warmup_steps", "timed_steps", "step_seconds" (median of
/// whole training steps), "ops": {key: seconds} (first computations),
/// "recompute_ops": {key: seconds} (recomputations; absent without any),
/// "calls": [{step, op, phase, recompute, seconds}]}. Progress on
/// `progress`.
/// Throws runtime::PlanError / ExecutionError like remat run.
nlohmann::json measureOpCosts(const std::string &planPath,
                              const std::string &backendName, int warmup,
                              int steps, std::ostream &progress);

/// The device profile file of a PLAN (`remat profile PLAN`, `remat-run
/// profile PLAN`; docs/cli.md): {name, flops_per_second, bytes_per_second,
/// launch_seconds (the backend's roofline, for ops the tables lack), ops,
/// recompute_ops (if any), source: {backend, model, warmup_steps,
/// timed_steps, step_seconds, and on a device that reports it
/// device_memory and budget_bytes}, calls}.
nlohmann::json planProfile(const std::string &planPath,
                           const std::string &backendName, int warmup,
                           int steps, std::ostream &progress);
/// The same profile file from measureOpCosts' `table` of `model`.
nlohmann::json profileFile(nlohmann::json table,
                           const std::string &backendName,
                           const std::string &model);
/// Writes a profile file to `output` and says on stderr, as `command`,
/// how many op calls it times and the median step.
void writeProfileFile(const std::string &output, const nlohmann::json &profile,
                      const std::string &command);

/// `remat-run profile PLAN [-o FILE] [--steps N] [--warmup N] [--backend
/// NAME]`: planProfile without the compiler (a GPU machine without MLIR).
/// argv[0] is "profile". Returns the exit status.
int profilePlanMain(int argc, char **argv);

/// A backend's device memory (Backend::deviceMemory) as the `device_memory`
/// object of remat run's log and remat profile's output (docs/cuda.md,
/// "Memory"), and as the line remat run prints when it ends.
nlohmann::json deviceMemoryJson(const runtime::DeviceMemoryReport &memory);
std::string deviceMemoryLine(const runtime::DeviceMemoryReport &memory);

} // namespace remat::tools

#endif // REMAT_TOOLS_REMAT_PROFILE_H
