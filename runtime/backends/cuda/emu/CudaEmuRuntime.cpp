//===- CudaEmuRuntime.cpp - The CUDA emulator's device and memory API ----===//
//
// The emulated device (CudaEmuInternal.h) and the runtime calls about it:
// errors, the device, and memory. Device memory is host memory filled with
// 0xA5 bytes (lazily mapped zeros from 1 GiB on), counted against an
// emulated capacity that cudaMemGetInfo reports, beside the modeled
// memory of the runtime and libraries (memoryUsage()).
//
//===----------------------------------------------------------------------===//
#include "CudaEmuInternal.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

#include <sys/mman.h>
#include <unistd.h>

namespace cudaemu {

[[noreturn]] void fatal(const std::string &message) {
  std::fprintf(stderr, "cuda emulator: %s\n", message.c_str());
  std::fflush(stderr);
  std::abort();
}

uint64_t envBytes(const char *name, uint64_t fallback) {
  const char *text = std::getenv(name);
  if (!text || !*text)
    return fallback;
  char *end = nullptr;
  unsigned long long value = std::strtoull(text, &end, 10);
  if (!end || *end)
    fatal(std::string(name) + "=" + text + " is not a byte count");
  return value;
}

namespace {

constexpr size_t kAllocAlign = 256;

uint64_t roundUp(uint64_t bytes, uint64_t granule) {
  return (bytes + granule - 1) / granule * granule;
}

/// Bytes a lazily mapped allocation of `bytes` maps (whole pages).
size_t mappedBytes(size_t bytes) {
  static const size_t page = size_t(sysconf(_SC_PAGESIZE));
  return size_t(roundUp(bytes, page));
}

/// memset, except that whole pages of a lazily mapped allocation set to 0
/// are given back (madvise) rather than written: they read as zeros again.
void fill(void *dst, int value, size_t bytes) {
  char *begin = static_cast<char *>(dst), *end = begin + bytes;
  if (value == 0 && bytes >= (size_t(1) << 20)) {
    Device &d = device();
    std::lock_guard<std::recursive_mutex> lock(d.mutex);
    auto it = d.allocations.upper_bound(dst);
    if (it != d.allocations.begin()) {
      --it;
      char *base = static_cast<char *>(it->first);
      if (it->second.mapped &&
          end <= base + mappedBytes(it->second.requested)) {
        size_t page = mappedBytes(1);
        char *first = base + roundUp(uint64_t(begin - base), page);
        char *last = base + uint64_t(end - base) / page * page;
        if (first < last &&
            madvise(first, size_t(last - first), MADV_DONTNEED) == 0) {
          std::memset(begin, 0, size_t(first - begin));
          std::memset(last, 0, size_t(end - last));
          return;
        }
      }
    }
  }
  std::memset(dst, value, bytes);
}

} // namespace

Device &device() {
  static Device d;
  return d;
}

thread_local cudaError_t lastError = cudaSuccess;

cudaError_t fail(cudaError_t err) {
  lastError = err;
  return err;
}

} // namespace cudaemu

using namespace cudaemu;

const char *cudaGetErrorName(cudaError_t err) {
  switch (err) {
  case cudaSuccess:
    return "cudaSuccess";
  case cudaErrorInvalidValue:
    return "cudaErrorInvalidValue";
  case cudaErrorMemoryAllocation:
    return "cudaErrorMemoryAllocation";
  case cudaErrorInvalidConfiguration:
    return "cudaErrorInvalidConfiguration";
  case cudaErrorInvalidDevice:
    return "cudaErrorInvalidDevice";
  case cudaErrorNoDevice:
    return "cudaErrorNoDevice";
  case cudaErrorInvalidResourceHandle:
    return "cudaErrorInvalidResourceHandle";
  case cudaErrorStreamCaptureUnsupported:
    return "cudaErrorStreamCaptureUnsupported";
  case cudaErrorStreamCaptureInvalidated:
    return "cudaErrorStreamCaptureInvalidated";
  case cudaErrorStreamCaptureWrongThread:
    return "cudaErrorStreamCaptureWrongThread";
  case cudaErrorIllegalState:
    return "cudaErrorIllegalState";
  case cudaErrorLaunchFailure:
    return "cudaErrorLaunchFailure";
  }
  return "cudaErrorUnknown";
}

