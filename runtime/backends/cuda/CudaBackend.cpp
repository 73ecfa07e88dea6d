//===- CudaBackend.cpp - The CUDA backend (cuBLAS + kernels, CUDA graphs) -===//
#include "runtime/backends/cuda/CudaBackend.h"

#include "runtime/backends/cuda/CudaCheck.h"
#include "runtime/backends/cuda/kernels/Kernels.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace remat::runtime {

using cuda::DeviceContext;
using cuda::DeviceStatus;

namespace {

constexpr uint64_t kStatusBytes = CudaWorkspace::kStatusBytes;
constexpr uint64_t kDefaultCublasWorkspace = uint64_t(32) << 20;
/// Capture attempts interrupted by host access before graphs are given up.
constexpr int kMaxCaptureAttempts = 3;

uint64_t alignUp(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

bool envFlag(const char *name, bool fallback) {
  const char *v = std::getenv(name);
  if (!v || !*v)
    return fallback;
  return std::strcmp(v, "0") != 0;
}

uint64_t envBytes(const char *name, uint64_t fallback) {
  const char *v = std::getenv(name);
  if (!v || !*v)
    return fallback;
  char *end = nullptr;
  unsigned long long n = std::strtoull(v, &end, 10);
  return end && *end == '\0' ? uint64_t(n) : fallback;
}

bool usesGemm(const LoadedPlan &plan) {
  for (const ResolvedStep &s : plan.steps)
    if (s.op == OpKind::Matmul || s.op == OpKind::Attention ||
        s.op == OpKind::AttentionGrad)
      return true;
  return false;
}

uint64_t cublasWorkspaceFor(const LoadedPlan &plan) {
  if (!usesGemm(plan))
    return 0;
  return alignUp(
      envBytes("REMAT_CUDA_CUBLAS_WORKSPACE_BYTES", kDefaultCublasWorkspace),
      256);
}

/// The kernel scratch of the plan: the largest single step's need. With
/// `minimum`, attention counts one (batch, head) slice only (it works in
/// chunks of what the scratch holds): the least the plan can run with.
uint64_t scratchFor(const LoadedPlan &plan, bool minimum = false) {
  uint64_t most = 0;
  const Plan &p = plan.plan;
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    OpKind op = plan.steps[i].op;
    if (minimum && (op == OpKind::Attention || op == OpKind::AttentionGrad)) {
      most = std::max(most, cuda::attentionSliceBytes(
                                op, p.buffers[size_t(p.steps[i].inputs[0])]
                                        .shape));
      continue;
    }
    std::vector<TensorType> ins, outs;
    for (int64_t b : p.steps[i].inputs)
      ins.push_back({p.buffers[size_t(b)].dtype, p.buffers[size_t(b)].shape});
    for (int64_t b : p.steps[i].outputs)
      outs.push_back({p.buffers[size_t(b)].dtype, p.buffers[size_t(b)].shape});
    most = std::max(most, cuda::scratchBytesFor(op, plan.steps[i].attrs, ins,
                                                outs));
  }
  return alignUp(most, 256);
}

/// The least cuBLAS workspace the backend gives a plan with GEMMs when the
/// budget is tight (cuBLAS's recommendation before Hopper).
constexpr uint64_t kMinimumCublasWorkspace = uint64_t(4) << 20;

/// The plan's budget for the whole step (report.budget_bytes), if any.
std::optional<uint64_t> planBudget(const LoadedPlan &plan) {
  const nlohmann::json &r = plan.plan.report;
  auto it = r.find("budget_bytes");
  if (it == r.end() || !it->is_number_integer() || it->get<int64_t>() <= 0)
    return std::nullopt;
  return uint64_t(it->get<int64_t>());
}

} // namespace

