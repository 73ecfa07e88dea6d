//===- AssignBuffers.cpp - -remat-assign-buffers: @train_step to `plan` ---===//
//
// Lowers the scheduled (and possibly rematerialized) @train_step into the
// `plan` dialect: one `plan.arena` whose buffers sit at fixed, aligned
// offsets, then the steps in order with a `plan.free` after each transient
// buffer's last reader. Algorithm:
//   1. extract @train_step as a TrainStep (values numbered as extracted:
//      arguments, then each op's results);
//   2. liveness with buffer reuse and the greedy-by-size layout
//      (passes/memory): the arena size and the live-bytes lower bound;
//   3. build the arena: a buffer per value (an in-place update result uses
//      its argument's buffer), a step per op, frees; erase @train_step.
// The arena carries `remat.live_lower_bound_bytes` so the layout's cost
// (arena minus lower bound: fragmentation) is visible.
//
//===----------------------------------------------------------------------===//

#include "passes/AssignBuffers.h"
#include "passes/Passes.h"
#include "passes/TrainStep.h"

#include "ir/PlanOps.h"

#include "mlir/IR/Builders.h"

namespace remat {
#define GEN_PASS_DEF_ASSIGNBUFFERSPASS
#include "passes/Passes.h.inc"

plan::ArenaOp buildPlanArena(mlir::ModuleOp module, const TrainStep &step,
                             const memory::Liveness &live,
                             const memory::ArenaLayout &layout,
                             int64_t alignment) {
  auto func = module.lookupSymbol<mlir::func::FuncOp>("train_step");
  mlir::Block &body = func.getBody().front();

  // 1. The MLIR values in extraction order.
  std::vector<mlir::Value> values;
  for (mlir::BlockArgument arg : body.getArguments())
    values.push_back(arg);
  std::vector<mlir::Operation *> ops;
  for (mlir::Operation &op : body.without_terminator()) {
    ops.push_back(&op);
    for (mlir::Value r : op.getResults())
      values.push_back(r);
  }
  const memory::StepGraph &graph = step.graph;
  if (values.size() != graph.values.size()) {
    module.emitError("internal error: value numbering differs");
    return nullptr;
  }

  // 2. The arena.
  mlir::OpBuilder b(module.getContext());
  b.setInsertionPointToEnd(module.getBody());
  auto arena = b.create<plan::ArenaOp>(func.getLoc(), layout.arenaBytes,
                                       int64_t(alignment));
  arena->setAttr("remat.live_lower_bound_bytes",
                 b.getI64IntegerAttr(live.peakBytes));
  b.setInsertionPointToEnd(&arena.getBodyBlock());
  std::vector<mlir::FlatSymbolRefAttr> symbol(graph.values.size());
  for (size_t v = 0; v < graph.values.size(); ++v) {
    const memory::StepValue &value = graph.values[v];
    if (value.inPlaceOf >= 0)
      continue;
    auto type = mlir::cast<mlir::RankedTensorType>(values[v].getType());
    mlir::DictionaryAttr init, data;
    if (value.isArgument()) {
      init = func.getArgAttrOfType<mlir::DictionaryAttr>(v, "graph.init");
      data = func.getArgAttrOfType<mlir::DictionaryAttr>(v, "graph.data");
      // Hand-written IR may leave the init out: zeros, as for state.
      if (!init && runtime::isPersistent(value.role))
        init = b.getDictionaryAttr(
            {b.getNamedAttr("kind", b.getStringAttr("zeros"))});
    }
    b.create<plan::BufferOp>(
        values[v].getLoc(), b.getStringAttr(value.name),
        b.getStringAttr(memory::roleName(value.role)),
        mlir::TypeAttr::get(type.getElementType()),
        b.getDenseI64ArrayAttr(type.getShape()),
        b.getI64IntegerAttr(layout.offsets[v]),
        b.getI64IntegerAttr(value.bytes), init, data);
    symbol[v] = mlir::FlatSymbolRefAttr::get(b.getStringAttr(value.name));
  }
  for (size_t v = 0; v < graph.values.size(); ++v)
    if (graph.values[v].inPlaceOf >= 0)
      symbol[v] = symbol[graph.values[v].inPlaceOf];
  arena.setLossAttr(symbol[step.loss]);

  // Transient buffers die after their last reader (their buffer's end).
  std::vector<char> isOutput(graph.values.size(), 0);
  for (int o : graph.outputs)
    isOutput[o] = 1;
  std::vector<std::vector<int>> freesAfter(graph.ops.size());
  for (size_t v = 0; v < graph.values.size(); ++v) {
    const memory::StepValue &value = graph.values[v];
    if (value.isArgument() || value.inPlaceOf >= 0 || isOutput[v])
      continue;
    // The last value of a reused buffer frees it; earlier ones hand over.
    int end = live.intervals[v].end;
    bool handsOver = false;
    for (size_t w = 0; w < graph.values.size(); ++w)
      if (w != v && live.bufferOf[w] == live.bufferOf[v] &&
          graph.values[w].producer > value.producer)
        handsOver = true;
    if (!handsOver && end >= 0 && end < (int)graph.ops.size())
      freesAfter[end].push_back(static_cast<int>(v));
  }
  for (size_t k = 0; k < graph.ops.size(); ++k) {
    const memory::StepOp &op = graph.ops[k];
    llvm::SmallVector<mlir::Attribute> ins, outs;
    for (int v : op.operands)
      ins.push_back(symbol[v]);
    for (int v : op.results)
      outs.push_back(symbol[v]);
    llvm::SmallVector<mlir::NamedAttribute> kernelAttrs;
    for (mlir::NamedAttribute attr : ops[k]->getAttrs())
      if (!attr.getName().strref().starts_with("remat."))
        kernelAttrs.push_back(attr);
    b.create<plan::StepOp>(
        ops[k]->getLoc(), b.getStringAttr(step.ops[k].kind),
        b.getArrayAttr(ins), b.getArrayAttr(outs),
        b.getStringAttr(memory::phaseName(op.phase)),
        step.ops[k].recompute ? b.getUnitAttr() : mlir::UnitAttr(),
        kernelAttrs.empty() ? mlir::DictionaryAttr()
                            : b.getDictionaryAttr(kernelAttrs));
    for (int v : freesAfter[k])
      b.create<plan::FreeOp>(ops[k]->getLoc(), symbol[v]);
  }
  func.erase();
  return arena;
}

namespace {

struct AssignBuffersPass
    : public impl::AssignBuffersPassBase<AssignBuffersPass> {
  using AssignBuffersPassBase::AssignBuffersPassBase;

  void runOnOperation() override {
    mlir::ModuleOp module = getOperation();
    std::optional<TrainStep> step = extractTrainStepOrEmit(module);
    if (!step)
      return signalPassFailure();
    memory::Liveness live = memory::computeLiveness(step->graph, alignment);
    memory::ArenaLayout layout =
        memory::assignOffsets(step->graph, live, alignment);
    if (!buildPlanArena(module, *step, live, layout, alignment))
      signalPassFailure();
  }
};

} // namespace
} // namespace remat
