//===- PlanFormat.h - The remat plan file: structs, parse, serialize -----===//
//
// The one header the compiler shares with the runtime. A plan file is JSON
// (docs/plan-format.md); the compiler fills a `Plan` and emits it with
// `serializePlan`, the runtime reads it back with `parsePlan` and then
// validates it fully (Loader.h) before anything runs.
//
//===----------------------------------------------------------------------===//
#ifndef REMAT_RUNTIME_PLANFORMAT_H
#define REMAT_RUNTIME_PLANFORMAT_H

#include "ops/OpTable.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace remat::runtime {

/// The value of the plan's "format" field and the version this code reads and
/// writes. A reader rejects any other version with an error naming both.
inline constexpr const char *kPlanFormatName = "remat-plan";
inline constexpr int64_t kPlanFormatVersion = 1;

/// Every error about a plan, a weights file or a data file. The message
/// starts with the place: `model.plan: /steps/12 'attention': ...`.
class PlanError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

using ops::DType;
using ops::kNumOpKinds;
using ops::OpKind;
using ops::Shape;
enum class BufferRole {
  Param,
  Grad,
  Optimizer,
  Input,
  Activation,
  Temporary,
  /// Persistent state that is not trained: batch normalization's running
  /// statistics.
  State,
  /// A parameter gradient summed over the micro-batches of a split step
  /// (`microbatches` > 1): written only by grad_accumulate, read by the
  /// parameter's update.
  Accumulator
};
/// Number of buffer roles (BufferRole::Param .. BufferRole::Accumulator).
inline constexpr int kNumBufferRoles = 8;
enum class Phase { Forward, Backward, Optimizer };

/// How a parameter or optimizer-state buffer is initialized (once, before
/// the first step). Unused fields keep their defaults.
struct InitSpec {
  enum class Kind { Normal, Uniform, Zeros, Ones };
  Kind kind = Kind::Zeros;
  double mean = 0.0, std = 1.0; ///< normal
  double low = 0.0, high = 1.0; ///< uniform
};

/// How an input buffer is filled at the start of every step when the user
/// gives no data file for it.
struct DataSpec {
  /// SampleMask: 1 for each sample of the micro-batch, 0 for its padding
  /// (a split step's reduction loss reads its input times it; [batch, 1,
  /// ...], float).
  enum class Kind { Randn, Randint, Sequence, LabelsOf, Teacher, SampleMask };
  Kind kind = Kind::Randn;
  double mean = 0.0, std = 1.0; ///< randn
  int64_t low = 0, high = 2;    ///< randint: uniform integers in [low, high)
  int64_t vocab = 0;            ///< sequence: tokens in [0, vocab)
  int64_t a = 3, c = 1;         ///< sequence: x[t+1] = (a*x[t] + c) mod vocab
  int64_t of = -1;     ///< labels_of: index of a "sequence" buffer;
                       ///< teacher: index of the float input it labels
  int64_t shift = 1;   ///< labels_of: label[t] = token t+shift
  int64_t classes = 0; ///< teacher, integer labels: classes in [0, classes)

  /// Whether the generator reads another input (`of`) of the same step.
  bool readsInput() const {
    return kind == Kind::LabelsOf || kind == Kind::Teacher;
  }
};

struct BufferDesc {
  std::string name;
  BufferRole role = BufferRole::Activation;
  DType dtype = DType::F32;
  Shape shape;                  ///< [] is a scalar
  uint64_t offset = 0;          ///< byte offset into the arena
  uint64_t bytes = 0;           ///< product(shape) * dtypeSize(dtype)
  std::optional<InitSpec> init; ///< params and optimizer state only
  std::optional<DataSpec> data; ///< inputs only
};

struct StepDesc {
  std::string op;               ///< a name from docs/ops.md
  std::vector<int64_t> inputs;  ///< buffer indices
  std::vector<int64_t> outputs; ///< buffer indices (in-place: same as input)
  nlohmann::json attrs = nlohmann::json::object();
  Phase phase = Phase::Forward;
  bool recompute = false; ///< a recomputation of an earlier forward step
};

