//===- PlanOps.cpp - ops of the plan dialect --------------------*- C++ -*-===//
//
// Verifiers of the plan ops and the `(@a, @b)` symbol-list syntax of
// plan.step. Messages name the buffer and the numbers involved, in the words
// of docs/plan-format.md.
//
//===----------------------------------------------------------------------===//

#include "ir/PlanOps.h"
#include "ops/OpTable.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"

using namespace mlir;

namespace remat::plan {
namespace {

/// Bytes of one element of a plan dtype; 0 for a type plans do not hold.
int64_t elementBytes(Type type) {
  if (type.isF32() || type.isSignlessInteger(32))
    return 4;
  if (type.isF16() || type.isBF16())
    return 2;
  if (type.isSignlessInteger(64) || type.isF64())
    return 8;
  return 0;
}

std::string formatShape(ArrayRef<int64_t> shape) {
  std::string text = "[";
  llvm::raw_string_ostream os(text);
  llvm::interleaveComma(shape, os);
  os << "]";
  return text;
}

/// A dtype as the plan file spells it (f32, i64, ...), unquoted.
std::string dtypeName(Type type) {
  std::string text;
  llvm::raw_string_ostream os(text);
  type.print(os);
  return text;
}

/// An optimizer update (GraphOps.td `updatesParam`): the only steps that
/// write params and optimizer state, in place.
bool isUpdateOp(StringRef opName) {
  std::optional<ops::OpKind> kind = ops::parseOpKind(opName.str());
  return kind && ops::opInfo(*kind).updatesParam;
}

/// A state update (GraphOps.td `updatesState`): the only steps that write
/// state buffers (batch normalization's running statistics), in place of
/// input 0.
bool isStateUpdateOp(StringRef opName) {
  std::optional<ops::OpKind> kind = ops::parseOpKind(opName.str());
  return kind && ops::opInfo(*kind).updatesState;
}

/// `@a, @b` (possibly empty) as an array of flat symbol references.
ParseResult parseSymbolList(OpAsmParser &parser, ArrayAttr &list) {
  SmallVector<Attribute> refs;
  StringAttr name;
  if (succeeded(parser.parseOptionalSymbolName(name))) {
    refs.push_back(FlatSymbolRefAttr::get(name));
    while (succeeded(parser.parseOptionalComma())) {
      if (parser.parseSymbolName(name))
        return failure();
      refs.push_back(FlatSymbolRefAttr::get(name));
    }
  }
  list = parser.getBuilder().getArrayAttr(refs);
  return success();
}

void printSymbolList(OpAsmPrinter &printer, Operation *, ArrayAttr list) {
  llvm::interleaveComma(list, printer, [&](Attribute ref) {
    printer.printSymbolName(llvm::cast<FlatSymbolRefAttr>(ref).getValue());
  });
}

} // namespace
} // namespace remat::plan

#define GET_OP_CLASSES
#include "ir/PlanOps.cpp.inc"

