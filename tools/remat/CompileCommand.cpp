//===- CompileCommand.cpp - `remat compile` and `remat train` -------------===//
//
// compile: reads a model (a file or `-` for stdin), applies --preset/--set,
// runs the pipeline up to --emit's stage and writes it to -o (default
// stdout). train: compiles to a plan file and runs it (`remat run`'s
// options pass through, checked with train's own before any work). Errors
// go to stderr as one located message with exit code 1; usage errors exit 2
// (runtime/cli/Usage.h). Outputs are written through runtime/plan/OutputFile.h,
// so a failure never leaves a partial file behind.
//
//===----------------------------------------------------------------------===//

#include "tools/remat/CompileCommand.h"
#include "tools/remat/Backends.h"

#include "compiler/Driver.h"
#include "compiler/ModelFile.h"
#include "compiler/ModelGraph.h"
#include "runtime/plan/Safetensors.h"
#include "runtime/plan/OutputFile.h"
#include "passes/planner/Solvers.h"
#include "runtime/cli/Usage.h"
#ifdef REMAT_HAVE_RUN
#include "runtime/Backend.h"
#include "tools/remat/MeasuredChoice.h"
#include "runtime/cli/Profile.h"
#include "runtime/cli/RunCommand.h"
#endif

#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>
#include <unistd.h>

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

static const std::string kCompileHelp = std::string(
    "usage: remat compile MODEL [options]\n"
    "\n"
    "Reads MODEL (a JSON model file, or - for stdin; docs/model-format.md;\n"
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
    "                     planned    after -remat-rematerialize (--budget)\n"
    "                     plan       the plan file (docs/plan-format.md)\n"
    "  -o FILE            write to FILE instead of stdout (- is stdout)\n"
    "  --report FILE      with --emit=plan: write the memory report (JSON)\n"
    "  --budget BYTES     memory budget for the whole step: its arena and\n"
    "                     the backend's workspace, e.g. 1.5GiB, 800MB,\n"
    "                     123456; without it nothing is recomputed\n"
    "  --workspace-reserve BYTES\n"
    "                     with --budget: keep BYTES of the budget beside\n"
    "                     the arena for the backend's workspace (on CUDA:\n"
    "                     cuBLAS's and kernel scratch, docs/cuda.md); the\n"
    "                     arena is planned under budget - BYTES. Default:\n"
    "                     0 (cpu lays each op's scratch out in the arena)\n"
    "  --backend NAME     the backend the plan is for: cpu (default), cuda;\n"
    "                     on cpu its kernels' scratch is planned in the\n"
    "                     arena\n"
    "  --solver NAME      auto (default), exact, dp, heuristic, store-all,\n"
    "                     per-block, sqrt\n"
    "  --time-limit S     time limit of the exact MILP (default: 1 s inside\n"
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
    "                     measure: time the model's ops on --backend first\n"
    "                     (with --budget, also time the candidate plans and\n"
    "                     keep the fastest)\n"
    "  --preset NAME      apply a named preset of the model's config\n"
    "  --set NAME=VALUE   override a config variable (repeatable)\n"
    "  --ranks N          plan for N data-parallel ranks (mpirun -np N\n"
    "                     remat run PLAN): the config's batch is the global\n"
    "                     batch, each rank's step gets batch/N samples and\n"
    "                     the budget is per rank (docs/distributed.md)\n"
    "  --update-lag K     with --ranks: run each optimizer update K ops\n"
    "                     after the planner's place for it, so that its\n"
    "                     gradient's sum overlaps them (default 4; halved\n"
    "                     while the arena would exceed the budget; 0: off)\n"
    "  --shard-optimizer  with --ranks N > 1: each rank keeps 1/N of every\n"
    "                     optimizer state tensor and updates 1/N of each\n"
    "                     param, then the params are all-gathered (ZeRO-1;\n"
    "                     docs/distributed.md); no effect with one rank\n") +
    kTrainingFlagsHelp +
    "  -h, --help         this text\n";

