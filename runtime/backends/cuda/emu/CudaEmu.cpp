//===- CudaEmu.cpp - CUDA runtime, kernel threads and cuBLAS on the CPU --===//
//
// The implementation behind emu/include (see cuda_runtime.h for what is
// modeled). Threads of a block are fibers on guarded stacks (a few lines of
// assembly switch them on x86-64, ucontext elsewhere: swapcontext's signal
// mask system calls doubled the tests' time); the
// scheduler runs every ready fiber until it finishes or waits at a barrier,
// then releases warp exchanges whose lanes have all arrived, else the block
// barrier once every live thread waits there, else reports the deadlock.
//
//===----------------------------------------------------------------------===//
#include "cublas_v2.h"
#include "cuda_runtime.h"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/common_interface_defs.h>
#endif
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace cudaemu {

struct Graph {
  std::vector<std::function<void()>> work;
};
struct GraphExec {
  std::vector<std::function<void()>> work;
};
struct Stream {
  bool capturing = false;
  bool invalidated = false;
  Graph *graph = nullptr; ///< the capture in progress
  ~Stream() { delete graph; }
};
struct Event {
  bool recordedInCapture = false;
};
struct Cublas {
  cudaStream_t stream = nullptr;
  cublasMath_t mode = CUBLAS_DEFAULT_MATH;
  void *workspace = nullptr;
  size_t workspaceBytes = 0;
};

namespace {

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

/// Memory the emulated context holds before the first allocation, so
/// cudaMemGetInfo's used bytes start above zero as on a GPU.
constexpr uint64_t kContextBytes = 4u << 20;
constexpr size_t kAllocAlign = 256;

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

Device &device() {
  static Device d;
  return d;
}

thread_local cudaError_t lastError = cudaSuccess;

cudaError_t fail(cudaError_t err) {
  lastError = err;
  return err;
}

Stream *resolve(cudaStream_t stream) {
  return stream ? stream : &device().legacy;
}

//===----------------------------------------------------------------------===//
// Fibers
//===----------------------------------------------------------------------===//

//===----------------------------------------------------------------------===//
// Execution contexts
//===----------------------------------------------------------------------===//

#if defined(__x86_64__)
} // namespace
} // namespace cudaemu

// remat_emu_switch(save, load): saves the callee-saved registers on the
// current stack, stores the stack pointer in *save, continues on `load`.
extern "C" void remat_emu_switch(void **save, void *load);
asm(R"(
  .text
  .globl remat_emu_switch
  .type remat_emu_switch, @function
remat_emu_switch:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .size remat_emu_switch, .-remat_emu_switch
  .section .note.GNU-stack,"",@progbits
  .text
)");

