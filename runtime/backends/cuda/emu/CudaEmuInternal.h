//===- CudaEmuInternal.h - State the CUDA emulator's files share ---------===//
//
// Internal to emu/ (emu/include is the emulator's public side): the emulated
// device and the last error, defined in CudaEmuRuntime.cpp, and a stream and
// the graph its capture records (CudaEmuStream.cpp).
//
//===----------------------------------------------------------------------===//
#ifndef REMAT_CUDA_EMU_CUDAEMUINTERNAL_H
#define REMAT_CUDA_EMU_CUDAEMUINTERNAL_H

#include "cuda_runtime.h"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <unordered_set>
#include <vector>

namespace cudaemu {

/// A captured graph (cudaGraph_t): the work its capture recorded, in order.
struct Graph {
  std::vector<std::function<void()>> work;
};

/// A stream (cudaStream_t); work on it runs when enqueued unless it captures.
struct Stream {
  bool capturing = false;
  bool invalidated = false;
  Graph *graph = nullptr; ///< the capture in progress
  ~Stream() { delete graph; }
};

/// Prints "cuda emulator: <message>" and aborts.
[[noreturn]] void fatal(const std::string &message);

/// The byte count in environment variable `name`; `fallback` when it is
/// unset or empty. Anything else is fatal.
uint64_t envBytes(const char *name, uint64_t fallback);

/// Memory the emulated context holds before the first allocation, so
/// cudaMemGetInfo's used bytes start above zero as on a GPU.
inline constexpr uint64_t kContextBytes = 4u << 20;

/// Allocations from this size on are mapped lazily (mmap, MAP_NORESERVE)
/// and read as zeros until written, instead of being filled with 0xA5: a
/// plan of tens of GiB can be allocated (and zeroed by madvise) without
/// touching host memory it never uses.
inline constexpr uint64_t kLazyMapBytes = uint64_t(1) << 30;

/// One cudaMalloc: the bytes asked for, the bytes counted (rounded up to
/// the allocation granularity), and whether it is mapped lazily.
struct Allocation {
  size_t requested = 0, counted = 0;
  bool mapped = false;
};

/// The emulated GPU: its memory, the legacy stream, the thread order.
///
/// Device memory is counted as a GPU's cudaMemGetInfo sees it: the
/// context, cudaMalloc's allocations rounded up to REMAT_CUDA_EMU_GRANULARITY
/// (default 256 B; a GPU maps 2 MiB pages), and what the runtime and
/// libraries take beside them: a cuBLAS handle (REMAT_CUDA_EMU_HANDLE_BYTES,
/// default 512 KiB, until cublasDestroy), each kernel's module on its first
/// launch or capture, cuBLAS's and cub's on their first call
/// (REMAT_CUDA_EMU_MODULE_BYTES each, default 64 KiB, never unloaded, as
/// CUDA's lazy loading does), and an instantiated graph
/// (REMAT_CUDA_EMU_GRAPH_NODE_BYTES per recorded node, default 1 KiB, until
/// cudaGraphExecDestroy). The sizes are a model, not a GPU's; memoryUsage()
/// (cuda_runtime.h) reports each part, so tests can check that the CUDA
/// backend accounts for every byte cudaMemGetInfo shows.
struct Device {
  std::recursive_mutex mutex;
  uint64_t capacity = envBytes("REMAT_CUDA_EMU_MEMORY", uint64_t(8) << 30);
  uint64_t granularity = envBytes("REMAT_CUDA_EMU_GRANULARITY", 256);
  uint64_t handleBytes = envBytes("REMAT_CUDA_EMU_HANDLE_BYTES", 512u << 10);
  uint64_t moduleBytes = envBytes("REMAT_CUDA_EMU_MODULE_BYTES", 64u << 10);
  uint64_t graphNodeBytes = envBytes("REMAT_CUDA_EMU_GRAPH_NODE_BYTES", 1024);
  uint64_t used = kContextBytes;
  /// The parts of `used` beside the context (memoryUsage()).
  uint64_t requested = 0, allocated = 0, handles = 0, modules = 0, graphs = 0;
  std::map<void *, Allocation> allocations;
  std::unordered_set<const void *> loadedModules;
  std::unordered_set<void *> pinned;
  Stream legacy;
  bool reverse = [] {
    const char *order = std::getenv("REMAT_CUDA_EMU_ORDER");
    if (!order || !*order || std::string(order) == "forward")
      return false;
    if (std::string(order) == "reverse")
      return true;
    fatal(std::string("REMAT_CUDA_EMU_ORDER=") + order +
          " (expected forward or reverse)");
  }();
};

/// The one emulated device.
Device &device();

/// What cudaGetLastError returns next on this host thread.
extern thread_local cudaError_t lastError;

/// Records `err` as the last error and returns it.
cudaError_t fail(cudaError_t err);

/// A synchronous call on a capturing stream: invalidates the capture
/// (CudaEmuStream.cpp).
cudaError_t refuseIfCapturing(Stream *s);

/// Counts device memory the runtime or a library takes beside cudaMalloc
/// (`part` is one of Device's handles / graphs; negative to give it back).
void countRuntimeBytes(uint64_t Device::*part, int64_t bytes);

} // namespace cudaemu

#endif // REMAT_CUDA_EMU_CUDAEMUINTERNAL_H
