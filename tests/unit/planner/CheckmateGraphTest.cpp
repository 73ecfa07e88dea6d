//===- CheckmateGraphTest.cpp - Reader and the Checkmate graphs -----------===//
#include "passes/planner/CheckmateGraph.h"
#include "passes/planner/Solvers.h"
#include "TestUtil.h"

#include <catch2/catch.hpp>

#include <cstdlib>
#include <dirent.h>

using namespace remat::planner;

namespace {

std::string parseError(const std::string &text) {
  CheckmateGraph graph;
  std::string error;
  bool ok = parseCheckmateGraph(text, graph, error);
  return ok ? "" : error;
}

} // namespace

TEST_CASE("Checkmate reader loads a small node-link graph", "[planner]") {
  const char *text = R"({"directed": true, "graph": {"name": "tiny"},
    "nodes": [{"id": 1, "name": "b", "cost_cpu": 2, "cost_ram": 20},
              {"id": 0, "name": "a", "cost_cpu": 1.5, "cost_ram": 10},
              {"id": 2, "cost_cpu": 3, "cost_ram": 5, "backward": true}],
    "links": [{"source": 0, "target": 1}, {"source": 1, "target": 2},
              {"source": 0, "target": 2}]})";
  CheckmateGraph graph;
  std::string error;
  REQUIRE(parseCheckmateGraph(text, graph, error));
  CHECK(graph.name == "tiny");
  REQUIRE(graph.problem.size() == 3);
  CHECK(graph.problem.nodes[0].name == "a");
  CHECK(graph.problem.nodes[0].cost == 1.5);
  CHECK(graph.problem.nodes[2].name == "node2");
  CHECK(graph.problem.nodes[2].backward);
  CHECK(graph.problem.nodes[2].operands == std::vector<int>{0, 1});
  // a + b live while b runs (30), then a, b, node2 (35).
  CHECK(storeAllPeak(graph.problem) == 35);
  CHECK(budgetForFraction(graph.problem, 0.5) == 17);
}

TEST_CASE("Checkmate reader rejects malformed graphs with clear messages",
          "[planner]") {
  CHECK(parseError("{") == "not valid JSON");
  CHECK(parseError("[]") == "the top level is not a JSON object");
  CHECK(parseError(R"({"links": []})") == "missing \"nodes\" array");
  CHECK(parseError(R"({"nodes": []})") == "missing \"links\" array");
  CHECK(parseError(R"({"nodes": [{"id": 0, "cost_cpu": 1}], "links": []})") ==
        "node 0 has no \"cost_ram\"");
  CHECK(parseError(R"({"nodes": [{"id": 3, "cost_cpu": 1, "cost_ram": 1}],
                       "links": []})")
            .find("id out of range") != std::string::npos);
  CHECK(parseError(R"({"nodes": [{"id": 0, "cost_cpu": 1, "cost_ram": 1},
                                 {"id": 0, "cost_cpu": 1, "cost_ram": 1}],
                       "links": []})") == "node 0: duplicate id");
  CHECK(parseError(R"({"nodes": [{"id": 0, "cost_cpu": "x", "cost_ram": 1}],
                       "links": []})") == "node 0 has no numeric \"cost_cpu\"");
  CHECK(parseError(R"({"nodes": [{"id": 0, "cost_cpu": 1, "cost_ram": 1},
                                 {"id": 1, "cost_cpu": 1, "cost_ram": 1}],
                       "links": [{"source": 1, "target": 0}]})")
            .find("goes backwards") != std::string::npos);
  CHECK(parseError(R"({"nodes": [{"id": 0, "cost_cpu": 1, "cost_ram": 1}],
                       "links": [{"source": 0, "target": 5}]})")
            .find("does not exist") != std::string::npos);
  CHECK(parseError(R"({"nodes": [7], "links": []})") ==
        "node #0 is not an object");
  CheckmateGraph graph;
  std::string error;
  CHECK_FALSE(readCheckmateGraph("/nonexistent/graph.json", graph, error));
  CHECK(error == "/nonexistent/graph.json: cannot open the graph file: No "
                 "such file or directory");
}

TEST_CASE("every solver's schedule on the Checkmate graphs passes the checker",
          "[planner]") {
  std::string dir = remat::planner::test::checkmateGraphsDir();
  if (dir.empty()) {
    WARN("Checkmate graphs not found (set REMAT_CHECKMATE_GRAPHS); skipping");
    // Under ctest (one process per test case) the skip is reported as such.
    if (std::getenv("REMAT_CTEST_SKIP_CODE"))
      std::exit(std::atoi(std::getenv("REMAT_CTEST_SKIP_CODE")));
    return;
  }
  std::vector<std::string> files;
  DIR *handle = opendir(dir.c_str());
  REQUIRE(handle);
  while (dirent *entry = readdir(handle)) {
    std::string name = entry->d_name;
    if (name.size() > 5 && name.substr(name.size() - 5) == ".json")
      files.push_back(dir + "/" + name);
  }
  closedir(handle);
  REQUIRE(files.size() >= 7);
  for (const std::string &file : files) {
    CheckmateGraph graph;
    std::string error;
    INFO(file);
    REQUIRE(readCheckmateGraph(file, graph, error));
    const Problem &problem = graph.problem;
    int64_t peak = storeAllPeak(problem);
    int64_t lower = computeLowerBound(problem).bytes;
    REQUIRE(lower <= peak);
    int64_t budget = std::max(lower, budgetForFraction(problem, 0.8));
    SolveOptions options;
    options.mode = CountingMode::Checkmate;
    options.timeLimitSeconds = 1;
    options.exactMaxNodes = 60; // the MILP only on VGG16/19 here
    std::vector<SolverKind> kinds{SolverKind::Heuristic, SolverKind::PerBlock,
                                  SolverKind::SqrtN};
    if (problem.size() <= 80) // the DP and auto take seconds on the others
      kinds.insert(kinds.end(), {SolverKind::ChainDp, SolverKind::Auto});
    for (SolverKind kind : kinds) {
      SolveResult result = solve(problem, budget, kind, options);
      INFO(solverKindName(kind) << ": " << result.error);
      // The heuristic reaches every 0.8 budget (or the lower bound) here.
      if (kind == SolverKind::Heuristic || kind == SolverKind::Auto)
        REQUIRE(result.ok);
      if (!result.ok)
        continue;
      CheckResult check =
          checkSchedule(problem, result.schedule, CountingMode::Checkmate);
      REQUIRE(check.ok);
      CHECK(check.peakBytes <= budget);
    }
  }
}