CudaWorkspace cudaWorkspaceFor(const LoadedPlan &plan) {
  CudaWorkspace full{cublasWorkspaceFor(plan), scratchFor(plan)};
  std::optional<uint64_t> budget = planBudget(plan);
  uint64_t arena = plan.plan.arenaBytes;
  if (!budget || (arena <= *budget && full.total() <= *budget - arena))
    return full;
  uint64_t minimumScratch = scratchFor(plan, true);
  uint64_t minimumCublas =
      full.cublas ? std::min(full.cublas, kMinimumCublasWorkspace) : 0;
  uint64_t available = *budget > arena ? *budget - arena : 0;
  CudaWorkspace least{minimumCublas, minimumScratch};
  if (least.total() > available)
    throw PlanError(
        plan.source + ": /report/budget_bytes: the plan's budget of " +
        std::to_string(*budget) +
        " B leaves " + std::to_string(available) +
        " B beside its arena of " + std::to_string(arena) +
        " B, but the cuda backend's workspace needs at least " +
        std::to_string(least.total()) + " B (" +
        std::to_string(full.total()) +
        " B by default); compile with --workspace-reserve " +
        std::to_string(full.total()) + " (or at least " +
        std::to_string(least.total()) + ")");
  uint64_t spare = available - kStatusBytes; // >= least.cublas + least.scratch
  CudaWorkspace split;
  if (spare >= full.cublas + minimumScratch) {
    split.cublas = full.cublas;
    split.scratch = std::min(full.scratch, spare - full.cublas) / 256 * 256;
  } else {
    split.scratch = minimumScratch;
    split.cublas = std::max(minimumCublas, (spare - minimumScratch) / 256 * 256);
  }
  return split;
}

namespace {

/// Runs the kernel family of the call's op (the op table's kernelFamily).
void dispatch(const KernelCall &call, const DeviceContext &ctx) {
  switch (call.op) {
#define REMAT_OP(Kind, name, inputs, outputs, rule, family, ...)               \
  case OpKind::Kind:                                                           \
    return cuda::launch##family(call, ctx);
#include "ops/generated/OpTable.inc"
  }
}

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

enum class Mode { Eager, Capturing, Replaying };

} // namespace

struct CudaBackend::State {
  int device = 0;
  cudaStream_t stream = nullptr;
  cublasHandle_t cublas = nullptr;
  DeviceStatus *hostStatus = nullptr; ///< pinned copy read at synchronize

  int numArenaAllocations = 0;
  std::map<void *, void *> arenaAllocations; ///< aligned base -> cudaMalloc
  mutable uint64_t plannedWorkspace = 0;     ///< from workspaceBytes
  char *workspace = nullptr;
  uint64_t workspaceSize = 0;
  DeviceContext ctx;
  std::vector<std::string> stepPlaces;
  int64_t deviceStepValue = -1; ///< last training step written to status
  int64_t lastCallStep = -1;    ///< training step of the latest runStep

  uint64_t contextBytes = 0, peakBytes = 0;
  bool errorThrown = false;

  // Training-step bracketing and CUDA graphs.
  bool graphsEnabled = true;
  bool inStep = false;
  bool anyStepBegun = false;
  int64_t currentStep = 0;
  bool hostTouched = false;
  bool previousStepClean = false;
  int captureAttempts = 0;
  Mode mode = Mode::Eager;
  cudaGraphExec_t graphExec = nullptr;
  std::vector<StepSignature> captured;
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

  void samplePeak() {
    size_t freeBytes = 0, totalBytes = 0;
    if (cudaMemGetInfo(&freeBytes, &totalBytes) == cudaSuccess)
      peakBytes = std::max<uint64_t>(peakBytes, totalBytes - freeBytes);
  }

  void setTrainingStep(int64_t step) {
    if (deviceStepValue == step)
      return;
    cuda::launchSetTrainingStep(ctx.status, step, stream);
    deviceStepValue = step;
  }

  void destroyGraph() {
    if (graphExec)
      cudaGraphExecDestroy(graphExec);
    graphExec = nullptr;
    captured.clear();
  }

  /// Ends the capture in progress, launches what it recorded (the work
  /// enqueued so far, which has not run yet) and returns to eager mode.
  /// With keep, the graph is kept for replay. If ending, instantiating or
  /// launching the graph fails, the recorded calls run eagerly instead and
  /// graphs stay off: the step's results never depend on graphs working.
  void finishCapture(bool keep) {
    mode = Mode::Eager;
    cudaGraph_t graph = nullptr;
    cudaGraphExec_t exec = nullptr;
    const char *failed = "cudaStreamEndCapture";
    cudaError_t err = cudaStreamEndCapture(stream, &graph);
    if (err == cudaSuccess) {
      failed = "cudaGraphInstantiate";
      err = cudaGraphInstantiate(&exec, graph, 0);
    }
    if (graph)
      cudaGraphDestroy(graph);
    if (err == cudaSuccess) {
      failed = "cudaGraphLaunch";
      err = cudaGraphLaunch(exec, stream);
    }
    if (err != cudaSuccess) {
      if (exec)
        cudaGraphExecDestroy(exec);
      runCapturedEagerly(std::string(failed) + ": " + cudaGetErrorString(err));
      return;
    }
    capturedCalls.clear();
    if (keep) {
      graphExec = exec;
      ++numCaptured;
    } else {
      // An in-flight graph is freed when it completes.
      cudaGraphExecDestroy(exec);
      captured.clear();
    }
  }

