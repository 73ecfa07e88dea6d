//===- CompileCommand.h - `remat compile` --------------------------------===//
#ifndef REMAT_TOOLS_COMPILECOMMAND_H
#define REMAT_TOOLS_COMPILECOMMAND_H

#include "compiler/ModelFile.h"
#include "compiler/ModelGraph.h"
#include "passes/TrainStep.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <ostream>

#include <string>
#include <vector>

namespace remat::tools {

/// Reads a flag's value given as `FLAG VALUE` or `FLAG=VALUE` at argv[i]
/// (advancing i past a separate value); false when argv[i] is another
/// flag. Throws std::invalid_argument when the value is missing.
bool takeValue(int argc, char **argv, int &i, const std::string &flag,
               std::string &value);
/// Takes one of the flags that build an imported model's training step
/// (--input-shape NAME=D0,D1,..., --loss, --optimizer, --lr; docs/onnx.md)
/// at argv[i]; false when argv[i] is another flag. Throws
/// std::invalid_argument with a usage message on a bad value.
bool takeTrainingFlag(int argc, char **argv, int &i,
                      model::TrainingOptions &options);
/// Takes a flag that configures how a model is read at argv[i]: --preset
/// NAME, --set NAME=VALUE (repeatable), --ranks N, --microbatches K|auto,
/// --max-microbatches N, --microbatch-norm per-slice; false when argv[i] is
/// another flag. Throws std::invalid_argument with a usage message on a
/// bad value.
bool takeModelFlag(int argc, char **argv, int &i,
                   model::ModelOptions &options);
/// `value` as a whole count in [1, most]; nullopt otherwise.
std::optional<int64_t> positiveCount(const std::string &value, int64_t most);
/// A number of seconds >= 0 given to `flag` (--time-limit); throws
/// std::invalid_argument stating the range.
double parseSeconds(const std::string &flag, const std::string &value);
/// Those flags' names, and their lines of --help.
const std::vector<std::string> &trainingFlagNames();
extern const char *const kTrainingFlagsHelp;
/// The names --solver takes, from the planner's SolverKind (auto first).
std::vector<std::string> solverNames();
/// `remat compile MODEL [options]`; argv[0] is "compile".
/// Prints what the model's reader says beside the model to stderr: its
/// warnings, and the ONNX initializers it does not train (frozen) and why.
void printModelNotes(const model::ModelGraph &graph);

int compileMain(int argc, char **argv);
/// `remat train MODEL --steps N [options]`; argv[0] is "train".
int trainMain(int argc, char **argv);
/// `remat plan ...`; argv[0] is "plan".
int planMain(int argc, char **argv);
/// `remat profile MODEL|PLAN ...`; argv[0] is "profile".
int profileMain(int argc, char **argv);
/// The measured device profile of a model's step on `backend` (its plan
/// without a budget, timed as remat profile times it: tools/remat/
/// Profile.h); `measured` receives the raw table. Progress on `progress`.
DeviceProfile measureModelProfile(const model::ModelFile &model,
                                  const std::string &backend,
                                  std::ostream &progress, int warmup = 1,
                                  int steps = 5,
                                  nlohmann::json *measured = nullptr);
} // namespace remat::tools

#endif
