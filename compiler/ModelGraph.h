//===- ModelGraph.h - The model format's parsed, flattened form -*- C++ -*-===//
//
// The JSON model format (docs/model-format.md) read, validated and flattened
// into one list of ops over named values, with every shape inferred. This
// part is MLIR-free so its checks can be unit-tested on plain data; the
// importer (Importer.h) turns a ModelGraph into the `graph` dialect.
//
//===----------------------------------------------------------------------===//
#ifndef REMAT_COMPILER_MODELGRAPH_H
#define REMAT_COMPILER_MODELGRAPH_H

#include "compiler/Expression.h"
#include "ops/OpTable.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace remat::model {

/// The model-format version this reader understands.
constexpr int kModelFormatVersion = 1;

/// A user-facing error in a model file. The message starts with the place,
/// line:column and JSON pointer:
/// `FILE:12:5: /blocks/attn/ops/3 'qk': 'k' is not defined`.
class ModelError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// A command-line option the model cannot honour (an unknown --preset, a
/// --set of an undeclared config variable): a usage error, which the CLI
/// exits 2 on, where other model errors exit 1.
class OptionError : public ModelError {
public:
  using ModelError::ModelError;
};

/// Element types of the format ("f32", "f16", "bf16", "i32", "i64").
bool isFloatDType(const std::string &dtype);
bool isIndexDType(const std::string &dtype);
/// Bytes per element; 0 for an unknown dtype.
int64_t dtypeBytes(const std::string &dtype);

/// The type of a model value as the model file spells it (the dtype a
/// string, so that an unknown one can be reported as written).
struct ValueType {
  std::string dtype = "f32";
  std::vector<int64_t> shape;

  /// Element count; throws std::overflow_error past 2^62.
  int64_t numElements() const;
  int64_t bytes() const;
  std::string str() const; ///< e.g. "f32[8, 1024]"
};

/// Input: filled every step; Param: trained; State: persistent but not
/// trained, written by state-update ops (batch normalization's running
/// statistics,
/// from ONNX models); Op: an op's result.
enum class ValueKind { Input, Param, Op, State };

/// A named tensor of the flattened model.
struct Value {
  std::string name;
  ValueKind kind = ValueKind::Op;
  ValueType type;
  nlohmann::json init;   ///< params and state: the initializer object
  nlohmann::json data;   ///< inputs: the synthetic-data object
  /// Inputs and params: the JSON pointer of the declaration (a block's
  /// params: /blocks/NAME/params/K, the same in every repetition).
  std::string pointer;
};

/// One op of the flattened model. Attribute values are normalized: every
/// expression is evaluated, every attribute the op takes is present.
struct Op {
  std::string name;      ///< unique, e.g. "h.3.attn"
  std::string kind;      ///< op name from docs/ops.md, e.g. "dropout"
  std::string pointer;   ///< JSON pointer of its definition, e.g. /ops/4
  /// Line and column of the definition in the model file (0: unknown).
  size_t line = 0, column = 0;
  std::vector<int> operands; ///< value ids
  int result = -1;           ///< value id
  /// The repetition of an outermost block call the op belongs to, "CALL.N"
  /// (e.g. "h.3" for layer 3 of block call `h`); empty outside blocks. The
  /// planner's per-block baseline and chain decomposition group by it.
  std::string block;
  nlohmann::json attrs = nlohmann::json::object();

  /// "POINTER 'NAME'" for messages and MLIR locations.
  std::string where() const { return pointer + " '" + name + "'"; }
};

/// The whole model after flattening: values in definition order, ops in a
/// topological order, the scalar loss and the optimizer settings.
struct ModelGraph {
  std::string name;
  std::string sourceName; ///< file name used in messages
  int64_t seed = 0;
  std::map<std::string, double> config; ///< after presets and --set
  std::vector<Value> values;
  std::vector<Op> ops;
  int loss = -1;
  nlohmann::json optimizer; ///< normalized: kind plus every hyperparameter
  int64_t batch = 0;            ///< the `batch` config variable, if any
  /// Data-parallel ranks the step is for (`--ranks`): `batch` is then each
  /// rank's share of the global batch `batch * ranks`.
  int64_t ranks = 1;
  /// `--shard-optimizer` with ranks > 1: each rank keeps 1/ranks of every
  /// optimizer state tensor (ZeRO-1, docs/distributed.md).
  bool shardOptimizer = false;
  /// Micro-batches of each rank's step (`--microbatches`): `batch` is then
  /// one micro-batch's samples, at most: the rank's `stepSamples` split
  /// into slices that differ by at most one sample (the shorter ones
  /// padded, runtime/plan/PlanFormat.h microbatchSlice).
  int64_t microbatches = 1;
  int64_t stepSamples = 0;      ///< with microbatches > 1: the rank's batch
  /// Whether the micro-batches differ by a sample (the shorter padded).
  bool unevenMicrobatches() const {
    return microbatches > 1 && stepSamples < batch * microbatches;
  }
  int64_t tokensPerSample = 1;  ///< `seq` for sequence models, else 1
  /// Located messages about a model that is valid but probably not what its
  /// author meant (a parameter no op reads), for the CLI to print.
  std::vector<std::string> warnings;
  /// An ONNX model's float initializers the step does not train, each with
  /// why: "--frozen", or the importer's rule (docs/onnx.md, "Initializers:
  /// parameters and buffers"). The report's `frozen` and the compile output
  /// list them.
  std::map<std::string, std::string> frozen;

