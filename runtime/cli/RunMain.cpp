//===- RunMain.cpp - remat-run: the standalone `remat run` ----------------===//
//
// The same command as `remat run` (runtime/cli/RunCommand.h), built without
// the compiler so the runtime can be tested (and used on a GPU machine with
// no MLIR) on its own.
//
//===----------------------------------------------------------------------===//
#include "runtime/cli/Profile.h"
#include "runtime/cli/RunCommand.h"

#include <string>

int main(int argc, char **argv) {
  // `remat-run profile PLAN ...`: remat profile of a plan, without MLIR.
  if (argc > 1 && std::string(argv[1]) == "profile")
    return remat::tools::profilePlanMain(argc - 1, argv + 1);
  return remat::runMain(argc, argv);
}
