//===- CompileStagesTest.cpp - One extraction and one liveness a compile -===//
//
// A compile extracts its training step from the IR once and replays each
// reordering and plan on it (replayTrainStep); the replayed step must equal
// what the rewritten IR reads back as, field by field, or the plan file
// would describe another step than the one laid out.
//
//===----------------------------------------------------------------------===//
#include "compiler/Driver.h"
#include "compiler/ModelGraph.h"
#include "passes/TrainStep.h"

#include "mlir/IR/MLIRContext.h"

#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>

using namespace remat;

namespace {

model::ModelGraph shippedModel(const std::string &file,
                               const model::ModelOptions &options = {}) {
  std::ifstream in(std::string(REMAT_SOURCE_DIR) + "/models/" + file);
  REQUIRE(in.good());
  std::stringstream text;
  text << in.rdbuf();
  return model::loadModel(text.str(), file, options);
}

/// The first field in which two steps differ, or empty.
std::string difference(const TrainStep &a, const TrainStep &b) {
  auto where = [](const char *what, size_t i) {
    return std::string(what) + " " + std::to_string(i);
  };
  if (a.model != b.model || a.seed != b.seed || a.batch != b.batch ||
      a.ranks != b.ranks || a.optimizerShards != b.optimizerShards ||
      a.tokensPerSample != b.tokensPerSample || a.loss != b.loss)
    return "the step's model facts or loss";
  if (a.graph.values.size() != b.graph.values.size() ||
      a.values.size() != b.values.size())
    return "the number of values";
  for (size_t v = 0; v < a.graph.values.size(); ++v) {
    const memory::StepValue &x = a.graph.values[v], &y = b.graph.values[v];
    if (x.name != y.name || x.role != y.role || x.bytes != y.bytes ||
        x.producer != y.producer || x.inPlaceOf != y.inPlaceOf)
      return where("value", v) + " ('" + x.name + "' / '" + y.name + "')";
    const ValueInfo &p = a.values[v], &q = b.values[v];
    if (p.dtype != q.dtype || p.shape != q.shape || p.init != q.init ||
        p.data != q.data)
      return where("value info", v) + " ('" + x.name + "')";
  }
  if (a.graph.ops.size() != b.graph.ops.size() ||
      a.ops.size() != b.ops.size())
    return "the number of ops";
  for (size_t k = 0; k < a.graph.ops.size(); ++k) {
    const memory::StepOp &x = a.graph.ops[k], &y = b.graph.ops[k];
    if (x.name != y.name || x.operands != y.operands ||
        x.results != y.results || x.phase != y.phase ||
        x.reusableOperand != y.reusableOperand ||
        x.scratchBytes != y.scratchBytes)
      return where("op", k) + " ('" + x.name + "' / '" + y.name + "')";
    const OpInfo &p = a.ops[k], &q = b.ops[k];
    if (p.kind != q.kind || p.base != q.base || p.attrs != q.attrs ||
        p.flops != q.flops || p.bytes != q.bytes || p.seconds != q.seconds ||
        p.recomputeSeconds != q.recomputeSeconds ||
        p.recompute != q.recompute || p.block != q.block)
      return where("op info", k) + " ('" + x.name + "')";
  }
  if (a.graph.outputs != b.graph.outputs)
    return "the outputs";
  return "";
}

/// The budget `fraction` of the way from the step's least arena without
/// recomputation down to nothing.
int64_t budgetAt(const model::ModelGraph &graph, double fraction) {
  compiler::CompileOptions options;
  nlohmann::json report;
  compiler::compilePlan(graph, options, report);
  return int64_t(double(report["step_bytes"].get<int64_t>()) * fraction);
}

} // namespace

TEST_CASE("one compile of models/gpt2.json extracts its training step once "
          "and computes liveness once outside the planner's search",
          "[compiler]") {
  model::ModelGraph graph = shippedModel("gpt2.json");
  compiler::CompileOptions options;
  options.budgetBytes = budgetAt(graph, 0.6);
  int64_t extractions = stageCounters().extractions;
  int64_t replays = stageCounters().replays;
  int64_t outside = memory::livenessCounts().outside;
  int64_t inSearch = memory::livenessCounts().inSearch;
  nlohmann::json report;
  compiler::compilePlan(graph, options, report);
  CHECK(report["recompute_overhead"].get<double>() > 0); // it did plan
  CHECK(stageCounters().extractions - extractions == 1);
  // The memory-aware order and the plan, each replayed on the step.
  CHECK(stageCounters().replays - replays == 2);
  CHECK(memory::livenessCounts().outside - outside == 1);
  CHECK(memory::livenessCounts().inSearch - inSearch > 0);
}

TEST_CASE("the replayed step equals the planned module's @train_step read "
          "back, for every shipped model at store-all and under a budget",
          "[compiler]") {
  struct Case {
    std::string file, preset;
    int64_t ranks;
  };
  // The comparison means something only if some plans recompute and some
  // lag their updates.
  bool anyRecompute = false, anyLag = false;
  for (const Case &c : {Case{"gpt2.json", "tiny", 1},
                        Case{"gpt2.json", "tiny", 2},
                        Case{"classifier.json", "", 1},
                        Case{"mlp_deep.json", "", 1},
                        Case{"seed_mlp.json", "", 1}}) {
    model::ModelOptions modelOptions;
    modelOptions.preset = c.preset;
    modelOptions.ranks = c.ranks;
    model::ModelGraph graph = shippedModel(c.file, modelOptions);
    for (double fraction : {0.0, 0.95, 0.8}) {
      INFO(c.file << " ranks " << c.ranks << " at " << fraction
                  << " of the store-all arena");
      compiler::CompileOptions options;
      if (fraction > 0)
        options.budgetBytes = budgetAt(graph, fraction);
      mlir::MLIRContext context;
      compiler::StepModule built;
      try {
        built = compiler::buildStep(graph, context, compiler::Stage::Planned,
                                    options);
      } catch (const std::runtime_error &e) {
        // Below the model's minimum: nothing planned, nothing to compare.
        CHECK(std::string(e.what()).find("no schedule fits") !=
              std::string::npos);
        continue;
      }
      REQUIRE(built.step);
      if (c.ranks > 1)
        anyLag |= compiler::lagOptimizerUpdates(*built.module, *built.step,
                                                options, 0) > 0;
      TrainStep readBack = extractTrainStep(*built.module);
      CHECK(difference(*built.step, readBack) == "");
      bool recomputes = false;
      for (const OpInfo &op : readBack.ops)
        recomputes |= op.recompute;
      if (fraction == 0)
        CHECK_FALSE(recomputes);
      anyRecompute |= recomputes;
    }
  }
  CHECK(anyRecompute);
  CHECK(anyLag);
}