namespace cudaemu {
namespace {

struct Context {
  void *sp = nullptr;
  const void *stackBottom = nullptr; ///< for AddressSanitizer (switchTo)
  size_t stackSize = 0;
};

/// Prepares `c` to run `entry` (which never returns) on the stack.
void startContext(Context &c, char *stack, size_t bytes, void (*entry)()) {
  uintptr_t top = (reinterpret_cast<uintptr_t>(stack) + bytes) & ~uintptr_t(15);
  // `ret` pops entry from a 16-aligned slot, leaving the stack as a call
  // leaves it (8 mod 16); below it, the six registers the switch pops.
  void **slot = reinterpret_cast<void **>(top - 16);
  slot[0] = reinterpret_cast<void *>(entry);
  slot[1] = nullptr;
  void **registers = slot - 6;
  for (int i = 0; i < 6; ++i)
    registers[i] = nullptr;
  c.sp = registers;
  c.stackBottom = stack;
  c.stackSize = bytes;
}

void switchContext(Context &from, Context &to) {
  remat_emu_switch(&from.sp, to.sp);
}
#else
struct Context {
  ucontext_t uc;
  const void *stackBottom = nullptr; ///< for AddressSanitizer (switchTo)
  size_t stackSize = 0;
};

void startContext(Context &c, char *stack, size_t bytes, void (*entry)()) {
  if (getcontext(&c.uc) != 0)
    fatal("getcontext failed");
  c.uc.uc_stack.ss_sp = stack;
  c.uc.uc_stack.ss_size = bytes;
  c.uc.uc_link = nullptr;
  makecontext(&c.uc, entry, 0);
  c.stackBottom = stack;
  c.stackSize = bytes;
}

void switchContext(Context &from, Context &to) {
  if (swapcontext(&from.uc, &to.uc) != 0)
    fatal("swapcontext failed");
}
#endif

/// switchContext, told to AddressSanitizer where it is built in (a fiber's
/// stack is otherwise taken for a stack overflow or a buffer overrun).
/// `leaving`: `from` never resumes (its fake stack is freed).
void switchTo(Context &from, Context &to, bool leaving = false) {
#if defined(__SANITIZE_ADDRESS__)
  void *fakeStack = nullptr;
  __sanitizer_start_switch_fiber(leaving ? nullptr : &fakeStack,
                                 to.stackBottom, to.stackSize);
  switchContext(from, to);
  __sanitizer_finish_switch_fiber(fakeStack, nullptr, nullptr);
#else
  (void)leaving;
  switchContext(from, to);
#endif
}

enum class FiberState { Ready, AtBlockBarrier, AtWarpExchange, Done, Faulted };

struct Fiber {
  Context context;
  ThreadIndex index;
  FiberState state = FiberState::Ready;
  unsigned mask = 0;     ///< the warp exchange's lane mask
  int exchangeCount = 0; ///< warp exchanges so far (picks the slot set)
};

/// Stacks for the fibers of one block, each below a PROT_NONE guard page,
/// kept across launches.
class StackPool {
public:
  static constexpr size_t kStackBytes = 64 * 1024;

  char *stack(size_t i) {
    if (i >= stacks.size())
      grow(i + 1);
    return stacks[i];
  }

private:
  std::vector<char *> stacks;

