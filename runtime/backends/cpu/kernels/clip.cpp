//===- clip.cpp - clip and clip_grad --------------------------------------===//
//
// clip: y = x < min ? min : x > max ? max : x (NaN passes through).
// clip_grad: dx = dy where min < y < max, else 0, from clip's output y
// (strictly inside the bounds exactly where x is): zero at the bounds, as
// PyTorch's hardtanh backward (ReLU6).
//
//===----------------------------------------------------------------------===//
#include "runtime/backends/cpu/kernels/Common.h"

namespace remat::runtime::cpu {

template <typename T> void runClip(const KernelCall &call, T *, uint64_t) {
  T lo = T(call.attrs->min), hi = T(call.attrs->max);
  const T *x = inData<T>(call, 0);
  T *out = outData<T>(call, 0);
  int64_t n = call.inputs[0].numElements;
  switch (call.op) {
  case OpKind::Clip:
    for (int64_t i = 0; i < n; ++i)
      out[i] = x[i] < lo ? lo : x[i] > hi ? hi : x[i];
    return;
  case OpKind::ClipGrad: {
    const T *dy = inData<T>(call, 1);
    for (int64_t i = 0; i < n; ++i)
      out[i] = x[i] > lo && x[i] < hi ? dy[i] : T(0);
    return;
  }
  default:
    throwNoKernel(call.op);
  }
}

template void runClip<float>(const KernelCall &, float *, uint64_t);
template void runClip<double>(const KernelCall &, double *, uint64_t);

} // namespace remat::runtime::cpu
