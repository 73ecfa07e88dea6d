//===- CompileCommand.h - `remat compile` --------------------------------===//
#ifndef REMAT_TOOLS_COMPILECOMMAND_H
#define REMAT_TOOLS_COMPILECOMMAND_H

namespace remat::tools {
/// `remat compile MODEL [options]`; argv[0] is "compile".
int compileMain(int argc, char **argv);
/// `remat train MODEL --steps N [options]`; argv[0] is "train".
int trainMain(int argc, char **argv);
/// `remat plan ...`; argv[0] is "plan".
int planMain(int argc, char **argv);
} // namespace remat::tools

#endif