  void grow(size_t count) {
    size_t page = size_t(sysconf(_SC_PAGESIZE));
    while (stacks.size() < count) {
      void *mem = mmap(nullptr, kStackBytes + page, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (mem == MAP_FAILED)
        fatal("cannot map a thread stack");
      if (mprotect(mem, page, PROT_NONE) != 0)
        fatal("cannot protect a thread stack's guard page");
      stacks.push_back(static_cast<char *>(mem) + page);
    }
  }
};

struct BlockRun {
  const char *kernelName = "";
  const std::function<void()> *body = nullptr;
  std::vector<Fiber> fibers;
  /// Per warp, two slot sets of 32 lanes (exchange k uses set k % 2: a lane
  /// can be at most one exchange ahead of another lane of its warp).
  std::vector<std::array<std::array<uint64_t, 32>, 2>> slots;
  Context scheduler;
  Fiber *current = nullptr;
};

thread_local BlockRun *activeBlock = nullptr;
thread_local ThreadIndex hostIndex; // threadIdx read outside a kernel

[[noreturn]] void fiberMain() {
  BlockRun *block = activeBlock;
#if defined(__SANITIZE_ADDRESS__)
  // The first switch here: learn the scheduler's stack for the way back.
  __sanitizer_finish_switch_fiber(nullptr, &block->scheduler.stackBottom,
                                  &block->scheduler.stackSize);
#endif
  (*block->body)();
  Fiber *fiber = block->current;
  fiber->state = FiberState::Done;
  switchTo(fiber->context, block->scheduler, /*leaving=*/true);
  fatal("a finished thread resumed");
}

std::string describe(const BlockRun &block, const Fiber &fiber) {
  const ThreadIndex &ix = fiber.index;
  return std::string(block.kernelName) + " block (" +
         std::to_string(ix.block.x) + "," + std::to_string(ix.block.y) +
         "," + std::to_string(ix.block.z) + ") thread (" +
         std::to_string(ix.thread.x) + "," + std::to_string(ix.thread.y) +
         "," + std::to_string(ix.thread.z) + ")";
}

void suspend(FiberState state) {
  BlockRun *block = activeBlock;
  Fiber *fiber = block->current;
  fiber->state = state;
  switchTo(fiber->context, block->scheduler);
}

/// An error inside a kernel (a fault on the GPU): reported, and the fiber
/// never resumes; the scheduler stops the launch.
void fault(const std::string &message) {
  std::fprintf(stderr, "cuda emulator: %s\n", message.c_str());
  suspend(FiberState::Faulted);
  fatal("a faulted thread resumed");
}

/// Releases the warp exchanges of warp [warpStart, warpStart + 32) whose
/// lanes have all arrived. Returns whether any was released; false with
/// `why` set on a mask naming a lane that is missing or has exited.
bool releaseWarp(BlockRun &block, size_t warpStart, std::string &why) {
  size_t warpEnd = std::min(block.fibers.size(), warpStart + 32);
  bool released = false;
  unsigned examined = 0; // lanes whose exchange was looked at in this pass
  for (size_t t = warpStart; t < warpEnd; ++t) {
    Fiber &f = block.fibers[t];
    if (f.state != FiberState::AtWarpExchange ||
        (examined >> (t - warpStart) & 1u))
      continue;
    examined |= f.mask;
    // Every lane of f's mask must wait at the same exchange.
    bool all = true;
    for (int lane = 0; lane < 32 && all; ++lane) {
      if (!(f.mask >> lane & 1u))
        continue;
      size_t other = warpStart + size_t(lane);
      if (other >= warpEnd) {
        why = describe(block, f) + ": a warp shuffle's mask names lane " +
              std::to_string(lane) + ", which the block does not have";
        return false;
      }
      const Fiber &g = block.fibers[other];
      if (g.state == FiberState::Done) {
        why = describe(block, f) + ": a warp shuffle's mask names lane " +
              std::to_string(lane) + ", which has exited";
        return false;
      }
      if (g.state != FiberState::AtWarpExchange ||
          g.exchangeCount != f.exchangeCount)
        all = false;
    }
    if (!all)
      continue;
    for (int lane = 0; lane < 32; ++lane)
      if (f.mask >> lane & 1u)
        block.fibers[warpStart + size_t(lane)].state = FiberState::Ready;
    released = true;
  }
  return released;
}

/// After every fiber stopped: releases warp exchanges, else the block
/// barrier once every live thread waits there. False on a deadlock (then
/// `why` says which thread waits for what).
bool releaseWaiters(BlockRun &block, std::string &why) {
  bool released = false;
  for (size_t warpStart = 0; warpStart < block.fibers.size(); warpStart += 32) {
    why.clear();
    released |= releaseWarp(block, warpStart, why);
    if (!why.empty())
      return false;
  }
  if (released)
    return true;
  bool anyAtBlockBarrier = false;
  for (const Fiber &f : block.fibers)
    anyAtBlockBarrier |= f.state == FiberState::AtBlockBarrier;
  for (const Fiber &f : block.fibers)
    if (f.state == FiberState::AtWarpExchange) {
      why = describe(block, f) +
            (anyAtBlockBarrier
                 ? " waits at a warp shuffle while other threads wait at "
                   "__syncthreads"
                 : " waits at a warp shuffle that a lane of its mask never "
                   "reaches");
      return false;
    }
  for (Fiber &f : block.fibers)
    if (f.state == FiberState::AtBlockBarrier)
      f.state = FiberState::Ready;
  return true;
}

StackPool &stackPool() {
  thread_local StackPool pool;
  return pool;
}

/// Runs one block to completion; false on a deadlock or fault (reported).
bool runBlock(BlockRun &block, dim3 grid, dim3 blockShape, uint3 blockIdx_,
              bool reverse) {
  size_t threads = size_t(blockShape.x) * blockShape.y * blockShape.z;
  block.fibers.assign(threads, Fiber());
  block.slots.assign((threads + 31) / 32, {});
  StackPool &pool = stackPool();
  for (size_t t = 0; t < threads; ++t) {
    Fiber &f = block.fibers[t];
    f.index.block = blockIdx_;
    f.index.blockShape = blockShape;
    f.index.gridShape = grid;
    f.index.thread.x = unsigned(t % blockShape.x);
    f.index.thread.y = unsigned(t / blockShape.x % blockShape.y);
    f.index.thread.z = unsigned(t / (size_t(blockShape.x) * blockShape.y));
    startContext(f.context, pool.stack(t), StackPool::kStackBytes, fiberMain);
  }
  // Forward: round robin, every ready thread once per round, in index
  // order. Reverse: warps and lanes in reverse order, each warp run as far
  // as its exchanges allow before the next warp starts (warps advance at
  // any relative speed on the GPU).
  size_t warps = (threads + 31) / 32;
  for (;;) {
    for (size_t w = 0; w < warps; ++w) {
      size_t warpStart = (reverse ? warps - 1 - w : w) * 32;
      size_t lanes = std::min<size_t>(32, threads - warpStart);
      for (;;) {
        for (size_t l = 0; l < lanes; ++l) {
          Fiber &f = block.fibers[warpStart + (reverse ? lanes - 1 - l : l)];
          if (f.state != FiberState::Ready)
            continue;
          block.current = &f;
          switchTo(block.scheduler, f.context);
          if (f.state == FiberState::Faulted)
            return false;
        }
        std::string why;
        if (!reverse || !releaseWarp(block, warpStart, why)) {
          if (!why.empty()) {
            std::fprintf(stderr, "cuda emulator: %s\n", why.c_str());
            return false;
          }
          break;
        }
      }
    }
    block.current = nullptr;
    bool anyLive = false;
    for (const Fiber &f : block.fibers)
      anyLive |= f.state != FiberState::Done;
    if (!anyLive)
      return true;
    std::string why;
    if (!releaseWaiters(block, why)) {
      // The waiting fibers are abandoned (their stacks are reused): only
      // trivially destructible kernel state lives there.
      std::fprintf(stderr, "cuda emulator: deadlock in %s\n", why.c_str());
      return false;
    }
  }
}

} // namespace

//===----------------------------------------------------------------------===//
// Kernel side
//===----------------------------------------------------------------------===//

ThreadIndex &currentThread() {
  BlockRun *block = activeBlock;
  if (block && block->current)
    return block->current->index;
  return hostIndex;
}

void syncThreads() {
  if (!activeBlock || !activeBlock->current)
    fatal("__syncthreads outside a kernel");
  suspend(FiberState::AtBlockBarrier);
}

uint64_t warpExchange(unsigned mask, uint64_t mine, int source) {
  BlockRun *block = activeBlock;
  if (!block || !block->current)
    fatal("warp shuffle outside a kernel");
  Fiber *f = block->current;
  size_t t = size_t(f - block->fibers.data());
  size_t warp = t / 32;
  int lane = int(t % 32);
  if (!(mask >> lane & 1u))
    fault(describe(*block, *f) + ": shuffles with a mask without its lane");
  if (!(mask >> (source & 31) & 1u))
    fault(describe(*block, *f) + ": shuffles from lane " +
          std::to_string(source) + ", which is not in the mask");
  int set = f->exchangeCount & 1;
  block->slots[warp][size_t(set)][size_t(lane)] = mine;
  f->mask = mask;
  suspend(FiberState::AtWarpExchange);
  ++f->exchangeCount;
  return block->slots[warp][size_t(set)][size_t(source & 31)];
}

bool checkLaunchGeometry(dim3 grid, dim3 block, size_t sharedBytes) {
  uint64_t threads = uint64_t(block.x) * block.y * block.z;
  bool ok = grid.x >= 1 && grid.y >= 1 && grid.z >= 1 &&
            grid.x <= 0x7fffffffu && grid.y <= 65535 && grid.z <= 65535 &&
            threads >= 1 && threads <= 1024 && block.x <= 1024 &&
            block.y <= 1024 && block.z <= 64 && sharedBytes <= 48 * 1024;
  if (!ok)
    lastError = cudaErrorInvalidConfiguration;
  return ok;
}

void runGrid(const char *kernelName, dim3 grid, dim3 block,
             const std::function<void()> &thread) {
  if (activeBlock)
    fatal(std::string("kernel ") + kernelName +
          " launched from inside a kernel (dynamic parallelism)");
  bool reverse = device().reverse;
  BlockRun run;
  run.kernelName = kernelName;
  run.body = &thread;
  activeBlock = &run;
  uint64_t blocks = uint64_t(grid.x) * grid.y * grid.z;
  for (uint64_t i = 0; i < blocks; ++i) {
    uint64_t b = reverse ? blocks - 1 - i : i;
    uint3 index;
    index.x = unsigned(b % grid.x);
    index.y = unsigned(b / grid.x % grid.y);
    index.z = unsigned(b / (uint64_t(grid.x) * grid.y));
    if (!runBlock(run, grid, block, index, reverse)) {
      lastError = cudaErrorLaunchFailure;
      break;
    }
  }
  activeBlock = nullptr;
}

void setReverseOrder(bool reverse) { device().reverse = reverse; }

//===----------------------------------------------------------------------===//
// Streams and graphs
//===----------------------------------------------------------------------===//

cudaError_t enqueue(cudaStream_t stream, std::function<void()> work) {
  Device &d = device();
  std::lock_guard<std::recursive_mutex> lock(d.mutex);
  Stream *s = resolve(stream);
  if (s->capturing) {
    if (s->invalidated)
      return fail(cudaErrorStreamCaptureInvalidated);
    s->graph->work.push_back(std::move(work));
    return cudaSuccess;
  }
  work();
  return cudaSuccess;
}

bool isCapturing(cudaStream_t stream) { return resolve(stream)->capturing; }

} // namespace cudaemu

using namespace cudaemu;

namespace {

/// cudaStreamCreate / cudaEventCreate.
template <typename Handle> cudaError_t createHandle(Handle **handle) {
  if (!handle)
    return fail(cudaErrorInvalidValue);
  *handle = new Handle();
  return cudaSuccess;
}

/// cudaStreamDestroy / cudaEventDestroy.
template <typename Handle> cudaError_t destroyHandle(Handle *handle) {
  if (!handle)
    return fail(cudaErrorInvalidResourceHandle);
  delete handle;
  return cudaSuccess;
}

/// A synchronous call on a capturing stream: invalidates the capture.
cudaError_t refuseIfCapturing(Stream *s) {
  if (!s->capturing)
    return cudaSuccess;
  s->invalidated = true;
  return fail(cudaErrorStreamCaptureUnsupported);
}

} // namespace

//===----------------------------------------------------------------------===//
// Runtime API
//===----------------------------------------------------------------------===//

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
  size_t rounded = (std::max<size_t>(bytes, 1) + kAllocAlign - 1) /
                   kAllocAlign * kAllocAlign;
  if (d.used + rounded > d.capacity)
    return fail(cudaErrorMemoryAllocation);
  void *p = std::aligned_alloc(kAllocAlign, rounded);
  if (!p)
    return fail(cudaErrorMemoryAllocation);
  // The GPU hands out whatever the memory held: not zeros.
  std::memset(p, 0xA5, rounded);
  d.allocations[p] = rounded;
  d.used += rounded;
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
  d.used -= it->second;
  d.allocations.erase(it);
  std::free(ptr);
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
  return enqueue(stream, [=]() { std::memset(dst, value, bytes); });
}

