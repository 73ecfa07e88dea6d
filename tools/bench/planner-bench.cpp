//===- planner-bench.cpp - Planner solvers on the Checkmate graphs --------===//
//
// Prints a markdown table: per graph, budget fraction and solver, the
// modeled recompute overhead, solve time, proven optimality gap and the
// checked peak against the budget. Benchmarks are not tests.
//
//===----------------------------------------------------------------------===//
#include "passes/planner/CheckmateGraph.h"
#include "passes/planner/Solvers.h"
#include "runtime/plan/OutputFile.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <dirent.h>
#include <fstream>
#include <string>
#include <vector>

using namespace remat::planner;

namespace {

const char *usage =
    "usage: remat-planner-bench [--graphs DIR] [--fractions LIST]\n"
    "                           [--solvers LIST] [--time-limit S] [--json OUT]\n"
    "                           [--reorder] [--quiet]\n"
    "\n"
    "Plans every Checkmate graph (*.json in DIR) at each budget and prints a\n"
    "markdown table (graph, nodes, budget fraction, solver, overhead %,\n"
    "solve s, proven gap, peak/budget). Memory is counted as in Checkmate.\n"
    "\n"
    "  --graphs DIR      default: $REMAT_CHECKMATE_GRAPHS, else\n"
    "                    models/checkmate-graphs of the source tree\n"
    "  --fractions LIST  fractions of the store-all peak, or 'min' (the lower\n"
    "                    bound on any peak); default 0.9,0.8,0.7,0.6,0.5,min\n"
    "  --solvers LIST    auto,exact,dp,heuristic,store-all,per-block,sqrt\n"
    "                    (default: all)\n"
    "  --time-limit S    per solve, for exact and auto (default 60)\n"
    "  --json OUT        also write the rows as JSON\n"
    "  --reorder         let the solvers move ops too (SolveOptions::reorder;\n"
    "                    the solver column then ends in '+reorder' and the\n"
    "                    status names the order used)\n"
    "  --quiet           no MILP progress on stderr\n";

std::vector<std::string> split(const std::string &text) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string::npos)
      comma = text.size();
    if (comma > start)
      parts.push_back(text.substr(start, comma - start));
    start = comma + 1;
  }
  return parts;
}

std::string formatDouble(double value, const char *format) {
  if (std::isnan(value))
    return "-";
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, format, value);
  return buffer;
}

} // namespace