  int findValue(const std::string &name) const;
  /// Appends `op`'s result value (named as the op, of `type`) and `op`
  /// with `result` set to it; returns the result's value id.
  int appendOp(Op op, const ValueType &type);
};

/// Sets attribute `attr` of `attrs` to its default in the op's definition
/// (GraphOps.td). Defaults that depend on the operands or the op's name
/// (attention's scale, dropout's seed) are the model reader's.
void setDefinedDefault(nlohmann::json &attrs, const ops::AttrInfo &attr);

/// The result type of op `kind` on `operands` (value ids of `graph`) by the
/// op's type rule (ops/ShapeRules.h), each operand labelled "operand NAME
/// 'VALUE'" in messages. `given`: the result shape of an op whose result
/// type is given; its dtype is operand 0's (f32 without operands). Throws
/// ops::TypeRuleError for operands the rule rejects, and a
/// std::exception for a result too large.
ValueType inferResultType(const ModelGraph &graph, ops::OpKind kind,
                          const ops::OpAttrs &attrs,
                          const std::vector<int> &operands,
                          const std::vector<int64_t> *given);

/// How the training step of an imported model (ONNX, docs/onnx.md) is
/// built: a JSON model names its loss and optimizer in the file.
struct TrainingOptions {
  /// --input-shape NAME=D0,D1,...: the shape of an input with dynamic dims.
  std::map<std::string, std::vector<int64_t>> inputShapes;
  /// --loss: the loss op on the first output (docs/onnx.md); empty: the
  /// importer's default for the output's shape.
  std::string loss;
  std::string optimizer = "sgd"; ///< --optimizer: sgd or adamw
  std::optional<double> lr;      ///< --lr; default: sgd 0.01, adamw 1e-3
  /// --frozen NAME,...: float initializers that are not trained (buffers
  /// such as a causal mask); their values are fixed inputs of the step.
  std::set<std::string> frozen;

  bool any() const {
    return !inputShapes.empty() || !loss.empty() || optimizer != "sgd" ||
           lr.has_value() || !frozen.empty();
  }
};

/// How a caller wants the model configured.
struct ModelOptions {
  std::string preset;                          ///< empty: none
  std::vector<std::pair<std::string, std::string>> overrides; ///< --set k=v
  TrainingOptions training; ///< imported models only
  /// `--ranks N`: the config's `batch` is the global batch, which N must
  /// divide; the step is built for batch / N per rank (docs/distributed.md).
  int64_t ranks = 1;
  /// `--shard-optimizer`: each of the ranks keeps only its slice of the
  /// optimizer state (ZeRO-1); no effect with one rank.
  bool shardOptimizer = false;
  /// `--microbatches K`: the step runs forward and backward on K slices of
  /// each rank's batch, which differ by at most one sample, and sums their
  /// gradients before one update (docs/planner.md, "Micro-batches"); the
  /// step is built for ceil(batch / ranks / K) samples.
  int64_t microbatches = 1;
  /// `--microbatches auto`: the caller picks `microbatches` in
  /// [1, maxMicrobatches] with the planner (compiler/Driver.h).
  bool autoMicrobatches = false;
  bool microbatchesGiven = false; ///< --microbatches K or auto given
  int64_t maxMicrobatches = 16;   ///< `--max-microbatches`
  /// `--microbatch-norm per-slice`: batch normalization of a split step
  /// uses each slice's statistics (PyTorch's under manual accumulation);
  /// without it a split step of a model with batch norm is refused.
  bool perSliceNorm = false;
  /// The flags that split the batch, as the user gave them, for messages:
  /// "--ranks 2 --microbatches 4".
  std::string splitFlags() const;
  /// The samples the step is built for from a rank's batch of
  /// `rankBatch`: ceil(rankBatch / microbatches).
  int64_t microbatchSamples(int64_t rankBatch) const {
    return (rankBatch + microbatches - 1) / microbatches;
  }
  /// `--precision fp64`: every f32 value of the model becomes f64, so the
  /// whole step computes in float64 on the CPU backend (for testing against
  /// a float64 reference: docs/cli.md). `--precision bf16`: GEMMs and the
  /// ops between them in bf16 under autocast's rules (Precision.h). "fp32"
  /// (the default), "bf16" or "fp64".
  std::string precision = "fp32";
};

/// For each value of `graph` (by index), whether the loss needs it: one
/// backward sweep over the ops, which are in topological order. The
/// state updates (ops with OpInfo::updatesState) of values the loss needs
/// are needed too, with the state they update.
std::vector<char> valuesReachingLoss(const ModelGraph &graph);

/// Reads, validates and flattens a model. `sourceName` prefixes messages.
/// Throws ModelError with a located message on any problem.
ModelGraph loadModel(const std::string &text, const std::string &sourceName,
                     const ModelOptions &options = {});

/// The flattened model as JSON (`remat compile --emit=flat`): what an
/// independent interpreter (tests/e2e/torch_reference.py) needs to run the
/// same model: values with kind, dtype, shape, init/data; ops in order with
/// operand names and normalized attributes; the loss and the optimizer.
nlohmann::json toJson(const ModelGraph &graph);

/// Every op a model may use, in docs/ops.md order.
const std::vector<std::string> &modelOpNames();

} // namespace remat::model

#endif // REMAT_COMPILER_MODELGRAPH_H
