//===- dropout.cpp - dropout with the Philox stream of runtime/Philox.h --===//
//
// Element i is kept where dropoutKeeps(seed, training step, i, rate) (one
// Philox block per 4 elements), the mask the CUDA backend draws too, and scaled by 1 / (1 - rate) computed in
// the float type.
//
//===----------------------------------------------------------------------===//
#include "runtime/backends/cpu/kernels/Common.h"

#include "runtime/Philox.h"

namespace remat::runtime::cpu {

template <typename T> void runDropout(const KernelCall &call, T *, uint64_t) {
  const T *x = inData<T>(call, 0);
  T *y = outData<T>(call, 0);
  float rate = call.attrs->rate;
  T scale = T(1) / (T(1) - T(rate));
  uint64_t seed = call.attrs->seed, step = uint64_t(call.trainingStep);
  // One Philox block serves 4 elements (dropoutUniform's word i % 4).
  int64_t n = call.inputs[0].numElements;
  for (int64_t b = 0; 4 * b < n; ++b) {
    PhiloxBlock r = dropoutBlock(seed, step, uint64_t(b));
    for (int64_t w = 0; w < 4 && 4 * b + w < n; ++w) {
      int64_t i = 4 * b + w;
      y[i] = philoxWordToUnit(r.word[w]) >= rate ? x[i] * scale : T(0);
    }
  }
}

template void runDropout<float>(const KernelCall &, float *, uint64_t);
template void runDropout<double>(const KernelCall &, double *, uint64_t);

} // namespace remat::runtime::cpu
