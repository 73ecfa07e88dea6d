//===- Usage.h - Usage errors of the remat commands -------------*- C++ -*-===//
//
// How every `remat` command reports a usage error (an unknown flag, a bad
// flag value): "remat COMMAND: MESSAGE" and a pointer to its --help on
// stderr, exit code 2 (docs/cli.md, "Exit codes"). Header-only, so the
// MLIR-free `remat run` library uses it too.
//
//===----------------------------------------------------------------------===//
#ifndef REMAT_TOOLS_REMAT_USAGE_H
#define REMAT_TOOLS_REMAT_USAGE_H

#include "ops/Suggest.h"

#include <ostream>
#include <string>
#include <vector>

namespace remat::tools {

/// Exit codes of every remat command.
enum ExitCode : int {
  kExitSuccess = 0,
  kExitBadInput = 1, ///< a model or plan file error, an infeasible budget
  kExitUsage = 2,    ///< an unknown flag or command, a bad flag value
};

/// The program a command is: "remat COMMAND", or a standalone binary's own
/// name ("remat-run").
inline std::string programName(const std::string &command) {
  return command.rfind("remat-", 0) == 0 ? command : "remat " + command;
}

/// Prints a usage error of `remat COMMAND` and returns kExitUsage.
inline int usageError(std::ostream &err, const std::string &command,
                      const std::string &message) {
  std::string program = programName(command);
  err << program << ": " << message << "\n(see " << program << " --help)\n";
  return kExitUsage;
}

/// "unknown option '--step'; did you mean '--steps'?" for an argument that
/// looks like a flag and is none of `flags` (a "--flag=value" is matched by
/// its name).
inline std::string unknownOption(const std::string &arg,
                                 const std::vector<std::string> &flags) {
  std::string name = arg.substr(0, arg.find('='));
  return "unknown option '" + arg + "'" + didYouMean(name, flags);
}

/// "unknown WHAT 'NAME'; did you mean 'X'? (available: A, B, C)".
inline std::string unknownName(const std::string &what, const std::string &name,
                               const std::vector<std::string> &known) {
  std::string list;
  for (const std::string &k : known)
    list += (list.empty() ? "" : ", ") + k;
  return "unknown " + what + " '" + name + "'" + didYouMean(name, known) +
         " (available: " + list + ")";
}

} // namespace remat::tools

#endif // REMAT_TOOLS_REMAT_USAGE_H
