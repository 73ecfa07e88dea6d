//===- PlanCommand.cpp - `remat plan`: budgets, sweeps, max batch ---------===//
//
//   remat plan MODEL [--budget B]        one plan's report (JSON keys of
//                                        docs/cli.md) without writing it
//   remat plan MODEL --sweep [--points N]
//                                        the Pareto table budget -> overhead
//                                        from the minimum feasible budget to
//                                        store-all, with the knee marked
//   remat plan MODEL --max-batch --budget B
//                                        the largest `batch` that fits
//   remat plan --graph FILE.json --budget-frac F
//                                        an external graph (networkx
//                                        node-link, Checkmate's format),
//                                        counted as Checkmate counts memory
//
//===----------------------------------------------------------------------===//

#include "tools/remat/PlanSession.h"
#include "tools/remat/CompileCommand.h"
#include "tools/remat/Backends.h"
#include "passes/planner/Defaults.h"

#include "compiler/Driver.h"
#include "compiler/ModelFile.h"
#include "passes/Rematerialize.h"
#include "passes/planner/CheckmateGraph.h"
#include "passes/planner/MinimumBudget.h"
#include "passes/planner/Reorder.h"
#include "runtime/plan/OutputFile.h"
#include "runtime/cli/Usage.h"

#include <chrono>
#include <cmath>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <sstream>

using nlohmann::json;

