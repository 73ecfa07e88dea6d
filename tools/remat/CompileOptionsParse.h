//===- CompileOptionsParse.h - Options of compile and train -----*- C++ -*-===//
//
// The options `remat compile` and `remat train` share (and `remat profile`
// reads a model with) and their parser, which checks every option before
// any work starts.
//
//===----------------------------------------------------------------------===//
#ifndef REMAT_TOOLS_COMPILEOPTIONSPARSE_H
#define REMAT_TOOLS_COMPILEOPTIONSPARSE_H

#include "compiler/ModelGraph.h"
#include "ops/DeviceProfile.h"
#include "passes/planner/Defaults.h"
#include "runtime/cli/Usage.h"
#include "runtime/plan/OutputFile.h"

#include <cstdint>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

namespace remat::tools {

/// The options of `remat compile` and `remat train`.
struct CompileCommandOptions {
  std::string model;
  std::string emit = "graph";
  std::string output = "-";
  std::string report;
  std::optional<int64_t> budget;
  std::optional<int64_t> workspaceReserve;
  std::string backend = "cpu"; ///< the backend the plan is for
  std::string solver = defaults::kSolver;
  double timeLimit = -1; ///< -1: defaults::timeLimitFor(solver)
  bool progress = false;
  bool reorder = true;
  bool minFeasible = false; ///< --min-feasible (compile only)
  int updateLag = defaults::kUpdateLag; ///< --update-lag
  model::ModelOptions modelOptions;
  DeviceProfile deviceProfile;
  /// --device-profile measure: time the step's ops first (remat profile).
  bool measureProfile = false;
  std::vector<std::string> passThrough; ///< train: options for `run`
  /// train: the files the run writes and reads (runOutputPaths).
  std::vector<runtime::NamedPath> runOutputs, runInputs;
};

/// Prints a usage error of `remat COMMAND` to stderr; returns its exit code.
inline int usageError(const char *command, const std::string &message) {
  return tools::usageError(std::cerr, command, message);
}

/// Parses `remat compile`'s options (`train`: `remat train`'s, whose run
/// options are checked by `remat run`'s parser and kept in passThrough);
/// prints --help. Returns -1 to go on, else an exit code.
int parseCompileOptions(const char *command, int argc, char **argv,
                        CompileCommandOptions &options, bool train);

} // namespace remat::tools

#endif // REMAT_TOOLS_COMPILEOPTIONSPARSE_H
