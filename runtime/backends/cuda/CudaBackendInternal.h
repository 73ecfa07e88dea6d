//===- CudaBackendInternal.h - Declarations the CUDA backend's files share ===//
//
// Internal to runtime/backends/cuda/ (CudaBackend.h is the public header):
// the kernel dispatch (CudaDispatch.cpp), what a CUDA-graph capture records,
// and CudaBackend::State, whose capture and replay members are defined in
// CudaGraph.cpp and the rest in CudaBackend.cpp.
//
//===----------------------------------------------------------------------===//
#ifndef REMAT_RUNTIME_BACKENDS_CUDA_CUDABACKENDINTERNAL_H
#define REMAT_RUNTIME_BACKENDS_CUDA_CUDABACKENDINTERNAL_H

#include "runtime/backends/cuda/CudaBackend.h"
#include "runtime/backends/cuda/kernels/Kernels.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace remat::runtime {

namespace cuda {

inline uint64_t alignUp(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

/// Runs the kernel family of the call's op (the op table's kernelFamily),
/// on float copies of its bf16 tensors where its kernel does not read them
/// (CudaBf16.cpp).
void dispatch(const KernelCall &call, const DeviceContext &ctx);

/// Whether `call` has bf16 tensors that its kernel does not read itself
/// (every op but the moves, the conversion, and an all-bf16 matmul or
/// elementwise op).
bool needsFloatCopies(const KernelCall &call);
/// Runs `call` on float copies of its bf16 tensors at the front of
/// ctx.scratch (floatCopyBytes of them), its kernel on the rest.
void runOnFloatCopies(const KernelCall &call, const DeviceContext &ctx);
/// The scratch bytes those copies take (0 when needsFloatCopies is false).
uint64_t floatCopyBytes(OpKind op, const std::vector<TensorType> &inputs,
                        const std::vector<TensorType> &outputs);

/// What a replayed step must match in the captured graph.
struct StepSignature {
  OpKind op;
  size_t stepIndex;
  std::vector<void *> pointers;

  static StepSignature of(const KernelCall &call) {
    StepSignature s{call.op, call.stepIndex, {}};
    for (int i = 0; i < call.numInputs; ++i)
      s.pointers.push_back(call.inputs[i].data);
    for (int i = 0; i < call.numOutputs; ++i)
      s.pointers.push_back(call.outputs[i].data);
    return s;
  }
  bool operator==(const StepSignature &o) const {
    return op == o.op && stepIndex == o.stepIndex && pointers == o.pointers;
  }
};

/// What runStep does with a call: runs it, records it into the capture in
/// progress, or queues it for the captured graph's replay.
enum class GraphMode { Eager, Capturing, Replaying };

} // namespace cuda

struct CudaBackend::State {
  int device = 0;
  cudaStream_t stream = nullptr;
  cublasHandle_t cublas = nullptr;
  /// Pinned copy of the device status, read at synchronize.
  cuda::DeviceStatus *hostStatus = nullptr;

  /// One of the backend's two kinds of cudaMalloc: the bytes the budget
  /// counts and the device bytes the allocation took (measured).
  struct DeviceAllocation {
    void *raw = nullptr; ///< what cudaMalloc returned
    uint64_t bytes = 0;
    int64_t taken = 0;
  };

  int numArenaAllocations = 0;
  std::map<void *, DeviceAllocation> arenaAllocations; ///< by aligned base
  mutable uint64_t plannedWorkspace = 0;               ///< from workspaceBytes
  char *workspace = nullptr;
  uint64_t workspaceSize = 0;
  int64_t workspaceTaken = 0;
  CudaWorkspace workspaceSplit; ///< of the latest prepare
  cuda::DeviceContext ctx;
  std::vector<std::string> stepPlaces;
  int64_t deviceStepValue = -1; ///< last training step written to status
  int64_t lastCallStep = -1;    ///< training step of the latest runStep

  /// Device memory by what took it (CudaMemoryReport); `lastUsed` is the
  /// used bytes at the latest sample.
  CudaMemoryReport memory;
  uint64_t lastUsed = 0;
  bool errorThrown = false;

  // Training-step bracketing and CUDA graphs.
  bool graphsEnabled = true;
  bool inStep = false;
  bool anyStepBegun = false;
  int64_t currentStep = 0;
  bool hostTouched = false;
  bool previousStepClean = false;
  int captureAttempts = 0;
  cuda::GraphMode mode = cuda::GraphMode::Eager;
  cudaGraphExec_t graphExec = nullptr;
  std::vector<cuda::StepSignature> captured;
  /// The calls recorded by the capture in progress: none of them has run,
  /// so if the capture fails they run eagerly instead.
  std::vector<KernelCall> capturedCalls;
  std::vector<KernelCall> pending;
  int64_t numCaptured = 0, numReplays = 0;

