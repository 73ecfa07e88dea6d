//===- Backend.h - The kernel interface every backend implements ---------===//
//
// A backend owns device memory and runs one plan step at a time. The
// executor (Executor.h) calls it in this order:
//
//   checkSupport(plan)            reject what the backend cannot compute
//   workspaceBytes(plan)          scratch the kernels need (reported)
//   allocateArena(bytes, align)   ONE allocation for every plan buffer
//   prepare(plan)                 allocate the workspace, build kernels
//   copyIn(...)                   parameter init, inputs of each step
//   beginTrainingStep(t)          per training step t (0-based)
//   runStep(call) ...             every plan step, in order
//   endTrainingStep(t)
//   synchronize()                 before the loss is read / time measured
//   copyOut(...)                  loss, weights, dumped gradients
//   freeArena(base)
//
// Pointers passed to runStep / copyIn / copyOut are device pointers inside
// the arena; a CUDA backend may enqueue asynchronously and only has to be
// done when synchronize() returns (copyOut itself is synchronous).
//
//===----------------------------------------------------------------------===//
#ifndef REMAT_RUNTIME_BACKEND_H
#define REMAT_RUNTIME_BACKEND_H

#include "runtime/GradientComm.h"
#include "runtime/plan/Loader.h"
#include "runtime/plan/Ops.h"
#include "runtime/SyntheticDraw.h"

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace remat::runtime {

class Ranks;

/// One operand or result of a kernel: a device pointer into the arena plus
/// its dtype and static shape.
struct TensorRef {
  void *data = nullptr;
  DType dtype = DType::F32;
  Shape shape;
  int64_t numElements = 0;

  template <typename T> T *as() const { return static_cast<T *>(data); }
};

/// Everything a kernel launch needs. Operand counts, dtypes and shapes were
/// checked by the loader against docs/ops.md.
struct KernelCall {
  OpKind op{};
  const OpAttrs *attrs = nullptr;
  const TensorRef *inputs = nullptr;
  int numInputs = 0;
  const TensorRef *outputs = nullptr;
  int numOutputs = 0;
  /// 0-based training-step number: the Philox counter of dropout; adamw's t
  /// is trainingStep + 1.
  int64_t trainingStep = 0;
  /// 0-based micro-batch of the training step (plan `microbatches` > 1):
  /// dropout's mask continues the batch's element count across slices,
  /// and grad_accumulate writes its accumulator in micro-batch 0.
  int64_t microbatch = 0;
  /// The micro-batch's samples (PlanFormat.h, microbatchSlice): dim 0 of
  /// the batch inputs holds `sliceSamples` (the plan's batch), of which the
  /// last `padding` are padding; the first is sample `firstSample` of the
  /// rank's step.
  int64_t sliceSamples = 1;
  int64_t firstSample = 0;
  int64_t padding = 0;
  /// Index of the step in the plan (for error messages).
  size_t stepIndex = 0;

  /// Of a loss operand's `rows` (dim 0, grouped by sample), those of real
  /// samples: the losses leave the padding's rows out.
  int64_t liveRows(int64_t rows) const {
    if (padding == 0 || rows % sliceSamples != 0)
      return rows;
    return rows - rows / sliceSamples * padding;
  }
  /// Dropout's first mask element for a tensor of `n` elements: its
  /// elements continue the rank's batch across micro-batches.
  uint64_t firstElement(int64_t n) const {
    if (n % sliceSamples != 0)
      return uint64_t(microbatch) * uint64_t(n);
    return uint64_t(firstSample) * uint64_t(n / sliceSamples);
  }
};

/// The operand and result refs of every step of `plan` in an arena at
/// `base`, and the KernelCall of a step over them. The refs live as long as
/// this object: a CUDA backend replaying a graph keeps their pointers.
class PlanCalls {
public:
  PlanCalls() = default;
  PlanCalls(const LoadedPlan &plan, char *base) : plan(&plan), base(base) {
    for (const StepDesc &s : plan.plan.steps) {
      std::vector<TensorRef> ins, outs;
      for (int64_t b : s.inputs)
        ins.push_back(ref(b));
      for (int64_t b : s.outputs)
        outs.push_back(ref(b));
      inputs.push_back(std::move(ins));
      outputs.push_back(std::move(outs));
    }
  }

  /// Buffer `index` of the plan in the arena.
  TensorRef ref(int64_t index) const {
    const BufferDesc &b = plan->plan.buffers[size_t(index)];
    return TensorRef{base + b.offset, b.dtype, b.shape,
                     int64_t(*checkedNumElements(b.shape))};
  }

  /// Plan step `step` in 0-based training step `trainingStep`, micro-batch
  /// `microbatch`.
  KernelCall call(size_t step, int64_t trainingStep,
                  int64_t microbatch = 0) const {
    KernelCall c;
    c.op = plan->steps[step].op;
    c.attrs = &plan->steps[step].attrs;
    c.inputs = inputs[step].data();
    c.numInputs = int(inputs[step].size());
    c.outputs = outputs[step].data();
    c.numOutputs = int(outputs[step].size());
    c.trainingStep = trainingStep;
    c.microbatch = microbatch;
    MicrobatchSlice part = microbatchSlice(plan->plan, microbatch);
    c.sliceSamples = std::max<int64_t>(plan->plan.batch, 1);
    c.firstSample = part.first;
    c.padding = part.padding;
    c.stepIndex = step;
    return c;
  }

  /// Result `i` of plan step `step`.
  const TensorRef &output(size_t step, size_t i) const {
    return outputs[step][i];
  }

private:
  const LoadedPlan *plan = nullptr;
  char *base = nullptr;
  std::vector<std::vector<TensorRef>> inputs, outputs;
};

/// A device's memory as its backend measures it (the CUDA backend:
/// cudaMemGetInfo's used bytes), split by what took it. The budget counts
/// arenaBytes + workspaceBytes;
/// the rest is runtime overhead, measured where it arises: each of the
/// backend's calls samples the used bytes on entry and exit, and the growth
/// in between goes to the part that call's work belongs to. So
///   usedBytes = contextBytes + arenaBytes + workspaceBytes + overheadBytes()
/// always; unattributedBytes (growth between the backend's calls, e.g.
/// another process on the GPU) says how much of it the backend cannot
/// explain.
struct DeviceMemoryReport {
  uint64_t contextBytes = 0;   ///< used when the backend was created
  uint64_t usedBytes = 0;      ///< used now
  uint64_t peakBytes = 0;      ///< the largest used bytes sampled
  uint64_t arenaBytes = 0;     ///< live arenas, the bytes the plans state
  uint64_t workspaceBytes = 0; ///< the workspace (workspaceBytes(plan))
  /// The stream, the cuBLAS handle and the pinned status word's mapping;
  /// NCCL's communicator and stream where a run communicates.
  int64_t handleBytes = 0;
  /// What the arena's and the workspace's cudaMallocs took beyond the bytes
  /// asked for: the allocator's rounding (2 MiB pages on a GPU) and the
  /// arena's padding for alignments above 256 B.
  int64_t allocationBytes = 0;
  /// Growth during kernel launches, copies and library calls: kernel
  /// modules loaded on their first launch (CUDA's lazy loading), cuBLAS's
  /// and the driver's lazily allocated state.
  int64_t moduleBytes = 0;
  /// Instantiated (and uploaded) CUDA graphs.
  int64_t graphBytes = 0;
  /// Growth while no call of the backend ran.
  int64_t unattributedBytes = 0;

  int64_t overheadBytes() const {
    return handleBytes + allocationBytes + moduleBytes + graphBytes +
           unattributedBytes;
  }
};

class Backend {
public:
  virtual ~Backend() = default;

  /// "cpu", "cuda".
  virtual std::string name() const = 0;

  /// Throws PlanError naming the buffer or step the backend cannot run
  /// (e.g. "dtype f16 is not supported by the cpu backend").
  virtual void checkSupport(const LoadedPlan &plan) const = 0;

  /// Scratch bytes the kernels of this plan need beyond the arena.
  virtual uint64_t workspaceBytes(const LoadedPlan &plan) const = 0;

  /// One device allocation of exactly `bytes`, aligned to `alignment`,
  /// zero-filled. Called once per executor.
  virtual void *allocateArena(uint64_t bytes, uint64_t alignment) = 0;
  virtual void freeArena(void *base) = 0;

  /// Called once after allocateArena, before any step: allocate the
  /// workspace, select kernels, capture graphs.
  virtual void prepare(const LoadedPlan &plan) = 0;

  /// The bytes [offset, offset + size) of the arena that plan step `step`
  /// may use as kernel scratch beside its results (a gap no live buffer
  /// occupies while it runs: StepScratch.h); {0, 0} for none. Valid after
  /// prepare(). The bounds check allows writes there.
  virtual std::pair<uint64_t, uint64_t> arenaScratch(size_t step) const {
    (void)step;
    return {0, 0};
  }

  virtual void copyIn(void *deviceDst, const void *hostSrc, uint64_t bytes) = 0;
  /// Whether the backend runs copies and kernels in one queue, so the
  /// executor may fill step t+1's inputs right after enqueuing step t's
  /// calls (before synchronize): the host prepares the next batch while
  /// the device computes. False (the default): inputs are filled just
  /// before their step.
  virtual bool overlapsInputCopies() const { return false; }
  /// An input copy that may complete after it returns (the source may be
  /// reused at once: the backend stages it), ordered after every call
  /// enqueued before it. Returns false when the backend has no such copy
  /// (the executor then uses copyIn). trainingStep is the step the input
  /// is for.
  virtual bool copyInputAsync(void *deviceDst, const void *hostSrc,
                              uint64_t bytes, int64_t trainingStep) {
    return false;
  }
  /// Generates a randn / randint input at deviceDst where it lives, the
  /// values writeSyntheticBlock gives (SyntheticDraw.h), instead of the
  /// executor generating it on the host and copying it in. Returns false
  /// when the backend does not (the default; the CPU generates on the host).
  virtual bool generateInput(void *deviceDst, const SyntheticRequest &request) {
    return false;
  }
  virtual void copyOut(void *hostDst, const void *deviceSrc,
                       uint64_t bytes) = 0;

  /// Runs one plan step. A data-dependent failure (an embedding index or a
  /// label outside its range) throws std::runtime_error; nothing is written
  /// outside the step's result buffers.
  virtual void runStep(const KernelCall &call) = 0;

  virtual void synchronize() = 0;

  /// Bracket the plan steps of one training step (after its inputs were
  /// copied in, before the loss is read). A CUDA backend may record the
  /// steps into a graph on the first step and replay it later; the default
  /// does nothing. onStepExecuted callbacks may copyOut in between.
  virtual void beginTrainingStep(int64_t trainingStep) {}
  virtual void endTrainingStep(int64_t trainingStep) {}

  /// The backend's own gradient communication over `ranks` (a data-
  /// parallel run's; null: one rank, as `remat run --comm nccl` without
  /// an MPI launcher) on its device
  /// memory: the CUDA backend's NCCL where built with it. Null (the
  /// default): none; host memory uses MPI (createMpiGradientComm). Called
  /// after prepare(), before the first training step; the comm must be
  /// destroyed before the backend. A backend may change how it runs steps
  /// for a communicating run (the CUDA backend turns graphs off).
  virtual std::unique_ptr<GradientComm> createDeviceComm(Ranks *ranks) {
    return nullptr;
  }
  /// Whether createDeviceComm can give one (this build has NCCL).
  virtual bool hasDeviceComm() const { return false; }

  /// What the run prints about how the backend runs the plan once
  /// prepared (the CUDA backend's split of its workspace, the cpu
  /// backend's bf16 kernels), one line without its newline; empty (the
  /// default): nothing.
  virtual std::string workspaceSummary() const { return {}; }
  /// The device memory the backend measured (the run's memory line, the
  /// log's and profile's `device_memory` object: docs/cuda.md, "Memory");
  /// none (the default) for a backend whose memory is the process's.
  virtual std::optional<DeviceMemoryReport> deviceMemory() const {
    return std::nullopt;
  }
};

/// The version of this interface and of the types it passes (KernelCall,
/// LoadedPlan, ...), which a backend loaded as a module (the CUDA backend,
/// runtime/BackendModule.cpp) must have been built with: the sizes of
/// those types beside a number raised when their meaning changes.
inline uint64_t backendInterfaceVersion() {
  return (uint64_t(1) << 48) ^ (uint64_t(sizeof(KernelCall)) << 32) ^
         (uint64_t(sizeof(LoadedPlan)) << 16) ^ uint64_t(sizeof(OpAttrs)) ^
         (uint64_t(sizeof(TensorRef)) << 8) ^
         (uint64_t(sizeof(DeviceMemoryReport)) << 40);
}

/// The CPU backend (always available).
std::unique_ptr<Backend> createCpuBackend();

/// "cpu" or, where built with the CUDA backend, "cuda": the CUDA backend is
/// a module (libremat-cuda.so) loaded on the first call that asks for it,
/// so a process that never does maps no CUDA library
/// (runtime/BackendModule.cpp). An unknown name, or a module that cannot
/// be loaded, is a PlanError saying why.
std::unique_ptr<Backend> createBackend(const std::string &name);

/// Names accepted by createBackend, comma-separated.
std::string availableBackends();

} // namespace remat::runtime

#endif // REMAT_RUNTIME_BACKEND_H
