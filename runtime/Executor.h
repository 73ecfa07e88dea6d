//===- Executor.h - Run a validated plan, one training step at a time ----===//
//
// Construction: backend.checkSupport, ONE arena allocation of arena_bytes,
// backend.prepare (workspace), then every param and optimizer buffer gets
// its seeded init (Synthetic.h) once. Each runStep():
//   1. fills every input: user data (setInputData) or its generator for
//      this step (labels_of after the sequences they follow);
//   2. runs the plan's steps in order through the backend, calling
//      onStepExecuted(stepIndex) after each; a plan of k micro-batches
//      repeats 1 and 2 for each of its slices of the batch, the optimizer
//      steps (and the callbacks) only in the last;
//   3. synchronizes, reads the loss, measures time and peak RSS.
// On a backend that overlapsInputCopies() (CUDA), step t+1's inputs are
// filled between 2 and 3 of step t (asynchronous copies, ordered after
// step t's work), unless an input shares bytes with the loss buffer; so
// after runStep the input buffers may already hold the next step's batch.
//
//===----------------------------------------------------------------------===//
#ifndef REMAT_RUNTIME_EXECUTOR_H
#define REMAT_RUNTIME_EXECUTOR_H

#include "runtime/Backend.h"
#include "runtime/GradientComm.h"
#include "runtime/plan/Loader.h"
#include "runtime/Npy.h"
#include "runtime/Ranks.h"
#include "runtime/plan/Safetensors.h"

#include <functional>
#include <map>
#include <optional>
#include <stdexcept>

namespace remat::runtime {

/// How gradients are communicated (remat run --comm, docs/distributed.md).
enum class CommChoice {
  /// Several ranks: the backend's device comm where it has one (NCCL),
  /// else MPI on host memory (the cpu backend). One rank: none.
  Auto,
  /// Several ranks: MPI on host memory (the cpu backend only). One rank:
  /// none.
  Mpi,
  /// The backend's device comm (NCCL), even for one rank: every gradient
  /// goes through it (a check of the path without an MPI launcher).
  Device,
};

/// A failure while a step runs (an embedding index outside the table, a
/// missing input); the message names the plan step or buffer.
class ExecutionError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

struct ExecutorOptions {
  /// Overrides the plan's "seed" for parameter init and synthetic data.
  std::optional<uint64_t> seed;
  /// The ranks of a data-parallel run (docs/distributed.md); null: one
  /// rank. With several, each runs the plan on its slice of the global
  /// batch, gradients are averaged over the ranks between the step that
  /// last writes them and the first that reads them, and the loss is the
  /// global batch's.
  Ranks *ranks = nullptr;
  /// false: wait for each gradient's sum right after it starts (no
  /// overlap with the rest of the backward pass; for measuring overlap).
  bool overlapGradientSums = true;
  /// Which gradient communication to use (GradientComm.h).
  CommChoice comm = CommChoice::Auto;
  /// Initial values from this file (loadWeights, at construction) in
  /// place of the plan's init for every buffer it holds: those are never
  /// generated, so no host copy of the largest of them adds to the run's
  /// peak RSS. remat run's --weights or the plan's weights file.
  const SafetensorsFile *weights = nullptr;
  /// Time one rank's step of a plan for any rank count, alone (remat
  /// profile): no communication; a sharded update updates rank 0's slice.
  bool oneRankOfMany = false;
};

struct StepResult {
  int64_t step = 0; ///< 1-based number of the step just run
  double loss = 0;
  double milliseconds = 0;
  uint64_t peakRssBytes = 0; ///< process VmHWM after this step
  double samplesPerSecond = 0; ///< of the global batch (all ranks)
  double tokensPerSecond = 0; ///< batch * tokens_per_sample per second
  /// Data-parallel runs: this rank's loss on its slice (`loss` is the
  /// mean over the ranks) and the milliseconds it waited for gradient
  /// sums (communication not hidden behind the step's work).
  double rankLoss = 0;
  double commWaitMilliseconds = 0;
};

class Executor {
public:
  /// Allocates the arena and initializes state; throws PlanError when the
  /// backend cannot run the plan.
  Executor(const LoadedPlan &plan, Backend &backend,
           ExecutorOptions options = {});
  ~Executor();
  Executor(const Executor &) = delete;
  Executor &operator=(const Executor &) = delete;

