//===- Schedule.cpp - -remat-schedule and -remat-test-print-memory --------===//
//
// Thin adapters over passes/memory: -remat-schedule reorders @train_step's
// ops into the memory-aware order (memory::memoryAwareOrder); the test pass
// prints the liveness and arena layout of the current order, one line per
// op and per buffer, for lit tests.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"
#include "passes/TrainStep.h"

#include "llvm/Support/raw_ostream.h"

namespace remat {
#define GEN_PASS_DEF_SCHEDULEPASS
#define GEN_PASS_DEF_TESTPRINTMEMORYPASS
#include "passes/Passes.h.inc"

namespace {

struct SchedulePass : public impl::SchedulePassBase<SchedulePass> {
  void runOnOperation() override {
    mlir::ModuleOp module = getOperation();
    std::optional<TrainStep> step = extractTrainStepOrEmit(module);
    if (!step)
      return signalPassFailure();
    reorderTrainStep(module, *step, memory::memoryAwareOrder(step->graph));
  }
};

struct TestPrintMemoryPass
    : public impl::TestPrintMemoryPassBase<TestPrintMemoryPass> {
  using TestPrintMemoryPassBase::TestPrintMemoryPassBase;
  void runOnOperation() override {
    std::optional<TrainStep> step = extractTrainStepOrEmit(getOperation());
    if (!step)
      return signalPassFailure();
    const memory::StepGraph &graph = step->graph;
    memory::Liveness live = memory::computeLiveness(graph, alignment);
    memory::ArenaLayout layout =
        memory::assignOffsets(graph, live, alignment);
    llvm::raw_ostream &os = llvm::outs();
    os << "memory: peak " << live.peakBytes << " at op " << live.peakOp
       << ", arena " << layout.arenaBytes << "\n";
    for (size_t k = 0; k < graph.ops.size(); ++k)
      os << "op " << k << " " << memory::phaseName(graph.ops[k].phase) << " "
         << step->ops[k].kind << " '" << graph.ops[k].name << "': live "
         << live.liveBytesAt[k] << "\n";
    for (size_t v = 0; v < graph.values.size(); ++v) {
      const memory::StepValue &value = graph.values[v];
      os << "buffer '" << value.name << "' " << memory::roleName(value.role)
         << " bytes " << value.bytes << " offset " << layout.offsets[v]
         << " live [" << live.intervals[v].begin << ", "
         << live.intervals[v].end << "]";
      if (live.bufferOf[v] != (int)v)
        os << " shares '" << graph.values[live.bufferOf[v]].name << "'";
      os << "\n";
    }
  }
};

} // namespace
} // namespace remat