  /// A failed capture (already ended): turns graphs off for good and runs
  /// the calls it recorded, which have not run. A sticky device error makes
  /// the first of them throw.
  void runCapturedEagerly(const std::string &why) {
    std::fprintf(stderr,
                 "remat: cuda: graph capture failed (%s); running every "
                 "training step eagerly\n",
                 why.c_str());
    (void)cudaGetLastError(); // not a stale error for the next launch check
    graphsEnabled = false;
    captured.clear();
    std::vector<KernelCall> calls;
    calls.swap(capturedCalls);
    for (const KernelCall &call : calls)
      dispatch(call, ctx);
  }

  /// Runs the calls queued while replaying, eagerly, and stays eager for
  /// the rest of this training step.
  void flushPending() {
    mode = Mode::Eager;
    std::vector<KernelCall> calls;
    calls.swap(pending);
    for (const KernelCall &call : calls)
      dispatch(call, ctx);
  }

  /// A host access (copy or synchronize) between begin/endTrainingStep.
  void hostAccess() {
    if (!inStep)
      return;
    hostTouched = true;
    if (mode == Mode::Capturing)
      finishCapture(false);
    else if (mode == Mode::Replaying)
      flushPending();
  }

  /// Ends a capture without running what it recorded; graphs stay off.
  void abortCapture() {
    if (mode != Mode::Capturing)
      return;
    cudaGraph_t graph = nullptr;
    cudaStreamEndCapture(stream, &graph);
    if (graph)
      cudaGraphDestroy(graph);
    (void)cudaGetLastError(); // an invalidated capture's error is not sticky
    mode = Mode::Eager;
    captured.clear();
    capturedCalls.clear();
    graphsEnabled = false;
  }

  /// CudaBackend::runStep: dispatch, capture or queue for replay.
  void runStep(const KernelCall &call);

  /// Stages `bytes` of `src` in pinned memory and enqueues the copy to
  /// `dst`. A slot is reused two steps later; its event (recorded after its
  /// copies) is waited for first, which has long passed by then (the
  /// executor synchronized the step in between).
  void stageInput(void *dst, const void *src, uint64_t bytes, int64_t step) {
    Staging &slot = staging[step & 1];
    if (slot.step != step) {
      if (slot.done)
        REMAT_CUDA_CHECK(cudaEventSynchronize(slot.done));
      slot.step = step;
      slot.used = 0;
    }
    if (!slot.done)
      REMAT_CUDA_CHECK(
          cudaEventCreateWithFlags(&slot.done, cudaEventDisableTiming));
    uint64_t need = slot.used + alignUp(bytes, 256);
    if (need > slot.capacity) {
      // Copies already enqueued from this slot read the old buffer: let
      // them finish (only while the staging grows: the first steps).
      REMAT_CUDA_CHECK(cudaStreamSynchronize(stream));
      char *bigger = nullptr;
      uint64_t capacity = std::max(need, 2 * slot.capacity);
      REMAT_CUDA_CHECK(
          cudaMallocHost(reinterpret_cast<void **>(&bigger), capacity));
      if (slot.host)
        REMAT_CUDA_CHECK(cudaFreeHost(slot.host));
      slot.host = bigger;
      slot.capacity = capacity;
    }
    char *staged = slot.host + slot.used;
    std::memcpy(staged, src, bytes);
    REMAT_CUDA_CHECK(cudaMemcpyAsync(dst, staged, size_t(bytes),
                                     cudaMemcpyHostToDevice, stream));
    REMAT_CUDA_CHECK(cudaEventRecord(slot.done, stream));
    slot.used = need;
  }