cudaError_t cudaStreamCreate(cudaStream_t *stream) {
  return cudaStreamCreateWithFlags(stream, 0);
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *stream, unsigned) {
  return createHandle(stream);
}

cudaError_t cudaStreamDestroy(cudaStream_t stream) {
  return destroyHandle(stream);
}

cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
  Device &d = device();
  std::lock_guard<std::recursive_mutex> lock(d.mutex);
  return refuseIfCapturing(resolve(stream));
}

cudaError_t cudaStreamBeginCapture(cudaStream_t stream,
                                   cudaStreamCaptureMode) {
  Device &d = device();
  std::lock_guard<std::recursive_mutex> lock(d.mutex);
  // The legacy stream cannot capture.
  if (!stream)
    return fail(cudaErrorStreamCaptureUnsupported);
  if (stream->capturing)
    return fail(cudaErrorIllegalState);
  stream->capturing = true;
  stream->invalidated = false;
  stream->graph = new Graph();
  return cudaSuccess;
}

cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t *graph) {
  Device &d = device();
  std::lock_guard<std::recursive_mutex> lock(d.mutex);
  if (!graph)
    return fail(cudaErrorInvalidValue);
  *graph = nullptr;
  if (!stream || !stream->capturing)
    return fail(cudaErrorIllegalState);
  stream->capturing = false;
  Graph *recorded = stream->graph;
  stream->graph = nullptr;
  if (stream->invalidated) {
    stream->invalidated = false;
    delete recorded;
    return fail(cudaErrorStreamCaptureInvalidated);
  }
  *graph = recorded;
  return cudaSuccess;
}

