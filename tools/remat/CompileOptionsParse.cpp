//===- CompileOptionsParse.cpp - Options of compile and train -------------===//
//
// The help texts of `remat compile` and `remat train`, their option parser,
// and the flag readers the other commands share (tools/remat/
// CompileCommand.h): a flag's value, the model flags, an imported model's
// training flags.
//
//===----------------------------------------------------------------------===//

#include "tools/remat/CompileOptionsParse.h"

#include "compiler/Driver.h"
#include "passes/planner/Solvers.h"
#include "tools/remat/CompileCommand.h"
#ifdef REMAT_HAVE_RUN
#include "runtime/cli/RunCommand.h"
#endif

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <sstream>

namespace remat::tools {

const char *const kTrainingFlagsHelp =
    "  --input-shape NAME=D0,D1,...\n"
    "                     ONNX: the shape of input NAME where the model\n"
    "                     leaves dims dynamic (repeatable)\n"
    "  --loss NAME        ONNX: the loss on the first output (docs/onnx.md;\n"
    "                     the default depends on the output's last dim)\n"
    "  --optimizer NAME   ONNX: sgd (default) or adamw\n"
    "  --lr X             ONNX: learning rate (default: sgd 0.01, adamw\n"
    "                     0.001)\n"
    "  --frozen NAME,...  ONNX: float initializers not to train (torch\n"
    "                     buffers such as an attention mask; repeatable)\n";

static const std::string kCompileHelp =
    std::string(
        "usage: remat compile MODEL [options]\n"
        "\n"
        "Reads MODEL (a JSON model file, or - for stdin; "
        "docs/model-format.md;\n"
        "or an ONNX file, MODEL.onnx: docs/onnx.md), builds its training step\n"
        "and prints the requested stage. With --emit=plan an ONNX model's\n"
        "weights go next to the plan (P.plan -> P.weights.safetensors), which\n"
        "names them.\n"
        "\n"
        "options:\n"
        "  --emit=STAGE       flat       the flattened model as JSON\n"
        "                     graph      the verified forward graph (default)\n"
        "                     grad       after -remat-autodiff (@train_step)\n"
        "                     train      after -remat-optimizer\n"
        "                     scheduled  after -remat-schedule\n"
        "                     planned    after -remat-rematerialize "
        "(--budget)\n"
        "                     plan       the plan file (docs/plan-format.md)\n"
        "  -o FILE            write to FILE instead of stdout (- is stdout)\n"
        "  --report FILE      with --emit=plan: write the memory report "
        "(JSON)\n"
        "  --budget BYTES     memory budget for the whole step: its arena and\n"
        "                     the backend's workspace, e.g. 1.5GiB, 800MB,\n"
        "                     123456; without it nothing is recomputed\n"
        "  --workspace-reserve BYTES\n"
        "                     with --budget: keep BYTES of the budget beside\n"
        "                     the arena for the backend's workspace (on CUDA:\n"
        "                     cuBLAS's and kernel scratch, docs/cuda.md); the\n"
        "                     arena is planned under budget - BYTES. Default:\n"
        "                     0 (cpu lays each op's scratch out in the arena)\n"
        "  --backend NAME     the backend the plan is for: cpu (default), "
        "cuda;\n"
        "                     on cpu its kernels' scratch is planned in the\n"
        "                     arena\n"
        "  --solver NAME      auto (default), exact, dp, heuristic, "
        "store-all,\n"
        "                     per-block, sqrt\n"
        "  --time-limit S     time limit of the exact MILP (default: 1 s "
        "inside\n"
        "                     auto, 60 s with --solver exact)\n"
        "  --progress         solver progress on stderr\n"
        "  --no-reorder       keep the scheduled op order: the planner only\n"
        "                     recomputes (default: it may also move ops)\n"
        "  --min-feasible     with --budget: also search the minimum feasible\n"
        "                     budget for the report's min_feasible_bytes (it\n"
        "                     plans the step a dozen times; without it: null)\n"
        "  --device-profile NAME|FILE|measure\n"
        "                     the op costs the planner models: the rooflines\n"
        "                     cpu (default), h200, h200-tf32, a JSON file\n"
        "                     (docs/planner.md; remat profile writes one), or\n"
        "                     measure: time the model's ops on --backend "
        "first\n"
        "                     (with --budget, also time the candidate plans "
        "and\n"
        "                     keep the fastest)\n"
        "  --preset NAME      apply a named preset of the model's config\n"
        "  --set NAME=VALUE   override a config variable (repeatable)\n"
        "  --ranks N          plan for N data-parallel ranks (mpirun -np N\n"
        "                     remat run PLAN): the config's batch is the "
        "global\n"
        "                     batch, each rank's step gets batch/N samples "
        "and\n"
        "                     the budget is per rank (docs/distributed.md)\n"
        "  --microbatches K|auto\n"
        "                     run forward and backward on K slices of the\n"
        "                     batch (differing by at most one sample),\n"
        "                     summing their gradients before one optimizer\n"
        "                     update; auto:\n"
        "                     the K of least modeled step time that fits\n"
        "                     --budget (the default when the unsplit step "
        "does\n"
        "                     not fit it; docs/planner.md, \"Micro-batches\")\n"
        "  --max-microbatches N\n"
        "                     the largest K auto tries (default 16)\n"
        "  --microbatch-norm per-slice\n"
        "                     let a split step's batch norm use each\n"
        "                     micro-batch's statistics (without it, a model\n"
        "                     with batch norm is refused with --microbatches\n"
        "                     K > 1)\n"
        "  --update-lag K     with --ranks: run each optimizer update K ops\n"
        "                     after the planner's place for it, so that its\n"
        "                     gradient's sum overlaps them (default 4; halved\n"
        "                     while the arena would exceed the budget; 0: "
        "off)\n"
        "  --shard-optimizer  with --ranks N > 1: each rank keeps 1/N of "
        "every\n"
        "                     optimizer state tensor and updates 1/N of each\n"
        "                     param, then the params are all-gathered "
        "(ZeRO-1;\n"
        "                     docs/distributed.md); no effect with one rank\n"
        "  --precision NAME   fp32 (default); bf16: GEMMs, convolutions and\n"
        "                     attention in bf16 with float32 accumulation,\n"
        "                     the ops between them in bf16, norms, softmax,\n"
        "                     losses and the optimizer in float32 (autocast's\n"
        "                     rules, docs/precision.md); or fp64: every float\n"
        "                     tensor of the step in float64, for checking\n"
        "                     against a float64 reference (cpu backend;\n"
        "                     convolutions take its im2col path)\n") +
    kTrainingFlagsHelp + "  -h, --help         this text\n";

static const std::string kTrainHelp = std::string(
    "usage: remat train MODEL --steps N [options]\n"
    "\n"
    "Compiles MODEL to a plan and runs N training steps on it: the same as\n"
    "`remat compile MODEL --emit=plan -o P` then `remat run P`.\n"
    "\n"
    "compile options: --preset NAME, --set NAME=VALUE, --ranks N,\n"
    "  --microbatches K|auto, --max-microbatches N,\n"
    "  --microbatch-norm per-slice,\n"
    "  --update-lag K, --shard-optimizer, --precision NAME,\n"
    "  --budget BYTES,\n"
    "  --workspace-reserve BYTES, --backend NAME (the plan's and the run's),\n"
    "  --solver NAME, --time-limit S, --progress, --no-reorder,\n"
    "  --device-profile NAME|FILE|measure,\n"
    "  --plan FILE (keep the plan there, and an ONNX model's weights next\n"
    "  to it; default: a temporary file), --report FILE,\n"
    "  --input-shape NAME=D0,D1,..., --loss NAME, --optimizer NAME, --lr X,\n"
    "  --frozen NAME,... (ONNX models; see remat compile --help)\n"
    "run options (passed to remat run; see remat run --help): --steps N,\n"
    "  --seed S, --weights W, --save OUT, --save-dtype f32|bf16, --log LOG,\n"
    "  --data NAME=FILE,\n"
    "  --dump-grads G, --dump-values V, --dump-names NAME,...|all,\n"
    "  --backend NAME, --check-bounds, --sync-gradients, --comm NAME\n"
    "\n"
    "Every option is checked before the compile starts. An ONNX model\n"
    "trains from its exported weights.\n");

namespace {

/// The flags of `remat compile` (train: its own, then `remat run`'s).
std::vector<std::string> flagNames(bool train) {
  std::vector<std::string> names = {"--report",
                                    "--budget",
                                    "--workspace-reserve",
                                    "--backend",
                                    "--solver",
                                    "--time-limit",
                                    "--progress",
                                    "--no-reorder",
                                    "--reorder",
                                    "--device-profile",
                                    "--preset",
                                    "--set",
                                    "--ranks",
                                    "--update-lag",
                                    "--microbatches",
                                    "--max-microbatches",
                                    "--microbatch-norm",
                                    "--help",
                                    "--shard-optimizer",
                                    "--precision"};
  for (const std::string &flag : trainingFlagNames())
    names.push_back(flag);
  if (!train) {
    names.insert(names.begin(), {"--emit", "-o", "--min-feasible"});
    return names;
  }
  names.insert(names.begin(), "--plan");
#ifdef REMAT_HAVE_RUN
  for (const std::string &flag : runFlagNames())
    if (flag != "--help")
      names.push_back(flag);
#endif
  return names;
}

} // namespace

int parseCompileOptions(const char *command, int argc, char **argv,
                        CompileCommandOptions &options, bool train) {
  try {
    for (int i = 1; i < argc; ++i) {
      std::string arg = argv[i], value;
      if (arg == "-h" || arg == "--help") {
        std::cout << (train ? kTrainHelp : kCompileHelp);
        return 0;
      }
      if (takeTrainingFlag(argc, argv, i, options.modelOptions.training)) {
      } else if (!train && takeValue(argc, argv, i, "--emit", value)) {
        options.emit = value;
      } else if (takeValue(argc, argv, i, train ? "--plan" : "-o", value)) {
        options.output = value;
      } else if (takeValue(argc, argv, i, "--report", value)) {
        options.report = value;
      } else if (takeValue(argc, argv, i, "--budget", value) ||
                 takeValue(argc, argv, i, "--workspace-reserve", value)) {
        bool isBudget = arg.rfind("--budget", 0) == 0;
        (isBudget ? options.budget : options.workspaceReserve) =
            compiler::parseByteSizeFlag(
                isBudget ? "--budget" : "--workspace-reserve", value,
                /*positive=*/isBudget);
      } else if (takeValue(argc, argv, i, "--backend", value)) {
        // The plan's backend; train also runs on it, and remat run's
        // parser checks it against the backends built.
        const std::vector<std::string> &known = compiler::backendNames();
        if (!train &&
            std::find(known.begin(), known.end(), value) == known.end())
          return usageError(command, unknownName("backend", value, known));
        options.backend = value;
        if (train) {
          options.passThrough.push_back("--backend");
          options.passThrough.push_back(value);
        }
      } else if (takeValue(argc, argv, i, "--solver", value)) {
        options.solver = value;
      } else if (takeValue(argc, argv, i, "--device-profile", value)) {
        options.measureProfile = value == "measure";
        if (!options.measureProfile)
          options.deviceProfile = compiler::parseDeviceProfile(value);
      } else if (takeValue(argc, argv, i, "--time-limit", value)) {
        options.timeLimit = parseSeconds("--time-limit", value);
      } else if (arg == "--progress") {
        options.progress = true;
      } else if (arg == "--no-reorder" || arg == "--reorder") {
        options.reorder = arg == "--reorder";
      } else if (takeValue(argc, argv, i, "--update-lag", value)) {
        char *end = nullptr;
        long lag = std::strtol(value.c_str(), &end, 10);
        if (value.empty() || *end || lag < 0 || lag > 1000000)
          return usageError(command, "--update-lag '" + value +
                                         "' is not a count of ops (0 or more)");
        options.updateLag = int(lag);
      } else if (arg == "--min-feasible" && !train) {
        options.minFeasible = true;
      } else if (arg == "--shard-optimizer") {
        options.modelOptions.shardOptimizer = true;
      } else if (takeModelFlag(argc, argv, i, options.modelOptions)) {
#ifdef REMAT_HAVE_RUN
      } else if (std::optional<bool> takesValue =
                     train ? runFlagTakesValue(arg.substr(0, arg.find('=')))
                           : std::nullopt) {
        options.passThrough.push_back(arg);
        if (*takesValue && arg.find('=') == std::string::npos) {
          if (i + 1 >= argc)
            return usageError(command, arg + " needs a value");
          options.passThrough.push_back(argv[++i]);
        }
#endif
      } else if (arg.size() > 1 && arg[0] == '-') {
        return usageError(command, unknownOption(arg, flagNames(train)));
      } else if (options.model.empty()) {
        options.model = arg;
      } else {
        return usageError(command, "more than one model given ('" +
                                       options.model + "' and '" + arg +
                                       "')");
      }
    }
  } catch (const std::invalid_argument &e) {
    return usageError(command, e.what());
  }
  if (options.model.empty())
    return usageError(command, "no model given");
  planner::SolverKind solverKind;
  if (!planner::parseSolverKind(options.solver, solverKind)) {
    return usageError(command,
                      "--solver: " +
                          unknownName("solver", options.solver, solverNames()));
  }
#ifdef REMAT_HAVE_RUN
  if (train) {
    // The options `remat run` gets, checked now rather than after the
    // compile; the plan's path is not known yet.
    std::vector<std::string> args = {"run", "PLAN"};
    args.insert(args.end(), options.passThrough.begin(),
                options.passThrough.end());
    std::vector<char *> argvRun;
    for (std::string &a : args)
      argvRun.push_back(a.data());
    RunOptions checked;
    std::ostringstream ignored;
    if (int code = parseRunOptions(int(argvRun.size()), argvRun.data(), checked,
                                   ignored, std::cerr, command);
        code >= 0)
      return code;
    if (checked.steps == 0)
      return usageError(command, "--steps 0 trains nothing: give --steps N "
                                 "with N >= 1 (remat compile only compiles)");
    options.runOutputs = runOutputPaths(checked);
    options.runInputs = runInputPaths(checked);
  }
#endif
  if (options.workspaceReserve && !options.budget)
    return usageError(command, "--workspace-reserve needs --budget");
  if (options.workspaceReserve && *options.workspaceReserve >= *options.budget)
    return usageError(command, "--workspace-reserve " +
                                   std::to_string(*options.workspaceReserve) +
                                   " leaves nothing of --budget " +
                                   std::to_string(*options.budget) +
                                   " for the arena");
  return -1;
}

bool takeValue(int argc, char **argv, int &i, const std::string &flag,
               std::string &value) {
  std::string arg = argv[i];
  if (arg == flag) {
    if (i + 1 >= argc)
      throw std::invalid_argument(flag + " needs a value");
    value = argv[++i];
    return true;
  }
  if (arg.rfind(flag + "=", 0) == 0) {
    value = arg.substr(flag.size() + 1);
    return true;
  }
  return false;
}

std::optional<int64_t> positiveCount(const std::string &value, int64_t most) {
  size_t used = 0;
  long long n = 0;
  try {
    n = std::stoll(value, &used);
  } catch (const std::exception &) {
    return std::nullopt;
  }
  if (used == 0 || used != value.size() || n < 1 || n > most)
    return std::nullopt;
  return int64_t(n);
}

namespace {
/// `value` as a finite number >= 0, the whole string; nullopt otherwise.
std::optional<double> nonNegativeNumber(const std::string &value) {
  size_t used = 0;
  double number = -1;
  try {
    number = std::stod(value, &used);
  } catch (const std::exception &) {
    return std::nullopt;
  }
  if (used != value.size() || !(number >= 0) || !std::isfinite(number))
    return std::nullopt;
  return number;
}

/// `value` of `flag` as a micro-batch count in [1, kMaxMicrobatches];
/// `orElse` names what else the flag takes in the error.
int64_t microbatchCount(const std::string &flag, const std::string &value,
                        const std::string &orElse) {
  std::optional<int64_t> k = positiveCount(value, runtime::kMaxMicrobatches);
  if (!k)
    throw std::invalid_argument(flag + " needs a count in [1, " +
                                std::to_string(runtime::kMaxMicrobatches) +
                                "]" + orElse + ", got '" + value + "'");
  return *k;
}
} // namespace

double parseSeconds(const std::string &flag, const std::string &value) {
  std::optional<double> seconds = nonNegativeNumber(value);
  if (!seconds)
    throw std::invalid_argument(flag + " needs a number of seconds >= 0, got '" +
                                value + "'");
  return *seconds;
}

const std::vector<std::string> &trainingFlagNames() {
  static const std::vector<std::string> names = {
      "--input-shape", "--loss", "--optimizer", "--lr", "--frozen"};
  return names;
}

bool takeModelFlag(int argc, char **argv, int &i,
                   model::ModelOptions &options) {
  std::string value;
  if (takeValue(argc, argv, i, "--preset", value)) {
    options.preset = value;
    return true;
  }
  if (takeValue(argc, argv, i, "--set", value)) {
    auto eq = value.find('=');
    if (eq == std::string::npos || eq == 0)
      throw std::invalid_argument("--set expects NAME=VALUE, got '" + value +
                                  "'");
    options.overrides.emplace_back(value.substr(0, eq), value.substr(eq + 1));
    return true;
  }
  if (takeValue(argc, argv, i, "--microbatches", value)) {
    options.microbatchesGiven = true;
    if (value == "auto") {
      options.autoMicrobatches = true;
      options.microbatches = 1;
      return true;
    }
    options.microbatches = microbatchCount("--microbatches", value, " or auto");
    options.autoMicrobatches = false;
    return true;
  }
  if (takeValue(argc, argv, i, "--max-microbatches", value)) {
    options.maxMicrobatches = microbatchCount("--max-microbatches", value, "");
    return true;
  }
  if (takeValue(argc, argv, i, "--microbatch-norm", value)) {
    if (value != "per-slice")
      throw std::invalid_argument("--microbatch-norm: the one choice is "
                                  "per-slice, got '" +
                                  value + "'");
    options.perSliceNorm = true;
    return true;
  }
  if (takeValue(argc, argv, i, "--ranks", value)) {
    size_t used = 0;
    long long n = 0;
    try {
      n = std::stoll(value, &used);
    } catch (const std::exception &) {
      used = 0;
    }
    if (used == 0 || used != value.size() || n < 1 || n > (1 << 20))
      throw std::invalid_argument("--ranks needs a rank count in [1, 2^20], "
                                  "got '" + value + "'");
    options.ranks = n;
    return true;
  }
  if (takeValue(argc, argv, i, "--precision", value)) {
    if (value != "fp32" && value != "bf16" && value != "fp64")
      throw std::invalid_argument(
          "--precision: " +
          unknownName("precision", value, {"fp32", "bf16", "fp64"}));
    options.precision = value;
    return true;
  }
  return false;
}

bool takeTrainingFlag(int argc, char **argv, int &i,
                      model::TrainingOptions &options) {
  std::string value;
  if (takeValue(argc, argv, i, "--input-shape", value)) {
    auto eq = value.find('=');
    std::vector<int64_t> dims;
    bool ok = eq != std::string::npos && eq > 0 && eq + 1 < value.size();
    for (size_t begin = eq + 1; ok && begin <= value.size();) {
      size_t comma = value.find(',', begin);
      std::string dim = value.substr(begin, comma == std::string::npos
                                                ? std::string::npos
                                                : comma - begin);
      size_t used = 0;
      long long d = 0;
      try {
        d = std::stoll(dim, &used);
      } catch (const std::exception &) {
        used = 0;
      }
      ok = used > 0 && used == dim.size() && d > 0;
      dims.push_back(d);
      if (comma == std::string::npos)
        break;
      begin = comma + 1;
    }
    if (!ok)
      throw std::invalid_argument(
          "--input-shape needs NAME=D0,D1,... with positive dims, got '" +
          value + "'");
    options.inputShapes[value.substr(0, eq)] = dims;
    return true;
  }
  if (takeValue(argc, argv, i, "--frozen", value)) {
    // The importer checks that each name is a float initializer.
    for (size_t begin = 0; begin <= value.size();) {
      size_t comma = value.find(',', begin);
      std::string name = value.substr(
          begin, comma == std::string::npos ? std::string::npos : comma - begin);
      if (name.empty())
        throw std::invalid_argument(
            "--frozen needs NAME[,NAME...] of initializers, got '" + value +
            "'");
      options.frozen.insert(name);
      if (comma == std::string::npos)
        break;
      begin = comma + 1;
    }
    return true;
  }
  if (takeValue(argc, argv, i, "--loss", value)) {
    // The importer checks the name (model::OptionError, a usage error).
    options.loss = value;
    return true;
  }
  if (takeValue(argc, argv, i, "--optimizer", value)) {
    if (value != "sgd" && value != "adamw")
      throw std::invalid_argument(
          "--optimizer: " + unknownName("optimizer", value, {"sgd", "adamw"}));
    options.optimizer = value;
    return true;
  }
  if (takeValue(argc, argv, i, "--lr", value)) {
    std::optional<double> lr = nonNegativeNumber(value);
    if (!lr)
      throw std::invalid_argument("--lr '" + value +
                                  "' is not a non-negative number");
    options.lr = *lr;
    return true;
  }
  return false;
}

std::vector<std::string> solverNames() {
  std::vector<std::string> names;
  for (int k = int(planner::SolverKind::Auto);
       k <= int(planner::SolverKind::SqrtN); ++k)
    names.push_back(planner::solverKindName(planner::SolverKind(k)));
  return names;
}

} // namespace remat::tools
