//===- main.cpp - The remat driver ----------------------------------------===//
//
// Dispatches `remat COMMAND ...` to the command's own parser. Each command
// prints its own --help.
//
//===----------------------------------------------------------------------===//

#include <cstdio>
#include <cstring>
#include <string>

#include "tools/remat/ExplainCommand.h"
#ifdef REMAT_HAVE_COMPILER
#include "tools/remat/CompileCommand.h"
#endif
#ifdef REMAT_HAVE_RUN
#include "tools/remat/RunCommand.h"
#endif

static const char *kUsage =
    "remat: plans rematerialization for a training step under a memory budget\n"
    "\n"
    "usage: remat COMMAND [options]   (remat COMMAND --help for its options)\n"
    "\n"
    "commands:\n"
#ifdef REMAT_HAVE_COMPILER
    "  compile MODEL   read a model file, build the training step, emit IR or a plan\n"
    "  train MODEL     compile a model and run training steps on it\n"
    "  plan MODEL      plan under a budget: report, --sweep, --max-batch;\n"
    "                  plan --graph FILE for external (Checkmate) graphs\n"
#endif
#ifdef REMAT_HAVE_RUN
    "  run PLAN        execute a compiled plan for N training steps\n"
#endif
    "  explain PLAN    list saved and recomputed tensors; -o SVG memory timeline\n"
    "  help            this text\n"
    "\n"
    "docs: docs/cli.md, docs/model-format.md, docs/plan-format.md\n";

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
#ifdef REMAT_HAVE_COMPILER
  if (command == "compile")
    return remat::tools::compileMain(argc - 1, argv + 1);
  if (command == "train")
    return remat::tools::trainMain(argc - 1, argv + 1);
  if (command == "plan")
    return remat::tools::planMain(argc - 1, argv + 1);
#endif
#ifdef REMAT_HAVE_RUN
  if (command == "run")
    return remat::runMain(argc - 1, argv + 1);
#endif
  if (command == "explain")
    return remat::tools::explainMain(argc - 1, argv + 1);
  std::fprintf(stderr, "remat: unknown command '%s'\n\n%s", command.c_str(),
               kUsage);
  return 2;
}