const char *cudaGetErrorString(cudaError_t err) {
  switch (err) {
  case cudaSuccess:
    return "no error";
  case cudaErrorInvalidValue:
    return "invalid argument";
  case cudaErrorMemoryAllocation:
    return "out of memory";
  case cudaErrorInvalidConfiguration:
    return "invalid configuration argument";
  case cudaErrorInvalidDevice:
    return "invalid device ordinal";
  case cudaErrorNoDevice:
    return "no CUDA-capable device is detected";
  case cudaErrorInvalidResourceHandle:
    return "invalid resource handle";
  case cudaErrorStreamCaptureUnsupported:
    return "operation not permitted when stream is capturing";
  case cudaErrorStreamCaptureInvalidated:
    return "operation failed due to a previous error during capture";
  case cudaErrorStreamCaptureWrongThread:
    return "attempt to terminate a thread-local capture sequence from "
           "another thread";
  case cudaErrorIllegalState:
    return "the operation cannot be performed in the present state";
  case cudaErrorLaunchFailure:
    return "unspecified launch failure";
  }
  return "unknown error";
}

cudaError_t cudaGetLastError() {
  cudaError_t err = lastError;
  lastError = cudaSuccess;
  return err;
}

cudaError_t cudaPeekAtLastError() { return lastError; }

cudaError_t cudaGetDeviceCount(int *count) {
  if (!count)
    return fail(cudaErrorInvalidValue);
  *count = 1;
  return cudaSuccess;
}

cudaError_t cudaSetDevice(int deviceIndex) {
  return deviceIndex == 0 ? cudaSuccess : fail(cudaErrorInvalidDevice);
}

cudaError_t cudaDeviceSynchronize() {
  return refuseIfCapturing(&device().legacy);
}

cudaError_t cudaMemGetInfo(size_t *freeBytes, size_t *totalBytes) {
  Device &d = device();
  std::lock_guard<std::recursive_mutex> lock(d.mutex);
  if (!freeBytes || !totalBytes)
    return fail(cudaErrorInvalidValue);
  *totalBytes = size_t(d.capacity);
  *freeBytes = size_t(d.capacity > d.used ? d.capacity - d.used : 0);
  return cudaSuccess;
}

cudaError_t cudaMalloc(void **ptr, size_t bytes) {
  Device &d = device();
  std::lock_guard<std::recursive_mutex> lock(d.mutex);
  if (!ptr)
    return fail(cudaErrorInvalidValue);
  *ptr = nullptr;
  // (Also keeps the rounding below from overflowing.)
  if (d.used > d.capacity || bytes > d.capacity - d.used)
    return fail(cudaErrorMemoryAllocation);
  uint64_t granule = std::max<uint64_t>(d.granularity, 1);
  size_t counted = size_t(roundUp(std::max<size_t>(bytes, 1), granule));
  if (d.used + counted > d.capacity)
    return fail(cudaErrorMemoryAllocation);
  Allocation a{bytes, counted, bytes >= kLazyMapBytes};
  void *p = nullptr;
  if (a.mapped) {
    p = mmap(nullptr, mappedBytes(bytes), PROT_READ | PROT_WRITE,
             MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED)
      return fail(cudaErrorMemoryAllocation);
  } else {
    size_t hostBytes = size_t(roundUp(std::max<size_t>(bytes, 1), kAllocAlign));
    p = std::aligned_alloc(kAllocAlign, hostBytes);
    if (!p)
      return fail(cudaErrorMemoryAllocation);
    // The GPU hands out whatever the memory held: not zeros.
    std::memset(p, 0xA5, hostBytes);
  }
  d.allocations[p] = a;
  d.used += counted;
  d.requested += bytes;
  d.allocated += counted;
  *ptr = p;
  return cudaSuccess;
}

