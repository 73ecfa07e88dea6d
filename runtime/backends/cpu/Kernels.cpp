//===- Kernels.cpp - Dispatch of every op to its kernel family -----------===//
#include "runtime/backends/cpu/Kernels.h"

#include "runtime/backends/cpu/Conv.h"
#include "runtime/backends/cpu/kernels/Kernels.h"

#include <stdexcept>
#include <string>

namespace remat::runtime::cpu {

uint64_t kernelWorkspaceElements(OpKind op, const OpAttrs &attrs,
                                 const std::vector<Shape> &inputShapes,
                                 const std::vector<Shape> &outputShapes) {
  if (op == OpKind::Conv2d || op == OpKind::Conv2dGradInput ||
      op == OpKind::Conv2dGradWeight)
    return convWorkspaceElements(op, attrs, inputShapes, outputShapes);
  if (op == OpKind::Attention || op == OpKind::AttentionGrad) {
    uint64_t s = uint64_t(inputShapes[0][2]);
    uint64_t factor = op == OpKind::Attention ? 1 : 2;
    // Saturates instead of wrapping: a wrapped count would let the
    // backend allocate too little scratch.
    if (s != 0 && s > UINT64_MAX / s / factor)
      return UINT64_MAX;
    return factor * s * s;
  }
  return 0;
}

template <typename T>
void runKernel(const KernelCall &call, T *workspace,
               uint64_t workspaceElements) {
  std::vector<Shape> inputShapes, outputShapes;
  for (int i = 0; i < call.numInputs; ++i)
    inputShapes.push_back(call.inputs[i].shape);
  for (int i = 0; i < call.numOutputs; ++i)
    outputShapes.push_back(call.outputs[i].shape);
  if (kernelWorkspaceElements(call.op, *call.attrs, inputShapes, outputShapes) >
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
