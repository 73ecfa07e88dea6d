//===- RunMain.cpp - remat-run: the standalone `remat run` ----------------===//
//
// The same command as `remat run` (tools/remat/RunCommand.h), built without
// the compiler so the runtime can be tested (and used on a GPU machine with
// no MLIR) on its own.
//
//===----------------------------------------------------------------------===//
#include "tools/remat/RunCommand.h"

int main(int argc, char **argv) { return remat::runMain(argc, argv); }
