//===- InsertOptimizerUpdates.cpp - -remat-optimizer ------------*- C++ -*-===//
//
// -remat-optimizer: replaces the gradient results of `func.func @train_step`
// with SGD or AdamW updates on new optimizer-state arguments, returning the
// new parameter and state values. The contract is in Passes.td.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "ir/GraphOps.h"
#include "ops/Shards.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/StringSwitch.h"

#include <algorithm>
#include <functional>
#include <optional>
#include <string>

namespace remat {

#define GEN_PASS_DEF_OPTIMIZERPASS
#include "passes/Passes.h.inc"

namespace {

using mlir::Value;

/// The module's `graph.optimizer`, with the defaults of
/// docs/model-format.md for missing fields.
struct OptimizerConfig {
  enum class Kind { Sgd, Adamw };
  Kind kind = Kind::Sgd;
  double lr = 0.01;
  double momentum = 0.0;
  double weightDecay = 0.0;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;

  /// SGD without momentum keeps no state (graph.sgd_plain_update).
  bool plainSgd() const { return kind == Kind::Sgd && momentum == 0.0; }

  /// Names of the state arguments of one param, in argument order.
  llvm::SmallVector<llvm::StringRef, 2> stateNames() const {
    if (plainSgd())
      return {};
    if (kind == Kind::Sgd)
      return {"momentum"};
    return {"adam_m", "adam_v"};
  }
};

/// A param of @train_step with its final gradient.
struct ParamGradient {
  unsigned argIndex;
  mlir::StringAttr name;
  Value grad;
};

/// Reads `graph.optimizer`; emits a diagnostic on the module when it is
/// missing, of an unknown kind, has a field its kind does not have, or a
/// value the update ops reject.
std::optional<OptimizerConfig> readOptimizerConfig(mlir::ModuleOp module) {
  mlir::Attribute raw = module->getAttr("graph.optimizer");
  if (!raw) {
    module.emitError("the module has no graph.optimizer attribute (a "
                     "dictionary with kind = \"sgd\" or \"adamw\")");
    return std::nullopt;
  }
  auto dict = llvm::dyn_cast<mlir::DictionaryAttr>(raw);
  if (!dict) {
    module.emitError("graph.optimizer must be a dictionary, got ") << raw;
    return std::nullopt;
  }
  auto kind = dict.getAs<mlir::StringAttr>("kind");
  if (!kind) {
    module.emitError("graph.optimizer needs a string 'kind' (\"sgd\" or "
                     "\"adamw\")");
    return std::nullopt;
  }
  OptimizerConfig config;
  if (kind.getValue() == "sgd") {
    config.kind = OptimizerConfig::Kind::Sgd;
  } else if (kind.getValue() == "adamw") {
    config.kind = OptimizerConfig::Kind::Adamw;
    config.lr = 1e-3;
    config.weightDecay = 0.01;
  } else {
    module.emitError("unknown optimizer kind '")
        << kind.getValue() << "' (expected \"sgd\" or \"adamw\")";
    return std::nullopt;
  }

  bool isSgd = config.kind == OptimizerConfig::Kind::Sgd;
  for (mlir::NamedAttribute field : dict) {
    llvm::StringRef key = field.getName().getValue();
    if (key == "kind")
      continue;
    double *target = llvm::StringSwitch<double *>(key)
                         .Case("lr", &config.lr)
                         .Case("weight_decay", &config.weightDecay)
                         .Case("momentum", isSgd ? &config.momentum : nullptr)
                         .Case("beta1", isSgd ? nullptr : &config.beta1)
                         .Case("beta2", isSgd ? nullptr : &config.beta2)
                         .Case("eps", isSgd ? nullptr : &config.eps)
                         .Default(nullptr);
    if (!target) {
      module.emitError("graph.optimizer: ")
          << kind.getValue() << " has no field '" << key << "'";
      return std::nullopt;
    }
    if (auto number = llvm::dyn_cast<mlir::FloatAttr>(field.getValue())) {
      *target = number.getValueAsDouble();
    } else if (auto integer =
                   llvm::dyn_cast<mlir::IntegerAttr>(field.getValue())) {
      *target = static_cast<double>(integer.getInt());
    } else {
      module.emitError("graph.optimizer: '")
          << key << "' must be a number, got " << field.getValue();
      return std::nullopt;
    }
  }

  if (config.lr < 0) {
    module.emitError("graph.optimizer: the learning rate must not be "
                     "negative, got ")
        << config.lr;
    return std::nullopt;
  }
  for (auto [key, value] :
       {std::pair<const char *, double>{"beta1", config.beta1},
        {"beta2", config.beta2}}) {
    if (!(value >= 0.0 && value < 1.0)) {
      module.emitError("graph.optimizer: '")
          << key << "' must be in [0, 1), got " << value;
      return std::nullopt;
    }
  }
  return config;
}

/// The share of the batch's loss that each of the micro-batches of `batch`
/// samples (`stepSamples` in all) carries, for `loss` of @train_step:
/// batch / stepSamples (1/k for k equal slices) where the reduction that
/// removes the batch dim (dim 0 of `batch` rows) averages, 1 where it sums.
/// Slices one sample short (stepSamples < batch * k) are padded:
/// cross_entropy and mse leave a padding sample out (KernelCall::liveRows),
/// and a reduction over the batch must read its input times the
/// `sample_mask` input (compiler/ModelFile.cpp, maskPadding). Looks through
/// binary ops whose other operand does not depend on an input (a constant
/// factor), and through sums of such losses, which must agree. nullopt, with
/// `why`, where it cannot tell.
std::optional<double> microbatchShare(mlir::func::FuncOp step, Value loss,
                                      int64_t batch, int64_t k,
                                      int64_t stepSamples, std::string &why) {
  const bool padded = stepSamples < batch * k;
  // (x is the product that maskPadding inserts: one operand the mask.)
  auto masked = [&](Value x) {
    mlir::Operation *product = x.getDefiningOp();
    if (!product)
      return false;
    for (Value operand : product->getOperands())
      if (auto arg = llvm::dyn_cast<mlir::BlockArgument>(operand))
        if (auto data = step.getArgAttrOfType<mlir::DictionaryAttr>(
                arg.getArgNumber(), "graph.data"))
          if (auto kind = data.getAs<mlir::StringAttr>("kind");
              kind && kind.getValue() == "sample_mask")
            return true;
    return false;
  };
  llvm::DenseMap<Value, bool> readsInput;
  std::function<bool(Value)> dependsOnInput = [&](Value v) {
    if (auto it = readsInput.find(v); it != readsInput.end())
      return it->second;
    bool reads = false;
    if (auto arg = llvm::dyn_cast<mlir::BlockArgument>(v)) {
      auto role = step.getArgAttrOfType<mlir::StringAttr>(arg.getArgNumber(),
                                                          "graph.role");
      reads = role && role.getValue() == "input";
    } else {
      for (Value operand : v.getDefiningOp()->getOperands())
        reads = reads || dependsOnInput(operand);
    }
    return readsInput[v] = reads;
  };
  std::function<std::optional<double>(Value)> share =
      [&](Value v) -> std::optional<double> {
    mlir::Operation *op = v.getDefiningOp();
    std::optional<ops::OpKind> kind =
        op ? ops::parseOpKind(op->getName().getStringRef().str().substr(6))
           : std::nullopt;
    if (!kind) {
      why = "the loss is not computed from the batch by graph ops";
      return std::nullopt;
    }
    const ops::OpInfo &info = ops::opInfo(*kind);
    if (info.shapeRule == ops::ShapeRule::Reduce ||
        info.shapeRule == ops::ShapeRule::ClassLoss ||
        info.shapeRule == ops::ShapeRule::PairLoss) {
      auto in = llvm::cast<mlir::RankedTensorType>(op->getOperand(0).getType());
      bool overBatch = in.getRank() > 0 && in.getDimSize(0) == batch;
      if (auto axes = op->getAttrOfType<mlir::DenseI64ArrayAttr>("axes"))
        overBatch = overBatch && llvm::is_contained(axes.asArrayRef(), 0);
      if (overBatch && padded && info.shapeRule == ops::ShapeRule::Reduce &&
          !masked(op->getOperand(0))) {
        why = "the batch " + std::to_string(stepSamples) +
              " splits into slices of " + std::to_string(batch) + " and " +
              std::to_string(batch - 1) + " samples, and '" +
              std::string(info.name) +
              "' does not read the sample mask that leaves out the shorter "
              "slices' padding";
        return std::nullopt;
      }
      if (overBatch)
        return info.averages ? double(batch) / double(stepSamples) : 1.0;
      why = "'" + std::string(info.name) +
            "' makes the loss without reducing over dim 0 of the " +
            std::to_string(batch) + "-sample micro-batch";
      return std::nullopt;
    }
    if (info.shapeRule == ops::ShapeRule::Broadcast) {
      std::optional<double> found;
      for (Value operand : op->getOperands()) {
        if (!dependsOnInput(operand))
          continue;
        std::optional<double> s = share(operand);
        if (!s || (found && *found != *s)) {
          if (s)
            why = "the loss adds terms that average and sum over the batch";
          return std::nullopt;
        }
        found = s;
      }
      if (!found)
        why = "the loss does not depend on the batch";
      return found;
    }
    why = "the loss comes from '" + std::string(info.name) +
          "', not a reduction over the batch";
    return std::nullopt;
  };
  return share(loss);
}

/// Rewrites @train_step's (loss, grads...) into in-place optimizer updates:
///
///  1. Read `graph.optimizer` (readOptimizerConfig).
///  2. Check @train_step: result #0 has graph.role "loss"; every other result
///     has graph.role "grad" and graph.param naming a param argument of the
///     gradient's type (the output of -remat-autodiff).
///  3. For each param in result order, append its state arguments (sgd:
///     `momentum:<p>`; adamw: `adam_m:<p>`, `adam_v:<p>`), initialized to
///     zeros. SGD with momentum 0 has none and updates with
///     graph.sgd_plain_update.
///  3b. `graph.microbatches` K > 1 (--microbatches): append the param's
///     accumulator argument `accum:<p>` (role "accumulator") and sum the
///     gradient into it with graph.grad_accumulate {scale = 1/K} right
///     after the gradient's definition; the update reads the sum.
///  4. Insert the param's update right after the op that defines its final
///     gradient, so that it runs as soon as the gradient is final; if a
///     later op (other than the return) still reads the param, after the
///     last such reader instead, so that the update can overwrite the param
///     in place. Updates placed after the same op keep param order. A
///     gradient that is a block argument has no defining op: its update
///     goes at the start of the body (or after the param's last reader).
///  5. Return (loss, new params..., new states..., new accumulators...,
///     then the results with
///     graph.role "state" of the input, unchanged: running statistics)
///     with graph.role, graph.name and graph.updates (the argument each
///     result overwrites).
///
/// Linear in the number of params, times the cost of the block-order
/// queries (amortized O(1) between insertions, O(ops) after each one).
struct OptimizerPass : public impl::OptimizerPassBase<OptimizerPass> {
  void runOnOperation() override;

private:
  mlir::LogicalResult
  collectGradients(mlir::func::FuncOp step,
                   llvm::SmallVectorImpl<ParamGradient> &params);
};

mlir::LogicalResult
OptimizerPass::collectGradients(mlir::func::FuncOp step,
                                llvm::SmallVectorImpl<ParamGradient> &params) {
  if (step.isExternal() || !step.getBody().hasOneBlock())
    return step.emitError("@train_step must have a body of one block");
  auto role = [&](unsigned result) {
    auto attr =
        step.getResultAttrOfType<mlir::StringAttr>(result, "graph.role");
    return attr ? attr.getValue() : llvm::StringRef();
  };
  if (step.getNumResults() == 0 || role(0) != "loss")
    return step.emitError("result #0 of @train_step must be the loss "
                          "(graph.role = \"loss\"); run -remat-autodiff first");

  auto returnOp = step.getBody().front().getTerminator();
  llvm::DenseMap<unsigned, unsigned> resultOfParam;
  for (unsigned result = 1; result < step.getNumResults(); ++result) {
    if (role(result) == "state")
      continue; // a new state value (running statistics), passed through
    auto paramIndex =
        step.getResultAttrOfType<mlir::IntegerAttr>(result, "graph.param");
    if (role(result) != "grad" || !paramIndex)
      return step.emitError("result #")
             << result
             << " of @train_step is not a gradient (graph.role = \"grad\" "
                "with graph.param)";
    int64_t argIndex = paramIndex.getInt();
    if (argIndex < 0 ||
        argIndex >= static_cast<int64_t>(step.getNumArguments()))
      return step.emitError("result #")
             << result << " is the gradient of argument #" << argIndex
             << ", but @train_step has " << step.getNumArguments()
             << " arguments";
    auto argRole =
        step.getArgAttrOfType<mlir::StringAttr>(argIndex, "graph.role");
    auto argName =
        step.getArgAttrOfType<mlir::StringAttr>(argIndex, "graph.name");
    if (!argRole || argRole.getValue() != "param" || !argName)
      return step.emitError("result #")
             << result << " is the gradient of argument #" << argIndex
             << ", which is not a named param (graph.role = \"param\")";
    auto [it, inserted] = resultOfParam.try_emplace(argIndex, result);
    if (!inserted)
      return step.emitError("results #")
             << it->second << " and #" << result
             << " are both gradients of argument #" << argIndex;
    Value grad = returnOp->getOperand(result);
    if (grad.getType() != step.getArgument(argIndex).getType())
      return step.emitError("result #")
             << result << " has type " << grad.getType()
             << ", but its param (argument #" << argIndex << ") has type "
             << step.getArgument(argIndex).getType();
    params.push_back({static_cast<unsigned>(argIndex), argName, grad});
  }
  return mlir::success();
}

void OptimizerPass::runOnOperation() {
  mlir::ModuleOp module = getOperation();
  auto step = module.lookupSymbol<mlir::func::FuncOp>("train_step");
  if (!step) {
    module.emitError("no func.func @train_step to update (run "
                     "-remat-autodiff first)");
    return signalPassFailure();
  }
  std::optional<OptimizerConfig> config = readOptimizerConfig(module);
  llvm::SmallVector<ParamGradient> params;
  if (!config || mlir::failed(collectGradients(step, params)))
    return signalPassFailure();

  // `graph.optimizer_shards` N > 1 (--shard-optimizer, ZeRO-1): each state
  // argument is one rank's slice of its param, [ceil(numel/N)], and the
  // updates carry shards = N (docs/distributed.md).
  int64_t shards = 1;
  if (auto a = module->getAttrOfType<mlir::IntegerAttr>(
          "graph.optimizer_shards"))
    shards = std::max<int64_t>(a.getInt(), 1);

  int64_t microbatches = 1;
  if (auto a = module->getAttrOfType<mlir::IntegerAttr>("graph.microbatches"))
    microbatches = std::max<int64_t>(a.getInt(), 1);
  double sliceShare = 1;
  if (microbatches > 1) {
    auto batch = module->getAttrOfType<mlir::IntegerAttr>("graph.batch");
    int64_t perSlice = batch ? batch.getInt() : 0;
    int64_t stepSamples = perSlice * microbatches;
    if (auto a = module->getAttrOfType<mlir::IntegerAttr>("graph.step_samples"))
      stepSamples = a.getInt();
    std::string why;
    std::optional<double> share = microbatchShare(
        step, step.getBody().front().getTerminator()->getOperand(0), perSlice,
        microbatches, stepSamples, why);
    if (!share) {
      module.emitError("--microbatches ")
          << microbatches
          << ": cannot tell whether the loss averages or sums over the "
             "batch, so the slices' gradients cannot be weighted: "
          << why;
      return signalPassFailure();
    }
    sliceShare = *share;
  }

  mlir::MLIRContext *context = &getContext();
  mlir::OpBuilder builder(context);
  mlir::Block &body = step.getBody().front();
  mlir::Operation *returnOp = body.getTerminator();
  Value loss = returnOp->getOperand(0);
  mlir::DictionaryAttr lossAttrs = step.getResultAttrDict(0);
  llvm::SmallVector<Value> passedStates;
  llvm::SmallVector<mlir::DictionaryAttr> passedStateAttrs;
  for (unsigned r = 1; r < step.getNumResults(); ++r)
    if (auto role = step.getResultAttrOfType<mlir::StringAttr>(r, "graph.role");
        role && role.getValue() == "state") {
      passedStates.push_back(returnOp->getOperand(r));
      passedStateAttrs.push_back(step.getResultAttrDict(r));
    }
  auto stringAttr = [&](llvm::StringRef value) {
    return mlir::StringAttr::get(context, value);
  };
  auto updatedAttrs = [&](llvm::StringRef role, mlir::StringAttr name,
                          unsigned argIndex) {
    return builder.getDictionaryAttr(
        {builder.getNamedAttr("graph.name", name),
         builder.getNamedAttr("graph.role", stringAttr(role)),
         builder.getNamedAttr("graph.updates",
                              builder.getI64IntegerAttr(argIndex))});
  };

  llvm::SmallVector<Value> newParams, newStates, newAccumulators;
  llvm::SmallVector<mlir::DictionaryAttr> paramAttrs, stateAttrs,
      accumulatorAttrs;
  // The last update inserted after each anchor op (null: the body start).
  llvm::DenseMap<mlir::Operation *, mlir::Operation *> lastUpdateAfter;
  for (ParamGradient param : params) {
    // 3. State arguments.
    mlir::BlockArgument paramArg = step.getArgument(param.argIndex);
    mlir::Type stateType = paramArg.getType();
    auto paramType = llvm::cast<mlir::RankedTensorType>(paramArg.getType());
    if (shards > 1 && !config->plainSgd()) {
      int64_t numel = paramType.getNumElements();
      stateType = mlir::RankedTensorType::get(
          {int64_t(ops::shardElements(uint64_t(numel), uint64_t(shards)))},
          paramType.getElementType());
    }
    // A zero-initialized argument of `role` for the param: its state.
    auto appendStateArgument = [&](llvm::StringRef prefix, llvm::StringRef role,
                                   mlir::Type type) {
      unsigned argIndex = step.getNumArguments();
      mlir::StringAttr name =
          stringAttr(prefix.str() + ":" + param.name.getValue().str());
      step.insertArgument(
          argIndex, type,
          builder.getDictionaryAttr(
              {builder.getNamedAttr(
                   "graph.init", builder.getDictionaryAttr(builder.getNamedAttr(
                                     "kind", stringAttr("zeros")))),
               builder.getNamedAttr("graph.name", name),
               builder.getNamedAttr("graph.param",
                                    builder.getI64IntegerAttr(param.argIndex)),
               builder.getNamedAttr("graph.role", stringAttr(role))}),
          paramArg.getLoc());
      return std::pair{step.getArgument(argIndex),
                       updatedAttrs(role, name, argIndex)};
    };
    llvm::SmallVector<Value, 2> states;
    for (llvm::StringRef stateName : config->stateNames()) {
      auto [state, attrs] =
          appendStateArgument(stateName, "optimizer", stateType);
      states.push_back(state);
      stateAttrs.push_back(attrs);
    }

    // 3b. The micro-batches' sum.
    if (microbatches > 1) {
      auto [acc, attrs] =
          appendStateArgument("accum", "accumulator", paramArg.getType());
      if (mlir::Operation *def = param.grad.getDefiningOp())
        builder.setInsertionPointAfter(def);
      else
        builder.setInsertionPointToStart(&body);
      param.grad = builder.create<graph::GradAccumulateOp>(
          paramArg.getLoc(), paramArg.getType(), acc, param.grad,
          static_cast<float>(sliceShare));
      newAccumulators.push_back(param.grad);
      accumulatorAttrs.push_back(attrs);
    }

    // 4. Placement.
    mlir::Operation *anchor = param.grad.getDefiningOp();
    for (mlir::Operation *reader : paramArg.getUsers())
      if (reader != returnOp && (!anchor || anchor->isBeforeInBlock(reader)))
        anchor = reader;
    if (mlir::Operation *previous = lastUpdateAfter.lookup(anchor))
      builder.setInsertionPointAfter(previous);
    else if (anchor)
      builder.setInsertionPointAfter(anchor);
    else
      builder.setInsertionPointToStart(&body);

    mlir::Type type = paramArg.getType();
    mlir::Operation *update;
    if (config->plainSgd()) {
      update = builder.create<graph::SgdPlainUpdateOp>(
          paramArg.getLoc(), type, paramArg, param.grad,
          static_cast<float>(config->lr),
          static_cast<float>(config->weightDecay));
    } else if (config->kind == OptimizerConfig::Kind::Sgd) {
      auto sgd = builder.create<graph::SgdUpdateOp>(
          paramArg.getLoc(), type, stateType, paramArg, param.grad, states[0],
          static_cast<float>(config->lr), static_cast<float>(config->momentum),
          static_cast<float>(config->weightDecay));
      update = sgd;
    } else {
      auto adamw = builder.create<graph::AdamwUpdateOp>(
          paramArg.getLoc(), type, stateType, stateType, paramArg, param.grad,
          states[0],
          states[1], static_cast<float>(config->lr),
          static_cast<float>(config->beta1), static_cast<float>(config->beta2),
          static_cast<float>(config->eps),
          static_cast<float>(config->weightDecay));
      update = adamw;
    }
    // Only sharded updates carry `shards` (unsharded plans stay as before).
    if (shards > 1 && !config->plainSgd())
      update->setAttr("shards", builder.getI64IntegerAttr(shards));
    else
      update->removeAttr("shards");
    lastUpdateAfter[anchor] = update;
    newParams.push_back(update->getResult(0));
    paramAttrs.push_back(updatedAttrs("param", param.name, param.argIndex));
    for (Value newState : update->getResults().drop_front())
      newStates.push_back(newState);
  }

  // 5. Results.
  llvm::SmallVector<Value> results{loss};
  results.append(newParams);
  results.append(newStates);
  results.append(newAccumulators);
  results.append(passedStates);
  llvm::SmallVector<mlir::DictionaryAttr> resultAttrs{lossAttrs};
  resultAttrs.append(paramAttrs);
  resultAttrs.append(stateAttrs);
  resultAttrs.append(accumulatorAttrs);
  resultAttrs.append(passedStateAttrs);
  mlir::Location returnLoc = returnOp->getLoc();
  returnOp->erase();
  builder.setInsertionPointToEnd(&body);
  builder.create<mlir::func::ReturnOp>(returnLoc, results);
  llvm::SmallVector<mlir::Type> resultTypes;
  for (Value result : results)
    resultTypes.push_back(result.getType());
  step.setType(
      mlir::FunctionType::get(context, step.getArgumentTypes(), resultTypes));
  step.setAllResultAttrs(resultAttrs);
}

} // namespace
} // namespace remat