  /// Frees everything; never throws (destructor, failed constructor).
  void release() noexcept {
    abortCapture();
    if (stream)
      cudaStreamSynchronize(stream);
    if (graphExec)
      cudaGraphExecDestroy(graphExec);
    graphExec = nullptr;
    for (auto &[aligned, raw] : arenaAllocations)
      cudaFree(raw);
    arenaAllocations.clear();
    if (workspace)
      cudaFree(workspace);
    workspace = nullptr;
    if (cublas)
      cublasDestroy(cublas);
    cublas = nullptr;
    if (stream)
      cudaStreamDestroy(stream);
    stream = nullptr;
    if (hostStatus)
      cudaFreeHost(hostStatus);
    hostStatus = nullptr;
    for (Staging &slot : staging) {
      if (slot.host)
        cudaFreeHost(slot.host);
      if (slot.done)
        cudaEventDestroy(slot.done);
      slot = Staging();
    }
  }
};

CudaBackend::CudaBackend() : state(std::make_unique<State>()) {
  State &s = *state;
  int count = 0;
  cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess || count == 0)
    throw std::runtime_error(
        std::string("cuda backend: no CUDA device (cudaGetDeviceCount: ") +
        (err != cudaSuccess ? cudaGetErrorString(err) : "0 devices") + ")");
  try {
    REMAT_CUDA_CHECK(cudaSetDevice(s.device));
    REMAT_CUDA_CHECK(cudaFree(nullptr)); // create the context now
    size_t freeBytes = 0, totalBytes = 0;
    REMAT_CUDA_CHECK(cudaMemGetInfo(&freeBytes, &totalBytes));
    s.contextBytes = totalBytes - freeBytes;
    s.peakBytes = s.contextBytes;
    REMAT_CUDA_CHECK(
        cudaStreamCreateWithFlags(&s.stream, cudaStreamNonBlocking));
    REMAT_CUBLAS_CHECK(cublasCreate(&s.cublas));
    // Before any cublasSetWorkspace: setting the stream resets the
    // workspace to cuBLAS's own pool.
    REMAT_CUBLAS_CHECK(cublasSetStream(s.cublas, s.stream));
    REMAT_CUBLAS_CHECK(cublasSetMathMode(
        s.cublas, envFlag("REMAT_CUDA_TF32", false) ? CUBLAS_TF32_TENSOR_OP_MATH
                                                    : CUBLAS_DEFAULT_MATH));
    REMAT_CUDA_CHECK(cudaMallocHost(reinterpret_cast<void **>(&s.hostStatus),
                                    sizeof(DeviceStatus)));
  } catch (...) {
    s.release(); // the destructor does not run for a failed constructor
    throw;
  }
  std::memset(s.hostStatus, 0, sizeof(DeviceStatus));
  s.graphsEnabled = envFlag("REMAT_CUDA_GRAPHS", true);
  s.ctx.stream = s.stream;
  s.ctx.cublas = s.cublas;
}

CudaBackend::~CudaBackend() { state->release(); }

void CudaBackend::checkSupport(const LoadedPlan &plan) const {
  const Plan &p = plan.plan;
  for (size_t i = 0; i < p.buffers.size(); ++i) {
    DType d = p.buffers[i].dtype;
    if (d == DType::F16 || d == DType::BF16)
      throw PlanError(plan.bufferPlace(i) + ": dtype " + dtypeName(d) +
                      " is not supported by the cuda backend (f32 only)");
    if (p.buffers[i].shape.size() > size_t(cuda::kMaxRank))
      throw PlanError(plan.bufferPlace(i) + ": rank " +
                      std::to_string(p.buffers[i].shape.size()) +
                      " exceeds the cuda backend's limit of " +
                      std::to_string(cuda::kMaxRank));
  }
  // Attention keeps an S x S score slice per (batch, head): past 2^24
  // positions that is petabytes (and its byte count would overflow).
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    OpKind op = plan.steps[i].op;
    if (op != OpKind::Attention && op != OpKind::AttentionGrad)
      continue;
    int64_t positions = p.buffers[size_t(p.steps[i].inputs[0])].shape[2];
    if (positions > (int64_t(1) << 24))
      throw PlanError(plan.stepPlace(i) + ": attention over " +
                      std::to_string(positions) +
                      " positions needs S*S*4 B of scratch per (batch, "
                      "head); the cuda backend takes S <= 2^24");
  }
  // The arena and workspace must fit the device's free memory: refused
  // here, naming the plan, before anything is allocated.
  uint64_t workspace = cudaWorkspaceFor(plan).total();
  uint64_t pad = p.alignment > 256 ? p.alignment : 0;
  size_t freeBytes = 0, totalBytes = 0;
  REMAT_CUDA_CHECK(cudaMemGetInfo(&freeBytes, &totalBytes));
  uint64_t available = freeBytes;
  if (p.arenaBytes > available || pad > available - p.arenaBytes ||
      workspace > available - p.arenaBytes - pad)
    throw PlanError(plan.source + ": /arena_bytes: the arena (" +
                    std::to_string(p.arenaBytes) + " B) and workspace (" +
                    std::to_string(workspace) +
                    " B) need more than the device's " +
                    std::to_string(freeBytes) + " B free (of " +
                    std::to_string(totalBytes) + " B)");
}

