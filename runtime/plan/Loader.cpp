//===- Loader.cpp - Plan validation ---------------------------------------===//
#include "runtime/plan/Loader.h"

#include <algorithm>
#include <set>

namespace remat::runtime {

namespace {

[[noreturn]] void fail(const std::string &where, const std::string &msg) {
  throw PlanError(where + ": " + msg);
}

/// "a param", "an accumulator", "an optimizer".
std::string withArticle(const std::string &word) {
  bool vowel =
      !word.empty() && std::string("aeiou").find(word[0]) != std::string::npos;
  return (vowel ? "an " : "a ") + word;
}

bool overlaps(const BufferDesc &a, const BufferDesc &b) {
  return a.bytes > 0 && b.bytes > 0 && a.offset < b.offset + b.bytes &&
         b.offset < a.offset + a.bytes;
}

bool sameRange(const BufferDesc &a, const BufferDesc &b) {
  return a.offset == b.offset && a.bytes == b.bytes;
}

/// Whether the op's kernels read element i of every operand before writing
/// element i of the result, so a result may occupy exactly an operand's bytes.
/// A state update (`updatesState`) writes its state in place by definition:
/// it reads element c of the state before writing element c.
bool isInPlaceSafe(OpKind op) {
  return ops::opInfo(op).inPlace || ops::opInfo(op).updatesState;
}

void validateHeader(const Plan &plan, const std::string &src) {
  if (plan.alignment == 0 || (plan.alignment & (plan.alignment - 1)) != 0)
    fail(src + ": /alignment",
         "must be a power of two, got " + std::to_string(plan.alignment));
  if (plan.arenaBytes == 0)
    fail(src + ": /arena_bytes", "must be positive");
  if (plan.batch < 1)
    fail(src + ": /batch", "must be >= 1, got " + std::to_string(plan.batch));
  if (plan.tokensPerSample < 1)
    fail(src + ": /tokens_per_sample",
         "must be >= 1, got " + std::to_string(plan.tokensPerSample));
}

void validateBuffer(const LoadedPlan &lp, size_t i) {
  const Plan &plan = lp.plan;
  const BufferDesc &b = plan.buffers[i];
  std::string where = lp.bufferPlace(i);
  if (b.name.empty())
    fail(where, "empty buffer name");
  for (size_t d = 0; d < b.shape.size(); ++d)
    if (b.shape[d] <= 0)
      fail(where, "shape " + formatShape(b.shape) + " has a non-positive dim");
  auto bytes = checkedByteSize(b.shape, b.dtype);
  if (!bytes)
    fail(where, "shape " + formatShape(b.shape) + " of " + dtypeName(b.dtype) +
                    " overflows 64-bit byte count");
  if (*bytes != b.bytes)
    fail(where, "bytes is " + std::to_string(b.bytes) + " but shape " +
                    formatShape(b.shape) + " of " + dtypeName(b.dtype) +
                    " needs " + std::to_string(*bytes));
  if (b.offset % plan.alignment != 0)
    fail(where, "offset " + std::to_string(b.offset) + " is not aligned to " +
                    std::to_string(plan.alignment));
  if (b.offset > plan.arenaBytes || b.bytes > plan.arenaBytes - b.offset)
    fail(where, "bytes [" + std::to_string(b.offset) + ", " +
                    std::to_string(b.offset) + "+" + std::to_string(b.bytes) +
                    ") lie outside the arena of " +
                    std::to_string(plan.arenaBytes) + " bytes");

  bool persistent = isPersistent(b.role);
  if (persistent && !isFloatDType(b.dtype))
    fail(where, std::string(roleName(b.role)) + " buffer has dtype " +
                    dtypeName(b.dtype) + " but expects a float dtype");
  if (persistent && !b.init)
    fail(where, std::string(roleName(b.role)) + " buffer needs \"init\"");
  if (!persistent && b.init)
    fail(where, std::string("\"init\" is only for param/optimizer/state/"
                            "accumulator buffers, not role ") +
                    roleName(b.role));
  if (b.init) {
    const InitSpec &init = *b.init;
    if (init.kind == InitSpec::Kind::Normal && !(init.std >= 0))
      fail(where, "init std must be >= 0");
    if (init.kind == InitSpec::Kind::Uniform && !(init.low <= init.high))
      fail(where, "init low must be <= high");
  }
  if (b.data && b.role != BufferRole::Input)
    fail(where, std::string("\"data\" is only for input buffers, not role ") +
                    roleName(b.role));
  if (!b.data)
    return;
  const DataSpec &d = *b.data;
  std::string kind = std::string("data '") + dataKindName(d.kind) + "'";
  if (d.kind == DataSpec::Kind::Teacher) {
    if (d.of < 0 || d.of >= int64_t(plan.buffers.size()))
      fail(where,
           kind + " \"of\" " + std::to_string(d.of) + " is not a buffer index");
    const BufferDesc &src = plan.buffers[d.of];
    if (src.role != BufferRole::Input || !isFloatDType(src.dtype) ||
        src.shape.empty() || (src.data && src.data->readsInput()))
      fail(where, kind +
                      " \"of\" must name a float input of rank >= 1 whose "
                      "data reads no other input, got '" +
                      src.name + "'");
    Shape rows(src.shape.begin(), src.shape.end() - 1);
    bool integer = isIndexDType(b.dtype);
    if (integer && (d.classes < 1 || d.classes > (1ll << 31)))
      fail(where, kind + " classes must be in [1, 2^31], got " +
                      std::to_string(d.classes));
    Shape expected = rows;
    if (!integer && !b.shape.empty())
      expected.push_back(b.shape.back());
    if (b.shape != expected || (!integer && b.shape.empty()))
      fail(where, kind + " has shape " + formatShape(b.shape) + " but '" +
                      src.name + "' " + formatShape(src.shape) +
                      (integer ? " gives labels of shape " + formatShape(rows)
                               : " gives targets of shape " +
                                     formatShape(rows) + " + [outputs]"));
    if (!integer && !isFloatDType(b.dtype))
      fail(where, kind + " needs a float or i32/i64 buffer");
    // The teacher's weights are one Philox stream of features x outputs.
    uint64_t features = uint64_t(src.shape.back());
    uint64_t outputs = integer ? uint64_t(d.classes) : uint64_t(b.shape.back());
    if (outputs != 0 && features > (uint64_t(1) << 34) / outputs)
      fail(where, kind + " teacher of " + std::to_string(features) + " x " +
                      std::to_string(outputs) + " weights is too large");
    return;
  }
  if (d.kind == DataSpec::Kind::SampleMask) {
    bool perSample = isFloatDType(b.dtype) && !b.shape.empty() &&
                     b.shape[0] == plan.batch &&
                     std::all_of(b.shape.begin() + 1, b.shape.end(),
                                 [](int64_t d) { return d == 1; });
    if (!perSample)
      fail(where, kind +
                      " needs a float buffer of shape [batch, 1, ...] "
                      "(batch " +
                      std::to_string(plan.batch) + "), got " +
                      dtypeName(b.dtype) + formatShape(b.shape));
    return;
  }
  if (d.kind == DataSpec::Kind::Randn) {
    if (!isFloatDType(b.dtype))
      fail(where, kind + " needs a float buffer, got " + dtypeName(b.dtype));
    if (!(d.std >= 0))
      fail(where, kind + " std must be >= 0");
    return;
  }
  if (!isIndexDType(b.dtype))
    fail(where, kind + " needs an i32/i64 buffer, got " + dtypeName(b.dtype));
  int64_t maxValue = b.dtype == DType::I32 ? INT32_MAX : INT64_MAX;
  switch (d.kind) {
  case DataSpec::Kind::Randint:
    if (d.low >= d.high)
      fail(where, kind + " needs low < high, got [" + std::to_string(d.low) +
                      ", " + std::to_string(d.high) + ")");
    if (d.low < -maxValue || d.high - 1 > maxValue)
      fail(where, kind + " range does not fit " + dtypeName(b.dtype));
    // The generator draws from high - low values, an int64.
    if (d.low < 0 && d.high > INT64_MAX + d.low)
      fail(where, kind + " range [" + std::to_string(d.low) + ", " +
                      std::to_string(d.high) +
                      ") has more than 2^63 - 1 values");
    break;
  case DataSpec::Kind::Sequence:
    if (b.shape.empty())
      fail(where, kind + " needs rank >= 1 (last dim is time)");
    if (d.vocab < 1 || d.vocab - 1 > maxValue || d.vocab > (1ll << 31))
      fail(where, kind + " vocab must be in [1, 2^31], got " +
                      std::to_string(d.vocab));
    if (d.a < 0 || d.c < 0)
      fail(where, kind + " needs a >= 0 and c >= 0");
    break;
  case DataSpec::Kind::LabelsOf: {
    if (d.of < 0 || d.of >= int64_t(plan.buffers.size()))
      fail(where,
           kind + " \"of\" " + std::to_string(d.of) + " is not a buffer index");
    const BufferDesc &src = plan.buffers[d.of];
    if (src.role != BufferRole::Input || !src.data ||
        src.data->kind != DataSpec::Kind::Sequence)
      fail(where, kind +
                      " \"of\" must name an input with data 'sequence', "
                      "got '" +
                      src.name + "'");
    if (src.shape != b.shape)
      fail(where, kind + " has shape " + formatShape(b.shape) +
                      " but its sequence '" + src.name + "' has shape " +
                      formatShape(src.shape));
    // Past the end of a row the generator steps the sequence rule once per
    // position of the shift, so a huge shift would hang every step.
    if (d.shift < 0 || (!b.shape.empty() && d.shift > b.shape.back()))
      fail(where, kind + " shift must be in [0, " +
                      (b.shape.empty() ? std::string("T")
                                       : std::to_string(b.shape.back())) +
                      "] (the last dim, time), got " +
                      std::to_string(d.shift));
    break;
  }
  case DataSpec::Kind::Teacher:
  case DataSpec::Kind::Randn:
  case DataSpec::Kind::SampleMask:
    break;
  }
}

void validateOverlaps(const LoadedPlan &lp) {
  // Persistent state and inputs live across the whole step (or across
  // steps), so no other buffer may share their bytes.
  // O(exclusive buffers x buffers); plans have thousands of buffers at most.
  const auto &buffers = lp.plan.buffers;
  for (size_t i = 0; i < buffers.size(); ++i) {
    const BufferDesc &a = buffers[i];
    bool exclusive = isPersistent(a.role) || a.role == BufferRole::Input;
    if (!exclusive)
      continue;
    for (size_t j = 0; j < buffers.size(); ++j) {
      if (j == i || !overlaps(a, buffers[j]))
        continue;
      fail(lp.bufferPlace(i), std::string(roleName(a.role)) +
                                  " buffer shares arena bytes with "
                                  "'" +
                                  buffers[j].name + "' (/buffers/" +
                                  std::to_string(j) + ")");
    }
  }
}

void validateStep(LoadedPlan &lp, size_t si, std::vector<bool> &written) {
  const Plan &plan = lp.plan;
  const StepDesc &s = plan.steps[si];
  std::string where = lp.stepPlace(si);
  auto op = parseOpKind(s.op);
  if (!op)
    fail(where, "unknown op '" + s.op + "' (see docs/ops.md)");
  OpArity arity = opArity(*op);
  if (int(s.inputs.size()) != arity.numInputs)
    fail(where, "has " + std::to_string(s.inputs.size()) + " inputs but '" +
                    s.op + "' takes " + std::to_string(arity.numInputs));
  if (int(s.outputs.size()) != arity.numOutputs)
    fail(where, "has " + std::to_string(s.outputs.size()) + " outputs but '" +
                    s.op + "' produces " + std::to_string(arity.numOutputs));
  int64_t numBuffers = int64_t(plan.buffers.size());
  auto checkIndex = [&](int64_t idx, const std::string &what) {
    if (idx < 0 || idx >= numBuffers)
      fail(where, what + " is buffer " + std::to_string(idx) +
                      ", outside [0, " + std::to_string(numBuffers) + ")");
  };
  for (size_t i = 0; i < s.inputs.size(); ++i)
    checkIndex(s.inputs[i], "input " + std::to_string(i));
  for (size_t i = 0; i < s.outputs.size(); ++i)
    checkIndex(s.outputs[i], "output " + std::to_string(i));

  ResolvedStep resolved{*op, parseOpAttrs(*op, s.attrs, where)};
  std::vector<TensorType> ins, outs;
  for (int64_t idx : s.inputs)
    ins.push_back({plan.buffers[idx].dtype, plan.buffers[idx].shape});
  for (int64_t idx : s.outputs)
    outs.push_back({plan.buffers[idx].dtype, plan.buffers[idx].shape});
  checkOpTypes(*op, resolved.attrs, ins, outs, where);

  // Reads of values this step's plan never produced.
  for (size_t i = 0; i < s.inputs.size(); ++i) {
    const BufferDesc &b = plan.buffers[s.inputs[i]];
    bool producedOutside = isPersistent(b.role) || b.role == BufferRole::Input;
    if (!producedOutside && !written[s.inputs[i]])
      fail(where, "input " + std::to_string(i) + " reads '" + b.name +
                      "' before any step writes it");
  }

  // Aliasing between results and operands.
  for (size_t o = 0; o < s.outputs.size(); ++o) {
    const BufferDesc &ob = plan.buffers[s.outputs[o]];
    std::string what = "output " + std::to_string(o) + " '" + ob.name + "'";
    for (size_t p = 0; p < o; ++p)
      if (overlaps(ob, plan.buffers[s.outputs[p]]))
        fail(where, what + " shares bytes with output " + std::to_string(p));
    for (size_t i = 0; i < s.inputs.size(); ++i) {
      const BufferDesc &ib = plan.buffers[s.inputs[i]];
      if (!overlaps(ob, ib))
        continue;
      // cross_entropy_grad reads a row of logits before writing that row
      // of dlogits, but it reads label r again after writing row r: over
      // the labels (an [R] i32 under [R,1] f32 dlogits) it would index
      // with the float it just wrote.
      bool overLabels = *op == OpKind::CrossEntropyGrad && i != 0;
      if (!(sameRange(ob, ib) && isInPlaceSafe(*op) && !overLabels))
        fail(where, what + " shares bytes with input " + std::to_string(i) +
                        " '" + ib.name + "'" +
                        (overLabels ? " but '" + s.op +
                                          "' runs in place only over input "
                                          "0 (its logits)"
                         : isInPlaceSafe(*op)
                             ? " without being the same range"
                             : " but '" + s.op + "' cannot run in place"));
    }
    bool accumulates = *op == OpKind::GradAccumulate;
    bool updatesState = ops::opInfo(*op).updatesState && !accumulates;
    if (ob.role == BufferRole::State && !updatesState)
      fail(where, what + " is a state buffer, which only state updates (the "
                      "running statistics of batch normalization) may write");
    if ((ob.role == BufferRole::Accumulator) != accumulates)
      fail(where, what + " is " + withArticle(roleName(ob.role)) +
                      " buffer, but grad_accumulate writes accumulator "
                      "buffers, and only them");
    if (isPersistent(ob.role) && ob.role != BufferRole::State &&
        ob.role != BufferRole::Accumulator && !isOptimizerOp(*op))
      fail(where, what + " is " + withArticle(roleName(ob.role)) +
                      " buffer, which only optimizer ops may write");
    if (ob.role == BufferRole::Input)
      fail(where, what + " is an input buffer, which steps may not write");
  }
  if (isOptimizerOp(*op)) {
    // param' -> param, then each state result -> its state operand.
    std::vector<std::pair<int, int>> inPlace = {{0, 0}};
    for (int o = 1; o < int(s.outputs.size()); ++o)
      inPlace.push_back({o, o + 1});
    for (auto [o, i] : inPlace)
      if (s.outputs[o] != s.inputs[i])
        fail(where, "output " + std::to_string(o) + " must be input " +
                        std::to_string(i) +
                        " (optimizer updates are in "
                        "place), got buffer " +
                        std::to_string(s.outputs[o]) + " vs " +
                        std::to_string(s.inputs[i]));
    if (plan.buffers[s.inputs[0]].role != BufferRole::Param)
      fail(where, "input 0 '" + plan.buffers[s.inputs[0]].name +
                      "' must be a param buffer");
    // Sharded optimizer state (ZeRO-1): one slice per rank.
    if (resolved.attrs.shards > 1 &&
        int64_t(resolved.attrs.shards) != plan.ranks)
      fail(where, "/attrs/shards: the update is sharded over " +
                      std::to_string(resolved.attrs.shards) +
                      " ranks but the plan is for " +
                      std::to_string(plan.ranks) + " (/ranks)");
  }
  if (ops::opInfo(*op).updatesState) {
    if (s.outputs[0] != s.inputs[0])
      fail(where, "output 0 must be input 0 (state updates are in place), "
                  "got buffer " +
                      std::to_string(s.outputs[0]) + " vs " +
                      std::to_string(s.inputs[0]));
    BufferRole updated = *op == OpKind::GradAccumulate ? BufferRole::Accumulator
                                                       : BufferRole::State;
    if (plan.buffers[s.inputs[0]].role != updated)
      fail(where,
           "input 0 '" + plan.buffers[s.inputs[0]].name + "' must be a" +
               (updated == BufferRole::State ? " state" : "n accumulator") +
               " buffer");
  }
  for (int64_t idx : s.outputs) {
    written[idx] = true;
    lp.lastWriter[idx] = int64_t(si);
  }
  lp.steps.push_back(std::move(resolved));
}

} // namespace

std::string LoadedPlan::stepPlace(size_t i) const {
  return source + ": /steps/" + std::to_string(i) + " '" + plan.steps[i].op +
         "'";
}

std::string LoadedPlan::bufferPlace(size_t i) const {
  return source + ": /buffers/" + std::to_string(i) + " '" +
         plan.buffers[i].name + "'";
}

std::optional<uint64_t> LoadedPlan::budgetBytes() const {
  auto it = plan.report.find("budget_bytes");
  if (it == plan.report.end() || !it->is_number_integer() ||
      it->get<int64_t>() <= 0)
    return std::nullopt;
  return uint64_t(it->get<int64_t>());
}

LoadedPlan validatePlan(Plan plan, const std::string &source) {
  LoadedPlan lp;
  lp.plan = std::move(plan);
  lp.source = source;
  const Plan &p = lp.plan;
  validateHeader(p, source);
  std::set<std::string> names;
  for (size_t i = 0; i < p.buffers.size(); ++i) {
    validateBuffer(lp, i);
    if (!names.insert(p.buffers[i].name).second)
      fail(lp.bufferPlace(i), "duplicate buffer name");
  }
  validateOverlaps(lp);
  lp.lastWriter.assign(p.buffers.size(), -1);
  std::vector<bool> written(p.buffers.size(), false);
  for (size_t i = 0; i < p.steps.size(); ++i)
    validateStep(lp, i, written);
  if (p.loss < 0 || p.loss >= int64_t(p.buffers.size()))
    fail(source + ": /loss", "buffer " + std::to_string(p.loss) +
                                 " is outside [0, " +
                                 std::to_string(p.buffers.size()) + ")");
  const BufferDesc &loss = p.buffers[p.loss];
  if (!loss.shape.empty() || !isFloatDType(loss.dtype))
    fail(source + ": /loss",
         "buffer '" + loss.name + "' must be a float scalar, got " +
             dtypeName(loss.dtype) + " " + formatShape(loss.shape));
  if (lp.lastWriter[p.loss] < 0)
    fail(source + ": /loss",
         "no step writes the loss buffer '" + loss.name + "'");
  return lp;
}

LoadedPlan loadPlan(const std::string &path) {
  return validatePlan(readPlanFile(path), path);
}

LoadedPlan loadPlanText(const std::string &text, const std::string &source) {
  return validatePlan(parsePlanText(text, source), source);
}

} // namespace remat::runtime
