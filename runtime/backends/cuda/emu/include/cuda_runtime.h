//===- cuda_runtime.h - The CUDA emulator's runtime API and kernel model --===//
//
// Stands in for the toolkit's cuda_runtime.h when the CUDA backend is built
// with REMAT_CUDA_EMULATOR=ON: the same kernel sources (kernels/*.cu) and
// host code (Cuda*.cpp) compile with the host C++ compiler and run on
// the CPU, so the [cuda] tests check the backend's logic on machines
// without a GPU. Nothing here measures speed or a GPU's device memory.
//
// What it models (runtime/backends/cuda/emu/CudaEmu*.cpp):
// - a launch runs every block of the grid in turn; the threads of a block
//   are fibers that switch only at __syncthreads and warp shuffles, so
//   block barriers and warp-synchronous code behave as on the GPU. A
//   barrier that not every live thread reaches (a hang on the GPU) stops
//   the launch: stderr names the kernel, block and thread, and
//   cudaGetLastError returns cudaErrorLaunchFailure. By default every
//   ready thread runs once per round, in index order; REMAT_CUDA_EMU_ORDER=
//   reverse runs blocks, warps and lanes in reverse order and each warp as
//   far as its shuffles allow before the next warp starts. Code that
//   depends on an order the GPU does not promise (a missing __syncthreads)
//   gives different results under the two;
// - launch geometry is checked against the GPU's limits (1024 threads per
//   block, 65535 blocks in y and z): cudaGetLastError reports a bad one;
// - one stream order: work runs when enqueued, or is recorded while a
//   stream captures a graph (cudaStreamBeginCapture .. EndCapture) and runs
//   at cudaGraphLaunch; synchronizing a capturing stream invalidates the
//   capture, as on the device;
// - device memory is host memory, counted against an emulated capacity
//   (REMAT_CUDA_EMU_MEMORY bytes, default 8 GiB) that cudaMemGetInfo
//   reports; cudaMalloc past it fails with cudaErrorMemoryAllocation.
//   Beside the allocations (rounded to REMAT_CUDA_EMU_GRANULARITY) the
//   count holds modeled runtime memory: the context, cuBLAS handles, each
//   kernel's module from its first launch, instantiated graphs
//   (memoryUsage() below; sizes in CudaEmuInternal.h).
//
//===----------------------------------------------------------------------===//
#ifndef REMAT_CUDA_EMU_CUDA_RUNTIME_H
#define REMAT_CUDA_EMU_CUDA_RUNTIME_H

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <tuple>
#include <type_traits>
#include <utility>

#define REMAT_CUDA_EMULATION 1

// Kernel-language qualifiers. Shared memory is a function-local static:
// blocks run one at a time, so every thread of the running block sees the
// same array, as on the GPU.
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __shared__ static
#define __launch_bounds__(...)

//===----------------------------------------------------------------------===//
// Types and error codes
//===----------------------------------------------------------------------===//

enum cudaError_t {
  cudaSuccess = 0,
  cudaErrorInvalidValue = 1,
  cudaErrorMemoryAllocation = 2,
  cudaErrorInvalidConfiguration = 9,
  cudaErrorInvalidDevice = 101,
  cudaErrorNoDevice = 100,
  cudaErrorInvalidResourceHandle = 400,
  cudaErrorStreamCaptureUnsupported = 900,
  cudaErrorStreamCaptureInvalidated = 901,
  cudaErrorStreamCaptureWrongThread = 908,
  cudaErrorIllegalState = 401,
  cudaErrorLaunchFailure = 719,
};

enum cudaMemcpyKind {
  cudaMemcpyHostToHost = 0,
  cudaMemcpyHostToDevice = 1,
  cudaMemcpyDeviceToHost = 2,
  cudaMemcpyDeviceToDevice = 3,
  cudaMemcpyDefault = 4,
};

enum cudaStreamCaptureMode {
  cudaStreamCaptureModeGlobal = 0,
  cudaStreamCaptureModeThreadLocal = 1,
  cudaStreamCaptureModeRelaxed = 2,
};

inline constexpr unsigned cudaStreamNonBlocking = 1;
inline constexpr unsigned cudaEventDisableTiming = 2;

struct dim3 {
  unsigned x, y, z;
  constexpr dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1)
      : x(x_), y(y_), z(z_) {}
};
struct uint3 {
  unsigned x = 0, y = 0, z = 0;
};

namespace cudaemu {
struct Stream;
struct Event;
struct Graph;
struct GraphExec;
} // namespace cudaemu

using cudaStream_t = cudaemu::Stream *;
using cudaEvent_t = cudaemu::Event *;
using cudaGraph_t = cudaemu::Graph *;
using cudaGraphExec_t = cudaemu::GraphExec *;

//===----------------------------------------------------------------------===//
// Runtime API (the subset the backend uses)
//===----------------------------------------------------------------------===//

