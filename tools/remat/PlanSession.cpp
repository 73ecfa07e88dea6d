//===- PlanSession.cpp - What `remat plan`'s forms share -----------------===//
#include "tools/remat/PlanSession.h"

#include "tools/remat/Backends.h"
#include "tools/remat/CompileCommand.h"

#include "compiler/Driver.h"
#include "compiler/ModelFile.h"
#include "runtime/plan/OutputFile.h"

using nlohmann::json;

namespace remat::tools {

model::ModelGraph loadModelFile(const PlanOptions &options,
                                const model::ModelOptions &modelOptions,
                                bool warn) {
  model::ModelGraph graph =
      model::readModelFile(options.model, modelOptions).graph;
  if (warn)
    printModelNotes(graph);
  return graph;
}

Session openSession(const PlanOptions &options,
                    const model::ModelOptions &modelOptions, bool warn) {
  model::ModelGraph graph = loadModelFile(options, modelOptions, warn);
  mlir::MLIRContext context;
  compiler::CompileOptions compileOptions;
  compileOptions.deviceProfile = options.deviceProfile;
  setBackend(compileOptions, options.backend);
  Session s;
  s.step = *compiler::buildStep(graph, context, compiler::Stage::Scheduled,
                                compileOptions)
                .step;
  planner::SolverKind kind = planner::SolverKind::Auto;
  planner::parseSolverKind(options.solver, kind);
  s.problem = buildPlannerProblem(s.step, s.alignment,
                                  kind != planner::SolverKind::ChainDp);
  memory::Liveness live = memory::computeLiveness(s.step.graph, s.alignment);
  s.storeAllArena =
      memory::assignOffsets(s.step.graph, live, s.alignment).arenaBytes;
  return s;
}

double recomputeOverhead(const Session &s, const Attempt &a) {
  double extra = 0;
  for (size_t k = 0; k < a.applied.origin.size(); ++k)
    if (a.applied.recompute[k])
      extra += s.step.ops[a.applied.origin[k]].seconds;
  return s.step.recomputeOverhead(extra);
}

planner::SolveOptions solveOptions(const PlanOptions &options) {
  planner::SolveOptions o;
  o.timeLimitSeconds = options.timeLimit >= 0
                           ? options.timeLimit
                           : defaults::timeLimitFor(options.solver);
  o.progress = options.progress;
  o.reorder = options.reorder.value_or(options.graph.empty());
  return o;
}

void writeJson(const PlanOptions &options, const json &j) {
  if (options.jsonPath.empty())
    return;
  runtime::writeOutputFile(options.jsonPath, j.dump(2) + "\n");
}

} // namespace remat::tools
