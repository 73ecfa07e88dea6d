//===- Driver.h - The compile pipeline behind the CLI -----------*- C++ -*-===//
//
// model text -> ModelGraph -> graph dialect (@forward) -> passes
// (@train_step) -> StepGraph -> memory-aware order -> liveness -> arena
// -> Plan. Each stage can be printed (`remat compile --emit=STAGE`).
//
//===----------------------------------------------------------------------===//
#ifndef REMAT_COMPILER_DRIVER_H
#define REMAT_COMPILER_DRIVER_H

#include "compiler/ModelGraph.h"
#include "compiler/PlanEmitter.h"
#include "passes/Rematerialize.h"
#include "passes/TrainStep.h"
#include "runtime/plan/KernelInfo.h"
#include "runtime/plan/PlanFormat.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"

#include <optional>
#include <string>
#include <vector>

namespace remat::compiler {

/// The stages `--emit` can stop at, in pipeline order.
enum class Stage { Flat, Graph, Grad, Train, Scheduled, Planned, Plan };
std::optional<Stage> parseStage(const std::string &name);
/// The stages' names, in Stage order: "flat", "graph", ..., "plan".
const std::vector<std::string> &stageNames();

struct CompileOptions {
  int64_t alignment = defaults::kAlignment;
  /// Without a budget nothing is recomputed, in the op order of least
  /// memory the planner finds (leastMemoryWithoutRecompute).
  std::optional<int64_t> budgetBytes;
  /// The backend the plan is for (--backend): `cpu` or `cuda`.
  std::string backend = "cpu";
  /// What the backend states about its kernels (runtime/plan/KernelInfo.h):
  /// each op's scratch, laid out in the arena (kScratchBytesAttr), and the
  /// report's workspace and runtime allowance. Null: no kernel scratch, and
  /// no workspace or allowance known (the CUDA backend sizes its own).
  const runtime::KernelInfo *kernelInfo = nullptr;
  /// Bytes of the budget kept for a workspace beside the arena (on CUDA the
  /// cuBLAS workspace and kernel scratch: docs/cuda.md): the arena is
  /// planned under budgetBytes minus this. Needs budgetBytes. Without it:
  /// 0 (cpu's scratch is in the arena; cuda's workspace shrinks to what the
  /// budget leaves beside the arena).
  std::optional<int64_t> workspaceReserveBytes;
  std::string solver = defaults::kSolver;
  double timeLimitSeconds = defaults::kTimeLimitSeconds; ///< of the MILP
  bool progress = false;
  /// The planner may move ops as well as recompute them.
  bool reorder = true;
  /// Also search the minimum feasible budget for the report's
  /// min_feasible_bytes (--min-feasible; it plans the step a dozen times).
  bool searchMinimum = false;
  /// The roofline the planner models op costs with (--device-profile).
  DeviceProfile deviceProfile;
  /// Several ranks (graph.ranks > 1): each optimizer update runs this many
  /// ops later than the planner placed it, so that its gradient's sum
  /// overlaps backward work (--update-lag; lagOptimizerUpdates).
  int updateLag = defaults::kUpdateLag;
  /// A budget no schedule fits: search the minimum for the error message
  /// (RematOptions::explainInfeasible).
  bool explainInfeasible = true;
};

/// `--device-profile`: a built-in name (builtinDeviceProfileNames) or a JSON
/// file {"name", "flops_per_second", "bytes_per_second", "launch_seconds"}
/// (positive numbers; name optional). Throws std::invalid_argument.
DeviceProfile parseDeviceProfile(const std::string &spec);

/// Moves each optimizer update of the planned @train_step in `module`
/// (whose step is `step`, moved with it)
/// options.updateLag ops later (halving the lag while the arena would then
/// exceed `arenaLimit`; when it is 0, 1.01 x the arena of the order as
/// planned) and returns the lag kept
/// (0: the order is unchanged). With several ranks an update waits for its
/// gradient's sum, which starts after the gradient's last write, so the
/// ops in between hide the sum (docs/distributed.md).
int lagOptimizerUpdates(mlir::ModuleOp module, TrainStep &step,
                        const CompileOptions &options, int64_t arenaLimit);

/// The names --backend accepts: "cpu, cuda".
const std::vector<std::string> &backendNames();

/// The reserve the arena's budget leaves for a workspace beside it: the
/// one given, else 0; 0 without a budget.
int64_t workspaceReserve(const CompileOptions &options);

/// Records on each op of @train_step the scratch its kernel uses while it
/// runs, as `info` states it (kScratchBytesAttr; none where it is 0).
void annotateKernelScratch(mlir::ModuleOp module,
                           const runtime::KernelInfo &info);

/// The planner's options of a compile.
RematOptions rematOptions(const CompileOptions &options);

/// A compile's module up to a stage; from Stage::Scheduled on, its
/// training step, extracted once after the kernels' scratch is recorded
/// and replayed with each reordering and plan (replayTrainStep), so that
/// it always equals what the module's @train_step reads as; from
/// Stage::Planned on, the planner's outcome.
struct StepModule {
  mlir::OwningOpRef<mlir::ModuleOp> module;
  std::optional<TrainStep> step;
  std::optional<RematOutcome> planned;
};

/// Imports the model and runs the stages up to `stage` (at most Planned):
/// the training step, its kernels' scratch, the memory-aware order, the
/// plan under the budget. Throws model::ModelError (user errors) or
/// std::runtime_error.
StepModule buildStep(const model::ModelGraph &graph,
                     mlir::MLIRContext &context, Stage stage,
                     const CompileOptions &options = {});

/// buildStep's module alone.
mlir::OwningOpRef<mlir::ModuleOp>
buildModule(const model::ModelGraph &graph, mlir::MLIRContext &context,
            Stage stage, const CompileOptions &options = {});

/// The whole pipeline to a plan; `report` receives the memory report.
runtime::Plan compilePlan(const model::ModelGraph &graph,
                          const CompileOptions &options,
                          nlohmann::json &report);

/// The byte sizes every flag that takes bytes reads (kByteSizeGrammar):
/// "123456", "800MB", "0.6M", "500kb", "1.5GiB"; nullopt when invalid.
std::optional<int64_t> parseByteSize(const std::string &text);
/// The grammar of parseByteSize, as the errors quote it.
extern const char *const kByteSizeGrammar;
/// A byte-size flag's value (`flag` names it in the error); throws
/// std::invalid_argument quoting the grammar, and for `positive` when the
/// size is 0.
int64_t parseByteSizeFlag(const std::string &flag, const std::string &value,
                          bool positive);
/// 1536 -> "1.50 KiB".
std::string formatBytes(int64_t bytes);

} // namespace remat::compiler

#endif // REMAT_COMPILER_DRIVER_H
