//===- TrainStep.h - @train_step as plain data ------------------*- C++ -*-===//
//
// Bridges the MLIR pipeline and the MLIR-free algorithms: extracts the
// `func.func @train_step` produced by -remat-autodiff -remat-optimizer into
// a memory::StepGraph plus what the plan file needs per value and op
// (dtype, shape, initializer, data generator, op kind and attributes,
// modeled cost). compiler/PlanEmitter.h turns it into the runtime's Plan.
//
//===----------------------------------------------------------------------===//
#ifndef REMAT_PASSES_TRAINSTEP_H
#define REMAT_PASSES_TRAINSTEP_H

#include "passes/memory/StepGraph.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"

#include "ops/DeviceProfile.h"
#include "ops/OpTable.h"

#include <nlohmann/json.hpp>

#include <atomic>
#include <map>
#include <optional>
#include <string>

namespace remat {


/// The module attribute that carries a profile into the passes
/// (extractTrainStep reads it): {name, flops_per_second, bytes_per_second,
/// launch_seconds, and with measured tables ops and recompute_ops:
/// {key: seconds}}.
inline constexpr const char *kDeviceProfileAttr = "remat.device_profile";
void setDeviceProfile(mlir::ModuleOp module, const DeviceProfile &profile);

/// The op attribute holding the bytes of scratch the op's kernel uses
/// while it runs (an i64; the compiler sets it from the backend's
/// runtime::KernelInfo before planning, and recomputed copies keep it):
/// extractTrainStep gives it to StepOp::scratchBytes, which the planner's
/// layout places like a buffer live at that op. Ops without it have none
/// (the CUDA backend sizes its own workspace: docs/cuda.md).
inline constexpr const char *kScratchBytesAttr = "remat.scratch_bytes";

struct ValueInfo {
  std::string dtype; ///< "f32", "i32", ...
  std::vector<int64_t> shape;
  nlohmann::json init; ///< params and optimizer state
  nlohmann::json data; ///< inputs (labels_of names the other input)
};

struct OpInfo {
  std::string kind;    ///< docs/ops.md name, e.g. "attention"
  /// The model-level name from the op's location ("h.0.qk"), or empty;
  /// the op's StepOp::name is made from it and its phase.
  std::string base;
  nlohmann::json attrs = nlohmann::json::object();
  int64_t flops = 0;
  int64_t bytes = 0;   ///< read + written
  double seconds = 0;  ///< modeled cost
  /// Modeled cost as a recomputation (DeviceProfile::recomputeMeasured,
  /// else `seconds`).
  double recomputeSeconds = 0;
  bool recompute = false;
  std::string block;   ///< graph::kBlockAttr, or empty
};

/// The training step ready for the memory algorithms and the emitter.
/// `ops` is parallel to `graph.ops` (same order).
struct TrainStep {
  std::string model;
  int64_t seed = 0;
  int64_t batch = 1; ///< per rank
  int64_t ranks = 1; ///< data-parallel ranks (graph.ranks)
  /// Micro-batches of each rank's step (graph.microbatches): `batch` is one
  /// micro-batch's samples, and the modeled step runs all but the
  /// optimizer ops this many times.
  int64_t microbatches = 1;
  /// The rank's samples in all micro-batches (graph.step_samples): `batch *
  /// microbatches`, or fewer where the last slices are one sample short;
  /// 0: `batch * microbatches`.
  int64_t stepSamples = 0;
  /// Ranks the optimizer state is sharded over (graph.optimizer_shards,
  /// --shard-optimizer); 1: every rank holds all of it.
  int64_t optimizerShards = 1;
  int64_t tokensPerSample = 1;
  memory::StepGraph graph;
  std::vector<ValueInfo> values; ///< parallel to graph.values
  std::vector<OpInfo> ops;       ///< parallel to graph.ops
  int loss = -1;
  DeviceProfile profile; ///< what OpInfo::seconds were modeled with

  /// Modeled cost of the whole step, in seconds: every op but the
  /// optimizer's once per micro-batch.
  double totalSeconds() const;
  /// Recomputation of `seconds` a micro-batch as a fraction of
  /// totalSeconds(): every micro-batch recomputes.
  double recomputeOverhead(double seconds) const;
};

/// Extracts @train_step from `module`, costs modeled with the module's
/// kDeviceProfileAttr if it has one, else `defaultProfile`; errors name the
/// op and reason. Throws std::runtime_error.
TrainStep extractTrainStep(mlir::ModuleOp module,
                           const DeviceProfile &defaultProfile = {});

/// The step as extractTrainStep reads it back from the module once the
/// module's @train_step holds `applied`'s ops in its order (recomputed
/// copies marked remat.recompute, ops it never computes erased), without
/// reading the module: a compile extracts its step once and replays each
/// reordering and plan (compiler/Driver.cpp). A plain reordering is an
/// `applied` with no recomputation.
TrainStep replayTrainStep(const TrainStep &step,
                          const memory::RecomputedStep &applied);

/// Places the ops of `module`'s @train_step, whose extracted step is
/// `step`, in `order` (order[i]: the position in `step` of the op to run
/// i-th), and `step` with them (replayTrainStep).
void reorderTrainStep(mlir::ModuleOp module, TrainStep &step,
                      const std::vector<int> &order);

/// How often a process extracted and replayed training steps: the tests
/// that hold one compile to one extraction read them.
struct StageCounters {
  std::atomic<int64_t> extractions{0};
  std::atomic<int64_t> replays{0};
};
StageCounters &stageCounters();

/// extractTrainStep for passes: on failure emits the reason as an error on
/// `module` and returns nullopt.
std::optional<TrainStep> extractTrainStepOrEmit(mlir::ModuleOp module);

/// An attribute of a graph op or a plan buffer as JSON: bools, integers,
/// floats (as doubles), strings, i64 arrays, dictionaries and arrays of
/// these; null for anything else.
nlohmann::json attributeToJson(mlir::Attribute attr);

/// The attributes of a graph op as the plan file carries them: all but
/// remat's own (`remat.*`: recompute marks, blocks, kernel scratch).
nlohmann::json opAttributes(mlir::Operation &op);

/// The dtypes and static shapes of `values` (an empty f32 shape for a value
/// that is not a ranked tensor), as runtime::KernelInfo::opScratchBytes and
/// ops::opCostKey take them.
std::vector<ops::TensorType> typesOf(mlir::ValueRange values);

/// The ops of @train_step's body in IR order, terminator excluded: ops[k]
/// is the op of step.graph.ops[k] as extractTrainStep numbers them. Call it
/// on a module whose @train_step extracted. `terminator`, when given,
/// receives the body's return.
std::vector<mlir::Operation *>
trainStepOps(mlir::ModuleOp module, mlir::Operation **terminator = nullptr);

} // namespace remat

#endif // REMAT_PASSES_TRAINSTEP_H