cudaError_t cudaEventCreate(cudaEvent_t *event) {
  return cudaEventCreateWithFlags(event, 0);
}

cudaError_t cudaEventCreateWithFlags(cudaEvent_t *event, unsigned) {
  return createHandle(event);
}

cudaError_t cudaEventDestroy(cudaEvent_t event) {
  return destroyHandle(event);
}

cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
  Device &d = device();
  std::lock_guard<std::recursive_mutex> lock(d.mutex);
  if (!event)
    return fail(cudaErrorInvalidResourceHandle);
  Stream *s = resolve(stream);
  if (s->capturing && s->invalidated)
    return fail(cudaErrorStreamCaptureInvalidated);
  event->recordedInCapture = s->capturing;
  return cudaSuccess;
}

cudaError_t cudaEventSynchronize(cudaEvent_t event) {
  if (!event)
    return fail(cudaErrorInvalidResourceHandle);
  // An event recorded into a capture is a graph node, not a host event.
  if (event->recordedInCapture)
    return fail(cudaErrorStreamCaptureUnsupported);
  return cudaSuccess;
}

cudaError_t cudaGraphInstantiate(cudaGraphExec_t *exec, cudaGraph_t graph,
                                 unsigned long long) {
  if (!exec || !graph)
    return fail(cudaErrorInvalidValue);
  *exec = new GraphExec{graph->work};
  return cudaSuccess;
}

