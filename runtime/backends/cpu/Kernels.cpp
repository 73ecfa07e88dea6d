//===- Kernels.cpp - Dispatch of every op to its kernel family -----------===//
#include "runtime/backends/cpu/Kernels.h"

#include "runtime/backends/cpu/kernels/Kernels.h"
#include "ops/CpuWorkspace.h"

#include <stdexcept>
#include <string>

namespace remat::runtime::cpu {

uint64_t kernelWorkspaceElements(OpKind op,
                                 const std::vector<Shape> &inputShapes) {
  return ops::cpuWorkspaceElements(op, inputShapes);
}

template <typename T>
void runKernel(const KernelCall &call, T *workspace,
               uint64_t workspaceElements) {
  bool needsScratch =
      call.op == OpKind::Attention || call.op == OpKind::AttentionGrad;
  if (needsScratch && kernelWorkspaceElements(call.op, {call.inputs[0].shape}) >
                          workspaceElements)
    throw std::logic_error(std::string("cpu kernel '") + opName(call.op) +
                           "' needs more workspace than it was given");
  // The function of the op's kernel family (kernels/Kernels.h).
  switch (call.op) {
#define REMAT_OP(Kind, name, inputs, outputs, rule, family, ...)               \
  case OpKind::Kind:                                                           \
    return run##family<T>(call, workspace, workspaceElements);
#include "ops/generated/OpTable.inc"
  }
}

template void runKernel<float>(const KernelCall &, float *, uint64_t);
template void runKernel<double>(const KernelCall &, double *, uint64_t);

} // namespace remat::runtime::cpu