namespace remat::plan {

//===----------------------------------------------------------------------===//
// plan.arena
//===----------------------------------------------------------------------===//

void ArenaOp::build(OpBuilder &builder, OperationState &state, int64_t bytes,
                    int64_t alignment) {
  state.addAttribute(getBytesAttrName(state.name),
                     builder.getI64IntegerAttr(bytes));
  state.addAttribute(getAlignmentAttrName(state.name),
                     builder.getI64IntegerAttr(alignment));
  state.addRegion()->emplaceBlock();
}

LogicalResult ArenaOp::verify() {
  if (getBytesValue() <= 0)
    return emitOpError("bytes must be positive, got ") << getBytesValue();
  if (getAlignmentValue() <= 0 || !llvm::isPowerOf2_64(getAlignmentValue()))
    return emitOpError("alignment must be a power of two, got ")
           << getAlignmentValue();
  return success();
}

namespace {

/// A buffer's lifetime: the steps (counted in step order) from the first
/// that writes it to the last that reads or writes it.
struct Lifetime {
  int64_t first = -1, last = -1;
};

/// Two transient buffers whose lifetimes overlap share no bytes. Lifetimes
/// that only touch (one buffer's last reader writes the other) may share
/// bytes: whether that step may run in place is the loader's check. The
/// loss lives to the end. O(transient buffers^2).
LogicalResult verifyDisjointLifetimes(ArenaOp arena,
                                      ArrayRef<BufferOp> buffers) {
  llvm::StringMap<Lifetime> lifetimes;
  int64_t index = 0;
  for (Operation &op : arena.getBodyBlock()) {
    auto step = llvm::dyn_cast<StepOp>(op);
    if (!step)
      continue;
    for (Attribute ref : step.getOutputs()) {
      Lifetime &life = lifetimes[llvm::cast<FlatSymbolRefAttr>(ref).getValue()];
      if (life.first < 0)
        life.first = index;
      life.last = index;
    }
    for (Attribute ref : step.getInputs()) {
      auto it = lifetimes.find(llvm::cast<FlatSymbolRefAttr>(ref).getValue());
      if (it != lifetimes.end())
        it->second.last = index;
    }
    ++index;
  }
  if (std::optional<StringRef> loss = arena.getLoss())
    if (auto it = lifetimes.find(*loss); it != lifetimes.end())
      it->second.last = index;

  struct Live {
    BufferOp buffer;
    Lifetime life;
  };
  SmallVector<Live> live;
  for (BufferOp buffer : buffers) {
    auto it = lifetimes.find(buffer.getSymName());
    if (!buffer.isPersistent() && it != lifetimes.end())
      live.push_back({buffer, it->second});
  }
  for (size_t i = 0; i < live.size(); ++i)
    for (size_t j = i + 1; j < live.size(); ++j) {
      Live a = live[i], b = live[j];
      bool sameTime = a.life.first == b.life.first ||
                      (a.life.first < b.life.last && b.life.first < a.life.last);
      bool sameBytes = a.buffer.getOffsetValue() < b.buffer.getEnd() &&
                       b.buffer.getOffsetValue() < a.buffer.getEnd();
      if (sameTime && sameBytes && a.buffer.getBytesValue() > 0 &&
          b.buffer.getBytesValue() > 0)
        return b.buffer.emitOpError("bytes [")
               << b.buffer.getOffsetValue() << ", " << b.buffer.getEnd()
               << ") of @" << b.buffer.getSymName() << " (live from step "
               << b.life.first << " to " << b.life.last << ") overlap bytes ["
               << a.buffer.getOffsetValue() << ", " << a.buffer.getEnd()
               << ") of @" << a.buffer.getSymName() << " (live from step "
               << a.life.first << " to " << a.life.last
               << "); buffers live at the same time share no bytes";
    }
  return success();
}

} // namespace

LogicalResult ArenaOp::verifyRegions() {
  SmallVector<BufferOp> buffers;
  for (Operation &op : getBodyBlock()) {
    if (auto buffer = llvm::dyn_cast<BufferOp>(op))
      buffers.push_back(buffer);
    else if (!llvm::isa<StepOp, FreeOp>(op))
      return op.emitOpError("cannot be in a plan.arena, which holds only "
                            "plan.buffer, plan.step and plan.free");
  }

  if (std::optional<StringRef> loss = getLoss()) {
    auto lossBuffer = lookupSymbol<BufferOp>(*loss);
    if (!lossBuffer)
      return emitOpError("loss @") << *loss << " is not a plan.buffer of "
                                   << "this arena";
    if (!lossBuffer.getShape().empty() ||
        !llvm::isa<FloatType>(lossBuffer.getDtype()))
      return emitOpError("loss @")
             << *loss << " must be a float scalar (shape []), got "
             << dtypeName(lossBuffer.getDtype()) << " "
             << formatShape(lossBuffer.getShape());
  }

  // Persistent buffers share bytes with no other buffer. Quadratic in the
  // worst case, O(persistent x buffers): a few million comparisons for
  // GPT-2 124M with AdamW.
  for (BufferOp persistent : buffers) {
    if (!persistent.isPersistent())
      continue;
    for (BufferOp other : buffers) {
      if (other == persistent ||
          (other.isPersistent() && other->isBeforeInBlock(persistent)))
        continue; // each pair of persistent buffers once
      if (persistent.getOffsetValue() < other.getEnd() &&
          other.getOffsetValue() < persistent.getEnd())
        return persistent.emitOpError("bytes [")
               << persistent.getOffsetValue() << ", " << persistent.getEnd()
               << ") of '" << persistent.getRole() << "' buffer @"
               << persistent.getSymName() << " overlap bytes ["
               << other.getOffsetValue() << ", " << other.getEnd() << ") of @"
               << other.getSymName()
               << "; param, optimizer and input buffers share bytes with no "
                  "other buffer";
    }
  }

  // Lifetimes: two buffers live at once share no bytes (see
  // verifyDisjointLifetimes), and nothing uses a buffer after its
  // plan.free.
  if (failed(verifyDisjointLifetimes(*this, buffers)))
    return failure();
  llvm::StringSet<> freed;
  for (Operation &op : getBodyBlock()) {
    if (auto free = llvm::dyn_cast<FreeOp>(op)) {
      if (!freed.insert(free.getBuffer()).second)
        return free.emitOpError("frees @") << free.getBuffer() << " twice";
      continue;
    }
    auto step = llvm::dyn_cast<StepOp>(op);
    if (!step)
      continue;
    for (auto [what, list] :
         {std::pair<const char *, ArrayAttr>{"reads", step.getInputs()},
          {"writes", step.getOutputs()}})
      for (Attribute ref : list) {
        StringRef name = llvm::cast<FlatSymbolRefAttr>(ref).getValue();
        if (freed.contains(name))
          return step.emitOpError()
                 << what << " @" << name << " after its plan.free";
      }
  }
  return success();
}

//===----------------------------------------------------------------------===//
// plan.buffer
//===----------------------------------------------------------------------===//

bool BufferOp::isPersistent() {
  StringRef role = getRole();
  return role == "param" || role == "optimizer" || role == "state" ||
         role == "accumulator" || role == "input";
}

LogicalResult BufferOp::verify() {
  StringRef role = getRole();
  if (!llvm::is_contained({"param", "grad", "optimizer", "input", "activation",
                           "temporary", "state", "accumulator"},
                          role))
    return emitOpError("role must be param, grad, optimizer, input, "
                       "activation, temporary, state or accumulator, got '")
           << role << "'";
  Type dtype = getDtype();
  int64_t elementSize = elementBytes(dtype);
  if (elementSize == 0)
    return emitOpError("dtype must be f32, f16, bf16, i32, i64 or f64, got ")
           << dtypeName(dtype);
  ArrayRef<int64_t> shape = getShape();
  for (auto [index, dim] : llvm::enumerate(shape))
    if (dim < 1)
      return emitOpError("dim ") << index << " of shape " << formatShape(shape)
                                 << " is " << dim << "; every dim must be >= 1";
  int64_t offset = getOffsetValue(), bytes = getBytesValue();
  if (offset < 0)
    return emitOpError("offset must not be negative, got ") << offset;

  // bytes == product(shape) x element size, without overflow.
  int64_t needed = elementSize;
  for (int64_t dim : shape) {
    if (needed > std::numeric_limits<int64_t>::max() / dim)
      return emitOpError("shape ")
             << formatShape(shape) << " of " << dtypeName(dtype)
             << " needs more than 2^63-1 bytes";
    needed *= dim;
  }
  if (bytes != needed)
    return emitOpError("bytes is ")
           << bytes << " but shape " << formatShape(shape) << " of "
           << dtypeName(dtype) << " needs " << needed;

  bool hasState = role == "param" || role == "optimizer" || role == "state" ||
                  role == "accumulator";
  if (hasState && !llvm::isa<FloatType>(dtype))
    return emitOpError("'")
           << role << "' buffers must be float, got " << dtypeName(dtype);
  if (hasState && !getInit())
    return emitOpError("'") << role
                            << "' buffers need an init (e.g. init {kind = "
                               "\"zeros\"})";
  if (!hasState && getInit())
    return emitOpError("init is only allowed on param, optimizer, state "
                       "and accumulator buffers, not on '")
           << role << "'";
  if (getData() && role != "input")
    return emitOpError("data is only allowed on input buffers, not on '")
           << role << "'";

  // Placement in the arena (HasParent has checked the parent's kind).
  auto arena = llvm::dyn_cast<ArenaOp>((*this)->getParentOp());
  if (!arena)
    return success();
  int64_t arenaBytes = arena.getBytesValue();
  if (arena.getAlignmentValue() > 0 && offset % arena.getAlignmentValue() != 0)
    return emitOpError("offset ")
           << offset << " is not aligned to " << arena.getAlignmentValue()
           << ", the arena's alignment";
  if (offset > arenaBytes || bytes > arenaBytes - offset)
    return emitOpError("offset ")
           << offset << " + bytes " << bytes << " ends past the arena's "
           << arenaBytes << " bytes";
  return success();
}

//===----------------------------------------------------------------------===//
// plan.step
//===----------------------------------------------------------------------===//

LogicalResult StepOp::verify() {
  StringRef opName = getOpName();
  if (!RegisteredOperationName::lookup(("graph." + opName).str(), getContext()))
    return emitOpError("'") << opName
                            << "' is not an op of the graph dialect "
                               "(docs/ops.md)";
  StringRef phase = getPhase();
  if (phase != "forward" && phase != "backward" && phase != "optimizer")
    return emitOpError("phase must be forward, backward or optimizer, got '")
           << phase << "'";
  if (getOutputs().empty())
    return emitOpError("'") << opName << "' step writes no buffer";
  llvm::DenseSet<Attribute> outputs;
  for (Attribute ref : getOutputs())
    if (!outputs.insert(ref).second)
      return emitOpError("writes ")
             << ref << " twice; the results of one step never overlap";
  return success();
}

LogicalResult StepOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  auto lookup = [&](Attribute ref, const char *what,
                    size_t index) -> FailureOr<BufferOp> {
    auto buffer = symbolTable.lookupNearestSymbolFrom<BufferOp>(
        *this, llvm::cast<FlatSymbolRefAttr>(ref));
    if (!buffer)
      return emitOpError() << what << " #" << index << " " << ref
                           << " is not a plan.buffer";
    return buffer;
  };
  for (auto [index, ref] : llvm::enumerate(getInputs()))
    if (failed(lookup(ref, "input", index)))
      return failure();
  StringRef opName = getOpName();
  for (auto [index, ref] : llvm::enumerate(getOutputs())) {
    FailureOr<BufferOp> buffer = lookup(ref, "output", index);
    if (failed(buffer))
      return failure();
    StringRef role = buffer->getRole();
    if (role == "input")
      return emitOpError("writes ")
             << ref << ", an 'input' buffer; no step writes an input";
    if ((role == "param" || role == "optimizer") && !isUpdateOp(opName))
      return emitOpError("'")
             << opName << "' writes " << ref << ", a '" << role
             << "' buffer; only optimizer updates (sgd_update, "
                "sgd_plain_update, adamw_update) write params and optimizer "
                "state";
    if (role == "state" &&
        (!isStateUpdateOp(opName) || opName == "grad_accumulate"))
      return emitOpError("'")
             << opName << "' writes " << ref
             << ", a 'state' buffer; only state updates (the running "
                "statistics of batch normalization) write state";
    if ((role == "accumulator") != (opName == "grad_accumulate"))
      return emitOpError("'")
             << opName << "' writes " << ref << ", a '" << role
             << "' buffer; grad_accumulate writes accumulators, and only "
                "them";
  }