uint64_t CudaBackend::workspaceBytes(const LoadedPlan &plan) const {
  uint64_t bytes = cudaWorkspaceFor(plan).total();
  state->plannedWorkspace = bytes;
  return bytes;
}

void *CudaBackend::allocateArena(uint64_t bytes, uint64_t alignment) {
  State &s = *state;
  // cudaMalloc returns 256-byte aligned memory; larger alignments pad.
  uint64_t pad = alignment > 256 ? alignment : 0;
  size_t freeBytes = 0, totalBytes = 0;
  REMAT_CUDA_CHECK(cudaMemGetInfo(&freeBytes, &totalBytes));
  // (checkSupport refused this with the plan's name; this guards direct
  // callers. Overflow-safe: bytes may be anything up to 2^64 - 1.)
  uint64_t available = freeBytes;
  if (bytes > available || pad > available - bytes ||
      s.plannedWorkspace > available - bytes - pad)
    throw std::runtime_error(
        "cuda: the arena (" + std::to_string(bytes) + " B) and workspace (" +
        std::to_string(s.plannedWorkspace) +
        " B) need more than the device's " + std::to_string(freeBytes) +
        " B free (of " + std::to_string(totalBytes) + " B)");
  void *raw = nullptr;
  REMAT_CUDA_CHECK(cudaMalloc(&raw, size_t(bytes + pad)));
  REMAT_CUDA_CHECK(cudaMemsetAsync(raw, 0, size_t(bytes + pad), s.stream));
  REMAT_CUDA_CHECK(cudaStreamSynchronize(s.stream));
  uintptr_t addr = reinterpret_cast<uintptr_t>(raw);
  if (pad)
    addr = (addr + alignment - 1) / alignment * alignment;
  void *base = reinterpret_cast<void *>(addr);
  s.arenaAllocations[base] = raw;
  ++s.numArenaAllocations;
  s.samplePeak();
  return base;
}

void CudaBackend::freeArena(void *base) {
  State &s = *state;
  auto it = s.arenaAllocations.find(base);
  if (it == s.arenaAllocations.end())
    return;
  if (s.mode == Mode::Capturing)
    s.abortCapture();
  cudaStreamSynchronize(s.stream); // no throw: called from destructors
  s.destroyGraph();
  cudaFree(it->second);
  s.arenaAllocations.erase(it);
}

void CudaBackend::prepare(const LoadedPlan &plan) {
  State &s = *state;
  CudaWorkspace split = cudaWorkspaceFor(plan);
  uint64_t bytes = split.total();
  s.plannedWorkspace = bytes;
  s.destroyGraph();
  s.ctx.status = nullptr; // until the new workspace exists
  s.ctx.scratch = nullptr;
  if (s.workspace) {
    char *old = s.workspace;
    s.workspace = nullptr;
    REMAT_CUDA_CHECK(cudaFree(old));
  }
  REMAT_CUDA_CHECK(cudaMalloc(reinterpret_cast<void **>(&s.workspace), bytes));
  REMAT_CUDA_CHECK(cudaMemsetAsync(s.workspace, 0, bytes, s.stream));
  s.workspaceSize = bytes;
  uint64_t cublasBytes = split.cublas;
  s.ctx.status = reinterpret_cast<DeviceStatus *>(s.workspace);
  if (cublasBytes)
    REMAT_CUBLAS_CHECK(cublasSetWorkspace(s.cublas, s.workspace + kStatusBytes,
                                          size_t(cublasBytes)));
  s.ctx.scratch = s.workspace + kStatusBytes + cublasBytes;
  s.ctx.scratchBytes = bytes - kStatusBytes - cublasBytes;
  s.deviceStepValue = -1;
  s.lastCallStep = -1;
  s.stepPlaces.clear();
  for (size_t i = 0; i < plan.steps.size(); ++i)
    s.stepPlaces.push_back(plan.stepPlace(i));
  REMAT_CUDA_CHECK(cudaStreamSynchronize(s.stream));
  s.samplePeak();
}