struct Plan {
  std::string model;
  uint64_t seed = 0;       ///< default seed of parameter init and data
  uint64_t alignment = 64; ///< every offset is a multiple of it (power of 2)
  uint64_t arenaBytes = 0;
  std::vector<BufferDesc> buffers;
  std::vector<StepDesc> steps;
  int64_t loss = -1;           ///< index of the scalar f32 loss buffer
  int64_t tokensPerSample = 1; ///< 1 for non-sequence models
  /// Samples of one micro-batch: what the input buffers hold (per rank).
  int64_t batch = 1;
  /// Micro-batches per step (docs/planner.md, "Micro-batches"): the steps
  /// run once per micro-batch on consecutive slices of the rank's batch
  /// `batch * microbatches`, the optimizer steps only after the last.
  int64_t microbatches = 1;
  /// Samples of the rank's whole step, all micro-batches: `batch *
  /// microbatches`, or fewer where the batch does not divide evenly. Then
  /// the last micro-batches hold `batch - 1` samples and one padding sample
  /// that the losses leave out (microbatchSlice). 0: `batch *
  /// microbatches` (samplesPerStep).
  int64_t stepSamples = 0;
  /// Data-parallel ranks the plan is for (docs/distributed.md): each runs
  /// this plan on its `batch` samples of the global batch `batch * ranks`.
  int64_t ranks = 1;
  /// A safetensors file holding every param's initial value (a model
  /// imported with its weights, docs/onnx.md), relative to the plan file's
  /// directory; empty: params start from their `init`.
  std::string weights;
  nlohmann::json report = nlohmann::json::object(); ///< free-form

  /// The rank's samples in all micro-batches.
  int64_t samplesPerStep() const {
    return stepSamples > 0 ? stepSamples : batch * microbatches;
  }
};

/// The role of the gradients the optimizer steps read: the accumulators of
/// a split plan (after the last micro-batch), else the grads.
inline BufferRole updateGradientRole(const Plan &plan) {
  return plan.microbatches > 1 ? BufferRole::Accumulator : BufferRole::Grad;
}

/// Micro-batch `microbatch` (0-based) of `plan`'s step: its first sample
/// within the rank's step and its real samples. Slices differ by at most
/// one sample: the first `stepSamples - (batch - 1) * microbatches` hold
/// `batch`, the rest `batch - 1` and a padding sample (a copy of their
/// first) that the losses leave out.
struct MicrobatchSlice {
  int64_t first = 0;   ///< first sample, within the rank's step
  int64_t samples = 1; ///< real samples (`batch` or `batch - 1`)
  int64_t padding = 0; ///< `batch - samples`
};
MicrobatchSlice microbatchSlice(const Plan &plan, int64_t microbatch);

/// Rows of dim 0 of buffer `b` per sample, where dim 0 holds the plan's
/// `batch` samples (is a multiple of it); 0 where it does not.
int64_t rowsPerSample(const Plan &plan, const BufferDesc &b);

/// "4 micro-batches of 2 samples each", or where they differ "3
/// micro-batches: 1 of 6 samples, 2 of 5 (16 in all)": `k` micro-batches of
/// at most `batch` samples, `stepSamples` in all.
std::string describeMicrobatches(int64_t k, int64_t batch, int64_t stepSamples);

/// Converts JSON to a Plan. Checks structure, field types and enum names, and
/// the format and version; throws PlanError naming `source` and the JSON
/// pointer of the bad field. Shapes, offsets and ops are checked by
/// `validatePlan` (Loader.h).
Plan parsePlan(const nlohmann::json &json, const std::string &source = "plan");
/// Parses JSON text first; malformed or truncated text is a PlanError.
Plan parsePlanText(const std::string &text, const std::string &source);

