//===- CudaEmuLaunch.cpp - Kernel launches on the CUDA emulator ----------===//
//
// A launch runs its blocks one after another; a block's threads are fibers
// (CudaEmuFiber.h). The scheduler runs every ready fiber until it finishes
// or waits at a barrier, then releases warp exchanges whose lanes have all
// arrived, else the block barrier once every live thread waits there, else
// reports the deadlock.
//
//===----------------------------------------------------------------------===//
#include "CudaEmuFiber.h"
#include "CudaEmuInternal.h"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/common_interface_defs.h>
#endif

#include <algorithm>
#include <array>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

namespace cudaemu {

namespace {

enum class FiberState { Ready, AtBlockBarrier, AtWarpExchange, Done, Faulted };

struct Fiber {
  Context context;
  ThreadIndex index;
  FiberState state = FiberState::Ready;
  unsigned mask = 0;     ///< the warp exchange's lane mask
  int exchangeCount = 0; ///< warp exchanges so far (picks the slot set)
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

} // namespace cudaemu