cudaError_t cudaFree(void *ptr) {
  Device &d = device();
  std::lock_guard<std::recursive_mutex> lock(d.mutex);
  if (!ptr)
    return cudaSuccess;
  auto it = d.allocations.find(ptr);
  if (it == d.allocations.end())
    return fail(cudaErrorInvalidValue);
  const Allocation &a = it->second;
  d.used -= a.counted;
  d.requested -= a.requested;
  d.allocated -= a.counted;
  if (a.mapped)
    munmap(ptr, mappedBytes(a.requested));
  else
    std::free(ptr);
  d.allocations.erase(it);
  return cudaSuccess;
}

cudaError_t cudaMallocHost(void **ptr, size_t bytes) {
  Device &d = device();
  std::lock_guard<std::recursive_mutex> lock(d.mutex);
  if (!ptr)
    return fail(cudaErrorInvalidValue);
  if (bytes > SIZE_MAX - kAllocAlign)
    return fail(cudaErrorMemoryAllocation);
  size_t rounded = (std::max<size_t>(bytes, 1) + kAllocAlign - 1) /
                   kAllocAlign * kAllocAlign;
  void *p = std::aligned_alloc(kAllocAlign, rounded);
  if (!p)
    return fail(cudaErrorMemoryAllocation);
  d.pinned.insert(p);
  *ptr = p;
  return cudaSuccess;
}

cudaError_t cudaFreeHost(void *ptr) {
  Device &d = device();
  std::lock_guard<std::recursive_mutex> lock(d.mutex);
  if (!ptr)
    return cudaSuccess;
  if (!d.pinned.erase(ptr))
    return fail(cudaErrorInvalidValue);
  std::free(ptr);
  return cudaSuccess;
}

cudaError_t cudaMemcpy(void *dst, const void *src, size_t bytes,
                       cudaMemcpyKind) {
  Device &d = device();
  std::lock_guard<std::recursive_mutex> lock(d.mutex);
  if (cudaError_t err = refuseIfCapturing(&d.legacy))
    return err;
  if (bytes && (!dst || !src))
    return fail(cudaErrorInvalidValue);
  std::memmove(dst, src, bytes);
  return cudaSuccess;
}

cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t bytes,
                            cudaMemcpyKind, cudaStream_t stream) {
  if (bytes && (!dst || !src))
    return fail(cudaErrorInvalidValue);
  return enqueue(stream, [=]() { std::memmove(dst, src, bytes); });
}

cudaError_t cudaMemsetAsync(void *dst, int value, size_t bytes,
                            cudaStream_t stream) {
  if (bytes && !dst)
    return fail(cudaErrorInvalidValue);
  return enqueue(stream, [=]() { fill(dst, value, bytes); });
}

namespace cudaemu {

void loadModule(const void *key) {
  Device &d = device();
  std::lock_guard<std::recursive_mutex> lock(d.mutex);
  if (!d.loadedModules.insert(key).second)
    return;
  d.modules += d.moduleBytes;
  d.used += d.moduleBytes;
}

void countRuntimeBytes(uint64_t Device::*part, int64_t bytes) {
  Device &d = device();
  std::lock_guard<std::recursive_mutex> lock(d.mutex);
  d.*part += uint64_t(bytes);
  d.used += uint64_t(bytes);
}

MemoryUsage memoryUsage() {
  Device &d = device();
  std::lock_guard<std::recursive_mutex> lock(d.mutex);
  MemoryUsage u;
  u.context = kContextBytes;
  u.requested = d.requested;
  u.allocated = d.allocated;
  u.handles = d.handles;
  u.modules = d.modules;
  u.graphs = d.graphs;
  u.used = d.used;
  return u;
}

} // namespace cudaemu