/// The deepest JSON nesting the plan and model readers accept: nlohmann
/// copies, compares and dumps values recursively, and a value nested a
/// million arrays deep overflowed the stack.
inline constexpr int kMaxJsonDepth = 100;

/// json::parse of `text` that stops at the first value nested deeper than
/// kMaxJsonDepth by calling `tooDeep(message)`, which must throw the
/// caller's error; other errors are nlohmann's exceptions.
template <typename TooDeep>
nlohmann::json parseJsonDepthLimited(const std::string &text,
                                     TooDeep tooDeep) {
  return nlohmann::json::parse(
      text, [&](int depth, nlohmann::json::parse_event_t, nlohmann::json &) {
        if (depth > kMaxJsonDepth)
          tooDeep("malformed JSON: nested more than " +
                  std::to_string(kMaxJsonDepth) + " levels deep");
        return true;
      });
}
/// Reads a file and parses it; `source` in messages is the path.
Plan readPlanFile(const std::string &path);

/// The path of a plan's `weights` file: relative to the plan file's
/// directory. Throws PlanError when `weights` is not a plain relative path.
std::string planWeightsPath(const std::string &planPath,
                            const std::string &weights);

/// The inverse of parsePlan: fields in a fixed order, so the same Plan always
/// serializes to the same bytes.
nlohmann::json serializePlan(const Plan &plan);
/// serializePlan(plan).dump(indent) plus a trailing newline.
std::string serializePlanText(const Plan &plan, int indent = 1);

// Names and sizes.
using ops::checkedNumElements;
using ops::dtypeName;
using ops::dtypeSize;
using ops::formatShape;
using ops::isFloatDType;
using ops::isIndexDType;
using ops::opName;
using ops::parseDType;
using ops::parseOpKind;
const char *roleName(BufferRole role); ///< "param", ...
/// Whether buffers of the role persist across steps (param, optimizer,
/// state, accumulator): initialized once from `init`, written only by
/// update steps, sharing their bytes with no other buffer; --save saves
/// all but the accumulators, which hold nothing between steps.
inline bool isPersistent(BufferRole role) {
  return role == BufferRole::Param || role == BufferRole::Optimizer ||
         role == BufferRole::State || role == BufferRole::Accumulator;
}
/// The most micro-batches a plan may split its batch into.
inline constexpr int64_t kMaxMicrobatches = 4096;
std::optional<BufferRole> parseRole(const std::string &name);
const char *phaseName(Phase phase);
std::optional<Phase> parsePhase(const std::string &name);
const char *initKindName(InitSpec::Kind kind);
const char *dataKindName(DataSpec::Kind kind);

/// The width of the plan's float tensors: 8 where its buffers are f64
/// (`--precision fp64`), else 4.
uint64_t floatElementBytes(const Plan &plan);
/// f32 host bytes in `dtype`: unchanged for f32, each value widened to
/// double for f64 (exact), the bytes of `f32Bytes` appended to `out`.
void appendFloatsAs(DType dtype, const char *f32Bytes, uint64_t bytes,
                    std::vector<char> &out);
/// The same for a whole vector.
std::vector<char> floatsAs(DType dtype, std::vector<char> f32Bytes);

/// Element count times dtype size, or nullopt on overflow.
std::optional<uint64_t> checkedByteSize(const Shape &shape, DType dtype);

/// Buffer naming convention shared by the compiler and the runtime:
/// a parameter's gradient is "grad:<param>", optimizer state is
/// "<state>:<param>" (e.g. "adam_m:w1", "momentum:w1").

std::string gradBufferName(const std::string &paramName);
std::string optimizerStateName(const std::string &state,
                               const std::string &paramName);
/// "grad:w1" -> "w1"; a name without the prefix is returned unchanged.
std::string paramNameOfGrad(const std::string &gradName);

} // namespace remat::runtime

#endif // REMAT_RUNTIME_PLANFORMAT_H