static const std::string kTrainHelp = std::string(
    "usage: remat train MODEL --steps N [options]\n"
    "\n"
    "Compiles MODEL to a plan and runs N training steps on it: the same as\n"
    "`remat compile MODEL --emit=plan -o P` then `remat run P`.\n"
    "\n"
    "compile options: --preset NAME, --set NAME=VALUE, --ranks N,\n"
    "  --update-lag K, --shard-optimizer,\n"
    "  --budget BYTES,\n"
    "  --workspace-reserve BYTES, --backend NAME (the plan's and the run's),\n"
    "  --solver NAME, --time-limit S, --progress, --no-reorder,\n"
    "  --device-profile NAME|FILE|measure,\n"
    "  --plan FILE (keep the plan there, and an ONNX model's weights next\n"
    "  to it; default: a temporary file), --report FILE,\n"
    "  --input-shape NAME=D0,D1,..., --loss NAME, --optimizer NAME, --lr X,\n"
    "  --frozen NAME,... (ONNX models; see remat compile --help)\n"
    "run options (passed to remat run; see remat run --help): --steps N,\n"
    "  --seed S, --weights W, --save OUT, --log LOG, --data NAME=FILE,\n"
    "  --dump-grads G, --dump-values V, --dump-names NAME,...|all,\n"
    "  --backend NAME, --check-bounds, --sync-gradients\n"
    "\n"
    "Every option is checked before the compile starts. An ONNX model\n"
    "trains from its exported weights.\n");