const char *cudaGetErrorString(cudaError_t err);
const char *cudaGetErrorName(cudaError_t err);
cudaError_t cudaGetLastError();
cudaError_t cudaPeekAtLastError();
cudaError_t cudaGetDeviceCount(int *count);
cudaError_t cudaSetDevice(int device);
cudaError_t cudaDeviceSynchronize();
cudaError_t cudaMemGetInfo(size_t *freeBytes, size_t *totalBytes);

cudaError_t cudaMalloc(void **ptr, size_t bytes);
template <typename T> cudaError_t cudaMalloc(T **ptr, size_t bytes) {
  return cudaMalloc(reinterpret_cast<void **>(ptr), bytes);
}
cudaError_t cudaFree(void *ptr);
cudaError_t cudaMallocHost(void **ptr, size_t bytes);
cudaError_t cudaFreeHost(void *ptr);

cudaError_t cudaMemcpy(void *dst, const void *src, size_t bytes,
                       cudaMemcpyKind kind);
cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t bytes,
                            cudaMemcpyKind kind, cudaStream_t stream = nullptr);
cudaError_t cudaMemsetAsync(void *dst, int value, size_t bytes,
                            cudaStream_t stream = nullptr);

cudaError_t cudaStreamCreate(cudaStream_t *stream);
cudaError_t cudaStreamCreateWithFlags(cudaStream_t *stream, unsigned flags);
cudaError_t cudaStreamDestroy(cudaStream_t stream);
cudaError_t cudaStreamSynchronize(cudaStream_t stream);
cudaError_t cudaStreamBeginCapture(cudaStream_t stream,
                                   cudaStreamCaptureMode mode);
cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t *graph);

cudaError_t cudaEventCreate(cudaEvent_t *event);
cudaError_t cudaEventCreateWithFlags(cudaEvent_t *event, unsigned flags);
cudaError_t cudaEventDestroy(cudaEvent_t event);
cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream = nullptr);
cudaError_t cudaEventSynchronize(cudaEvent_t event);
/// One stream order: every enqueued work has run, so a wait is a no-op
/// (checked arguments only; NCCL's communication stream, CudaNccl.cpp).
cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event,
                                unsigned flags = 0);

cudaError_t cudaGraphInstantiate(cudaGraphExec_t *exec, cudaGraph_t graph,
                                 unsigned long long flags = 0);
cudaError_t cudaGraphDestroy(cudaGraph_t graph);
cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec);
cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t stream);

//===----------------------------------------------------------------------===//
// The emulator's own interface (used by the shims and the launch macro)
//===----------------------------------------------------------------------===//

namespace cudaemu {

/// Runs `work` in stream order: now, or at the graph's launch when
/// `stream` is capturing. Returns the error a capture records (none today).
cudaError_t enqueue(cudaStream_t stream, std::function<void()> work);

/// Whether the stream is capturing (work is recorded, not run).
bool isCapturing(cudaStream_t stream);

/// Runs `thread` for every thread of the grid (see the file comment).
/// `kernelName` names the kernel in a barrier error.
void runGrid(const char *kernelName, dim3 grid, dim3 block,
             const std::function<void()> &thread);

/// Checks a launch's geometry; a bad one becomes the next
/// cudaGetLastError. Returns whether the launch may run.
bool checkLaunchGeometry(dim3 grid, dim3 block, size_t sharedBytes);

/// Runs blocks and threads in reverse order from now on (or forward again);
/// the default comes from REMAT_CUDA_EMU_ORDER.
void setReverseOrder(bool reverse);

/// Index state of the running emulated thread.
/// (Not named threadIdx etc.: those are macros below.)
struct ThreadIndex {
  uint3 thread, block;
  dim3 blockShape, gridShape;
};
ThreadIndex &currentThread();

void syncThreads();
/// Warp-synchronous exchange: every lane of `mask` publishes 8 bytes and
/// reads lane `source`'s. Aborts if a lane of the mask does not take part.
uint64_t warpExchange(unsigned mask, uint64_t mine, int source);

/// Device memory the emulated GPU counts, by what took it (cudaMemGetInfo's
/// used bytes are their sum; CudaEmuInternal.h, Device, has the model).
struct MemoryUsage {
  uint64_t context = 0;   ///< held before anything else
  uint64_t requested = 0; ///< bytes live cudaMallocs asked for
  uint64_t allocated = 0; ///< the same, rounded up to the granularity
  uint64_t handles = 0;   ///< cuBLAS handles
  uint64_t modules = 0;   ///< kernels' and libraries' modules loaded so far
  uint64_t graphs = 0;    ///< instantiated graphs
  uint64_t used = 0;      ///< all of it: what cudaMemGetInfo reports
};
MemoryUsage memoryUsage();

/// Counts the module of `key` (a kernel, a library's entry point) as loaded
/// on the device, the first time only (CUDA's lazy loading).
void loadModule(const void *key);

/// The launch of `kernel` with its arguments copied (a graph replays them).
template <typename... Params> struct Launch {
  const char *name;
  void (*kernel)(Params...);
  dim3 grid, block;
  size_t sharedBytes;
  cudaStream_t stream;

  template <typename... Args> void operator()(Args &&...args) const {
    if (!checkLaunchGeometry(grid, block, sharedBytes))
      return;
    loadModule(reinterpret_cast<const void *>(kernel));
    std::tuple<std::decay_t<Params>...> copied(std::forward<Args>(args)...);
    auto *k = kernel;
    const char *kernelName = name;
    dim3 g = grid, b = block;
    enqueue(stream, [k, kernelName, g, b, copied]() {
      runGrid(kernelName, g, b, [&]() { std::apply(k, copied); });
    });
  }
};

template <typename... Params>
Launch<Params...> launch(const char *name, dim3 grid, dim3 block,
                         size_t sharedBytes, cudaStream_t stream,
                         void (*kernel)(Params...)) {
  return Launch<Params...>{name, kernel, grid, block, sharedBytes, stream};
}

} // namespace cudaemu