int main(int argc, char **argv) {
  std::string graphsDir;
  if (const char *env = std::getenv("REMAT_CHECKMATE_GRAPHS"))
    graphsDir = env;
  else
    graphsDir = std::string(REMAT_SOURCE_DIR) + "/models/checkmate-graphs";
  std::vector<std::string> fractions =
      split("0.9,0.8,0.7,0.6,0.5,min");
  std::vector<std::string> solverNames =
      split("auto,exact,dp,heuristic,store-all,per-block,sqrt");
  double timeLimit = 60;
  std::string jsonPath;
  bool quiet = false;
  bool reorder = false;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "error: %s needs a value\n%s", arg.c_str(), usage);
        std::exit(2);
      }
      return argv[++i];
    };
    if (arg == "--help" || arg == "-h") {
      std::fputs(usage, stdout);
      return 0;
    } else if (arg == "--graphs") {
      graphsDir = value();
    } else if (arg == "--fractions") {
      fractions = split(value());
    } else if (arg == "--solvers") {
      solverNames = split(value());
    } else if (arg == "--time-limit") {
      std::string text = value();
      char *end = nullptr;
      timeLimit = std::strtod(text.c_str(), &end);
      if (*end || !(timeLimit > 0)) {
        std::fprintf(stderr, "error: bad --time-limit '%s'\n", text.c_str());
        return 2;
      }
    } else if (arg == "--json") {
      jsonPath = value();
    } else if (arg == "--reorder") {
      reorder = true;
    } else if (arg == "--quiet") {
      quiet = true;
    } else {
      std::fprintf(stderr, "error: unknown argument '%s'\n%s", arg.c_str(),
                   usage);
      return 2;
    }
  }
  std::vector<SolverKind> solvers;
  for (const std::string &name : solverNames) {
    SolverKind kind;
    if (!parseSolverKind(name, kind)) {
      std::fprintf(stderr, "error: unknown solver '%s'\n", name.c_str());
      return 2;
    }
    solvers.push_back(kind);
  }
  for (const std::string &fraction : fractions) {
    char *end = nullptr;
    double value = std::strtod(fraction.c_str(), &end);
    if (fraction != "min" && (*end || !(value > 0))) {
      std::fprintf(stderr, "error: bad fraction '%s'\n", fraction.c_str());
      return 2;
    }
  }
  std::vector<std::string> files;
  if (DIR *dir = opendir(graphsDir.c_str())) {
    while (dirent *entry = readdir(dir)) {
      std::string name = entry->d_name;
      if (name.size() > 5 && name.substr(name.size() - 5) == ".json")
        files.push_back(graphsDir + "/" + name);
    }
    closedir(dir);
  } else {
    std::fprintf(stderr, "error: cannot open graph directory '%s'\n",
                 graphsDir.c_str());
    return 1;
  }
  std::sort(files.begin(), files.end());
  if (files.empty()) {
    std::fprintf(stderr, "error: no *.json graphs in '%s'\n",
                 graphsDir.c_str());
    return 1;
  }

  nlohmann::json rows = nlohmann::json::array();
  std::printf("| graph | nodes | budget | solver | overhead %% | solve s | "
              "proven gap | peak/budget | status |\n");
  std::printf("|---|---:|---|---|---:|---:|---:|---:|---|\n");
  std::fflush(stdout);
  for (const std::string &file : files) {
    CheckmateGraph graph;
    std::string error;
    if (!readCheckmateGraph(file, graph, error)) {
      std::fprintf(stderr, "error: %s\n", error.c_str());
      return 1;
    }
    std::string shortName = file.substr(file.rfind('/') + 1);
    shortName = shortName.substr(0, shortName.size() - 5);
    const Problem &problem = graph.problem;
    int64_t peak = storeAllPeak(problem);
    int64_t minimum = computeLowerBound(problem).bytes;
    for (const std::string &fraction : fractions) {
      int64_t budget = fraction == "min"
                           ? minimum
                           : budgetForFraction(problem, std::stod(fraction));
      std::string budgetLabel =
          fraction == "min"
              ? "min (" + formatDouble(double(minimum) / peak, "%.2f") + ")"
              : fraction;
      for (SolverKind kind : solvers) {
        SolveOptions options;
        options.mode = CountingMode::Checkmate;
        options.timeLimitSeconds = timeLimit;
        options.progress = !quiet;
        options.reorder = reorder;
        if (!quiet)
          std::fprintf(stderr, "[bench] %s budget %s solver %s\n",
                       shortName.c_str(), budgetLabel.c_str(),
                       solverKindName(kind));
        SolveResult result = solve(problem, budget, kind, options);
        SolveStats &stats = result.stats;
        if (reorder) {
          stats.solverName += "+reorder";
          stats.status += " (" + stats.order + ")";
        }
        std::string overhead =
            result.ok ? formatDouble(stats.overhead * 100, "%.2f") : "-";
        std::string gap =
            result.ok ? formatDouble(stats.provenGap * 100, "%.2f%%") : "-";
        std::string ratio =
            stats.peakBytes > 0
                ? formatDouble(double(stats.peakBytes) / budget, "%.3f")
                : "-";
        std::printf("| %s | %d | %s | %s | %s | %.2f | %s | %s | %s |\n",
                    shortName.c_str(), problem.size(), budgetLabel.c_str(),
                    stats.solverName.c_str(), overhead.c_str(),
                    stats.solveSeconds, gap.c_str(), ratio.c_str(),
                    stats.status.c_str());
        std::fflush(stdout);
        nlohmann::json row;
        row["graph"] = shortName;
        row["nodes"] = problem.size();
        row["fraction"] = fraction;
        row["budgetBytes"] = budget;
        row["storeAllPeakBytes"] = peak;
        row["minimumBytes"] = minimum;
        row["solver"] = stats.solverName;
        row["ok"] = result.ok;
        row["status"] = stats.status;
        row["error"] = result.error;
        row["peakBytes"] = stats.peakBytes;
        row["cost"] = stats.cost;
        row["baseCost"] = stats.baseCost;
        row["overhead"] = result.ok ? nlohmann::json(stats.overhead)
                                    : nlohmann::json(nullptr);
        row["solveSeconds"] = stats.solveSeconds;
        row["order"] = stats.order;
        row["provenGap"] = std::isnan(stats.provenGap)
                               ? nlohmann::json(nullptr)
                               : nlohmann::json(stats.provenGap);
        rows.push_back(row);
      }
    }
  }
  if (!jsonPath.empty()) {
    try {
      remat::runtime::writeOutputFile(jsonPath, rows.dump(2) + "\n");
    } catch (const std::exception &e) {
      std::fprintf(stderr, "error: %s\n", e.what());
      return 1;
    }
  }
  return 0;
}