void CudaBackend::copyIn(void *dst, const void *src, uint64_t bytes) {
  State &s = *state;
  s.hostAccess();
  // Pageable source: returns once staged, so the caller may reuse it.
  REMAT_CUDA_CHECK(cudaMemcpyAsync(dst, src, size_t(bytes),
                                   cudaMemcpyHostToDevice, s.stream));
}

bool CudaBackend::copyInputAsync(void *dst, const void *src, uint64_t bytes,
                                 int64_t trainingStep) {
  State &s = *state;
  s.hostAccess(); // like copyIn: ordered before the step, never captured
  s.stageInput(dst, src, bytes, trainingStep);
  return true;
}

bool CudaBackend::generateInput(void *dst, const SyntheticRequest &request) {
  State &s = *state;
  s.hostAccess(); // like copyIn: ordered before the step, never captured
  cuda::launchSynthetic(dst, request, s.stream);
  return true;
}

void CudaBackend::copyOut(void *dst, const void *src, uint64_t bytes) {
  State &s = *state;
  s.hostAccess();
  REMAT_CUDA_CHECK(cudaMemcpyAsync(dst, src, size_t(bytes),
                                   cudaMemcpyDeviceToHost, s.stream));
  REMAT_CUDA_CHECK(cudaStreamSynchronize(s.stream));
}

void CudaBackend::State::runStep(const KernelCall &call) {
  State &s = *this;
  if (!s.ctx.status)
    throw std::logic_error("cuda backend: runStep before prepare");
  if (!s.inStep)
    s.setTrainingStep(call.trainingStep);
  s.lastCallStep = call.trainingStep;
  if (s.mode == Mode::Replaying) {
    size_t position = s.pending.size();
    if (position < s.captured.size() &&
        s.captured[position] == StepSignature::of(call)) {
      s.pending.push_back(call);
      return;
    }
    // Not the captured sequence: run what was queued, drop the graph.
    s.flushPending();
    s.destroyGraph();
    s.graphsEnabled = false;
  }
  if (s.mode != Mode::Capturing) {
    dispatch(call, s.ctx);
    return;
  }
  try {
    dispatch(call, s.ctx);
  } catch (const std::exception &e) {
    // Possibly the capture's own failure (an operation a capture does not
    // support): nothing of this step has run yet, so run it all eagerly,
    // this call included, which throws again if the error is real.
    cudaGraph_t graph = nullptr;
    cudaStreamEndCapture(s.stream, &graph);
    if (graph)
      cudaGraphDestroy(graph);
    s.mode = Mode::Eager;
    s.runCapturedEagerly(e.what());
    dispatch(call, s.ctx);
    return;
  } catch (...) {
    s.abortCapture();
    throw;
  }
  s.captured.push_back(StepSignature::of(call));
  s.capturedCalls.push_back(call);
}

void CudaBackend::runStep(const KernelCall &call) {
  try {
    state->runStep(call);
  } catch (...) {
    // Reported now: the synchronize of an executor's destructor (noexcept)
    // must not throw a sticky device error again.
    state->errorThrown = true;
    throw;
  }
}

void CudaBackend::beginTrainingStep(int64_t trainingStep) {
  State &s = *state;
  // Leftovers of a step that threw before endTrainingStep: its capture
  // (never to be completed) or its queued calls (the step failed).
  s.abortCapture();
  s.pending.clear();
  s.inStep = true;
  s.anyStepBegun = true;
  s.currentStep = trainingStep;
  s.hostTouched = false;
  s.mode = Mode::Eager;
  s.setTrainingStep(trainingStep);
  if (!s.graphsEnabled)
    return;
  if (s.graphExec) {
    s.mode = Mode::Replaying;
    s.pending.clear();
  } else if (trainingStep >= 1 && s.previousStepClean &&
             s.captureAttempts < kMaxCaptureAttempts) {
    ++s.captureAttempts;
    s.captured.clear();
    s.capturedCalls.clear();
    REMAT_CUDA_CHECK(
        cudaStreamBeginCapture(s.stream, cudaStreamCaptureModeRelaxed));
    s.mode = Mode::Capturing;
  }
}