cudaError_t cudaGraphDestroy(cudaGraph_t graph) {
  if (!graph)
    return fail(cudaErrorInvalidValue);
  delete graph;
  return cudaSuccess;
}

cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec) {
  if (!exec)
    return fail(cudaErrorInvalidValue);
  delete exec;
  return cudaSuccess;
}

cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t stream) {
  if (!exec)
    return fail(cudaErrorInvalidValue);
  std::vector<std::function<void()>> work = exec->work;
  return enqueue(stream, [work]() {
    for (const std::function<void()> &w : work)
      w();
  });
}

//===----------------------------------------------------------------------===//
// cuBLAS
//===----------------------------------------------------------------------===//

cublasStatus_t cublasCreate(cublasHandle_t *handle) {
  if (!handle)
    return CUBLAS_STATUS_INVALID_VALUE;
  *handle = new Cublas();
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasDestroy(cublasHandle_t handle) {
  if (!handle)
    return CUBLAS_STATUS_NOT_INITIALIZED;
  delete handle;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetStream(cublasHandle_t handle, cudaStream_t stream) {
  if (!handle)
    return CUBLAS_STATUS_NOT_INITIALIZED;
  handle->stream = stream;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetWorkspace(cublasHandle_t handle, void *workspace,
                                  size_t bytes) {
  if (!handle)
    return CUBLAS_STATUS_NOT_INITIALIZED;
  // cuBLAS wants 256-byte alignment of a user workspace.
  if (reinterpret_cast<uintptr_t>(workspace) % 256 != 0)
    return CUBLAS_STATUS_INVALID_VALUE;
  handle->workspace = workspace;
  handle->workspaceBytes = bytes;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetMathMode(cublasHandle_t handle, cublasMath_t mode) {
  if (!handle)
    return CUBLAS_STATUS_NOT_INITIALIZED;
  handle->mode = mode;
  return CUBLAS_STATUS_SUCCESS;
}

const char *cublasGetStatusString(cublasStatus_t status) {
  switch (status) {
  case CUBLAS_STATUS_SUCCESS:
    return "CUBLAS_STATUS_SUCCESS";
  case CUBLAS_STATUS_NOT_INITIALIZED:
    return "CUBLAS_STATUS_NOT_INITIALIZED";
  case CUBLAS_STATUS_ALLOC_FAILED:
    return "CUBLAS_STATUS_ALLOC_FAILED";
  case CUBLAS_STATUS_INVALID_VALUE:
    return "CUBLAS_STATUS_INVALID_VALUE";
  case CUBLAS_STATUS_EXECUTION_FAILED:
    return "CUBLAS_STATUS_EXECUTION_FAILED";
  }
  return "CUBLAS_STATUS_UNKNOWN";
}

namespace {

/// A float as a TF32 tensor core reads it: 10 mantissa bits, rounded to
/// nearest (ties away, as the hardware's conversion does).
float toTf32(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, 4);
  if ((bits & 0x7f800000u) != 0x7f800000u) // finite
    bits = (bits + 0x1000u) & 0xffffe000u;
  std::memcpy(&x, &bits, 4);
  return x;
}

} // namespace

cublasStatus_t cublasSgemmStridedBatched(
    cublasHandle_t handle, cublasOperation_t transA, cublasOperation_t transB,
    int m, int n, int k, const float *alpha, const float *a, int lda,
    long long strideA, const float *b, int ldb, long long strideB,
    const float *beta, float *c, int ldc, long long strideC, int batchCount) {
  if (!handle)
    return CUBLAS_STATUS_NOT_INITIALIZED;
  bool ta = transA != CUBLAS_OP_N, tb = transB != CUBLAS_OP_N;
  int rowsA = ta ? k : m, rowsB = tb ? n : k;
  if (m < 0 || n < 0 || k < 0 || batchCount < 0 || !alpha || !beta ||
      lda < std::max(1, rowsA) || ldb < std::max(1, rowsB) ||
      ldc < std::max(1, m))
    return CUBLAS_STATUS_INVALID_VALUE;
  float alphaValue = *alpha, betaValue = *beta;
  bool tf32 = handle->mode == CUBLAS_TF32_TENSOR_OP_MATH;
  cudaError_t err = enqueue(handle->stream, [=]() {
    // op(A) rows and op(B) columns copied contiguous (k floats each), so
    // the dot products stream; the sum order (p = 0..k-1) is unchanged.
    std::vector<float> rowsA(size_t(m) * size_t(k)), colsB(size_t(n) * size_t(k));
    for (int batch = 0; batch < batchCount; ++batch) {
      const float *A = a + batch * strideA;
      const float *B = b + batch * strideB;
      float *C = c + batch * strideC;
      for (int i = 0; i < m; ++i)
        for (int p = 0; p < k; ++p) {
          float x = ta ? A[p + size_t(i) * lda] : A[i + size_t(p) * lda];
          rowsA[size_t(i) * size_t(k) + size_t(p)] = tf32 ? toTf32(x) : x;
        }
      for (int j = 0; j < n; ++j)
        for (int p = 0; p < k; ++p) {
          float y = tb ? B[j + size_t(p) * ldb] : B[p + size_t(j) * ldb];
          colsB[size_t(j) * size_t(k) + size_t(p)] = tf32 ? toTf32(y) : y;
        }
      for (int j = 0; j < n; ++j)
        for (int i = 0; i < m; ++i) {
          const float *x = &rowsA[size_t(i) * size_t(k)];
          const float *y = &colsB[size_t(j) * size_t(k)];
          float sum = 0.0f;
          for (int p = 0; p < k; ++p)
            sum += x[p] * y[p];
          float &out = C[i + size_t(j) * ldc];
          // beta == 0: C is not read (it may hold NaN), as cuBLAS documents.
          out = betaValue == 0.0f ? alphaValue * sum
                                  : alphaValue * sum + betaValue * out;
        }
    }
  });
  return err == cudaSuccess ? CUBLAS_STATUS_SUCCESS
                            : CUBLAS_STATUS_EXECUTION_FAILED;
}