  /// Pinned staging of input copies (copyInputAsync), two slots used by
  /// alternate training steps: step t+1's inputs are staged while the
  /// device computes step t, whose inputs came from the other slot.
  struct Staging {
    char *host = nullptr; ///< cudaMallocHost
    uint64_t capacity = 0, used = 0;
    int64_t step = -1;          ///< the training step filling it
    cudaEvent_t done = nullptr; ///< after the slot's last copy
  } staging[2];

  // Device memory accounting (CudaMemoryReport). Every call of the
  // backend is bracketed by enterCall / leaveCall (CallScope); growth
  // inside a call is the call's (modules loaded by its launches, unless a
  // finer bracket claimed it), growth between calls is unattributed, except
  // between the calls of a training step: those are the step's launches.

  /// The device's used bytes now (the latest sample if the query fails).
  uint64_t usedNow() {
    size_t freeBytes = 0, totalBytes = 0;
    if (cudaMemGetInfo(&freeBytes, &totalBytes) != cudaSuccess) {
      (void)cudaGetLastError();
      return lastUsed;
    }
    uint64_t used = totalBytes - freeBytes;
    memory.peakBytes = std::max(memory.peakBytes, used);
    return used;
  }

  /// Samples the used bytes and returns the growth since the last sample.
  int64_t takeGrowth() {
    uint64_t now = usedNow();
    int64_t growth = int64_t(now) - int64_t(lastUsed);
    lastUsed = now;
    return growth;
  }

  /// Samples the used bytes; the growth since the last sample goes to
  /// `part`.
  void account(int64_t CudaMemoryReport::*part) {
    memory.*part += takeGrowth();
  }

  void enterCall() {
    account(inStep ? &CudaMemoryReport::moduleBytes
                   : &CudaMemoryReport::unattributedBytes);
  }
  void leaveCall() { account(&CudaMemoryReport::moduleBytes); }

  struct CallScope {
    State &s;
    explicit CallScope(State &state) : s(state) { s.enterCall(); }
    ~CallScope() { s.leaveCall(); }
  };

  void samplePeak() { (void)usedNow(); }

  /// After `allocation` was freed (cudaFree just returned): takes it out of
  /// the report's `part` (arena or workspace) and of allocationBytes; what
  /// the device did not give back is unattributed.
  void forget(const DeviceAllocation &allocation, uint64_t &part) {
    int64_t growth = takeGrowth(); // -taken when all of it came back
    part -= allocation.bytes;
    memory.allocationBytes -= allocation.taken - int64_t(allocation.bytes);
    memory.unattributedBytes += growth + allocation.taken;
  }

  void setTrainingStep(int64_t step) {
    if (deviceStepValue == step)
      return;
    cuda::launchSetTrainingStep(ctx.status, step, stream);
    deviceStepValue = step;
  }

  // CUDA-graph capture and replay (CudaGraph.cpp).

  void destroyGraph();

  /// Ends the capture in progress, launches what it recorded (the work
  /// enqueued so far, which has not run yet) and returns to eager mode.
  /// With keep, the graph is kept for replay. If ending, instantiating or
  /// launching the graph fails, the recorded calls run eagerly instead and
  /// graphs stay off: the step's results never depend on graphs working.
  void finishCapture(bool keep);

  /// A failed capture (already ended): turns graphs off for good and runs
  /// the calls it recorded, which have not run. A sticky device error makes
  /// the first of them throw.
  void runCapturedEagerly(const std::string &why);

  /// Runs the calls queued while replaying, eagerly, and stays eager for
  /// the rest of this training step.
  void flushPending();

  /// A host access (copy or synchronize) between begin/endTrainingStep.
  void hostAccess();

  /// Ends a capture without running what it recorded; graphs stay off.
  void abortCapture();

  /// CudaBackend::runStep: dispatch, capture or queue for replay.
  void runStep(const KernelCall &call);

  /// CudaBackend::beginTrainingStep: eager, capture or replay this step.
  void beginTrainingStep(int64_t trainingStep);

  /// CudaBackend::endTrainingStep: ends the capture or launches the graph.
  void endTrainingStep();

  // The rest of the backend (CudaBackend.cpp).

  /// Stages `bytes` of `src` in pinned memory and enqueues the copy to
  /// `dst`. A slot is reused two steps later; its event (recorded after its
  /// copies) is waited for first, which has long passed by then (the
  /// executor synchronized the step in between).
  void stageInput(void *dst, const void *src, uint64_t bytes, int64_t step);

  /// Frees everything; never throws (destructor, failed constructor).
  void release() noexcept;
};

} // namespace remat::runtime

#endif // REMAT_RUNTIME_BACKENDS_CUDA_CUDABACKENDINTERNAL_H
