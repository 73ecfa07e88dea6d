//===- ExplainCommand.cpp - `remat explain`: arguments and entry point ----===//
//
// Parses the command line, loads and validates the plan, runs the analysis
// (ExplainAnalysis.h) and writes the text listing to stdout, the SVG timeline
// and the JSON output to the files named by -o and --json.
//
//===----------------------------------------------------------------------===//
#include "tools/remat/ExplainCommand.h"

#include "runtime/plan/Loader.h"
#include "runtime/plan/OutputFile.h"
#include "runtime/cli/Usage.h"

#include <cstdio>
#include <fstream>
#include <iostream>

namespace remat::tools {

using namespace remat::runtime;

namespace {

std::string baseName(const std::string &path) {
  size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

} // namespace

std::string explainUsage() {
  return "usage: remat explain PLAN [-o TIMELINE.svg] [--json OUT.json]\n"
         "\n"
         "Explains a plan file's memory (docs/explain.md): prints the live\n"
         "bytes peak, every activation kept from the forward into the\n"
         "backward pass and every recomputed tensor, largest first.\n"
         "\n"
         "options:\n"
         "  -o FILE        write an SVG memory timeline (live bytes per step,\n"
         "                 by role; budget, arena, forward/backward boundary,\n"
         "                 recompute steps). No SVG without -o.\n"
         "  --json FILE    write the same facts as JSON\n"
         "  --help         this text\n";
}

int explainMain(int argc, char **argv, std::ostream &out, std::ostream &err) {
  std::string planPath, svgPath, jsonPath;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&](const char *flag) -> const char * {
      if (i + 1 >= argc) {
        err << "remat explain: " << flag << " needs a value\n\n"
            << explainUsage();
        return nullptr;
      }
      return argv[++i];
    };
    if (arg == "--help" || arg == "-h") {
      out << explainUsage();
      return 0;
    }
    if (arg == "-o" || arg == "--json") {
      const char *v = value(arg.c_str());
      if (!v)
        return 2;
      (arg == "-o" ? svgPath : jsonPath) = v;
    } else if (arg.rfind("--json=", 0) == 0) {
      jsonPath = arg.substr(7);
    } else if (arg.size() > 1 && arg[0] == '-') {
      err << "remat explain: " << unknownOption(arg, {"-o", "--json", "--help"})
          << "\n\n"
          << explainUsage();
      return kExitUsage;
    } else if (planPath.empty()) {
      planPath = arg;
    } else {
      err << "remat explain: more than one plan given ('" << planPath << "', '"
          << arg << "')\n\n"
          << explainUsage();
      return 2;
    }
  }
  if (planPath.empty()) {
    err << "remat explain: no plan given\n\n" << explainUsage();
    return 2;
  }
  try {
    checkOutputs({{"-o", svgPath}, {"--json", jsonPath}},
                 {{"the plan", planPath}});
  } catch (const OutputClash &e) {
    return usageError(err, "explain", e.what());
  } catch (const std::exception &e) {
    err << "remat explain: error: " << e.what() << "\n";
    return 1;
  }
  try {
    LoadedPlan loaded = loadPlan(planPath);
    const Plan &plan = loaded.plan;
    PlanExplanation ex = explainPlan(plan);
    OutputSet outputs;
    if (!svgPath.empty())
      outputs.write(svgPath,
                  renderTimelineSvg(plan, ex,
                                    "remat explain: " + plan.model + " (" +
                                        baseName(planPath) + ")"));
    if (!jsonPath.empty())
      outputs.write(jsonPath, explanationJson(plan, ex).dump(1) + "\n");
    outputs.commit();
    out << formatExplanation(plan, ex, planPath);
    if (!svgPath.empty())
      out << "\ntimeline: " << svgPath << "\n";
    if (!jsonPath.empty())
      out << (svgPath.empty() ? "\n" : "") << "json: " << jsonPath << "\n";
  } catch (const std::exception &e) {
    err << "remat explain: error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}

int explainMain(int argc, char **argv) {
  return explainMain(argc, argv, std::cout, std::cerr);
}

} // namespace remat::tools
