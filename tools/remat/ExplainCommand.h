//===- ExplainCommand.h - `remat explain` -----------------------*- C++ -*-===//
//
//   remat explain PLAN [-o timeline.svg] [--json OUT.json]
//
// Reads a plan file (docs/plan-format.md) and explains its memory: the live
// bytes at every step, the activations kept from the forward pass into the
// backward pass, and the tensors recomputed instead. Depends only on
// RematPlanFormat (no MLIR, no executor), so it also builds in the
// runtime-only configuration. docs/explain.md describes the output.
//
// The analysis and its data structures are in ExplainAnalysis.h; this header
// adds its three renderings (text listing, SVG timeline, JSON) and the
// command's entry point.
//
//===----------------------------------------------------------------------===//
#ifndef REMAT_TOOLS_REMAT_EXPLAINCOMMAND_H
#define REMAT_TOOLS_REMAT_EXPLAINCOMMAND_H

#include "runtime/plan/PlanFormat.h"
#include "tools/remat/ExplainAnalysis.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <iosfwd>
#include <string>

namespace remat::tools {

/// The text listing: summary, saved activations, recomputed tensors, totals.
std::string formatExplanation(const runtime::Plan &plan,
                              const PlanExplanation &explanation,
                              const std::string &planPath);

/// A standalone SVG memory timeline (deterministic bytes).
std::string renderTimelineSvg(const runtime::Plan &plan,
                              const PlanExplanation &explanation,
                              const std::string &title);

/// The same facts as JSON (the --json output).
nlohmann::json explanationJson(const runtime::Plan &plan,
                               const PlanExplanation &explanation);

/// "512 B", "1.50 KiB", "505.56 KiB", "1.20 GiB" (binary units).
std::string formatBytes(uint64_t bytes);

/// The usage text printed by --help.
std::string explainUsage();

/// Parses `argv[1..argc)` (argv[0] is the command name). Returns 0 on
/// success, 1 when the plan cannot be read or is invalid (the loader's
/// message on `err`), 2 on a usage error; --help prints usage and returns 0.
int explainMain(int argc, char **argv);
/// Same, printing to the given streams (tests).
int explainMain(int argc, char **argv, std::ostream &out, std::ostream &err);

} // namespace remat::tools

#endif // REMAT_TOOLS_REMAT_EXPLAINCOMMAND_H
