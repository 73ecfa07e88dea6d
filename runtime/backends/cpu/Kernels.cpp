//===- Kernels.cpp - Dispatch of every op to its kernel family -----------===//
#include "runtime/backends/cpu/Kernels.h"

#include "runtime/backends/cpu/kernels/Kernels.h"
#include "runtime/backends/cpu/CpuWorkspace.h"

#include <stdexcept>
#include <string>

namespace remat::runtime::cpu {

uint64_t kernelWorkspaceElements(OpKind op, const OpAttrs &attrs,
                                 const std::vector<Shape> &inputShapes,
                                 const std::vector<Shape> &outputShapes) {
  return cpu::cpuWorkspaceElements(op, attrs, inputShapes, outputShapes);
}

uint64_t kernelMinimumWorkspaceElements(OpKind op, const OpAttrs &attrs,
                                        const std::vector<Shape> &inputShapes,
                                        const std::vector<Shape> &outputShapes) {
  return cpu::cpuMinimumWorkspaceElements(op, attrs, inputShapes,
                                          outputShapes);
}

template <typename T>
void runKernel(const KernelCall &call, T *workspace,
               uint64_t workspaceElements) {
  std::vector<Shape> inputShapes, outputShapes;
  for (int i = 0; i < call.numInputs; ++i)
    inputShapes.push_back(call.inputs[i].shape);
  for (int i = 0; i < call.numOutputs; ++i)
    outputShapes.push_back(call.outputs[i].shape);
  if (kernelMinimumWorkspaceElements(call.op, *call.attrs, inputShapes,
                                     outputShapes) > workspaceElements)
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
