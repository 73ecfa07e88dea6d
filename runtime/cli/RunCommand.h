//===- RunCommand.h - `remat run`: execute a plan for N training steps ---===//
//
//   remat run model.plan --steps N [--seed S] [--weights W.safetensors]
//       [--save OUT.safetensors] [--log log.jsonl] [--data name=file.npy]...
//       [--dump-grads G.safetensors] [--backend cpu] [--check-bounds]
//       [--dump-values V.safetensors --dump-names NAME,...|all]
//
// Depends only on the runtime (no MLIR), so the standalone `remat-run`
// executable and the `remat` CLI share it.
//
//===----------------------------------------------------------------------===//
#ifndef REMAT_TOOLS_REMAT_RUNCOMMAND_H
#define REMAT_TOOLS_REMAT_RUNCOMMAND_H

#include "runtime/plan/OutputFile.h"

#include <cstdint>
#include <iostream>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace remat {

struct RunOptions {
  std::string planPath;
  int64_t steps = 1;
  std::optional<uint64_t> seed; ///< overrides the plan's seed
  std::string weightsPath;      ///< load params (and state) before step 1
  std::string savePath;         ///< save params and state after the run
  /// --save-dtype f32|bf16: the float tensors of --save as they are, or
  /// rounded to BF16 (to nearest, ties to even).
  bool saveBf16 = false;
  std::string logPath;          ///< JSONL, one object per step
  std::string dumpGradsPath;    ///< param grads of step 1, by param name
  /// --dump-values: step 1's values of the buffers dumpValueNames names
  /// (inputs, activations, temporaries), as the plan computes them; "all"
  /// names every such buffer.
  std::string dumpValuesPath;
  std::vector<std::string> dumpValueNames;
  /// (input buffer name, .npy path) pairs.
  std::vector<std::pair<std::string, std::string>> data;
  std::string backend = "cpu";
  /// Check every step's reads and writes against its buffers
  /// (runtime/BoundsCheck.h): slow, for debugging a backend.
  bool checkBounds = false;
  /// --sync-gradients: data-parallel runs wait for each gradient's sum
  /// right away (no overlap; for measuring the overlap).
  bool syncGradients = false;
  /// --comm auto|mpi|nccl: how gradients are communicated
  /// (runtime/GradientComm.h, docs/distributed.md).
  std::string comm = "auto";
  /// The command's name in usage errors: "run", or "remat-run".
  std::string command = "run";
  std::ostream *out = &std::cout; ///< step lines
  std::ostream *err = &std::cerr; ///< errors and the header line
};

/// Loads, validates and runs the plan. Returns 0 on success, 1 on any error
/// (printed to `err` as "remat run: error: <message>").
int runCommand(const RunOptions &options);

/// Parses `argv[1..argc)` (argv[0] is the command name and ignored) into
/// RunOptions and calls runCommand. `--help` prints usage and returns 0; a
/// usage error prints a message and returns 2.
int runMain(int argc, char **argv);
/// Same, printing to the given streams (tests).
int runMain(int argc, char **argv, std::ostream &out, std::ostream &err);

/// Parses `argv[1..argc)` into `opt` (its planPath included), naming
/// `command` in usage errors ("run"; "train" for the options it passes on).
/// Returns -1 to go on, 0 after printing --help to `out`, 2 after printing a
/// usage error to `err`.
int parseRunOptions(int argc, char **argv, RunOptions &opt, std::ostream &out,
                    std::ostream &err, const std::string &command);

/// Every flag `remat run` takes ("--steps", ...), for `remat train`, which
/// passes them on, and for suggestions.
std::vector<std::string> runFlagNames();
/// Whether a flag of runFlagNames() takes a value; nullopt for other words.
std::optional<bool> runFlagTakesValue(const std::string &flag);

/// The files a run writes (--save, --log, --dump-grads, --dump-values) and
/// reads besides its plan (--weights, --data), by flag: what checkOutputs
/// (runtime/plan/OutputFile.h) compares before any work.
std::vector<runtime::NamedPath> runOutputPaths(const RunOptions &options);
std::vector<runtime::NamedPath> runInputPaths(const RunOptions &options);

/// The usage text printed by --help, for `command` ("run", or "remat-run"
/// for the standalone binary).
std::string runUsage(const std::string &command = "run");

} // namespace remat

#endif // REMAT_TOOLS_REMAT_RUNCOMMAND_H
