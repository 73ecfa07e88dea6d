//===- CudaEmuFiber.cpp - Fibers for the CUDA emulator's kernel threads --===//
//
// Execution contexts on guarded stacks (CudaEmuFiber.h): a few lines of
// assembly switch them on x86-64, ucontext elsewhere (swapcontext's signal
// mask system calls doubled the tests' time).
//
//===----------------------------------------------------------------------===//
#include "CudaEmuFiber.h"

#include "CudaEmuInternal.h"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/common_interface_defs.h>
#endif
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>

#if defined(__x86_64__)
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
#endif

namespace cudaemu {

#if defined(__x86_64__)
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

namespace {

void switchContext(Context &from, Context &to) {
  remat_emu_switch(&from.sp, to.sp);
}

} // namespace
#else
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

namespace {

void switchContext(Context &from, Context &to) {
  if (swapcontext(&from.uc, &to.uc) != 0)
    fatal("swapcontext failed");
}

} // namespace
#endif

void switchTo(Context &from, Context &to, bool leaving) {
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

void StackPool::grow(size_t count) {
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

StackPool &stackPool() {
  thread_local StackPool pool;
  return pool;
}

} // namespace cudaemu
