//===- Importer.cpp - Model graph to the `graph` dialect ------------------===//
//
// Ops are created generically from their registered names (graph.<kind>)
// with attributes typed as the dialect declares them, so the importer does
// not depend on the generated builders' signatures. The verifier runs on the
// result; its diagnostics are captured and re-emitted with the model file's
// JSON pointers.
//
//===----------------------------------------------------------------------===//

#include "compiler/Importer.h"

#include "ir/GraphDialect.h"
#include "ops/OpTable.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"

using nlohmann::json;

namespace remat::compiler {

void loadCompilerDialects(mlir::MLIRContext &context) {
  context.loadDialect<remat::graph::GraphDialect, mlir::func::FuncDialect,
                      mlir::arith::ArithDialect>();
}

namespace {

mlir::Type elementType(mlir::Builder &b, const std::string &dtype) {
  if (dtype == "f32")
    return b.getF32Type();
  if (dtype == "f64")
    return b.getF64Type();
  if (dtype == "f16")
    return b.getF16Type();
  if (dtype == "bf16")
    return b.getBF16Type();
  if (dtype == "i32")
    return b.getI32Type();
  return b.getI64Type();
}

mlir::RankedTensorType tensorType(mlir::Builder &b,
                                  const model::ValueType &t) {
  return mlir::RankedTensorType::get(t.shape, elementType(b, t.dtype));
}

/// A JSON value as a builtin attribute (objects become dictionaries).
mlir::Attribute jsonAttr(mlir::Builder &b, const json &j) {
  switch (j.type()) {
  case json::value_t::boolean:
    return b.getBoolAttr(j.get<bool>());
  case json::value_t::number_integer:
  case json::value_t::number_unsigned:
    return b.getI64IntegerAttr(j.get<int64_t>());
  case json::value_t::number_float:
    return b.getF64FloatAttr(j.get<double>());
  case json::value_t::string:
    return b.getStringAttr(j.get<std::string>());
  case json::value_t::array: {
    llvm::SmallVector<mlir::Attribute> items;
    for (const json &item : j)
      items.push_back(jsonAttr(b, item));
    return b.getArrayAttr(items);
  }
  case json::value_t::object: {
    llvm::SmallVector<mlir::NamedAttribute> items;
    for (auto it = j.begin(); it != j.end(); ++it)
      items.push_back(b.getNamedAttr(it.key(), jsonAttr(b, *it)));
    return b.getDictionaryAttr(items);
  }
  default:
    return b.getUnitAttr();
  }
}

/// An op attribute in the type the dialect declares for it (docs/ops.md):
/// booleans, f32 hyperparameters, i64 integers (dropout's seed, concat's
/// axis, conv2d's groups), i64 arrays.
mlir::Attribute opAttr(mlir::Builder &b, const std::string &kind,
                       const std::string &name, const json &value) {
  if (value.is_boolean())
    return b.getBoolAttr(value.get<bool>());
  if (value.is_array())
    return b.getDenseI64ArrayAttr(value.get<std::vector<int64_t>>());
  if (std::optional<ops::OpKind> op = ops::parseOpKind(kind))
    for (const ops::AttrInfo &a : ops::opInfo(*op).attrs)
      if (name == a.name && a.type == ops::AttrType::I64)
        return b.getI64IntegerAttr(value.get<int64_t>());
  return b.getF32FloatAttr(static_cast<float>(value.get<double>()));
}

} // namespace

std::string describeLocation(mlir::Location loc) {
  if (auto fused = mlir::dyn_cast<mlir::FusedLoc>(loc)) {
    for (mlir::Location part : fused.getLocations())
      if (std::string text = describeLocation(part); !text.empty())
        return text;
    return "";
  }
  if (auto name = mlir::dyn_cast<mlir::NameLoc>(loc)) {
    std::string place = describeLocation(name.getChildLoc());
    return (place.empty() ? "" : place + ": ") + name.getName().str();
  }
  if (auto file = mlir::dyn_cast<mlir::FileLineColLoc>(loc))
    return file.getFilename().str() +
           (file.getLine() == 0 ? ""
                                : ":" + std::to_string(file.getLine()) + ":" +
                                      std::to_string(file.getColumn()));
  return "";
}

mlir::OwningOpRef<mlir::ModuleOp>
importModel(const model::ModelGraph &graph, mlir::MLIRContext &context) {
  loadCompilerDialects(context);
  mlir::OpBuilder b(&context);
  mlir::Location fileLoc =
      mlir::FileLineColLoc::get(&context, graph.sourceName, 0, 0);
  mlir::OwningOpRef<mlir::ModuleOp> module = mlir::ModuleOp::create(fileLoc);
  module->getOperation()->setAttr("graph.model", b.getStringAttr(graph.name));
  module->getOperation()->setAttr("graph.seed",
                                  b.getI64IntegerAttr(graph.seed));
  module->getOperation()->setAttr("graph.batch",
                                  b.getI64IntegerAttr(graph.batch));
  if (graph.ranks > 1)
    module->getOperation()->setAttr("graph.ranks",
                                    b.getI64IntegerAttr(graph.ranks));
  if (graph.microbatches > 1)
    module->getOperation()->setAttr("graph.microbatches",
                                    b.getI64IntegerAttr(graph.microbatches));
  // Slices that differ by one sample (ModelGraph::stepSamples).
  if (graph.unevenMicrobatches())
    module->getOperation()->setAttr("graph.step_samples",
                                    b.getI64IntegerAttr(graph.stepSamples));
  if (graph.ranks > 1 && graph.shardOptimizer)
    module->getOperation()->setAttr("graph.optimizer_shards",
                                    b.getI64IntegerAttr(graph.ranks));
  module->getOperation()->setAttr("graph.tokens_per_sample",
                                  b.getI64IntegerAttr(graph.tokensPerSample));
  module->getOperation()->setAttr("graph.optimizer",
                                  jsonAttr(b, graph.optimizer));

  // Arguments: inputs first, then parameters, then state, in definition
  // order.
  const model::ValueKind argKinds[] = {model::ValueKind::Input,
                                       model::ValueKind::Param,
                                       model::ValueKind::State};
  llvm::SmallVector<int> argValues;
  std::vector<int> argIndexOf(graph.values.size(), -1);
  for (model::ValueKind argKind : argKinds)
    for (size_t i = 0; i < graph.values.size(); ++i)
      if (graph.values[i].kind == argKind) {
        argIndexOf[i] = static_cast<int>(argValues.size());
        argValues.push_back(static_cast<int>(i));
      }
  // Results: the loss, then the new value of each state, in op order.
  llvm::SmallVector<const model::Op *> stateUpdates;
  for (const model::Op &op : graph.ops)
    if (auto kind = ops::parseOpKind(op.kind);
        kind && ops::opInfo(*kind).updatesState)
      stateUpdates.push_back(&op);
  llvm::SmallVector<mlir::Type> argTypes, resultTypes;
  for (int id : argValues)
    argTypes.push_back(tensorType(b, graph.values[id].type));
  resultTypes.push_back(tensorType(b, graph.values[graph.loss].type));
  for (const model::Op *op : stateUpdates)
    resultTypes.push_back(tensorType(b, graph.values[op->result].type));
  auto func = mlir::func::FuncOp::create(
      fileLoc, "forward", b.getFunctionType(argTypes, resultTypes));
  module->push_back(func);
  for (size_t a = 0; a < argValues.size(); ++a) {
    const model::Value &v = graph.values[argValues[a]];
    bool isInput = v.kind == model::ValueKind::Input;
    func.setArgAttr(a, "graph.name", b.getStringAttr(v.name));
    func.setArgAttr(a, "graph.role",
                    b.getStringAttr(isInput ? "input"
                                    : v.kind == model::ValueKind::Param
                                        ? "param"
                                        : "state"));
    // An input without a generator (an ONNX model's constant tensor, fed
    // from the weights file) has no graph.data.
    const json &spec = isInput ? v.data : v.init;
    if (!spec.is_null())
      func.setArgAttr(a, isInput ? "graph.data" : "graph.init",
                      jsonAttr(b, spec));
  }
  for (size_t r = 0; r < stateUpdates.size(); ++r) {
    int state = stateUpdates[r]->operands.at(0);
    if (graph.values[state].kind != model::ValueKind::State)
      throw model::ModelError(graph.sourceName + ": op '" +
                              stateUpdates[r]->name +
                              "' updates '" + graph.values[state].name +
                              "', which is not state");
    func.setResultAttr(r + 1, "graph.name",
                       b.getStringAttr(graph.values[state].name));
    func.setResultAttr(r + 1, "graph.role", b.getStringAttr("state"));
    func.setResultAttr(r + 1, "graph.updates",
                       b.getI64IntegerAttr(argIndexOf[state]));
  }

  mlir::Block *body = func.addEntryBlock();
  b.setInsertionPointToStart(body);
  std::vector<mlir::Value> ssa(graph.values.size());
  for (size_t a = 0; a < argValues.size(); ++a)
    ssa[argValues[a]] = body->getArgument(a);

  for (const model::Op &op : graph.ops) {
    mlir::Location loc = mlir::NameLoc::get(
        b.getStringAttr(op.where()),
        mlir::FileLineColLoc::get(&context, graph.sourceName,
                                  static_cast<unsigned>(op.line),
                                  static_cast<unsigned>(op.column)));
    mlir::OperationState state(loc, "graph." + op.kind);
    for (int id : op.operands)
      state.addOperands(ssa[id]);
    state.addTypes(tensorType(b, graph.values[op.result].type));
    for (auto it = op.attrs.begin(); it != op.attrs.end(); ++it)
      if (it.key() != "shape")
        state.addAttribute(it.key(), opAttr(b, op.kind, it.key(), *it));
    if (!op.block.empty())
      state.addAttribute(graph::kBlockAttr, b.getStringAttr(op.block));
    if (!state.name.isRegistered())
      throw model::ModelError(describeLocation(loc) + ": op 'graph." + op.kind +
                              "' is not registered");
    ssa[op.result] = b.create(state)->getResult(0);
  }
  llvm::SmallVector<mlir::Value> results{ssa[graph.loss]};
  for (const model::Op *op : stateUpdates)
    results.push_back(ssa[op->result]);
  b.create<mlir::func::ReturnOp>(fileLoc, results);

  // Verify, turning diagnostics into one located message.
  std::string messages;
  {
    mlir::ScopedDiagnosticHandler handler(
        &context, [&](mlir::Diagnostic &diag) {
          std::string where = describeLocation(diag.getLocation());
          messages += (where.empty() ? graph.sourceName : where) + ": " +
                      diag.str() + "\n";
          return mlir::success();
        });
    if (mlir::failed(mlir::verify(*module))) {
      if (!messages.empty() && messages.back() == '\n')
        messages.pop_back();
      throw model::ModelError(messages.empty() ? graph.sourceName +
                                                     ": verification failed"
                                               : messages);
    }
  }
  return module;
}

} // namespace remat::compiler