  /// Loads every param (required: a missing or mis-shaped tensor is a
  /// PlanError), every optimizer state and running statistic (state
  /// buffer) present in the file; an input without a generator that the
  /// file holds is fed its tensor every step (as by setInputData, unless
  /// that was called first). Other tensors in the file are ignored.
  void loadWeights(const SafetensorsFile &file);
  /// Params, optimizer state and state buffers by buffer name, as F32 tensors.
  /// With sharded optimizer state (--shard-optimizer) each state tensor is
  /// gathered whole (the param's shape) on rank 0: every rank must call
  /// this, and only rank 0's map holds the full state.
  std::map<std::string, NamedTensor> stateTensors() const;

  /// Feeds input `name` from user data instead of its generator. The array
  /// has the buffer's dtype and either its shape (the same batch every
  /// step) or [k*B, ...rest] for a buffer [B, ...rest] (step s uses batch
  /// s mod k); a data-parallel rank reads its rows of each global batch.
  /// Throws PlanError otherwise.
  void setInputData(const std::string &name, NpyArray data);
  /// Same, from an opened .npy file: each step reads its batch from the
  /// file into the input's buffer in pieces of 1 MiB (no host copy of the
  /// array; of the batch only where a labels_of or teacher input reads it).
  void setInputData(const std::string &name, NpyFile file);

  /// Runs the next training step (0-based number stepsRun()). prefetchNext
  /// false: the caller runs no further step, so its inputs are not filled.
  StepResult runStep(bool prefetchNext = true);

  /// Called after plan step `stepIndex` ran (before the next one), e.g. to
  /// copy a gradient right after the step that last writes it.
  std::function<void(size_t stepIndex)> onStepExecuted;

  /// Host copy of a buffer's current bytes (synchronizes first).
  std::vector<char> readBuffer(size_t bufferIndex);
  void writeBuffer(size_t bufferIndex, const std::vector<char> &bytes);
  /// Index of a buffer by name, or nullopt.
  std::optional<size_t> findBuffer(const std::string &name) const;

  const LoadedPlan &plan() const { return loaded; }
  uint64_t arenaBytes() const { return loaded.plan.arenaBytes; }
  uint64_t workspaceBytes() const { return workspace; }
  /// VmRSS just before the arena was allocated: peak RSS minus this is the
  /// memory the run itself added (arena, workspace, staging, libraries'
  /// buffers), the figure to compare with the planned arena.
  uint64_t baselineRssBytes() const { return baselineRss; }
  int64_t stepsRun() const { return numStepsRun; }
  uint64_t seed() const { return runSeed; }
  /// The gradient communication in use: "mpi", "nccl", or "" (none).
  std::string commName() const { return comm ? comm->name() : ""; }

private:
  /// Where an input's user data comes from: an array in memory or an
  /// opened .npy file, and which bytes of it step s reads: batch
  /// s mod `batches`, at byte first + (s mod batches) * stride.
  struct UserData {
    NpyArray array;
    std::optional<NpyFile> file;
    uint64_t batches = 1, stride = 0, first = 0;
    /// Bytes of one sample's rows: micro-batch j starts at its first
    /// sample (microbatchSlice). 0 where dim 0 is not the batch's: then
    /// `sliceStride` bytes from one micro-batch to the next (0: every
    /// micro-batch reads the same bytes, a constant tensor).
    uint64_t sampleStride = 0, sliceStride = 0;
  };
  /// Checks user data of `dtype` and `shape` for input `name` (the
  /// messages of setInputData) and returns its buffer and byte ranges.
  std::pair<size_t, UserData> checkUserData(const std::string &name,
                                            DType dtype,
                                            const Shape &shape) const;
  /// Runs the plan's steps for 0-based micro-batch `mb` of the current
  /// training step; `last`: the step's last micro-batch, which alone runs
  /// the optimizer steps, averages gradients over the ranks and calls
  /// onStepExecuted.
  void runPlanSteps(int64_t mb, bool last);
  /// Fills every input for 0-based micro-batch `microbatch` of 0-based
  /// training step `step`.
  void fillInputs(int64_t step, int64_t microbatch);
  /// Copies one input's bytes (asynchronously where the backend can).
  void copyInput(size_t index, const void *src, uint64_t bytes,
                 uint64_t offset, int64_t step);
  /// The device-side generation request of randn/randint input `b` (n
  /// elements) at 0-based training step `step`.
  SyntheticRequest syntheticRequest(const BufferDesc &b, uint64_t n,
                                    int64_t step) const;
  double readLoss();
  bool widensInput(const std::string &name, DType dtype) const;
  void *bufferAddress(size_t index) const;
  /// Data-parallel runs: where gradient sums start and end (constructor).
  void planGradientSums();
  /// Waits for the collective `handles` holds for buffer `index` (adding
  /// the wait to commWaitSeconds) and drops it; false: none was started.
  bool waitStarted(std::map<size_t, size_t> &handles, size_t index);
  /// Waits for buffer `index`'s gradient mean over the ranks.
  void finishGradientSum(size_t index);
  /// Sharded optimizer updates (ZeRO-1): their views and gathers
  /// (constructor).
  void planShardedUpdates();
  /// Waits for param buffer `index`'s all-gather after its sharded update.
  void finishParamGather(size_t index);

