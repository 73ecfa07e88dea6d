//===- RunCommand.cpp - `remat run`: execute a plan for N training steps -===//
#include "runtime/cli/RunCommand.h"

#include "runtime/Backend.h"
#include "runtime/backends/cpu/CpuKernelInfo.h"
#include "runtime/backends/cpu/Gemm.h"
#include "runtime/BoundsCheck.h"
#include "runtime/Executor.h"
#include "runtime/plan/Loader.h"
#include "runtime/Npy.h"
#include "runtime/plan/OutputFile.h"
#include "runtime/Ranks.h"
#include "runtime/plan/Safetensors.h"
#include "runtime/cli/Profile.h"
#include "runtime/cli/Usage.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>

namespace remat {

using namespace remat::runtime;

namespace {

std::string formatStepLine(const StepResult &r, const Plan &plan,
                           uint64_t arenaBytes) {
  bool tokens = plan.tokensPerSample > 1;
  char line[256];
  std::snprintf(line, sizeof(line),
                "step %lld | loss %.6f | %.1f ms | %.0f %s/s | arena %llu B",
                (long long)r.step, r.loss, r.milliseconds,
                tokens ? r.tokensPerSecond : r.samplesPerSecond,
                tokens ? "tokens" : "samples", (unsigned long long)arenaBytes);
  return line;
}

/// FNV-1a of a file's bytes: the ranks check they run the same plan.
uint64_t fileHash(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  uint64_t h = 1469598103934665603ull;
  char buffer[1 << 16];
  while (in) {
    in.read(buffer, sizeof(buffer));
    for (std::streamsize i = 0; i < in.gcount(); ++i) {
      h ^= uint8_t(buffer[i]);
      h *= 1099511628211ull;
    }
  }
  return h;
}

/// Data-parallel runs: every rank must have read the same plan.
void checkSamePlan(Ranks &ranks, const std::string &planPath) {
  std::vector<uint64_t> hashes = ranks.gather(fileHash(planPath));
  for (size_t r = 1; r < hashes.size(); ++r)
    if (hashes[r] != hashes[0]) {
      char text[160];
      std::snprintf(text, sizeof(text),
                    "rank 0 read a plan with hash %016llx, rank %zu one with "
                    "%016llx",
                    (unsigned long long)hashes[0], r,
                    (unsigned long long)hashes[r]);
      throw PlanError(planPath + ": the ranks run different plans (" + text +
                      "); give every rank the same plan file");
    }
}

/// --dump-values: for each plan step, the buffers to copy right after it
/// in step 1: a named buffer after the first step that writes it, an input
/// (which no step writes) after step 0. Only the step's values can be
/// named (inputs, activations, temporaries); "all" names every one. An
/// unknown name or one of another role is an error; a buffer no step
/// writes gets a warning and is left out.
std::map<size_t, std::vector<size_t>>
valueDumpSchedule(const LoadedPlan &plan, const std::vector<std::string> &names,
                  std::ostream &err) {
  const Plan &p = plan.plan;
  std::vector<int64_t> firstWriter(p.buffers.size(), -1);
  for (size_t s = p.steps.size(); s-- > 0;)
    for (int64_t b : p.steps[s].outputs)
      firstWriter[size_t(b)] = int64_t(s);
  auto isValue = [](BufferRole role) {
    return role == BufferRole::Input || role == BufferRole::Activation ||
           role == BufferRole::Temporary;
  };
  std::vector<size_t> chosen;
  bool all = names.size() == 1 && names[0] == "all";
  if (all) {
    for (size_t b = 0; b < p.buffers.size(); ++b)
      if (isValue(p.buffers[b].role))
        chosen.push_back(b);
  } else {
    for (const std::string &name : names) {
      auto it = std::find_if(p.buffers.begin(), p.buffers.end(),
                             [&](const BufferDesc &b) { return b.name == name; });
      if (it == p.buffers.end())
        throw PlanError(plan.source + ": --dump-names: no buffer '" + name +
                        "' (the names of the plan file's \"buffers\": the IR's "
                        "values, named after their ops)");
      if (!isValue(it->role))
        throw PlanError(plan.source + ": --dump-names: '" + name + "' is a " +
                        roleName(it->role) +
                        " buffer; only inputs, activations and temporaries "
                        "are step values (--dump-grads writes gradients, "
                        "--save parameters and state)");
      chosen.push_back(size_t(it - p.buffers.begin()));
    }
  }
  std::map<size_t, std::vector<size_t>> after;
  for (size_t b : chosen) {
    if (p.buffers[b].role == BufferRole::Input)
      after[0].push_back(b);
    else if (firstWriter[b] >= 0)
      after[size_t(firstWriter[b])].push_back(b);
    else
      err << "remat run: warning: no step writes buffer '" << p.buffers[b].name
          << "'; not dumped\n";
  }
  return after;
}

} // namespace

std::vector<NamedPath> runOutputPaths(const RunOptions &options) {
  return {{"--save", options.savePath},
          {"--log", options.logPath},
          {"--dump-grads", options.dumpGradsPath},
          {"--dump-values", options.dumpValuesPath}};
}

std::vector<NamedPath> runInputPaths(const RunOptions &options) {
  std::vector<NamedPath> inputs = {{"--weights", options.weightsPath}};
  for (const auto &[name, path] : options.data)
    inputs.push_back({"--data " + name, path});
  return inputs;
}

std::string runUsage(const std::string &command) {
  return "usage: " + tools::programName(command) +
         " PLAN --steps N [options]\n"
         "\n"
         "Runs N training steps of a plan file (docs/plan-format.md).\n"
         "\n"
         "options:\n"
         "  --steps N                 training steps to run (default 1)\n"
         "  --seed S                  seed of param init and synthetic data\n"
         "                            (default: the plan's \"seed\")\n"
         "  --weights W.safetensors   load every param (and optimizer state\n"
         "                            and running statistics present in the\n"
         "                            file) before step 1 (default: the\n"
         "                            plan's \"weights\" file, if it names\n"
         "                            one)\n"
         "  --save OUT.safetensors    save params, optimizer state and\n"
         "                            running statistics after the last step\n"
         "  --save-dtype f32|bf16     --save's float tensors as they are\n"
         "                            (f32, the default) or rounded to BF16\n"
         "  --log LOG.jsonl           one JSON object per step: step, loss,\n"
         "                            ms, peak_rss_bytes, rss_growth_bytes\n"
         "                            (peak RSS minus RSS before the arena),\n"
         "                            samples_per_s\n"
         "                            (tokens_per_s for sequence models)\n"
         "  --data NAME=FILE.npy      feed input NAME from FILE instead of "
         "its\n"
         "                            generator (repeatable)\n"
         "  --dump-grads G.safetensors  write step 1's parameter gradients,\n"
         "                            named by parameter\n"
         "  --dump-values V.safetensors  write step 1's values of the\n"
         "                            buffers --dump-names names, each as\n"
         "                            its first writer in the plan\n"
         "                            computed it\n"
         "  --dump-names NAME,...|all  the buffers for --dump-values\n"
         "                            (inputs, activations, temporaries;\n"
         "                            all: every one of them)\n"
         "  --backend NAME            " +
         availableBackends() +
         " (default cpu)\n"
         "  --check-bounds            check that every step reads only its\n"
         "                            operands and writes only its results\n"
         "                            (each step runs twice; graphs off;\n"
         "                            for debugging a backend)\n"
         "  --sync-gradients          several ranks (docs/distributed.md):\n"
         "                            wait for each gradient's sum at once,\n"
         "                            no overlap (for measuring it)\n"
         "  --comm auto|mpi|nccl      how gradients are averaged over the\n"
         "                            ranks: auto (default) NCCL on the cuda\n"
         "                            backend where built with it, MPI on\n"
         "                            the cpu backend; nccl also with one\n"
         "                            rank and no MPI launcher (a check of\n"
         "                            the NCCL path; docs/distributed.md)\n"
         "  --help                    this text\n";
}

/// The budget is a contract: the step allocates the arena and the
/// backend's workspace, never more than the plan's budget. Refuses a plan
/// that would, before anything is allocated.
void checkWithinBudget(const LoadedPlan &plan, Backend &backend,
                       const std::string &backendName) {
  const Plan &p = plan.plan;
  std::optional<uint64_t> budget = plan.budgetBytes();
  if (!budget)
    return;
  backend.checkSupport(plan);
  uint64_t limit = *budget;
  uint64_t workspace = backend.workspaceBytes(plan);
  uint64_t used = p.arenaBytes + workspace;
  if (used <= limit)
    return;
  std::string planned = p.report.value("backend", std::string("cpu"));
  throw ExecutionError(
      plan.source + ": the plan's budget is " + std::to_string(limit) +
      " B, but on the " + backendName + " backend its arena (" +
      std::to_string(p.arenaBytes) + " B) and workspace (" +
      std::to_string(workspace) + " B) take " + std::to_string(used) +
      " B, " + std::to_string(used - limit) +
      " B over. Recompile it for this backend (remat compile ... --backend " +
      backendName +
      ": the compiler fits the backend's scratch within the budget" +
      (planned != backendName ? "; this plan is for " + planned
                              : std::string()) +
      "), or with --workspace-reserve " + std::to_string(workspace) +
      ", or with a budget of at least " + std::to_string(used) + " B");
}

int runCommand(const RunOptions &opt) {
  std::ostream &out = *opt.out;
  std::ostream &err = *opt.err;
  Ranks *ranks = nullptr;
  try {
    ranks = &Ranks::world();
  } catch (const std::exception &e) {
    err << "remat run: error: " << e.what() << "\n";
    return 1;
  }
  // Rank 0 prints and writes the outputs; the others only report errors,
  // which stop every rank.
  bool lead = ranks->rank() == 0;
  std::string who = ranks->distributed()
                        ? "remat run: rank " + std::to_string(ranks->rank()) +
                              ": "
                        : "remat run: ";
  try {
    if (opt.steps < 0)
      throw PlanError("--steps must be >= 0");
    if (ranks->distributed())
      checkSamePlan(*ranks, opt.planPath);
    LoadedPlan plan = loadPlan(opt.planPath);
    // Every rank checks the outputs (each fails alike, none waits): before
    // any work, none is an input and each folder takes it.
    std::vector<NamedPath> inputs = runInputPaths(opt);
    inputs.push_back({"the plan", opt.planPath});
    if (opt.weightsPath.empty() && !plan.plan.weights.empty())
      inputs.push_back({"the plan's weights",
                        planWeightsPath(opt.planPath, plan.plan.weights)});
    try {
      checkOutputs(runOutputPaths(opt), inputs);
    } catch (const OutputClash &e) {
      return tools::usageError(err, opt.command, e.what());
    }
    // The outputs written after the steps are opened now, committed at the
    // end together: a run that fails leaves none of them.
    OutputSet outputs;
    std::ostream *gradsOut = nullptr, *valuesOut = nullptr, *saveOut = nullptr;
    if (lead && !opt.dumpGradsPath.empty() && opt.steps > 0)
      gradsOut = &outputs.open(opt.dumpGradsPath);
    if (lead && !opt.dumpValuesPath.empty() && opt.steps > 0)
      valuesOut = &outputs.open(opt.dumpValuesPath);
    if (lead && !opt.savePath.empty())
      saveOut = &outputs.open(opt.savePath);
    std::unique_ptr<Backend> backend = createBackend(opt.backend);
    Backend *device = backend.get(); // not the bounds check
    if (opt.checkBounds)
      backend = withBoundsCheck(std::move(backend));
    checkWithinBudget(plan, *backend, device->name());
    ExecutorOptions execOptions;
    execOptions.seed = opt.seed;
    execOptions.ranks = ranks;
    execOptions.overlapGradientSums = !opt.syncGradients;
    execOptions.comm = opt.comm == "nccl"  ? CommChoice::Device
                       : opt.comm == "mpi" ? CommChoice::Mpi
                                           : CommChoice::Auto;
    // --weights replaces the weights file a plan names (an imported
    // model's initial values, docs/plan-format.md); read a tensor at a
    // time into the arena.
    std::optional<SafetensorsFile> weights;
    if (!opt.weightsPath.empty())
      weights = SafetensorsFile::open(opt.weightsPath);
    else if (!plan.plan.weights.empty())
      weights = SafetensorsFile::open(
          planWeightsPath(opt.planPath, plan.plan.weights));
    execOptions.weights = weights ? &*weights : nullptr;
    Executor exec(plan, *backend, execOptions);
    for (const auto &[name, path] : opt.data)
      exec.setInputData(name, NpyFile::open(path));

    // The log is written in place, a line per step, so it can be followed
    // while the run goes on.
    std::unique_ptr<OutputFile> log;
    if (!opt.logPath.empty() && lead)
      log = std::make_unique<OutputFile>(opt.logPath, OutputFile::Mode::InPlace);

    // --dump-grads: after the plan step that last writes each param grad in
    // step 1, copy that grad out before a later step can reuse its bytes,
    // under the name of every param whose update reads it (the compiler
    // computes identical gradients once: two biases added to one sum). A
    // split step's gradients are its accumulators after the last
    // micro-batch.
    const Plan &p = plan.plan;
    const BufferRole gradRole = updateGradientRole(p);
    std::map<size_t, std::vector<size_t>> gradsFinalAfter;
    std::map<size_t, std::vector<std::string>> gradParams;
    std::map<std::string, NamedTensor> dumped;
    if (!opt.dumpGradsPath.empty() && lead) {
      for (size_t s = 0; s < p.steps.size(); ++s)
        if (isOptimizerOp(plan.steps[s].op) && p.steps[s].inputs.size() >= 2)
          gradParams[size_t(p.steps[s].inputs[1])].push_back(
              p.buffers[size_t(p.steps[s].inputs[0])].name);
      for (size_t i = 0; i < p.buffers.size(); ++i) {
        if (p.buffers[i].role != gradRole)
          continue;
        if (plan.lastWriter[i] < 0)
          err << "remat run: warning: no step writes grad buffer '"
              << p.buffers[i].name << "'; not dumped\n";
        else
          gradsFinalAfter[size_t(plan.lastWriter[i])].push_back(i);
      }
    }
    // --dump-values: after the plan step that first writes each named
    // buffer in step 1 (inputs: after the first step), copy its value
    // before a later step can reuse its bytes. A recomputation writes the
    // same bits again.
    std::map<size_t, std::vector<size_t>> valuesAfter;
    std::map<std::string, NamedTensor> dumpedValues;
    if (!opt.dumpValuesPath.empty() && lead)
      valuesAfter = valueDumpSchedule(plan, opt.dumpValueNames, err);
    if (!gradsFinalAfter.empty() || !valuesAfter.empty())
      exec.onStepExecuted = [&](size_t stepIndex) {
        if (exec.stepsRun() != 0)
          return;
        if (auto it = gradsFinalAfter.find(stepIndex);
            it != gradsFinalAfter.end())
          for (size_t b : it->second) {
            NamedTensor t{safetensorsDtype(p.buffers[b].dtype),
                          p.buffers[b].shape, exec.readBuffer(b)};
            auto readers = gradParams.find(b);
            if (readers == gradParams.end())
              dumped[paramNameOfGrad(p.buffers[b].name)] = t;
            else
              for (const std::string &param : readers->second)
                dumped[param] = t;
          }
        if (auto it = valuesAfter.find(stepIndex); it != valuesAfter.end())
          for (size_t b : it->second)
            dumpedValues[p.buffers[b].name] =
                NamedTensor{safetensorsDtype(p.buffers[b].dtype),
                            p.buffers[b].shape, exec.readBuffer(b)};
      };

    // Only rank 0 talks from here on (errors excepted).
    std::ostringstream quiet;
    std::ostream &info = lead ? err : quiet;
    info << "remat run: model '" << p.model << "', " << p.buffers.size()
         << " buffers, " << p.steps.size() << " steps"
         << (p.microbatches > 1
                 ? " run in " + describeMicrobatches(p.microbatches, p.batch,
                                                     p.samplesPerStep())
                 : std::string())
         << ", arena " << exec.arenaBytes() << " B, workspace "
         << exec.workspaceBytes() << " B, backend " << backend->name()
         << ", seed " << exec.seed() << "\n";
    info << "remat run: runtime fixed bytes " << exec.baselineRssBytes()
         << " B beside the arena (the process's resident memory before "
            "it: code, libraries, the loaded plan)\n";
    if (ranks->distributed()) {
      bool sharded = std::any_of(
          plan.steps.begin(), plan.steps.end(),
          [](const ResolvedStep &s) { return s.attrs.shards > 1; });
      info << "remat run: " << ranks->size() << " ranks, batch " << p.batch
           << " each (global batch " << p.batch * p.ranks
           << "); gradients averaged over the ranks ("
           << exec.commName() << ")"
           << (sharded ? "; optimizer state sharded over them (each keeps "
                         "1/" + std::to_string(ranks->size()) + ")"
                       : "")
           << "\n";
    }
    else if (!exec.commName().empty())
      info << "remat run: one rank; every gradient still goes through "
           << exec.commName() << " (--comm " << opt.comm << ")\n";
    if (std::optional<uint64_t> budget = plan.budgetBytes()) {
      info << "remat run: budget " << *budget
          << " B; arena + workspace "
          << exec.arenaBytes() + exec.workspaceBytes() << " B (within)";
      // This run's allowance: OpenBLAS at the threads it runs (the
      // report's counts one a core of the machine that compiled the plan).
      if (auto allowance = p.report.find("runtime_allowance_bytes");
          allowance != p.report.end() && allowance->is_number_integer() &&
          device->name() == "cpu")
        info << "; runtime allowance beside it "
            << cpuRuntimeAllowanceBytes(p, cpu::gemmThreads()) << " B";
      info << "\n";
    }
    if (std::string line = device->workspaceSummary(); !line.empty())
      info << "remat run: " << line << "\n";
    // A plan's recomputations were chosen for the device profile its costs
    // were modeled with (remat compile --device-profile): say so when it is
    // not the kind of device this run uses.
    if (auto profile = p.report.find("device_profile");
        profile != p.report.end() && profile->is_object() &&
        profile->contains("name") && (*profile)["name"].is_string()) {
      std::string planned = (*profile)["name"].get<std::string>();
      bool gpuProfile = planned.rfind("cpu", 0) != 0;
      bool gpuBackend = device->name() != "cpu";
      if (gpuProfile != gpuBackend)
        info << "remat run: note: the plan's costs were modeled for '"
            << planned << "' (remat compile --device-profile), this run uses "
            << "the " << device->name() << " backend\n";
    }
    for (int64_t s = 0; s < opt.steps; ++s) {
      StepResult r = exec.runStep(/*prefetchNext=*/s + 1 < opt.steps);
      // Every rank's timings for the log (collective: each rank takes
      // part; every rank has the same --log flag, so all or none gather).
      std::vector<double> rankMs, rankWaitMs, rankLoss;
      std::vector<uint64_t> rankRssGrowth;
      uint64_t rssGrowth = r.peakRssBytes > exec.baselineRssBytes()
                               ? r.peakRssBytes - exec.baselineRssBytes()
                               : 0;
      if (ranks->distributed() && !opt.logPath.empty()) {
        rankMs = ranks->gather(r.milliseconds);
        rankWaitMs = ranks->gather(r.commWaitMilliseconds);
        rankLoss = ranks->gather(r.rankLoss);
        rankRssGrowth = ranks->gather(rssGrowth);
      }
      if (lead)
        out << formatStepLine(r, p, exec.arenaBytes()) << "\n" << std::flush;
      if (log) {
        nlohmann::json entry = {{"step", r.step},
                                {"loss", r.loss},
                                {"ms", r.milliseconds},
                                {"peak_rss_bytes", r.peakRssBytes},
                                {"rss_growth_bytes", rssGrowth},
                                {"runtime_fixed_bytes",
                                 exec.baselineRssBytes()},
                                {"samples_per_s", r.samplesPerSecond}};
        if (p.tokensPerSample > 1)
          entry["tokens_per_s"] = r.tokensPerSecond;
        if (ranks->distributed()) {
          entry["ranks"] = ranks->size();
          entry["rank_ms"] = rankMs;
          entry["rank_comm_wait_ms"] = rankWaitMs;
          entry["rank_loss"] = rankLoss;
          entry["rank_rss_growth_bytes"] = rankRssGrowth;
        }
        if (std::optional<DeviceMemoryReport> memory =
                device->deviceMemory()) {
          entry["device_peak_bytes"] = memory->peakBytes;
          entry["device_context_bytes"] = memory->contextBytes;
          entry["device_memory"] = tools::deviceMemoryJson(*memory);
        }
        log->stream() << entry.dump() << "\n" << std::flush;
      }
      if (s == 0 && gradsOut)
        writeSafetensors(*gradsOut, dumped);
      if (s == 0 && valuesOut)
        writeSafetensors(*valuesOut, dumpedValues);
      if (s == 0)
        exec.onStepExecuted = nullptr;
    }
    if (std::optional<DeviceMemoryReport> memory = device->deviceMemory())
      err << "remat run: " << tools::deviceMemoryLine(*memory) << "\n";
    if (!opt.dumpGradsPath.empty() && opt.steps == 0)
      err << "remat run: warning: --steps 0, no gradients dumped\n";
    if (!opt.dumpValuesPath.empty() && opt.steps == 0)
      err << "remat run: warning: --steps 0, no values dumped\n";
    if (!opt.savePath.empty()) {
      // Every rank takes part: sharded optimizer state is gathered on
      // rank 0, which writes the file.
      std::map<std::string, NamedTensor> state = exec.stateTensors();
      if (opt.saveBf16)
        for (auto &[name, t] : state)
          t = asBf16(t);
      if (saveOut)
        writeSafetensors(*saveOut, state);
    }
    outputs.commit();
    if (log)
      log->commit();
    return 0;
  } catch (const std::exception &e) {
    err << who << "error: " << e.what() << "\n";
    // The other ranks would wait for this one forever: stop them all.
    if (ranks->distributed()) {
      err << std::flush;
      ranks->abort(1);
    }
    return 1;
  }
}

int runMain(int argc, char **argv) {
  return runMain(argc, argv, std::cout, std::cerr);
}

namespace {
/// Every flag of `remat run`, and whether it takes a value.
struct RunFlag {
  const char *name;
  bool takesValue;
};
const RunFlag kRunFlags[] = {{"--steps", true},
                             {"--seed", true},
                             {"--weights", true},
                             {"--save", true},
                             {"--save-dtype", true},
                             {"--log", true},
                             {"--data", true},
                             {"--dump-grads", true},
                             {"--backend", true},
                             {"--dump-values", true},
                             {"--dump-names", true},
                             {"--check-bounds", false},
                             {"--sync-gradients", false},
                             {"--comm", true},
                             {"--help", false}};

std::vector<std::string> splitNames(const std::string &list) {
  std::vector<std::string> names;
  size_t begin = 0;
  while (begin <= list.size()) {
    size_t comma = list.find(',', begin);
    std::string name = list.substr(
        begin, comma == std::string::npos ? std::string::npos : comma - begin);
    while (!name.empty() && name.front() == ' ')
      name.erase(0, 1);
    if (!name.empty())
      names.push_back(name);
    if (comma == std::string::npos)
      break;
    begin = comma + 1;
  }
  return names;
}
} // namespace

std::vector<std::string> runFlagNames() {
  std::vector<std::string> names;
  for (const RunFlag &flag : kRunFlags)
    names.push_back(flag.name);
  return names;
}

std::optional<bool> runFlagTakesValue(const std::string &flag) {
  for (const RunFlag &f : kRunFlags)
    if (flag == f.name)
      return f.takesValue;
  return std::nullopt;
}

int parseRunOptions(int argc, char **argv, RunOptions &opt, std::ostream &out,
                    std::ostream &err, const std::string &command) {
  auto usageError = [&](const std::string &msg) {
    return tools::usageError(err, command, msg);
  };
  auto parseInt = [](const std::string &text, int64_t &value) {
    try {
      size_t used = 0;
      long long v = std::stoll(text, &used);
      value = v;
      return used == text.size();
    } catch (...) {
      return false;
    }
  };
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    std::string value;
    bool hasInlineValue = false;
    if (arg.rfind("--", 0) == 0) {
      if (auto eq = arg.find('='); eq != std::string::npos) {
        value = arg.substr(eq + 1);
        arg = arg.substr(0, eq);
        hasInlineValue = true;
      }
    }
    auto next = [&]() -> bool {
      if (hasInlineValue)
        return true;
      if (i + 1 >= argc)
        return false;
      value = argv[++i];
      return true;
    };
    if (arg == "--help" || arg == "-h") {
      out << runUsage(command);
      return tools::kExitSuccess;
    }
    if (arg == "--check-bounds") {
      opt.checkBounds = true;
      continue;
    }
    if (arg == "--sync-gradients") {
      opt.syncGradients = true;
      continue;
    }
    if (runFlagTakesValue(arg).value_or(false)) {
      if (!next())
        return usageError(arg + " needs a value");
      if (arg == "--steps") {
        if (!parseInt(value, opt.steps) || opt.steps < 0)
          return usageError("--steps needs a non-negative integer, got '" +
                            value + "'");
      } else if (arg == "--seed") {
        int64_t seed;
        if (!parseInt(value, seed) || seed < 0)
          return usageError("--seed needs a non-negative integer, got '" +
                            value + "'");
        opt.seed = uint64_t(seed);
      } else if (arg == "--weights") {
        opt.weightsPath = value;
      } else if (arg == "--save") {
        opt.savePath = value;
      } else if (arg == "--save-dtype") {
        if (value != "f32" && value != "bf16")
          return usageError("--save-dtype needs f32 or bf16, got '" + value +
                            "'");
        opt.saveBf16 = value == "bf16";
      } else if (arg == "--log") {
        opt.logPath = value;
      } else if (arg == "--dump-grads") {
        opt.dumpGradsPath = value;
      } else if (arg == "--dump-values") {
        opt.dumpValuesPath = value;
      } else if (arg == "--dump-names") {
        opt.dumpValueNames = splitNames(value);
        if (opt.dumpValueNames.empty())
          return usageError("--dump-names needs NAME,... or all");
      } else if (arg == "--backend") {
        std::vector<std::string> backends = splitNames(availableBackends());
        if (std::find(backends.begin(), backends.end(), value) ==
            backends.end())
          return usageError(tools::unknownName("backend", value, backends));
        opt.backend = value;
      } else if (arg == "--comm") {
        if (value != "auto" && value != "mpi" && value != "nccl")
          return usageError("--comm: " + tools::unknownName(
                                               "comm", value,
                                               {"auto", "mpi", "nccl"}));
        opt.comm = value;
      } else {
        auto eq = value.find('=');
        if (eq == std::string::npos || eq == 0 || eq + 1 == value.size())
          return usageError("--data needs NAME=FILE.npy, got '" + value + "'");
        opt.data.emplace_back(value.substr(0, eq), value.substr(eq + 1));
      }
      continue;
    }
    if (arg.rfind("-", 0) == 0 && arg.size() > 1)
      return usageError(tools::unknownOption(argv[i], runFlagNames()));
    if (!opt.planPath.empty())
      return usageError("more than one plan file ('" + opt.planPath +
                        "' and '" + arg + "')");
    opt.planPath = arg;
  }
  if (opt.planPath.empty())
    return usageError("missing the plan file");
  if (opt.saveBf16 && opt.savePath.empty())
    return usageError("--save-dtype needs --save FILE");
  if (opt.dumpValuesPath.empty() != opt.dumpValueNames.empty())
    return usageError(opt.dumpValuesPath.empty()
                          ? "--dump-names needs --dump-values FILE"
                          : "--dump-values needs --dump-names NAME,...|all");
  return -1;
}

int runMain(int argc, char **argv, std::ostream &out, std::ostream &err) {
  RunOptions opt;
  opt.out = &out;
  opt.err = &err;
  // The standalone binary (runtime/cli/RunMain.cpp) names itself.
  std::string program = argc > 0 ? argv[0] : "run";
  program = program.substr(program.find_last_of('/') + 1);
  std::string command = program == "remat-run" ? program : "run";
  opt.command = command;
  if (int code = parseRunOptions(argc, argv, opt, out, err, command); code >= 0)
    return code;
  return runCommand(opt);
}

} // namespace remat
