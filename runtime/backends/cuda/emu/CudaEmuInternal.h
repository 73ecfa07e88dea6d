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
#include <mutex>
#include <string>
#include <unordered_map>
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

/// The emulated GPU: its memory, the legacy stream, the thread order.
struct Device {
  std::recursive_mutex mutex;
  uint64_t capacity = envBytes("REMAT_CUDA_EMU_MEMORY", uint64_t(8) << 30);
  uint64_t used = kContextBytes;
  std::unordered_map<void *, size_t> allocations;
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

} // namespace cudaemu

#endif // REMAT_CUDA_EMU_CUDAEMUINTERNAL_H