  LoadedPlan loaded;
  Backend &backend;
  uint64_t runSeed;
  void *arena = nullptr;
  uint64_t workspace = 0;
  uint64_t baselineRss = 0;
  int64_t numStepsRun = 0;
  /// A split plan's micro-batch share of the loss (its grad_accumulate
  /// steps' scale; 1/microbatches where it has none).
  double sliceShare = 1;
  /// The step whose inputs are already in place (-1: none).
  int64_t prefetchedStep = -1;
  /// Whether inputs may be filled before the previous step's loss is read.
  bool prefetch = false;
  /// Per plan step: resolved operand and result views into the arena.
  PlanCalls calls;
  std::map<size_t, UserData> userData;
  Ranks *ranks = nullptr; ///< null or one rank: nothing communicated
  /// Gradient means and param gathers: null unless several ranks or
  /// CommChoice::Device.
  std::unique_ptr<GradientComm> comm;
  bool overlapSums = true; ///< ExecutorOptions::overlapGradientSums
  /// Per plan step: grad buffers whose sum starts after it / must have
  /// finished before it.
  std::vector<std::vector<size_t>> sumsAfter, sumsBefore;
  std::map<size_t, size_t> sumHandles; ///< grad buffer -> started sum
  double commWaitSeconds = 0;          ///< this training step's

  /// A sharded optimizer update (plan steps with attrs.shards > 1,
  /// docs/distributed.md): this rank's views of param, grad and state
  /// (elements [begin, begin + count) of the param; the first count of
  /// each state slice), then the param's all-gather.
  struct ShardedUpdate {
    std::vector<TensorRef> inputs, outputs;
    size_t param = 0;     ///< the param buffer
    uint64_t numel = 0;   ///< the param's elements
    uint64_t shard = 0;   ///< each rank's slice: ceil(numel / ranks)
    uint64_t begin = 0, count = 0; ///< this rank's range
  };
  std::map<size_t, ShardedUpdate> shardedUpdates; ///< by plan step
  std::map<size_t, size_t> shardedStates; ///< state buffer -> its step
  /// Per plan step: params whose gather must be done before it.
  std::vector<std::vector<size_t>> gathersBefore;
  std::map<size_t, size_t> gatherHandles; ///< param buffer -> gather
};

/// The process's peak resident set size (VmHWM of /proc/self/status) in
/// bytes, or 0 where unavailable.
uint64_t readPeakRssBytes();
/// The process's current resident set (VmRSS), 0 where unknown.
uint64_t readCurrentRssBytes();
/// Resets the process's peak RSS (VmHWM) to its current RSS, so that a
/// later readPeakRssBytes measures from now; false where the kernel does
/// not allow it (the peak then stays the process's).
bool resetPeakRss();

} // namespace remat::runtime

#endif // REMAT_RUNTIME_EXECUTOR_H
