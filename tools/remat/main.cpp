//===- main.cpp - The remat driver ----------------------------------------===//
//
// Dispatches `remat COMMAND ...` to the command's own parser. Each command
// prints its own --help. Exit codes: runtime/cli/Usage.h.
//
//===----------------------------------------------------------------------===//

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

// The CMake project version and the git commit at configure time
// (tools/remat/CMakeLists.txt).
#ifndef REMAT_VERSION
#define REMAT_VERSION "unknown"
#endif
#ifndef REMAT_GIT_COMMIT
#define REMAT_GIT_COMMIT ""
#endif

#include "tools/remat/ExplainCommand.h"
#include "runtime/cli/Usage.h"
#ifdef REMAT_HAVE_COMPILER
#include "tools/remat/CompileCommand.h"
#endif
#ifdef REMAT_HAVE_RUN
#include "runtime/cli/RunCommand.h"
#endif

static const char *kUsage =
    "remat: plans rematerialization for a training step under a memory budget\n"
    "\n"
    "usage: remat COMMAND [options]   (remat COMMAND --help for its options)\n"
    "\n"
    "commands:\n"
#ifdef REMAT_HAVE_COMPILER
    "  compile MODEL   read a model file, build the training step, emit IR or "
    "a plan\n"
    "  train MODEL     compile a model and run training steps on it\n"
    "  plan MODEL      plan under a budget: report, --sweep, --max-batch;\n"
    "                  plan --graph FILE for external (Checkmate) graphs\n"
    "  profile MODEL   time every op of the step: a measured device profile\n"
#endif
#ifdef REMAT_HAVE_RUN
    "  run PLAN        execute a compiled plan for N training steps\n"
#endif
    "  explain PLAN    list saved and recomputed tensors; -o SVG memory "
    "timeline\n"
    "  help            this text\n"
    "  version         the version (also --version)\n"
    "\n"
    "exit codes: 0 success, 1 bad input (a model or plan file error, an\n"
    "infeasible budget), 2 bad usage (an unknown flag, a bad flag value)\n"
    "\n"
    "docs (in the source tree):\n"
    "  docs/cli.md          every command and flag, exit codes, output files\n"
    "  docs/model-format.md the model JSON format and its errors\n"
    "  docs/onnx.md         ONNX models exported from PyTorch\n"
    "  docs/ops.md          the ops and their semantics\n"
    "  docs/plan-format.md  the plan file the runtime executes\n"
    "  docs/planner.md      how budgets are planned: solvers, costs\n"
    "  docs/precision.md    --precision: bf16 under autocast's rules, fp64\n"
    "  docs/explain.md      reading `remat explain` and its timeline\n"
    "  docs/cuda.md         the CUDA backend and its CPU emulator\n"
    "  docs/distributed.md  data-parallel runs on several ranks (MPI)\n"
    "  docs/benchmarks.md   measured memory and speed\n"
    "  docs/architecture.md the source's layers and a compile's stages\n"
    "  docs/planner-bench-checkmate.md  the planner on the Checkmate graphs\n"
    "  docs/adding-an-op.md the path for a new op\n";

static std::string versionText() {
  std::string commit = REMAT_GIT_COMMIT;
  return std::string("remat ") + REMAT_VERSION +
         (commit.empty() ? "" : " (git " + commit + ")") + "\n";
}

int main(int argc, char **argv) {
  if (argc < 2) {
    std::fputs(kUsage, stderr);
    return 2;
  }
  std::string command = argv[1];
  if (command == "help" || command == "--help" || command == "-h") {
    std::fputs(kUsage, stdout);
    return 0;
  }
  if (command == "version" || command == "--version") {
    std::fputs(versionText().c_str(), stdout);
    return 0;
  }
#ifdef REMAT_HAVE_COMPILER
  if (command == "compile")
    return remat::tools::compileMain(argc - 1, argv + 1);
  if (command == "train")
    return remat::tools::trainMain(argc - 1, argv + 1);
  if (command == "plan")
    return remat::tools::planMain(argc - 1, argv + 1);
  if (command == "profile")
    return remat::tools::profileMain(argc - 1, argv + 1);
#endif
#ifdef REMAT_HAVE_RUN
  if (command == "run")
    return remat::runMain(argc - 1, argv + 1);
#endif
  if (command == "explain")
    return remat::tools::explainMain(argc - 1, argv + 1);
  std::vector<std::string> commands = {"explain", "help", "version"};
#ifdef REMAT_HAVE_COMPILER
  commands.insert(commands.end(), {"compile", "train", "plan", "profile"});
#endif
#ifdef REMAT_HAVE_RUN
  commands.push_back("run");
#endif
  std::string message =
      command.rfind("-", 0) == 0
          ? remat::tools::unknownOption(command, {"--help", "--version"})
          : "unknown command '" + command + "'" +
                remat::didYouMean(command, commands);
  std::fprintf(stderr, "remat: %s\n\n%s", message.c_str(), kUsage);
  return remat::tools::kExitUsage;
}
