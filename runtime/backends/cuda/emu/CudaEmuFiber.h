//===- CudaEmuFiber.h - Fibers for the CUDA emulator's kernel threads ----===//
//
// Internal to emu/: execution contexts on guarded stacks, and the switch
// between them (CudaEmuFiber.cpp). CudaEmuLaunch.cpp runs a block's threads
// as fibers on them.
//
//===----------------------------------------------------------------------===//
#ifndef REMAT_CUDA_EMU_CUDAEMUFIBER_H
#define REMAT_CUDA_EMU_CUDAEMUFIBER_H

#if !defined(__x86_64__)
#include <ucontext.h>
#endif

#include <cstddef>
#include <vector>

namespace cudaemu {

/// A suspended fiber (or the scheduler that runs them): where it resumes.
#if defined(__x86_64__)
struct Context {
  void *sp = nullptr;
  const void *stackBottom = nullptr; ///< for AddressSanitizer (switchTo)
  size_t stackSize = 0;
};
#else
struct Context {
  ucontext_t uc;
  const void *stackBottom = nullptr; ///< for AddressSanitizer (switchTo)
  size_t stackSize = 0;
};
#endif

/// Prepares `c` to run `entry` (which never returns) on the stack.
void startContext(Context &c, char *stack, size_t bytes, void (*entry)());

/// Saves the running context in `from` and continues `to`, told to
/// AddressSanitizer where it is built in (a fiber's stack is otherwise
/// taken for a stack overflow or a buffer overrun). `leaving`: `from` never
/// resumes (its fake stack is freed).
void switchTo(Context &from, Context &to, bool leaving = false);

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

  void grow(size_t count);
};

/// The calling host thread's stack pool.
StackPool &stackPool();

} // namespace cudaemu

#endif // REMAT_CUDA_EMU_CUDAEMUFIBER_H
