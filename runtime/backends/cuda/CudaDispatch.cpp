//===- CudaDispatch.cpp - A plan step to its CUDA kernel family ----------===//
//
// The switch over the op table (ops/generated/OpTable.inc) that sends each
// call to its family's launcher in kernels/, through float copies of its
// bf16 tensors where the launcher does not read them (CudaBf16.cpp).
//
//===----------------------------------------------------------------------===//
#include "runtime/backends/cuda/CudaBackendInternal.h"

#include "runtime/backends/cuda/kernels/Kernels.h"

namespace remat::runtime::cuda {

void dispatch(const KernelCall &call, const DeviceContext &ctx) {
  if (needsFloatCopies(call))
    return runOnFloatCopies(call, ctx);
  switch (call.op) {
#define REMAT_OP(Kind, name, inputs, outputs, rule, family, ...)               \
  case OpKind::Kind:                                                           \
    return launch##family(call, ctx);
#include "ops/generated/OpTable.inc"
  }
}

} // namespace remat::runtime::cuda
