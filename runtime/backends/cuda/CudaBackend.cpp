//===- CudaBackend.cpp - The CUDA backend (cuBLAS + kernels, CUDA graphs) -===//
//
// CudaBackend's Backend implementation: the device, stream and cuBLAS
// handle, the arena and workspace, copies, and the device-side error report
// at synchronize. Workspace sizing is in CudaWorkspace.cpp, the kernel
// dispatch in CudaDispatch.cpp, graph capture and replay in CudaGraph.cpp.
//
//===----------------------------------------------------------------------===//
#include "runtime/backends/cuda/CudaBackend.h"

#include "runtime/backends/cuda/CudaBackendInternal.h"
#include "runtime/backends/cuda/CudaCheck.h"
#include "runtime/backends/cuda/kernels/Kernels.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace remat::runtime {

using cuda::alignUp;
using cuda::DeviceStatus;
using cuda::GraphMode;

namespace {

constexpr uint64_t kStatusBytes = CudaWorkspace::kStatusBytes;

bool envFlag(const char *name, bool fallback) {
  const char *v = std::getenv(name);
  if (!v || !*v)
    return fallback;
  return std::strcmp(v, "0") != 0;
}

} // namespace

void CudaBackend::State::stageInput(void *dst, const void *src, uint64_t bytes,
                                    int64_t step) {
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

void CudaBackend::State::release() noexcept {
  abortCapture();
  if (stream)
    cudaStreamSynchronize(stream);
  if (graphExec)
    cudaGraphExecDestroy(graphExec);
  graphExec = nullptr;
  for (auto &[aligned, allocation] : arenaAllocations)
    cudaFree(allocation.raw);
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

CudaBackend::CudaBackend() : state(std::make_unique<State>()) {
  State &s = *state;
  int count = 0;
  cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess || count == 0)
    throw std::runtime_error(
        std::string("cuda backend: no CUDA device (cudaGetDeviceCount: ") +
        (err != cudaSuccess ? cudaGetErrorString(err) : "0 devices") + ")");
  // Several ranks on one machine (an MPI launcher's local rank): a device
  // each, as NCCL needs.
  for (const char *name :
       {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID"})
    if (const char *local = std::getenv(name); local && *local) {
      s.device = std::max(0, std::atoi(local)) % count;
      break;
    }
  try {
    REMAT_CUDA_CHECK(cudaSetDevice(s.device));
    REMAT_CUDA_CHECK(cudaFree(nullptr)); // create the context now
    size_t freeBytes = 0, totalBytes = 0;
    REMAT_CUDA_CHECK(cudaMemGetInfo(&freeBytes, &totalBytes));
    s.memory.contextBytes = totalBytes - freeBytes;
    s.memory.peakBytes = s.lastUsed = s.memory.contextBytes;
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
    s.account(&CudaMemoryReport::handleBytes);
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
    if (d == DType::F16 || d == DType::F64)
      throw PlanError(plan.bufferPlace(i) + ": dtype " + dtypeName(d) +
                      " is not supported by the cuda backend (f32 and bf16 "
                      "only)");
    // Offsets are multiples of the alignment only: below the element size
    // a buffer may start inside an element, which a GPU load faults on.
    if (p.alignment < dtypeSize(d))
      throw PlanError(plan.source + ": /alignment: " +
                      std::to_string(p.alignment) + " B is below the " +
                      std::to_string(dtypeSize(d)) + "-byte elements of " +
                      dtypeName(d) + " buffer '" + p.buffers[i].name +
                      "'; the cuda backend needs every buffer aligned to "
                      "its element size");
    if (p.buffers[i].shape.size() > size_t(cuda::kMaxRank))
      throw PlanError(plan.bufferPlace(i) + ": rank " +
                      std::to_string(p.buffers[i].shape.size()) +
                      " exceeds the cuda backend's limit of " +
                      std::to_string(cuda::kMaxRank));
  }
  // One block per row: past grid.x's 2^31 - 1 blocks a launch would fail
  // (or, cast to unsigned, cover too few rows).
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    std::vector<TensorType> inputs;
    for (int64_t b : p.steps[i].inputs)
      inputs.push_back(
          {p.buffers[size_t(b)].dtype, p.buffers[size_t(b)].shape});
    int64_t rows = cuda::rowBlocksFor(plan.steps[i].op, inputs);
    if (rows > cuda::kMaxGridX)
      throw PlanError(plan.stepPlace(i) + ": " + std::to_string(rows) +
                      " rows; the cuda backend runs one block per row and "
                      "takes at most " +
                      std::to_string(cuda::kMaxGridX) + " (the grid's limit)");
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
  State::CallScope call(s);
  void *raw = nullptr;
  REMAT_CUDA_CHECK(cudaMalloc(&raw, size_t(bytes + pad)));
  // The budget counts `bytes`; the padding and the allocator's rounding
  // are overhead.
  int64_t taken = s.takeGrowth();
  s.memory.arenaBytes += bytes;
  s.memory.allocationBytes += taken - int64_t(bytes);
  uintptr_t addr = reinterpret_cast<uintptr_t>(raw);
  if (pad)
    addr = (addr + alignment - 1) / alignment * alignment;
  void *base = reinterpret_cast<void *>(addr);
  s.arenaAllocations[base] = {raw, bytes, taken};
  ++s.numArenaAllocations;
  REMAT_CUDA_CHECK(cudaMemsetAsync(raw, 0, size_t(bytes + pad), s.stream));
  REMAT_CUDA_CHECK(cudaStreamSynchronize(s.stream));
  return base;
}

void CudaBackend::freeArena(void *base) {
  State &s = *state;
  auto it = s.arenaAllocations.find(base);
  if (it == s.arenaAllocations.end())
    return;
  State::CallScope call(s);
  if (s.mode == GraphMode::Capturing)
    s.abortCapture();
  cudaStreamSynchronize(s.stream); // no throw: called from destructors
  s.destroyGraph();
  s.account(&CudaMemoryReport::moduleBytes);
  cudaFree(it->second.raw);
  s.forget(it->second, s.memory.arenaBytes);
  s.arenaAllocations.erase(it);
}

void CudaBackend::prepare(const LoadedPlan &plan) {
  State &s = *state;
  CudaWorkspace split = cudaWorkspaceFor(plan);
  uint64_t bytes = split.total();
  s.plannedWorkspace = bytes;
  State::CallScope call(s);
  s.destroyGraph();
  s.ctx.status = nullptr; // until the new workspace exists
  s.ctx.scratch = nullptr;
  if (s.workspace) {
    char *old = s.workspace;
    s.workspace = nullptr;
    s.account(&CudaMemoryReport::moduleBytes);
    REMAT_CUDA_CHECK(cudaFree(old));
    s.forget({old, s.workspaceSize, s.workspaceTaken}, s.memory.workspaceBytes);
    s.workspaceSize = 0;
    s.workspaceTaken = 0;
  }
  s.account(&CudaMemoryReport::moduleBytes);
  REMAT_CUDA_CHECK(cudaMalloc(reinterpret_cast<void **>(&s.workspace), bytes));
  s.workspaceTaken = s.takeGrowth();
  s.memory.workspaceBytes += bytes;
  s.memory.allocationBytes += s.workspaceTaken - int64_t(bytes);
  REMAT_CUDA_CHECK(cudaMemsetAsync(s.workspace, 0, bytes, s.stream));
  s.workspaceSize = bytes;
  s.workspaceSplit = split;
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
}

void CudaBackend::copyIn(void *dst, const void *src, uint64_t bytes) {
  State &s = *state;
  State::CallScope call(s);
  s.hostAccess();
  // Pageable source: returns once staged, so the caller may reuse it.
  REMAT_CUDA_CHECK(cudaMemcpyAsync(dst, src, size_t(bytes),
                                   cudaMemcpyHostToDevice, s.stream));
}

bool CudaBackend::copyInputAsync(void *dst, const void *src, uint64_t bytes,
                                 int64_t trainingStep) {
  State &s = *state;
  State::CallScope call(s);
  s.hostAccess(); // like copyIn: ordered before the step, never captured
  s.stageInput(dst, src, bytes, trainingStep);
  return true;
}

bool CudaBackend::generateInput(void *dst, const SyntheticRequest &request) {
  State &s = *state;
  State::CallScope call(s);
  s.hostAccess(); // like copyIn: ordered before the step, never captured
  cuda::launchSynthetic(dst, request, s.stream);
  return true;
}

void CudaBackend::copyOut(void *dst, const void *src, uint64_t bytes) {
  State &s = *state;
  State::CallScope call(s);
  s.hostAccess();
  REMAT_CUDA_CHECK(cudaMemcpyAsync(dst, src, size_t(bytes),
                                   cudaMemcpyDeviceToHost, s.stream));
  REMAT_CUDA_CHECK(cudaStreamSynchronize(s.stream));
}

void CudaBackend::runStep(const KernelCall &call) {
  // Within a training step the growth between its calls is accounted at
  // the next bracketed call (enterCall): no samples per kernel.
  std::optional<State::CallScope> scope;
  if (!state->inStep)
    scope.emplace(*state);
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
  State::CallScope call(*state);
  state->beginTrainingStep(trainingStep);
}

void CudaBackend::endTrainingStep(int64_t trainingStep) {
  State::CallScope call(*state);
  state->endTrainingStep();
}

void CudaBackend::synchronize() {
  State &s = *state;
  State::CallScope call(s);
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

uint64_t CudaBackend::contextBytes() const {
  return state->memory.contextBytes;
}

uint64_t CudaBackend::devicePeakBytes() const {
  state->samplePeak();
  return state->memory.peakBytes;
}

CudaMemoryReport CudaBackend::memoryReport() const {
  State &s = *state;
  s.enterCall();
  s.memory.usedBytes = s.lastUsed;
  return s.memory;
}

CudaWorkspace CudaBackend::workspaceSplit() const {
  return state->workspaceSplit;
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
