//===- KernelInfo.h - What a backend states about its kernels ---*- C++ -*-===//
//
// The one question the compiler asks a backend: how much scratch each op's
// kernel uses while it runs (laid out in the arena like a buffer live at
// that op), and what the backend holds beside the arena for a finished
// plan. A backend implements it in a small library of its own
// (runtime/backends/cpu/CpuKernelInfo.h) that the CLI links and hands to
// the compiler (compiler::CompileOptions::kernelInfo); the compiler and
// its passes see only this interface and the op annotation it leaves
// (kScratchBytesAttr, passes/TrainStep.h).
//
//===----------------------------------------------------------------------===//
#ifndef REMAT_RUNTIME_PLAN_KERNELINFO_H
#define REMAT_RUNTIME_PLAN_KERNELINFO_H

#include "ops/OpTable.h"
#include "runtime/plan/PlanFormat.h"

#include <cstdint>
#include <optional>
#include <vector>

namespace remat::runtime {

/// What a backend needs beside the arena for one plan.
struct PlanKernelFacts {
  /// The workspace allocated beside the arena (the steps whose scratch
  /// finds no gap in it).
  int64_t workspaceBytes = 0;
  /// Steps whose scratch lies inside the arena, and the largest of those.
  int64_t arenaScratchSteps = 0;
  int64_t arenaScratchBytes = 0;
  /// The runtime's own memory beside the arena and workspace (allocator,
  /// staging, library buffers), stated beside the budget.
  uint64_t runtimeAllowanceBytes = 0;
  /// What the runtime program holds before the arena (its code, libraries
  /// and the loaded plan), stated beside the allowance.
  uint64_t runtimeFixedBytes = 0;
};

class KernelInfo {
public:
  virtual ~KernelInfo() = default;
  /// Scratch bytes the kernel of `op` uses while it runs with operands and
  /// results of these types (0: none); INT64_MAX when it does not fit.
  virtual int64_t
  opScratchBytes(ops::OpKind op, const ops::OpAttrs &attrs,
                 const std::vector<ops::TensorType> &inputs,
                 const std::vector<ops::TensorType> &outputs) const = 0;
  /// What the backend holds beside the arena for `plan` under a budget of
  /// `budgetBytes` (0: none).
  virtual PlanKernelFacts planFacts(const Plan &plan,
                                    uint64_t budgetBytes) const = 0;
};

} // namespace remat::runtime

#endif // REMAT_RUNTIME_PLAN_KERNELINFO_H
