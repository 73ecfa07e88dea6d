//===- PlanSession.h - What `remat plan`'s forms share -----------*- C++ -*-===//
//
// The options of `remat plan` (tools/remat/PlanCommand.cpp), a model
// configuration's scheduled step with its planner problem, and the helpers
// its forms share; planMaxBatch (PlanMaxBatch.cpp) is the --max-batch form.
//
//===----------------------------------------------------------------------===//
#ifndef REMAT_TOOLS_REMAT_PLANSESSION_H
#define REMAT_TOOLS_REMAT_PLANSESSION_H

#include "compiler/ModelGraph.h"
#include "ops/DeviceProfile.h"
#include "passes/Rematerialize.h"
#include "passes/planner/Defaults.h"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>

namespace remat::tools {

struct PlanOptions {
  std::string model;
  std::string graph;
  std::optional<int64_t> budget;
  std::optional<int64_t> workspaceReserve; ///< --workspace-reserve
  std::string backend = "cpu";             ///< --backend
  std::string budgetFraction;
  bool sweep = false;
  bool maxBatch = false;
  bool minFeasible = false; ///< --min-feasible
  int points = 10;
  std::string solver = defaults::kSolver;
  double timeLimit = -1; ///< -1: defaults::timeLimitFor(solver)
  bool progress = false;
  /// Default: on for models, off for --graph (the literature's fixed order).
  std::optional<bool> reorder;
  std::string jsonPath;
  std::string svgPath; ///< --svg (with --sweep)
  model::ModelOptions modelOptions;
  DeviceProfile deviceProfile; ///< --device-profile
  bool measureProfile = false; ///< --device-profile measure
};

/// The scheduled step of a model configuration and its planner problem.
struct Session {
  TrainStep step;
  planner::Problem problem;
  int64_t storeAllArena = 0;
  int64_t alignment = defaults::kAlignment;
};

/// The model as `modelOptions` configure it; its notes go to stderr
/// when `warn` (once per command, not once per --max-batch trial).
model::ModelGraph loadModelFile(const PlanOptions &options,
                                const model::ModelOptions &modelOptions,
                                bool warn);
Session openSession(const PlanOptions &options,
                    const model::ModelOptions &modelOptions, bool warn = true);
/// The modeled recomputation of `a` over the step's modeled time.
double recomputeOverhead(const Session &s, const Attempt &a);
planner::SolveOptions solveOptions(const PlanOptions &options);
/// `j` to --json FILE, where given.
void writeJson(const PlanOptions &options, const nlohmann::json &j);
/// `remat plan MODEL --max-batch --budget B`: 0, or 1 when no batch fits.
int planMaxBatch(const PlanOptions &options, planner::SolverKind kind);

} // namespace remat::tools

#endif // REMAT_TOOLS_REMAT_PLANSESSION_H