  // State updates are in place: output 0 is input 0.
  if (isStateUpdateOp(opName) &&
      (getInputs().empty() || getOutputs().size() != 1 ||
       getOutputs()[0] != getInputs()[0]))
    return emitOpError("'") << opName
                            << "' must update in place: output 0 names the "
                               "state buffer of input 0";

  // Updates are in place: outputs (param, state...) are inputs 0, 2, 3...
  if (isUpdateOp(opName)) {
    ArrayAttr inputs = getInputs(), outputs = getOutputs();
    const ops::OpInfo &info = ops::opInfo(*ops::parseOpKind(opName.str()));
    size_t states = size_t(info.numOutputs) - 1;
    bool inPlace = inputs.size() == 2 + states &&
                   outputs.size() == 1 + states && outputs[0] == inputs[0];
    for (size_t i = 0; inPlace && i < states; ++i)
      inPlace = outputs[1 + i] == inputs[2 + i];
    std::string stateNames;
    for (size_t i = 0; i < states; ++i)
      stateNames += std::string(", ") + info.operandNames[2 + i];
    if (!inPlace)
      return emitOpError("'")
             << opName << "' must update in place: inputs (param, grad"
             << stateNames << ") and outputs (param" << stateNames
             << ") naming the same param and state buffers";
  }
  return success();
}

//===----------------------------------------------------------------------===//
// plan.free
//===----------------------------------------------------------------------===//

LogicalResult FreeOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  auto buffer =
      symbolTable.lookupNearestSymbolFrom<BufferOp>(*this, getBufferAttr());
  if (!buffer)
    return emitOpError("frees ")
           << getBufferAttr() << ", which is not a plan.buffer";
  if (buffer.isPersistent())
    return emitOpError("cannot free ")
           << getBufferAttr() << ": '" << buffer.getRole()
           << "' buffers live across steps";
  return success();
}

} // namespace remat::plan