namespace {
struct Options {
  std::string model;
  std::string emit = "graph";
  std::string output = "-";
  std::string report;
  std::optional<int64_t> budget;
  std::optional<int64_t> workspaceReserve;
  std::string backend = "cpu"; ///< the backend the plan is for
  std::string solver = "auto";
  double timeLimit = -1; ///< -1: 1 s for auto, 60 s for exact
  bool progress = false;
  bool reorder = true;
  bool minFeasible = false; ///< --min-feasible (compile only)
  int updateLag = 4;        ///< --update-lag
  model::ModelOptions modelOptions;
  DeviceProfile deviceProfile;
  /// --device-profile measure: time the step's ops first (remat profile).
  bool measureProfile = false;
  std::vector<std::string> passThrough; ///< train: options for `run`
};

int usageError(const char *command, const std::string &message) {
  return tools::usageError(std::cerr, command, message);
}

/// The flags of `remat compile` (train: its own, then `remat run`'s).
std::vector<std::string> flagNames(bool train) {
  std::vector<std::string> names = {
      "--report",     "--budget",     "--workspace-reserve", "--backend",
      "--solver",     "--time-limit", "--progress",
      "--no-reorder", "--reorder",    "--device-profile",
      "--preset",     "--set",        "--ranks",             "--update-lag",
      "--help",       "--shard-optimizer"};
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

/// Parses the shared options; returns -1 to go on, else an exit code.
int parse(const char *command, int argc, char **argv, Options &options,
          bool train) {
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
        std::optional<int64_t> &bytes =
            isBudget ? options.budget : options.workspaceReserve;
        bytes = compiler::parseByteSize(value);
        if (!bytes)
          return usageError(command, std::string(isBudget ? "--budget"
                                                          : "--workspace-reserve") +
                                         " '" + value +
                                         "' is not a byte size (e.g. "
                                         "1.5GiB, 800MB, 123456)");
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
        try {
          options.timeLimit = std::stod(value);
        } catch (const std::exception &) {
          return usageError(command, "--time-limit '" + value +
                                         "' is not a number of seconds");
        }
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

/// Reads the model (JSON or ONNX); prints its warnings to stderr.
model::ModelFile loadModelFile(const Options &options) {
  model::ModelFile file =
      model::readModelFile(options.model, options.modelOptions);
  for (const std::string &warning : file.graph.warnings)
    std::cerr << "warning: " << warning << "\n";
  return file;
}

void printSummary(const nlohmann::json &report) {
  using compiler::formatBytes;
  const auto &b = report["breakdown"];
  if (!report["budget_bytes"].is_null())
    std::cerr << "remat: budget "
              << formatBytes(report["budget_bytes"].get<int64_t>())
              << (report.value("workspace_reserve_bytes", int64_t(0)) > 0
                      ? " (arena: budget - workspace reserve " +
                            formatBytes(report["workspace_reserve_bytes"]
                                            .get<int64_t>()) +
                            ")"
                      : std::string())
              << ", solver " << report["solver"].get<std::string>()
              << ", recompute overhead "
              << report["recompute_overhead"].get<double>() * 100 << "%\n";
  std::cerr << "remat: planned peak "
            << formatBytes(report["planned_peak_bytes"].get<int64_t>())
            << ", arena " << formatBytes(report["arena_bytes"].get<int64_t>())
            << " (params " << formatBytes(b["params"].get<int64_t>())
            << ", grads " << formatBytes(b["grads"].get<int64_t>())
            << ", optimizer " << formatBytes(b["optimizer"].get<int64_t>())
            << (report.contains("optimizer_shards")
                    ? " (this rank's 1/" +
                          std::to_string(
                              report["optimizer_shards"].get<int64_t>()) +
                          ")"
                    : std::string())
            << (b.value("state", int64_t(0)) > 0
                    ? ", state " + formatBytes(b["state"].get<int64_t>())
                    : std::string())
            << ", inputs " << formatBytes(b["inputs"].get<int64_t>())
            << ", activations "
            << formatBytes(b["activations"].get<int64_t>()) << ", workspace "
            << formatBytes(b["workspace"].get<int64_t>()) << ")\n";
}

compiler::CompileOptions toCompileOptions(const Options &options) {
  compiler::CompileOptions c;
  c.budgetBytes = options.budget;
  c.workspaceReserveBytes = options.workspaceReserve;
  setBackend(c, options.backend);
  c.solver = options.solver;
  c.timeLimitSeconds = options.timeLimit >= 0 ? options.timeLimit
                       : options.solver == "exact" ? 60.0
                                                   : 1.0;
  c.progress = options.progress;
  c.reorder = options.reorder;
  c.searchMinimum = options.minFeasible;
  c.deviceProfile = options.deviceProfile;
  c.updateLag = options.updateLag;
  return c;
}

#ifdef REMAT_HAVE_RUN
/// A temporary directory, removed with everything in it at scope exit.
struct TempDir {
  std::filesystem::path path;
  explicit TempDir(const std::string &tag)
      : path(std::filesystem::temp_directory_path() /
             (tag + "-" + std::to_string(getpid()))) {
    std::filesystem::create_directories(path);
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path, ignored);
  }
};
#endif

/// Writes `plan` to `path`; a model with weights (ONNX) writes them next
/// to it, and the plan names them (docs/plan-format.md, "weights").
void writePlanFile(const model::ModelFile &model, runtime::Plan plan,
                   const std::string &path) {
  if (!model.weights.empty()) {
    if (path == "-")
      throw std::invalid_argument(
          "the plan of a model with weights (ONNX) needs -o FILE: its "
          "weights are written next to the plan");
    std::string weightsPath = model::weightsPathForPlan(path);
    runtime::writeSafetensors(weightsPath, model.weights);
    plan.weights = std::filesystem::path(weightsPath).filename().string();
  }
  runtime::writeOutputFile(path, runtime::serializePlanText(plan));
}

} // namespace

DeviceProfile measureModelProfile(const model::ModelFile &model,
                                  const std::string &backend,
                                  std::ostream &progress, int warmup,
                                  int steps, nlohmann::json *measured) {
#ifndef REMAT_HAVE_RUN
  (void)model, (void)backend, (void)progress, (void)warmup, (void)steps,
      (void)measured;
  throw std::invalid_argument("measured costs need the runtime, which this "
                              "build lacks");
#else
  // The plan without a budget: every op of the step once, at store-all.
  TempDir dir("remat-profile");
  std::string planPath = (dir.path / "step.plan").string();
  nlohmann::json report;
  compiler::CompileOptions compile;
  setBackend(compile, backend);
  writePlanFile(model, compiler::compilePlan(model.graph, compile, report),
                planPath);
  progress << "remat: measuring the step's op costs on the " << backend
           << " backend (" << warmup << " warm-up + " << steps
           << " timed steps)...\n";
  nlohmann::json table = measureOpCosts(planPath, backend, warmup, steps,
                                        progress);
  // Ops the table lacks (none for this model) keep the backend's roofline.
  DeviceProfile profile =
      *builtinDeviceProfile(backend == "cpu" ? "cpu" : "h200");
  profile.name = "measured-" + backend;
  for (const auto &[key, seconds] : table["ops"].items())
    profile.measured[key] = seconds.get<double>();
  if (measured)
    *measured = table;
  return profile;
#endif
}

namespace {

/// --device-profile measure under a budget: the candidate plans
/// (MeasuredChoice.h) made by the compiler and timed where they run
/// (remat profile PLAN, 1 warm-up + 3 steps a run). Returns the plan.
runtime::Plan planWithMeasuredCosts(const model::ModelFile &model,
                                    const compiler::CompileOptions &options,
                                    nlohmann::json &report,
                                    const std::string &backend) {
#ifndef REMAT_HAVE_RUN
  (void)model, (void)options, (void)report, (void)backend;
  throw std::invalid_argument("measured costs need the runtime, which this "
                              "build lacks");
#else
  TempDir dir("remat-candidates");
  std::map<std::string, std::string> paths; // plan files by source
  ChoiceHooks hooks;
  hooks.plan = [&](const DeviceProfile &costs, nlohmann::json &planReport) {
    compiler::CompileOptions o = options;
    o.deviceProfile = costs;
    return compiler::compilePlan(model.graph, o, planReport);
  };
  hooks.time = [&](const std::string &source, const runtime::Plan &plan) {
    std::string &path = paths[source];
    if (path.empty()) { // (an ONNX model's weights go next to it, once)
      path = (dir.path / ("candidate-" + source + ".plan")).string();
      std::replace(path.begin(), path.end(), ' ', '-');
      writePlanFile(model, plan, path);
    }
    std::ostringstream quiet;
    nlohmann::json timed = measureOpCosts(path, backend, /*warmup=*/1,
                                          /*steps=*/3, quiet);
    TimedRun run;
    run.stepSeconds = timed["step_seconds"].get<double>();
    nlohmann::json recomputed =
        timed.value("recompute_ops", nlohmann::json::object());
    for (const auto &[key, seconds] : recomputed.items())
      run.recomputeOps[key] = seconds.get<double>();
    return run;
  };
  return chooseMeasuredPlan(
      options.deviceProfile,
      *builtinDeviceProfile(backend == "cpu" ? "cpu" : "h200"), hooks, report,
      std::cerr);
#endif
}

/// Compiles to a plan file at `path` (and at `copyPath` if not empty, and
/// the report); returns the report.
nlohmann::json compileToPlanFile(const Options &options,
                                 const std::string &path,
                                 const std::string &copyPath = "") {
  model::ModelFile model = loadModelFile(options);
  compiler::CompileOptions compileOptions = toCompileOptions(options);
  nlohmann::json report;
  runtime::Plan plan;
  if (options.measureProfile) {
    compileOptions.deviceProfile =
        measureModelProfile(model, options.backend, std::cerr);
    plan = planWithMeasuredCosts(model, compileOptions, report,
                                 options.backend);
  } else {
    plan = compiler::compilePlan(model.graph, compileOptions, report);
  }
  for (const std::string &planPath : {path, copyPath})
    if (!planPath.empty())
      writePlanFile(model, plan, planPath);
  if (!options.report.empty())
    runtime::writeOutputFile(options.report, report.dump(2) + "\n");
  return report;
}
} // namespace

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
    size_t used = 0;
    double lr = -1;
    try {
      lr = std::stod(value, &used);
    } catch (const std::exception &) {
      used = 0;
    }
    if (used == 0 || used != value.size() || !(lr >= 0) || !std::isfinite(lr))
      throw std::invalid_argument("--lr '" + value +
                                  "' is not a non-negative number");
    options.lr = lr;
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

int compileMain(int argc, char **argv) {
  Options options;
  if (int code = parse("compile", argc, argv, options, false); code >= 0)
    return code;
  std::optional<compiler::Stage> stage = compiler::parseStage(options.emit);
  if (!stage)
    return usageError("compile", unknownName("--emit stage", options.emit,
                                             compiler::stageNames()));
  if (!options.report.empty() && *stage != compiler::Stage::Plan)
    return usageError("compile", "--report needs --emit=plan");
  if (options.budget && *stage < compiler::Stage::Planned)
    return usageError("compile", "--budget needs --emit=planned or "
                                 "--emit=plan (earlier stages plan nothing)");
  try {
    if (*stage == compiler::Stage::Plan) {
      nlohmann::json report = compileToPlanFile(options, options.output);
      printSummary(report);
      return 0;
    }
    model::ModelGraph graph = loadModelFile(options).graph;
    if (*stage == compiler::Stage::Flat) {
      runtime::writeOutputFile(options.output, model::toJson(graph).dump(1) + "\n");
      return 0;
    }
    mlir::MLIRContext context;
    auto module = compiler::buildModule(graph, context, *stage,
                                        toCompileOptions(options));
    std::string printed;
    llvm::raw_string_ostream os(printed);
    module->print(os);
    os << "\n";
    os.flush();
    runtime::writeOutputFile(options.output, printed);
  } catch (const model::OptionError &e) {
    return usageError("compile", e.what());
  } catch (const model::ModelError &e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  } catch (const std::exception &e) {
    std::cerr << "remat compile: error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}

static const char *kProfileHelp =
    "usage: remat profile MODEL|PLAN [-o PROFILE.json] [options]\n"
    "\n"
    "Times every op of the training step on a backend and writes a device\n"
    "profile (JSON) whose `ops` table gives each op call's measured seconds\n"
    "(the median over the timed steps; the same op, attributes and shapes\n"
    "pool their samples), and for a PLAN that recomputes `recompute_ops`,\n"
    "the same for its recomputations. `--device-profile PROFILE.json` plans\n"
    "with them; `--device-profile measure` (compile, train, plan) profiles\n"
    "first.\n"
    "A MODEL is profiled in its plan without a budget; a PLAN as it is.\n"
    "\n"
    "options:\n"
    "  -o FILE            write the profile to FILE (default stdout, -)\n"
    "  --steps N          timed training steps (default 5)\n"
    "  --warmup N         untimed steps first (default 1)\n"
    "  --backend NAME     the backend to time (default cpu)\n"
    "  --preset NAME, --set NAME=VALUE   model configuration\n"
    "  --ranks N          time one rank's step of an N-rank plan\n"
    "  --input-shape NAME=D0,D1,..., --loss NAME, --optimizer NAME, --lr X\n"
    "                     an ONNX model's training step (docs/onnx.md)\n"
    "  -h, --help         this text\n";

int profileMain(int argc, char **argv) {
#ifndef REMAT_HAVE_RUN
  (void)argc, (void)argv;
  std::cerr << "remat profile: this build has no runtime\n";
  return 1;
#else
  Options options;
  std::string output = "-";
  int steps = 5, warmup = 1;
  std::string backend = "cpu";
  auto count = [](const std::string &flag, const std::string &v, int min,
                  int &out) {
    size_t used = 0;
    try {
      out = std::stoi(v, &used);
    } catch (const std::exception &) {
      used = 0;
    }
    if (used == 0 || used != v.size() || out < min)
      throw std::invalid_argument(flag + " needs an integer >= " +
                                  std::to_string(min) + ", got '" + v + "'");
  };
  try {
    for (int i = 1; i < argc; ++i) {
      std::string arg = argv[i], value;
      if (arg == "-h" || arg == "--help") {
        std::cout << kProfileHelp;
        return 0;
      }
      if (takeTrainingFlag(argc, argv, i, options.modelOptions.training)) {
      } else if (takeValue(argc, argv, i, "-o", value)) {
        output = value;
      } else if (takeValue(argc, argv, i, "--steps", value)) {
        count("--steps", value, 1, steps);
      } else if (takeValue(argc, argv, i, "--warmup", value)) {
        count("--warmup", value, 0, warmup);
      } else if (takeValue(argc, argv, i, "--backend", value)) {
        backend = value;
      } else if (takeModelFlag(argc, argv, i, options.modelOptions)) {
      } else if (arg.size() > 1 && arg[0] == '-') {
        std::vector<std::string> flags = {"-o",       "--steps", "--warmup",
                                          "--backend", "--preset", "--set",
                                          "--ranks",  "--help"};
        for (const std::string &f : trainingFlagNames())
          flags.push_back(f);
        return usageError("profile", unknownOption(arg, flags));
      } else if (options.model.empty()) {
        options.model = arg;
      } else {
        return usageError("profile", "more than one model given");
      }
    }
  } catch (const std::invalid_argument &e) {
    return usageError("profile", e.what());
  }
  if (options.model.empty())
    return usageError("profile", "no model or plan given");
  {
    std::vector<std::string> built;
    std::string list = runtime::availableBackends();
    for (size_t begin = 0; begin <= list.size();) {
      size_t comma = std::min(list.find(',', begin), list.size());
      std::string name = list.substr(begin, comma - begin);
      name.erase(0, name.find_first_not_of(' '));
      built.push_back(name);
      begin = comma + 1;
    }
    if (std::find(built.begin(), built.end(), backend) == built.end())
      return usageError("profile", unknownName("backend", backend, built));
  }
  try {
    nlohmann::json profile;
    // A plan is timed as it is; a model in its plan without a budget.
    bool isPlan = false;
    if (options.model != "-") {
      std::ifstream in(options.model);
      nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
      isPlan = j.is_object() &&
               j.value("format", nlohmann::json()) == runtime::kPlanFormatName;
    }
    if (isPlan) {
      profile = planProfile(options.model, backend, warmup, steps, std::cerr);
    } else {
      nlohmann::json table;
      measureModelProfile(loadModelFile(options), backend, std::cerr, warmup,
                          steps, &table);
      profile = profileFile(std::move(table), backend, options.model);
    }
    writeProfileFile(output, profile, "remat profile");
    return 0;
  } catch (const model::ModelError &e) {
    std::cerr << "remat profile: error: " << e.what() << "\n";
    return 1;
  } catch (const std::invalid_argument &e) {
    return usageError("profile", e.what());
  } catch (const std::exception &e) {
    std::cerr << "remat profile: error: " << e.what() << "\n";
    return 1;
  }
#endif
}

int trainMain(int argc, char **argv) {
#ifndef REMAT_HAVE_RUN
  std::cerr << "remat train: this build has no runtime\n";
  return 1;
#else
  Options options;
  options.output = "";
  if (int code = parse("train", argc, argv, options, true); code >= 0)
    return code;
  // The run reads its own temporary copy of the plan: --plan may name a
  // file that cannot be read back (/dev/null, a FIFO). It is named after
  // the model, so that the run's errors (which name the plan) name it too,
  // in a folder under the temporary directory ($TMPDIR, else /tmp).
  const char *tmpdir = std::getenv("TMPDIR");
  std::string parent = tmpdir && *tmpdir ? tmpdir : "/tmp";
  std::string folder = parent + "/remat-train-XXXXXX";
  if (!mkdtemp(folder.data())) {
    std::cerr << "remat train: cannot create a temporary plan file in '"
              << parent << "'" << (tmpdir && *tmpdir ? " ($TMPDIR)" : "")
              << ": " << std::strerror(errno) << "\n";
    return 1;
  }
  std::string planPath =
      folder + "/" + std::filesystem::path(options.model).filename().string() +
      ".plan";
  int code = 0;
  try {
    nlohmann::json report =
        compileToPlanFile(options, planPath, /*copyPath=*/options.output);
    printSummary(report);
    std::vector<std::string> args = {"run", planPath};
    args.insert(args.end(), options.passThrough.begin(),
                options.passThrough.end());
    std::vector<char *> argvRun;
    for (std::string &a : args)
      argvRun.push_back(a.data());
    code = runMain(static_cast<int>(argvRun.size()), argvRun.data());
  } catch (const model::OptionError &e) {
    code = usageError("train", e.what());
  } catch (const model::ModelError &e) {
    std::cerr << "error: " << e.what() << "\n";
    code = 1;
  } catch (const std::exception &e) {
    std::cerr << "remat train: error: " << e.what() << "\n";
    code = 1;
  }
  std::remove(planPath.c_str());
  std::remove(model::weightsPathForPlan(planPath).c_str());
  std::error_code ec;
  std::filesystem::remove(folder, ec); // the folder, when empty
  return code;
#endif
}

} // namespace remat::tools