namespace remat::tools {

static const char *kPlanHelp =
    "usage: remat plan MODEL [--budget B [--workspace-reserve R] | --sweep |\n"
    "                         --max-batch --budget B]\n"
    "       remat plan --graph FILE.json --budget-frac F\n"
    "\n"
    "Plans rematerialization without writing a plan file.\n"
    "\n"
    "  --budget B         plan under B bytes (1.5GiB, 800MB, 123456) and\n"
    "                     print the report as JSON (the report of\n"
    "                     `remat compile --report`); without it, the report\n"
    "                     of the plan without a budget: nothing recomputed,\n"
    "                     the least memory the planner finds\n"
    "  --workspace-reserve R\n"
    "                     with --budget: keep R bytes of the budget for the\n"
    "                     backend's workspace, as remat compile does\n"
    "                     (default: 0)\n"
    "  --min-feasible     with --budget or --graph: also search the minimum\n"
    "                     feasible budget for the report (as remat compile\n"
    "                     --min-feasible; --sweep and --budget-frac min\n"
    "                     always search it)\n"
    "  --backend NAME     the backend the plan is for: cpu (default), cuda\n"
    "  --sweep            Pareto table: budget -> recompute overhead, from\n"
    "                     the minimum feasible budget to store-all; the knee\n"
    "                     (the best trade-off) is marked\n"
    "  --points N         budgets in the sweep (default 10)\n"
    "  --svg FILE         with --sweep: also draw the budget-overhead curve,\n"
    "                     the knee marked, as an SVG (remat explain's style)\n"
    "  --max-batch        with --budget: the largest value of the model's\n"
    "                     `batch` variable whose step fits, unsplit and\n"
    "                     split into --max-microbatches micro-batches\n"
    "  --graph FILE       plan an external graph: networkx node-link JSON\n"
    "                     with node cost_cpu and cost_ram (the Checkmate\n"
    "                     graphs); memory is counted as Checkmate counts it\n"
    "  --budget-frac F    with --graph: budget as a fraction of the graph's\n"
    "                     store-all peak (or `min`: the minimum feasible\n"
    "                     budget, found by search; docs/planner.md)\n"
    "  --reorder, --no-reorder\n"
    "                     whether the planner may also move ops: it tries\n"
    "                     memory-aware candidate orders besides the given\n"
    "                     one (the report's `order` names the one used);\n"
    "                     default on for models, off for --graph\n"
    "  --solver NAME      auto (default), exact, dp, heuristic, store-all,\n"
    "                     per-block, sqrt\n"
    "  --time-limit S     time limit of the exact MILP (default: 1 s inside\n"
    "                     auto, 60 s with --solver exact)\n"
    "  --progress         solver progress on stderr\n"
    "  --device-profile NAME|FILE|measure  the op costs modeled: cpu\n"
    "                     (default), h200, h200-tf32, a JSON file\n"
    "                     (docs/planner.md; remat profile writes one), or\n"
    "                     measure: time the model's ops on --backend first\n"
    "  --preset NAME, --set NAME=VALUE   model configuration\n"
    "  --precision NAME   fp32 (default), bf16 or fp64 (see remat compile\n"
    "                     --help)\n"
    "  --ranks N          plan each of N data-parallel ranks: the config's\n"
    "                     batch is the global batch, the budget per rank\n"
    "                     (docs/distributed.md)\n"
    "  --shard-optimizer  with --ranks N > 1: each rank keeps 1/N of the\n"
    "                     optimizer state (ZeRO-1); no effect with one rank\n"
    "  --microbatches K|auto, --max-microbatches N,\n"
    "  --microbatch-norm per-slice   the batch split into micro-batches (see\n"
    "                     remat compile --help; docs/planner.md)\n"
    "  --input-shape NAME=D0,D1,..., --loss NAME, --optimizer NAME, --lr X,\n"
    "  --frozen NAME,...  the training step of an ONNX model (docs/onnx.md;\n"
    "                     see remat compile --help)\n"
    "  --json FILE        also write the results as JSON\n";

namespace {

int usage(const std::string &message) {
  return usageError(std::cerr, "plan", message);
}

const std::vector<std::string> kPlanFlags = {
    "--budget", "--workspace-reserve", "--backend", "--sweep", "--points",
    "--min-feasible",
    "--max-batch",
    "--graph",  "--budget-frac", "--reorder",  "--no-reorder",
    "--solver", "--time-limit",  "--progress", "--device-profile",
    "--preset", "--set",         "--ranks",         "--json",     "--svg",      "--help",
    "--shard-optimizer", "--precision", "--microbatches",
    "--max-microbatches", "--microbatch-norm"};

std::vector<std::string> planFlagNames() {
  std::vector<std::string> names = kPlanFlags;
  for (const std::string &flag : trainingFlagNames())
    names.push_back(flag);
  return names;
}

struct SweepPoint {
  double budget, overhead;
  bool ok, knee;
};

std::string svgNumber(double v) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(1) << v;
  return os.str();
}

/// The budget-overhead curve as an SVG, in the style of remat explain's
/// timeline: white background, grey grid, bold title, the knee in red.
std::string sweepSvg(const std::string &model,
                     const std::vector<SweepPoint> &points, double minimum,
                     double storeAll) {
  const double width = 720, height = 420, left = 80, right = 30, top = 50,
               bottom = 60;
  double maxOverhead = 0;
  for (const SweepPoint &p : points)
    if (p.ok)
      maxOverhead = std::max(maxOverhead, p.overhead);
  if (maxOverhead <= 0)
    maxOverhead = 0.01;
  // The y axis's ticks at round percentages (1, 2, 2.5 or 5 times a power
  // of ten), about four of them, the axis up to the first tick at or above
  // the largest overhead.
  double rough = maxOverhead * 100 / 4;
  double power = std::pow(10.0, std::floor(std::log10(rough)));
  double tick = 10 * power;
  for (double m : {1.0, 2.0, 2.5, 5.0})
    if (m * power >= rough) {
      tick = m * power;
      break;
    }
  int ticks = int(std::ceil(maxOverhead * 100 / tick - 1e-9));
  maxOverhead = ticks * tick / 100;
  double x0 = minimum, x1 = std::max(storeAll, minimum + 1);
  auto X = [&](double b) {
    return left + (b - x0) / (x1 - x0) * (width - left - right);
  };
  auto Y = [&](double o) {
    return height - bottom - o / maxOverhead * (height - top - bottom);
  };
  std::ostringstream os;
  os << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width
     << "\" height=\"" << height
     << "\" font-family=\"sans-serif\" font-size=\"12\">\n";
  os << "<rect x=\"0\" y=\"0\" width=\"" << width << "\" height=\""
     << height << "\" fill=\"#ffffff\"/>\n";
  os << "<text x=\"" << left << "\" y=\"28\" font-size=\"16\" "
        "font-weight=\"bold\">" << model
     << ": recompute overhead by budget</text>\n";
  os << "<g stroke=\"#dddddd\" stroke-width=\"1\">\n";
  for (int i = 0; i <= ticks; ++i) {
    double y = Y(tick * i / 100);
    os << "<line x1=\"" << left << "\" y1=\"" << svgNumber(y) << "\" x2=\""
       << width - right << "\" y2=\"" << svgNumber(y) << "\"/>\n";
  }
  os << "</g>\n<g>\n";
  for (int i = 0; i <= ticks; ++i) {
    double o = tick * i / 100;
    os << "<text x=\"" << left - 6 << "\" y=\"" << svgNumber(Y(o) + 4)
       << "\" text-anchor=\"end\">" << std::defaultfloat
       << std::setprecision(4) << tick * i << "%</text>\n";
  }
  os << "<text transform=\"translate(18," << svgNumber((top + height - bottom) / 2)
     << ") rotate(-90)\" text-anchor=\"middle\">recompute overhead "
        "(% of the step's compute)</text>\n";
  for (int i = 0; i <= 4; ++i) {
    double b = x0 + (x1 - x0) * i / 4;
    os << "<text x=\"" << svgNumber(X(b)) << "\" y=\""
       << height - bottom + 18 << "\" text-anchor=\"middle\">"
       << svgNumber(b / (1 << 20)) << " MiB</text>\n";
  }
  os << "<text x=\"" << svgNumber((left + width - right) / 2) << "\" y=\""
     << height - 15
     << "\" text-anchor=\"middle\">budget (from the minimum feasible "
        "to store-all)</text>\n</g>\n";
  os << "<polyline class=\"curve\" fill=\"none\" stroke=\"#1f77b4\" "
        "stroke-width=\"2\" points=\"";
  for (const SweepPoint &p : points)
    if (p.ok)
      os << svgNumber(X(p.budget)) << "," << svgNumber(Y(p.overhead)) << " ";
  os << "\"/>\n<g fill=\"#1f77b4\">\n";
  for (const SweepPoint &p : points)
    if (p.ok)
      os << "<circle cx=\"" << svgNumber(X(p.budget)) << "\" cy=\""
         << svgNumber(Y(p.overhead)) << "\" r=\"3\"/>\n";
  os << "</g>\n";
  for (const SweepPoint &p : points)
    if (p.ok && p.knee)
      os << "<g class=\"knee\"><circle cx=\"" << svgNumber(X(p.budget))
         << "\" cy=\"" << svgNumber(Y(p.overhead))
         << "\" r=\"7\" fill=\"none\" stroke=\"#d62728\" "
            "stroke-width=\"2\"/><text x=\""
         << svgNumber(X(p.budget) + 10) << "\" y=\""
         << svgNumber(Y(p.overhead) - 10) << "\" fill=\"#d62728\">knee: "
         << svgNumber(p.budget / (1 << 20)) << " MiB, "
         << svgNumber(p.overhead * 100) << "%</text></g>\n";
  os << "</svg>\n";
  return os.str();
}

int planSweep(const PlanOptions &options, planner::SolverKind kind) {
  Session s = openSession(options, options.modelOptions);
  planner::SolveOptions solve = solveOptions(options);
  std::cerr << "remat plan: " << s.step.graph.ops.size()
            << " ops; searching the minimum feasible budget...\n";
  StepMinimum found =
      minimumFeasibleBudget(s.problem, s.step, solve.reorder, s.alignment);
  int64_t minimum = found.minFeasibleBytes;
  if (minimum <= 0)
    throw std::runtime_error("no budget below store-all could be planned");
  // Whole-step budgets: the arena holds the CPU kernels' scratch too.
  int64_t storeAll = s.storeAllArena;
  struct Row {
    int64_t budget, arena;
    double overhead, seconds;
    std::string solver;
    bool ok;
  };
  std::vector<Row> rows;
  int pointCount = options.points;
  // A schedule that fits a smaller budget fits every larger one: each row
  // keeps the cheapest schedule found at or below its budget. A budget
  // whose plan is the row before's (the same arena and overhead) adds no
  // row: at most pointCount rows, each a different plan.
  Row bestSoFar{0, 0, NAN, 0, "", false};
  int64_t lastBudget = -1;
  for (int i = 0; i < pointCount; ++i) {
    int64_t budget =
        pointCount == 1
            ? minimum
            : minimum + (storeAll - minimum) * i / (pointCount - 1);
    if (budget == lastBudget)
      continue;
    lastBudget = budget;
    auto start = std::chrono::steady_clock::now();
    Attempt a = attemptWithFallbacks(s.problem, s.step, budget, kind, solve,
                                     s.alignment);
    double seconds = std::chrono::duration<double>(
                         std::chrono::steady_clock::now() - start)
                         .count();
    Row row{budget, a.arenaBytes, a.ok ? recomputeOverhead(s, a) : NAN,
            seconds, a.result.stats.solverName, a.ok};
    if (bestSoFar.ok && (!row.ok || bestSoFar.overhead < row.overhead)) {
      row.arena = bestSoFar.arena;
      row.overhead = bestSoFar.overhead;
      row.solver = bestSoFar.solver + " (from " +
                   std::to_string(bestSoFar.budget) + ")";
      row.ok = true;
    } else if (row.ok) {
      bestSoFar = row;
    }
    std::cerr << "remat plan: budget " << budget << " done in " << seconds
              << " s\n";
    if (row.ok && !rows.empty() && rows.back().ok &&
        rows.back().arena == row.arena && rows.back().overhead == row.overhead)
      continue;
    rows.push_back(row);
  }
  // Kneedle: the point farthest below the chord from the first to the last
  // point, in coordinates normalized to [0, 1].
  int knee = -1;
  double best = 0;
  double o0 = rows.front().overhead, o1 = rows.back().overhead;
  for (size_t i = 1; i + 1 < rows.size(); ++i) {
    if (!rows[i].ok || !(o0 > o1))
      continue;
    double x = double(rows[i].budget - rows.front().budget) /
               double(rows.back().budget - rows.front().budget);
    double y = (rows[i].overhead - o1) / (o0 - o1);
    double below = (1 - x) - y;
    if (below > best) {
      best = below;
      knee = static_cast<int>(i);
    }
  }
  std::cout << "model " << s.step.model << ": store-all arena "
            << s.storeAllArena << " B";
  std::cout << ", minimum feasible budget " << minimum << " B (" << std::fixed
            << std::setprecision(3) << double(minimum) / double(storeAll)
            << " of store-all; "
            << "lower bound " << found.lowerBoundBytes
            << " B: " << found.lowerBoundReason << "; gap " << found.gap
            << ")\n";
  if (pointCount > 1 && rows.size() == 1 && rows.front().ok)
    std::cout << "no trade-off to sweep: one plan (arena "
              << rows.front().arena << " B, overhead " << std::setprecision(2)
              << rows.front().overhead * 100
              << "%) is the best at every budget from the minimum to "
                 "store-all\n";
  else if (storeAll - minimum < storeAll / 100)
    std::cout << "little to sweep: the minimum feasible budget is within 1% "
                 "of store-all (" << storeAll - minimum << " B apart)\n";
  std::cout << "\n";
  std::cout << "| budget (B) | of store-all | arena (B) | overhead | solver "
               "| solve s |\n|---:|---:|---:|---:|---|---:|\n";
  json out = json::array();
  for (size_t i = 0; i < rows.size(); ++i) {
    const Row &r = rows[i];
    std::cout << "| " << r.budget << " | " << std::setprecision(3)
              << double(r.budget) / double(storeAll) << " | "
              << (r.ok ? std::to_string(r.arena) : "-") << " | ";
    if (r.ok)
      std::cout << std::setprecision(2) << r.overhead * 100 << "%";
    else
      std::cout << "infeasible";
    std::cout << " | " << r.solver << " | " << std::setprecision(2)
              << r.seconds << " |" << ((int)i == knee ? " <- knee" : "")
              << "\n";
    out.push_back({{"budget_bytes", r.budget},
                   {"arena_bytes", r.ok ? json(r.arena) : json(nullptr)},
                   {"recompute_overhead", r.ok ? json(r.overhead) : json(nullptr)},
                   {"solver", r.solver},
                   {"solve_seconds", r.seconds},
                   {"knee", (int)i == knee}});
  }
  if (!options.svgPath.empty()) {
    std::vector<SweepPoint> points;
    for (size_t i = 0; i < rows.size(); ++i)
      points.push_back({double(rows[i].budget), rows[i].overhead, rows[i].ok,
                        (int)i == knee});
    runtime::writeOutputFile(
        options.svgPath,
        sweepSvg(s.step.model, points, double(minimum), double(storeAll)));
  }
  writeJson(options, {{"model", s.step.model},
                      {"store_all_arena_bytes", s.storeAllArena},
                      {"backend", options.backend},
                      {"min_feasible_bytes", minimum},
                      {"min_feasible_gap", found.gap},
                      {"lower_bound_bytes", found.lowerBoundBytes},
                      {"lower_bound_reason", found.lowerBoundReason},
                      {"sweep", out}});
  return 0;
}

/// The report of the plan `remat compile` would emit for the same options
/// (compiler::compilePlan builds both).
int planOne(const PlanOptions &options) {
  model::ModelGraph graph =
      loadModelFile(options, options.modelOptions, /*warn=*/true);
  compiler::CompileOptions compile;
  compile.budgetBytes = options.budget;
  compile.workspaceReserveBytes = options.workspaceReserve;
  setBackend(compile, options.backend);
  compile.solver = options.solver;
  compile.timeLimitSeconds = solveOptions(options).timeLimitSeconds;
  compile.progress = options.progress;
  compile.reorder = options.reorder.value_or(true);
  compile.searchMinimum = options.minFeasible;
  compile.deviceProfile = options.deviceProfile;
  json report;
  compiler::compilePlan(graph, compile, report);
  std::cout << report.dump(2) << "\n";
  writeJson(options, report);
  return 0;
}

int planGraph(const PlanOptions &options, planner::SolverKind kind) {
  planner::CheckmateGraph graph;
  std::string error;
  if (!planner::readCheckmateGraph(options.graph, graph, error))
    throw std::runtime_error(error);
  planner::Problem &problem = graph.problem;
  int64_t storeAll = planner::storeAllPeak(problem);
  // The bound and the minimum feasible budget, in the given order (the
  // order the literature's numbers use; --reorder may plan lower).
  planner::MinimumSearchOptions search;
  search.mode = planner::CountingMode::Checkmate;
  if (options.timeLimit >= 0)
    search.exactSeconds = options.timeLimit;
  // Searched for `min` and with --min-feasible only: on large graphs the
  // failing probes cost seconds each.
  bool searched = options.budgetFraction == "min" || options.minFeasible;
  planner::MinimumBudget minimum;
  if (searched) {
    minimum = planner::searchMinimumBudget(problem, search);
  } else {
    planner::LowerBound bound = planner::computeLowerBound(problem);
    minimum.lowerBoundBytes = bound.bytes;
    minimum.lowerBoundReason = bound.describe(problem);
  }
  int64_t budget;
  if (options.budgetFraction == "min") {
    budget = minimum.minFeasibleBytes;
  } else {
    // (checked by the parser: a fraction in (0, 1])
    budget = planner::budgetForFraction(problem,
                                        std::stod(options.budgetFraction));
  }
  planner::SolveOptions solve = solveOptions(options);
  solve.mode = planner::CountingMode::Checkmate;
  planner::SolveResult r = planner::solve(problem, budget, kind, solve);
  // The search's schedule meets every budget from the minimum up, where a
  // solver asked anew may not find one (its choices depend on the budget):
  // a plan at the reported minimum never fails.
  if (!r.ok && searched && minimum.schedule.ok &&
      budget >= minimum.minFeasibleBytes) {
    double seconds = r.stats.solveSeconds;
    r = minimum.schedule;
    r.stats.solverName += " (the minimum search's schedule)";
    r.stats.solveSeconds += seconds;
  }
  json report;
  report["graph"] = graph.name;
  report["nodes"] = problem.size();
  report["budget_bytes"] = budget;
  report["store_all_peak_bytes"] = storeAll;
  report["lower_bound_bytes"] = minimum.lowerBoundBytes;
  report["lower_bound_reason"] = minimum.lowerBoundReason;
  report["min_feasible_bytes"] =
      searched ? json(minimum.minFeasibleBytes) : json(nullptr);
  report["min_feasible_solver"] = searched ? json(minimum.solver) : json(nullptr);
  report["min_feasible_gap"] = searched ? minimum.gap : "not-searched";
  report["proven_infeasible_bytes"] =
      searched ? json(minimum.provenInfeasibleBytes) : json(nullptr);
  report["min_search_seconds"] = minimum.seconds;
  report["solver"] = r.stats.solverName;
  report["solve_seconds"] = r.stats.solveSeconds;
  report["status"] = r.stats.status;
  report["order"] = r.stats.order;
  if (r.ok) {
    report["planned_peak_bytes"] = r.stats.peakBytes;
    report["arena_bytes"] = nullptr; // no layout in Checkmate's counting
    report["recompute_overhead"] = r.stats.overhead;
    report["optimality_gap"] = std::isnan(r.stats.provenGap)
                                   ? json(nullptr)
                                   : json(r.stats.provenGap);
  } else {
    report["error"] = r.error;
  }
  std::cout << report.dump(2) << "\n";
  writeJson(options, report);
  return r.ok ? 0 : 1;
}

} // namespace