//===----------------------------------------------------------------------===//
// Kernel built-ins
//===----------------------------------------------------------------------===//

#define threadIdx (::cudaemu::currentThread().thread)
#define blockIdx (::cudaemu::currentThread().block)
#define blockDim (::cudaemu::currentThread().blockShape)
#define gridDim (::cudaemu::currentThread().gridShape)

inline void __syncthreads() { ::cudaemu::syncThreads(); }
inline void __threadfence() {}
inline void __threadfence_system() {}

template <typename T>
T __shfl_xor_sync(unsigned mask, T value, int laneMask, int width = 32) {
  static_assert(sizeof(T) <= 8 && std::is_trivially_copyable_v<T>,
                "emulated shuffles move at most 8 bytes");
  uint64_t bits = 0;
  std::memcpy(&bits, &value, sizeof(T));
  int lane = int(::cudaemu::currentThread().thread.x) & 31;
  int segment = lane & ~(width - 1);
  int source = segment + ((lane - segment) ^ laneMask);
  if (source >= segment + width)
    source = lane;
  bits = ::cudaemu::warpExchange(mask, bits, source);
  T out;
  std::memcpy(&out, &bits, sizeof(T));
  return out;
}

// Blocks run one at a time and their threads switch only at barriers, so
// an atomic is a plain read-modify-write.
inline int atomicCAS(int *address, int compare, int value) {
  int old = *address;
  if (old == compare)
    *address = value;
  return old;
}
inline unsigned atomicCAS(unsigned *address, unsigned compare,
                          unsigned value) {
  unsigned old = *address;
  if (old == compare)
    *address = value;
  return old;
}
inline unsigned long long atomicCAS(unsigned long long *address,
                                    unsigned long long compare,
                                    unsigned long long value) {
  unsigned long long old = *address;
  if (old == compare)
    *address = value;
  return old;
}
template <typename T> T atomicAdd(T *address, T value) {
  T old = *address;
  *address = old + value;
  return old;
}

// CUDA's device overloads of min and max.
inline int min(int a, int b) { return a < b ? a : b; }
inline int max(int a, int b) { return a > b ? a : b; }
inline unsigned min(unsigned a, unsigned b) { return a < b ? a : b; }
inline unsigned max(unsigned a, unsigned b) { return a > b ? a : b; }
inline long min(long a, long b) { return a < b ? a : b; }
inline long max(long a, long b) { return a > b ? a : b; }
inline long long min(long long a, long long b) { return a < b ? a : b; }
inline long long max(long long a, long long b) { return a > b ? a : b; }
inline unsigned long min(unsigned long a, unsigned long b) {
  return a < b ? a : b;
}
inline unsigned long max(unsigned long a, unsigned long b) {
  return a > b ? a : b;
}
inline float min(float a, float b) { return fminf(a, b); }
inline float max(float a, float b) { return fmaxf(a, b); }
inline double min(double a, double b) { return fmin(a, b); }
inline double max(double a, double b) { return fmax(a, b); }
inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
inline double rsqrt(double x) { return 1.0 / sqrt(x); }
inline float __int_as_float(int bits) {
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}
inline float __uint_as_float(unsigned bits) {
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}
inline unsigned __float_as_uint(float f) {
  unsigned bits;
  std::memcpy(&bits, &f, sizeof bits);
  return bits;
}

/// `kernel<<<grid, block, sharedBytes, stream>>>(args...)` in the sources
/// is written REMAT_LAUNCH(grid, block, sharedBytes, stream, kernel)(args...)
/// (kernels/common.cuh), which becomes this.
#define REMAT_EMU_LAUNCH(grid, block, sharedBytes, stream, ...)                \
  ::cudaemu::launch(#__VA_ARGS__, grid, block, sharedBytes, stream,            \
                    __VA_ARGS__)

#endif // REMAT_CUDA_EMU_CUDA_RUNTIME_H
