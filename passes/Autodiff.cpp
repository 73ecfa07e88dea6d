//===- Autodiff.cpp - reverse-mode autodiff of @forward ---------*- C++ -*-===//
//
// -remat-autodiff: builds the backward of `func.func @forward` from the VJPs
// of its ops (GradientOpInterface) and returns the loss and the gradient of
// every param as `func.func @train_step`. The contract is in Passes.td.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "ir/GraphOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLExtras.h"

namespace remat {

#define GEN_PASS_DEF_AUTODIFFPASS
#include "passes/Passes.h.inc"

namespace {

using mlir::Value;

/// One argument of @forward as the importer tags it.
struct ForwardArgument {
  mlir::BlockArgument value;
  mlir::StringAttr name;
  bool isParam = false;
};

bool isFloatScalar(mlir::Type type) {
  auto tensor = llvm::dyn_cast<mlir::RankedTensorType>(type);
  return tensor && tensor.getRank() == 0 &&
         llvm::isa<mlir::FloatType>(tensor.getElementType());
}

bool isFloatTensor(mlir::Type type) {
  auto tensor = llvm::dyn_cast<mlir::RankedTensorType>(type);
  return tensor && llvm::isa<mlir::FloatType>(tensor.getElementType());
}

/// Reverse-mode automatic differentiation of `func.func @forward` into
/// `func.func @train_step`:
///
///  1. Check @forward: one block that returns a 0-d float tensor (the
///     loss), then the new value of each state argument it updates; every
///     argument has a string `graph.name` and a `graph.role` of "input",
///     "param" or "state"; params and state are float tensors.
///  2. Activity: walk the forward ops in order and mark every value that
///     depends on a param ("varied"). Only varied values get gradients, so
///     an op that only touches inputs needs no gradient rule.
///  3. Seed d(loss) = `graph.constant 1.0` of the loss type, after the
///     forward ops. Every backward op is appended after it, in order.
///  4. Walk the forward ops in reverse. For an op that has at least one
///     result gradient and at least one varied operand, call buildGradient
///     with one gradient per result (a null Value where a result has none).
///     Keep the gradient of every varied operand: the first one as it is,
///     each later one accumulated as `graph.add(sum so far, new)`. Reverse
///     op order, then operand order, fixes the order of every sum, so the
///     output is deterministic. An op on the way from a param to the loss
///     without a gradient rule fails the pass at its location.
///  5. A param's gradient is its accumulated gradient, or a
///     `graph.constant 0.0` of its type when it does not reach the loss;
///     inputs get none.
///  6. Return (loss, gradient of each param in argument order, the new
///     state values as @forward returned them) with the result attributes
///     of the contract, and rename the function.
///  7. Erase the backward ops nothing uses (the gradient of an input, the
///     operand gradients a VJP builds for non-varied operands), in reverse
///     order so that chains of dead ops go in one sweep.
///
/// Time and memory are linear in the number of forward ops plus the number
/// of ops the VJPs create. No simplification is done beyond step 7 (CSE
/// runs after the optimizer pass in the train-step pipeline).
struct AutodiffPass : public impl::AutodiffPassBase<AutodiffPass> {
  void runOnOperation() override;

private:
  mlir::LogicalResult
  checkForward(mlir::func::FuncOp forward,
               llvm::SmallVectorImpl<ForwardArgument> &arguments);
  mlir::LogicalResult buildBackward(mlir::func::FuncOp forward,
                                    llvm::ArrayRef<ForwardArgument> arguments);
};

mlir::LogicalResult
AutodiffPass::checkForward(mlir::func::FuncOp forward,
                           llvm::SmallVectorImpl<ForwardArgument> &arguments) {
  if (forward.isExternal())
    return forward.emitError("@forward has no body");
  if (!forward.getBody().hasOneBlock())
    return forward.emitError("@forward must have exactly one block, got ")
           << forward.getBody().getBlocks().size();
  if (forward.getNumResults() < 1)
    return forward.emitError("@forward must return the loss first, got no "
                             "results");
  mlir::Type lossType = forward.getResultTypes()[0];
  if (!isFloatScalar(lossType))
    return forward.emitError("the loss returned by @forward must be a 0-d "
                             "float tensor, got ")
           << lossType;

  for (mlir::BlockArgument arg : forward.getArguments()) {
    unsigned index = arg.getArgNumber();
    auto name = forward.getArgAttrOfType<mlir::StringAttr>(index, "graph.name");
    if (!name || name.getValue().empty())
      return forward.emitError("argument #")
             << index << " of @forward has no string graph.name";
    auto role = forward.getArgAttrOfType<mlir::StringAttr>(index, "graph.role");
    if (!role || (role.getValue() != "input" && role.getValue() != "param" &&
                  role.getValue() != "state"))
      return forward.emitError("argument #")
             << index << " ('" << name.getValue()
             << "') of @forward needs graph.role \"input\", \"param\" or "
                "\"state\"";
    bool isParam = role.getValue() == "param";
    if (role.getValue() != "input" && !isFloatTensor(arg.getType()))
      return forward.emitError(role.getValue())
             << " argument #" << index << " ('" << name.getValue()
             << "') must be a float tensor, got " << arg.getType();
    arguments.push_back({arg, name, isParam});
  }
  // Results after the loss: the new value of a state argument.
  for (unsigned r = 1; r < forward.getNumResults(); ++r) {
    auto role = forward.getResultAttrOfType<mlir::StringAttr>(r, "graph.role");
    auto updates =
        forward.getResultAttrOfType<mlir::IntegerAttr>(r, "graph.updates");
    if (!role || role.getValue() != "state" || !updates)
      return forward.emitError("result #")
             << r << " of @forward must be a new state value (graph.role = "
                     "\"state\" with graph.updates)";
    int64_t arg = updates.getInt();
    if (arg < 0 || arg >= int64_t(forward.getNumArguments()) ||
        forward.getArgAttrOfType<mlir::StringAttr>(unsigned(arg), "graph.role")
                .getValue() != "state" ||
        forward.getArgument(unsigned(arg)).getType() !=
            forward.getResultTypes()[r])
      return forward.emitError("result #")
             << r << " updates argument #" << arg
             << ", which is not a state argument of its type";
  }
  return mlir::success();
}

mlir::LogicalResult
AutodiffPass::buildBackward(mlir::func::FuncOp forward,
                            llvm::ArrayRef<ForwardArgument> arguments) {
  mlir::MLIRContext *context = forward.getContext();
  mlir::Block &body = forward.getBody().front();
  mlir::Operation *terminator = body.getTerminator();
  Value loss = terminator->getOperand(0);
  llvm::SmallVector<mlir::Operation *> forwardOps;
  for (mlir::Operation &op : body.without_terminator())
    forwardOps.push_back(&op);

  // 2. Activity.
  llvm::DenseSet<Value> varied;
  for (const ForwardArgument &arg : arguments)
    if (arg.isParam)
      varied.insert(arg.value);
  for (mlir::Operation *op : forwardOps)
    if (llvm::any_of(op->getOperands(),
                     [&](Value operand) { return varied.contains(operand); }))
      varied.insert(op->result_begin(), op->result_end());

  // 3. Seed.
  mlir::OpBuilder builder(terminator);
  auto seed = builder.create<graph::ConstantOp>(terminator->getLoc(),
                                                loss.getType(), 1.0f);
  llvm::DenseMap<Value, Value> grads;
  grads[loss] = seed;

  // 4. Reverse walk.
  for (mlir::Operation *op : llvm::reverse(forwardOps)) {
    llvm::SmallVector<Value> resultGrads;
    for (Value result : op->getResults())
      resultGrads.push_back(grads.lookup(result));
    if (llvm::all_of(resultGrads, [](Value grad) { return !grad; }))
      continue;
    if (llvm::none_of(op->getOperands(),
                      [&](Value operand) { return varied.contains(operand); }))
      continue;
    auto differentiable = llvm::dyn_cast<graph::GradientOpInterface>(op);
    if (!differentiable)
      return op->emitOpError("has no gradient rule, but lies on the path from "
                             "a param to the loss");
    llvm::SmallVector<Value> operandGrads;
    // The ops built below land between `lastBefore` and the insertion point.
    mlir::Block *body = builder.getInsertionBlock();
    mlir::Operation *lastBefore =
        builder.getInsertionPoint() == body->begin()
            ? nullptr
            : &*std::prev(builder.getInsertionPoint());
    if (mlir::failed(
            differentiable.buildGradient(builder, resultGrads, operandGrads)))
      return mlir::failure();
    if (operandGrads.size() != op->getNumOperands())
      return op->emitOpError("gradient rule built ")
             << operandGrads.size() << " operand gradients for "
             << op->getNumOperands() << " operands";
    for (auto [index, operand, grad] :
         llvm::enumerate(op->getOperands(), operandGrads)) {
      if (!grad || !varied.contains(operand))
        continue;
      if (grad.getType() != operand.getType())
        return op->emitOpError("gradient rule built a gradient of type ")
               << grad.getType() << " for operand #" << index << " of type "
               << operand.getType();
      Value &sum = grads[operand];
      if (!sum)
        sum = grad;
      else
        sum = builder.create<graph::AddOp>(op->getLoc(), operand.getType(), sum,
                                           grad);
    }
    // The ops of this gradient belong to the forward op's block.
    if (auto block = op->getAttr(graph::kBlockAttr))
      for (mlir::Operation &created : llvm::make_range(
               lastBefore ? std::next(lastBefore->getIterator())
                          : body->begin(),
               builder.getInsertionPoint()))
        created.setAttr(graph::kBlockAttr, block);
  }

  // 5. Param gradients.
  llvm::SmallVector<Value> results{loss};
  llvm::SmallVector<mlir::DictionaryAttr> resultAttrs;
  auto stringAttr = [&](llvm::StringRef value) {
    return mlir::StringAttr::get(context, value);
  };
  resultAttrs.push_back(builder.getDictionaryAttr(
      {builder.getNamedAttr("graph.name", stringAttr("loss")),
       builder.getNamedAttr("graph.role", stringAttr("loss"))}));
  for (const ForwardArgument &arg : arguments) {
    if (!arg.isParam)
      continue;
    Value grad = grads.lookup(arg.value);
    if (!grad)
      grad = builder.create<graph::ConstantOp>(arg.value.getLoc(),
                                               arg.value.getType(), 0.0f);
    results.push_back(grad);
    resultAttrs.push_back(builder.getDictionaryAttr(
        {builder.getNamedAttr("graph.name",
                              stringAttr("grad:" + arg.name.getValue().str())),
         builder.getNamedAttr("graph.param", builder.getI64IntegerAttr(
                                                 arg.value.getArgNumber())),
         builder.getNamedAttr("graph.role", stringAttr("grad"))}));
  }

  // The new state values follow the gradients, as @forward returned them.
  for (unsigned r = 1; r < terminator->getNumOperands(); ++r) {
    results.push_back(terminator->getOperand(r));
    resultAttrs.push_back(forward.getResultAttrDict(r));
  }

  // 6. The new signature.
  mlir::Location returnLoc = terminator->getLoc();
  terminator->erase();
  builder.setInsertionPointToEnd(&body);
  builder.create<mlir::func::ReturnOp>(returnLoc, results);
  llvm::SmallVector<mlir::Type> resultTypes;
  for (Value result : results)
    resultTypes.push_back(result.getType());
  forward.setType(mlir::FunctionType::get(context, forward.getArgumentTypes(),
                                          resultTypes));
  forward.setAllResultAttrs(resultAttrs);
  mlir::SymbolTable::setSymbolName(forward, "train_step");

  // 7. Dead backward ops.
  llvm::SmallVector<mlir::Operation *> backwardOps;
  for (mlir::Operation *op = seed; op != body.getTerminator();
       op = op->getNextNode())
    backwardOps.push_back(op);
  for (mlir::Operation *op : llvm::reverse(backwardOps))
    if (mlir::isOpTriviallyDead(op))
      op->erase();
  return mlir::success();
}

void AutodiffPass::runOnOperation() {
  mlir::ModuleOp module = getOperation();
  auto forward = module.lookupSymbol<mlir::func::FuncOp>("forward");
  if (!forward) {
    module.emitError("no func.func @forward to differentiate");
    return signalPassFailure();
  }
  if (mlir::Operation *existing = module.lookupSymbol("train_step")) {
    existing->emitError("the module already has a @train_step; autodiff "
                        "would replace @forward with it");
    return signalPassFailure();
  }
  if (!mlir::SymbolTable::symbolKnownUseEmpty(forward, module)) {
    forward.emitError("@forward is referenced in the module; autodiff "
                      "replaces it with @train_step");
    return signalPassFailure();
  }
  llvm::SmallVector<ForwardArgument> arguments;
  if (mlir::failed(checkForward(forward, arguments)) ||
      mlir::failed(buildBackward(forward, arguments)))
    return signalPassFailure();
}

} // namespace
} // namespace remat