int planMain(int argc, char **argv) {
  PlanOptions options;
  try {
    for (int i = 1; i < argc; ++i) {
      std::string arg = argv[i], v;
      if (arg == "-h" || arg == "--help") {
        std::cout << kPlanHelp;
        return 0;
      }
      if (takeTrainingFlag(argc, argv, i, options.modelOptions.training))
        continue;
      if (arg == "--sweep")
        options.sweep = true;
      else if (arg == "--max-batch")
        options.maxBatch = true;
      else if (arg == "--progress")
        options.progress = true;
      else if (arg == "--min-feasible")
        options.minFeasible = true;
      else if (arg == "--reorder" || arg == "--no-reorder")
        options.reorder = arg == "--reorder";
      else if (takeValue(argc, argv, i, "--budget", v)) {
        options.budget = compiler::parseByteSizeFlag("--budget", v, true);
      } else if (takeValue(argc, argv, i, "--workspace-reserve", v)) {
        options.workspaceReserve =
            compiler::parseByteSizeFlag("--workspace-reserve", v, false);
      } else if (takeValue(argc, argv, i, "--backend", v)) {
        const std::vector<std::string> &known = compiler::backendNames();
        if (std::find(known.begin(), known.end(), v) == known.end())
          return usage(unknownName("backend", v, known));
        options.backend = v;
      } else if (takeValue(argc, argv, i, "--budget-frac", v)) {
        size_t used = 0;
        double fraction = 0;
        try {
          fraction = v == "min" ? 1 : std::stod(v, &used);
        } catch (const std::exception &) {
          used = 0;
        }
        if (v != "min" && (used == 0 || used != v.size() || !(fraction > 0) ||
                           fraction > 1))
          return usage("--budget-frac needs a fraction of the store-all peak "
                       "in (0, 1] or 'min', got '" + v + "'");
        options.budgetFraction = v;
      }
      else if (takeValue(argc, argv, i, "--graph", v))
        options.graph = v;
      else if (takeValue(argc, argv, i, "--points", v)) {
        size_t used = 0;
        try {
          options.points = std::stoi(v, &used);
        } catch (const std::exception &) {
          used = 0;
        }
        if (used == 0 || used != v.size() || options.points < 1)
          return usage("--points '" + v + "' is not a positive integer");
      } else if (takeValue(argc, argv, i, "--solver", v))
        options.solver = v;
      else if (takeValue(argc, argv, i, "--time-limit", v)) {
        options.timeLimit = parseSeconds("--time-limit", v);
      } else if (takeValue(argc, argv, i, "--json", v))
        options.jsonPath = v;
      else if (takeValue(argc, argv, i, "--svg", v))
        options.svgPath = v;
      else if (takeValue(argc, argv, i, "--device-profile", v)) {
        options.measureProfile = v == "measure";
        if (!options.measureProfile)
          options.deviceProfile = compiler::parseDeviceProfile(v);
      }
      else if (arg == "--shard-optimizer")
        options.modelOptions.shardOptimizer = true;
      else if (takeModelFlag(argc, argv, i, options.modelOptions))
        continue;
      else if (arg.size() > 1 && arg[0] == '-')
        return usage(unknownOption(arg, planFlagNames()));
      else if (options.model.empty())
        options.model = arg;
      else
        return usage("more than one model given");
    }
  } catch (const std::exception &e) {
    return usage(e.what());
  }
  planner::SolverKind kind;
  if (!planner::parseSolverKind(options.solver, kind)) {
    return usage("--solver: " +
                 unknownName("solver", options.solver, solverNames()));
  }
  try {
    runtime::checkOutputs({{"--json", options.jsonPath},
                           {"--svg", options.svgPath}},
                          {{"the model", options.model},
                           {"--graph", options.graph}});
  } catch (const runtime::OutputClash &e) {
    return usage(e.what());
  } catch (const std::exception &e) {
    std::cerr << "remat plan: error: " << e.what() << "\n";
    return 1;
  }
  try {
    if (!options.graph.empty()) {
      if (!options.model.empty())
        return usage("give either a MODEL or --graph, not both");
      if (options.budgetFraction.empty())
        return usage("--graph needs --budget-frac F");
      return planGraph(options, kind);
    }
    if (options.model.empty())
      return usage("no model given");
    if (!options.budgetFraction.empty())
      return usage("--budget-frac goes with --graph (a model's budget is "
                   "--budget BYTES)");
    if (options.workspaceReserve && !options.budget)
      return usage("--workspace-reserve needs --budget");
    if (options.workspaceReserve && (options.sweep || options.maxBatch))
      return usage("--workspace-reserve goes with a single --budget only");
    if (options.workspaceReserve && *options.workspaceReserve >= *options.budget)
      return usage("--workspace-reserve " +
                   std::to_string(*options.workspaceReserve) +
                   " leaves nothing of --budget " +
                   std::to_string(*options.budget) + " for the arena");
    if (!options.svgPath.empty() && !options.sweep)
      return usage("--svg goes with --sweep");
    if (options.measureProfile) {
      // The model's own ops timed first; every form below plans with them.
      options.deviceProfile = measureModelProfile(
          model::readModelFile(options.model, options.modelOptions),
          options.backend, std::cerr);
    }
    if (options.sweep)
      return planSweep(options, kind);
    if (options.maxBatch) {
      if (!options.budget)
        return usage("--max-batch needs --budget B");
      return planMaxBatch(options, kind);
    }
    return planOne(options);
  } catch (const model::OptionError &e) {
    return usage(e.what());
  } catch (const model::ModelError &e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  } catch (const std::exception &e) {
    std::cerr << "remat plan: error: " << e.what() << "\n";
    return 1;
  }
}

} // namespace remat::tools