void CudaBackend::endTrainingStep(int64_t trainingStep) {
  State &s = *state;
  if (s.mode == Mode::Capturing) {
    s.finishCapture(true);
  } else if (s.mode == Mode::Replaying) {
    // A shorter step than the one captured, or a failed launch: the queued
    // calls have not run, so they run eagerly and graphs stay off.
    bool complete = s.pending.size() == s.captured.size();
    cudaError_t err =
        complete ? cudaGraphLaunch(s.graphExec, s.stream) : cudaSuccess;
    if (complete && err == cudaSuccess) {
      s.pending.clear();
      ++s.numReplays;
    } else {
      if (err != cudaSuccess) {
        std::fprintf(stderr,
                     "remat: cuda: cudaGraphLaunch failed (%s); running "
                     "every training step eagerly\n",
                     cudaGetErrorString(err));
        (void)cudaGetLastError();
      }
      s.flushPending();
      s.destroyGraph();
      s.graphsEnabled = false;
    }
  }
  s.mode = Mode::Eager;
  s.previousStepClean = !s.hostTouched;
  s.inStep = false;
}

void CudaBackend::synchronize() {
  State &s = *state;
  // Called while an exception unwinds (an executor destroyed because a step
  // threw), a second exception would terminate the program: wait, report
  // nothing.
  if (std::uncaught_exceptions() > 0) {
    try {
      s.hostAccess();
    } catch (...) {
    }
    if (s.stream)
      cudaStreamSynchronize(s.stream);
    return;
  }
  try {
    s.hostAccess();
    if (!s.ctx.status) {
      REMAT_CUDA_CHECK(cudaStreamSynchronize(s.stream));
      return;
    }
    REMAT_CUDA_CHECK(cudaMemcpyAsync(s.hostStatus, s.ctx.status,
                                     sizeof(DeviceStatus),
                                     cudaMemcpyDeviceToHost, s.stream));
    REMAT_CUDA_CHECK(cudaStreamSynchronize(s.stream));
  } catch (const std::exception &) {
    if (s.errorThrown)
      return;
    s.errorThrown = true;
    throw;
  }
  s.samplePeak();
  const DeviceStatus &st = *s.hostStatus;
  if (!st.errorFlag)
    return;
  std::string place =
      st.errorStep >= 0 && size_t(st.errorStep) < s.stepPlaces.size()
          ? s.stepPlaces[size_t(st.errorStep)]
          : "step " + std::to_string(st.errorStep);
  std::string message = place + ": " +
                        (st.errorKind == 0 ? "index " : "label ") +
                        std::to_string(st.errorValue) + " at position " +
                        std::to_string(st.errorPosition) + " is outside [0, " +
                        std::to_string(st.errorLimit) + ")";
  // The step that recorded it ran since the previous synchronize, in the
  // latest training step.
  if (s.lastCallStep >= 0)
    message += " (training step " + std::to_string(s.lastCallStep + 1) + ")";
  message += " (detected on the device, reported at synchronize)";
  // Clear the record so the next synchronize (e.g. the executor's
  // destructor) does not throw the same error again.
  REMAT_CUDA_CHECK(cudaMemsetAsync(&s.ctx.status->errorFlag, 0,
                                   sizeof(DeviceStatus) - sizeof(int64_t),
                                   s.stream));
  REMAT_CUDA_CHECK(cudaStreamSynchronize(s.stream));
  s.hostStatus->errorFlag = 0;
  throw std::runtime_error(message);
}

uint64_t CudaBackend::contextBytes() const { return state->contextBytes; }

uint64_t CudaBackend::devicePeakBytes() const {
  state->samplePeak();
  return state->peakBytes;
}

int CudaBackend::arenaAllocations() const { return state->numArenaAllocations; }

int64_t CudaBackend::graphsCaptured() const { return state->numCaptured; }
int64_t CudaBackend::graphReplays() const { return state->numReplays; }

std::unique_ptr<Backend> createCudaBackend() {
  return std::make_unique<CudaBackend>();
}

int cudaDeviceCount() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess)
    return 0;
  return count;
}

uint64_t cudaDeviceUsedBytes() {
  size_t freeBytes = 0, totalBytes = 0;
  if (cudaMemGetInfo(&freeBytes, &totalBytes) != cudaSuccess)
    return 0;
  return totalBytes - freeBytes;
}

} // namespace remat::runtime
