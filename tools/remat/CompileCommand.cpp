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
#include "passes/planner/Defaults.h"

#include "compiler/Driver.h"
#include "compiler/ModelFile.h"
#include "compiler/ModelGraph.h"
#include "runtime/plan/Safetensors.h"
#include "runtime/plan/OutputFile.h"
#include "tools/remat/CompileOptionsParse.h"
#include "runtime/cli/Usage.h"
#ifdef REMAT_HAVE_RUN
#include "runtime/Backend.h"
#include "runtime/Ranks.h"
#include "tools/remat/MeasuredChoice.h"
#include "runtime/cli/Profile.h"
#include "runtime/cli/RunCommand.h"
#endif

#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cerrno>
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

void printModelNotes(const model::ModelGraph &graph) {
  for (const std::string &warning : graph.warnings)
    std::cerr << "warning: " << warning << "\n";
  if (graph.frozen.empty())
    return;
  std::cerr << "remat: not trained (frozen):";
  const char *separator = " ";
  for (const auto &[name, why] : graph.frozen) {
    std::cerr << separator << "'" << name << "' (" << why << ")";
    separator = ", ";
  }
  std::cerr << "\n";
}

namespace {

/// Reads the model (JSON or ONNX); prints its notes to stderr.
model::ModelFile loadModelFile(const CompileCommandOptions &options) {
  model::ModelFile file =
      model::readModelFile(options.model, options.modelOptions);
  printModelNotes(file.graph);
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
  if (int64_t k = report.value("microbatches", int64_t(1)); k > 1)
    std::cerr << "remat: "
              << runtime::describeMicrobatches(
                     k, report["microbatch_samples"].get<int64_t>(),
                     report["step_samples"].get<int64_t>())
              << ", gradients summed before one update\n";
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
            << (b.value("accumulators", int64_t(0)) > 0
                    ? ", accumulators " +
                          formatBytes(b["accumulators"].get<int64_t>())
                    : std::string())
            << ", inputs " << formatBytes(b["inputs"].get<int64_t>())
            << ", activations " << formatBytes(b["activations"].get<int64_t>())
            << ", workspace " << formatBytes(b["workspace"].get<int64_t>())
            << ")\n";
}

compiler::CompileOptions
toCompileOptions(const CompileCommandOptions &options) {
  compiler::CompileOptions c;
  c.budgetBytes = options.budget;
  c.workspaceReserveBytes = options.workspaceReserve;
  setBackend(c, options.backend);
  c.solver = options.solver;
  c.timeLimitSeconds = options.timeLimit >= 0
                           ? options.timeLimit
                           : defaults::timeLimitFor(options.solver);
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

/// Adds `plan` at `path` to `outputs`; a model with weights (ONNX) writes
/// them next to it, and the plan names them (docs/plan-format.md,
/// "weights"). A plan written to /dev/null takes its weights with it.
void addPlanFile(runtime::OutputSet &outputs, const model::ModelFile &model,
                 runtime::Plan plan, const std::string &path) {
  if (!model.weights.empty() && !runtime::isDiscarded(path)) {
    if (path == "-")
      throw std::invalid_argument(
          "the plan of a model with weights (ONNX) needs -o FILE: its "
          "weights are written next to the plan");
    if (!runtime::takesSidecar(path))
      throw std::invalid_argument(
          "the plan of a model with weights (ONNX) needs a regular file for "
          "its plan (not '" + path + "'): its weights are written next to it");
    std::string weightsPath = model::weightsPathForPlan(path);
    runtime::writeSafetensors(outputs.open(weightsPath), model.weights);
    plan.weights = std::filesystem::path(weightsPath).filename().string();
  }
  outputs.write(path, runtime::serializePlanText(plan));
}

/// Writes `plan` to `path` (and its weights next to it) at once.
void writePlanFile(const model::ModelFile &model, runtime::Plan plan,
                   const std::string &path) {
  runtime::OutputSet outputs;
  addPlanFile(outputs, model, std::move(plan), path);
  outputs.commit();
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

/// The plan of `model` under `compile`: with --microbatches auto, or with a
/// budget the unsplit step misses and no --microbatches given, the split
/// of least modeled step time that fits (docs/planner.md,
/// "Micro-batches"); `model` becomes the model read for that split.
runtime::Plan planWithSplit(const CompileCommandOptions &options,
                            model::ModelFile &model,
                            const compiler::CompileOptions &compile,
                            nlohmann::json &report) {
  const model::ModelOptions &mo = options.modelOptions;
  // The search reads the model again for each split, which standard input
  // cannot give: a model from it is compiled as given.
  if (options.model == "-" && mo.autoMicrobatches)
    throw model::OptionError("--microbatches auto reads the model once per "
                             "split tried: give a model file, not '-' "
                             "(standard input)");
  if (!compile.budgetBytes || (mo.microbatchesGiven && !mo.autoMicrobatches) ||
      options.model == "-")
    return compiler::compilePlan(model.graph, compile, report);
  compiler::CompileOptions quick = compile;
  quick.explainInfeasible = false;
  if (!mo.microbatchesGiven) {
    try {
      return compiler::compilePlan(model.graph, quick, report);
    } catch (const InfeasibleBudget &) {
    }
    std::cerr << "remat: the unsplit step does not fit the budget of "
              << compiler::formatBytes(*compile.budgetBytes)
              << "; choosing micro-batches (--microbatches auto, at most "
              << mo.maxMicrobatches << ")\n";
  }
  // Every k up to the batch, smallest first (one that does not divide it
  // pads its shorter slices, which models with batch norm refuse); a k that
  // fits without recomputation ends the search (a larger one only adds work
  // per slice).
  const int64_t batch = model.graph.batch * model.graph.microbatches;
  std::optional<runtime::Plan> best;
  nlohmann::json tried = nlohmann::json::array();
  std::string refused; ///< why no split was tried, if so
  int64_t most = 1;    ///< the most micro-batches the model takes
  for (int64_t k = mo.microbatchesGiven ? 1 : 2;
       k <= std::min(mo.maxMicrobatches, batch); ++k) {
    model::ModelOptions split = mo;
    split.microbatches = k;
    std::optional<model::ModelFile> read;
    try {
      read = model::readModelFile(options.model, split);
    } catch (const model::OptionError &e) {
      // Uneven slices the model refuses (batch norm): the next k.
      if (batch % k != 0) {
        tried.push_back({{"microbatches", k}, {"refused", e.what()}});
        continue;
      }
      // The model cannot be split (batch norm without --microbatch-norm):
      // an error where the user asked for a split, else the unsplit one.
      if (mo.microbatchesGiven)
        throw;
      refused = e.what();
      break;
    }
    model::ModelFile candidate = std::move(*read);
    most = k;
    nlohmann::json r;
    try {
      runtime::Plan plan = compiler::compilePlan(candidate.graph, quick, r);
      double seconds = r["modeled_step_seconds"].get<double>();
      double overhead = r["recompute_overhead"].get<double>();
      tried.push_back({{"microbatches", k},
                       {"modeled_step_seconds", seconds},
                       {"recompute_overhead", overhead}});
      std::cerr << "remat:   " << k << " micro-batch" << (k > 1 ? "es" : "")
                << ": modeled step " << seconds * 1e3
                << " ms, recompute overhead " << overhead * 100 << "%\n";
      if (!best || seconds < report["modeled_step_seconds"].get<double>()) {
        best = std::move(plan);
        report = std::move(r);
        model = std::move(candidate);
      }
      if (overhead == 0)
        break;
    } catch (const InfeasibleBudget &) {
      tried.push_back({{"microbatches", k}, {"fits", false}});
      std::cerr << "remat:   " << k << " micro-batch" << (k > 1 ? "es" : "")
                << ": does not fit\n";
    }
  }
  if (!best) {
    // The unsplit step's error, with its minimum feasible budget, and the
    // least any split needs: that of the most micro-batches.
    std::string split = "; the batch is not split: " + refused;
    if (refused.empty()) {
      split = "; no split of the batch " + std::to_string(batch) +
              " into at most " +
              std::to_string(std::min(mo.maxMicrobatches, batch)) +
              " micro-batches (--max-microbatches) fits either";
      if (most > 1) {
        // (A hint: where its search fails, the error goes without it.)
        try {
          model::ModelOptions least = mo;
          least.microbatches = most;
          compiler::CompileOptions search = compile;
          search.budgetBytes.reset();
          search.searchMinimum = true;
          nlohmann::json r;
          compiler::compilePlan(
              model::readModelFile(options.model, least).graph, search, r);
          int64_t need = r.value("min_feasible_bytes", int64_t(-1));
          if (need > 0) {
            need += compile.workspaceReserveBytes.value_or(0);
            split += " (" + std::to_string(most) +
                     " micro-batches need at least " +
                     compiler::formatBytes(need) + ": --microbatches " +
                     std::to_string(most) + " --budget " +
                     std::to_string(need) + ")";
          }
        } catch (const std::exception &) {
        }
      }
    }
    try {
      return compiler::compilePlan(model.graph, compile, report);
    } catch (const InfeasibleBudget &e) {
      throw InfeasibleBudget(std::string(e.what()) + split);
    }
  }
  report["microbatch_search"] = tried;
  best->report["microbatch_search"] = tried;
  return std::move(*best);
}

/// Compiles to a plan file at `path` (and at `copyPath` if not empty, and
/// the report), written together once all is done; returns the report.
nlohmann::json compileToPlanFile(const CompileCommandOptions &options,
                                 const std::string &path,
                                 const std::string &copyPath = "") {
  model::ModelFile model = loadModelFile(options);
  if (!model.weights.empty()) {
    // The weights written next to each plan are outputs too.
    std::vector<runtime::NamedPath> sidecars;
    for (const std::string &planPath : {path, copyPath})
      if (runtime::takesSidecar(planPath))
        sidecars.push_back({"the weights of the plan '" + planPath + "'",
                            model::weightsPathForPlan(planPath)});
    runtime::checkOutputs(sidecars, {{"the model", options.model}});
  }
  compiler::CompileOptions compileOptions = toCompileOptions(options);
  nlohmann::json report;
  runtime::Plan plan;
  if (options.measureProfile) {
    compileOptions.deviceProfile =
        measureModelProfile(model, options.backend, std::cerr);
    plan = planWithMeasuredCosts(model, compileOptions, report,
                                 options.backend);
  } else {
    plan = planWithSplit(options, model, compileOptions, report);
  }
  runtime::OutputSet outputs;
  for (const std::string &planPath : {path, copyPath})
    if (!planPath.empty())
      addPlanFile(outputs, model, plan, planPath);
  if (!options.report.empty())
    outputs.write(options.report, report.dump(2) + "\n");
  outputs.commit();
  return report;
}

/// The files compile and train write, and the model they read.
void checkCompileOutputs(const CompileCommandOptions &options, bool train,
                         std::vector<runtime::NamedPath> outputs = {},
                         std::vector<runtime::NamedPath> inputs = {}) {
  outputs.push_back({train ? "--plan" : "-o", options.output});
  outputs.push_back({"--report", options.report});
  inputs.push_back({"the model", options.model});
  runtime::checkOutputs(outputs, inputs);
}
} // namespace

int compileMain(int argc, char **argv) {
  CompileCommandOptions options;
  if (int code = parseCompileOptions("compile", argc, argv, options, false);
      code >= 0)
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
    checkCompileOutputs(options, /*train=*/false);
  } catch (const runtime::OutputClash &e) {
    return usageError("compile", e.what());
  } catch (const runtime::OutputError &e) {
    std::cerr << "remat compile: error: " << e.what() << "\n";
    return 1;
  }
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
  } catch (const runtime::OutputClash &e) {
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
    "  --precision NAME   fp32 (default), bf16 or fp64 (see remat compile\n"
    "                     --help)\n"
    "  --input-shape NAME=D0,D1,..., --loss NAME, --optimizer NAME, --lr X,\n"
    "  --frozen NAME,...  an ONNX model's training step (docs/onnx.md)\n"
    "  -h, --help         this text\n";

int profileMain(int argc, char **argv) {
#ifndef REMAT_HAVE_RUN
  (void)argc, (void)argv;
  std::cerr << "remat profile: this build has no runtime\n";
  return 1;
#else
  CompileCommandOptions options;
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
                                          "--ranks",  "--precision",
                                          "--help"};
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
    runtime::checkOutputs({{"-o", output}}, {{"the model", options.model}});
  } catch (const runtime::OutputClash &e) {
    return usageError("profile", e.what());
  } catch (const std::exception &e) {
    std::cerr << "remat profile: error: " << e.what() << "\n";
    return 1;
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
  CompileCommandOptions options;
  options.output = "";
  if (int code = parseCompileOptions("train", argc, argv, options, true);
      code >= 0)
    return code;
  // Under mpirun every process compiles the same plan, for as many ranks as
  // were launched.
  if (int launched = runtime::launcherRankCount();
      launched > 1 && launched != options.modelOptions.ranks)
    return usageError(
        "train", "the launcher started " + std::to_string(launched) +
                     " ranks, but the plan would be for " +
                     std::to_string(options.modelOptions.ranks) +
                     ": give remat train --ranks " + std::to_string(launched) +
                     " (docs/distributed.md)");
  try {
    checkCompileOutputs(options, /*train=*/true, options.runOutputs,
                        options.runInputs);
  } catch (const runtime::OutputClash &e) {
    return usageError("train", e.what());
  } catch (const runtime::OutputError &e) {
    std::cerr << "remat train: error: " << e.what() << "\n";
    return 1;
  }
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
  // Removed if the user stops the run (Ctrl-C): the plan, its weights and
  // the folder.
  runtime::RemoveOnSignal guardFolder(folder), guardPlan(planPath),
      guardWeights(model::weightsPathForPlan(planPath));
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
