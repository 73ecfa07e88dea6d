//===- softmax.cpp - softmax and softmax_grad over the last dimension ----===//
//
// softmax is softmaxRow (Common.h) per row: the max in the float type, the
// denominator summed in double, y = exp(x - max) * float(1 / sum).
// softmax_grad: dx = y * (dy - dot(dy, y)), the row dot product in double;
// both sums by laneSum (Common.h).
//
//===----------------------------------------------------------------------===//
#include "runtime/backends/cpu/kernels/Common.h"

namespace remat::runtime::cpu {

template <typename T> void runSoftmax(const KernelCall &call, T *, uint64_t) {
  const T *x = inData<T>(call, 0);
  T *y = outData<T>(call, 0);
  int64_t d = call.inputs[0].shape.back(),
          rows = call.inputs[0].numElements / d;
  for (int64_t r = 0; r < rows; ++r)
    softmaxRow(x + r * d, y + r * d, d);
}

template <typename T>
void runSoftmaxGrad(const KernelCall &call, T *, uint64_t) {
  const T *y = inData<T>(call, 0), *dy = inData<T>(call, 1);
  T *dx = outData<T>(call, 0);
  int64_t d = call.inputs[0].shape.back(),
          rows = call.inputs[0].numElements / d;
  for (int64_t r = 0; r < rows; ++r) {
    const T *yr = y + r * d, *dyr = dy + r * d;
    T rowDot = T(
        laneSum(d, [&](int64_t j) { return double(dyr[j]) * double(yr[j]); }));
    for (int64_t j = 0; j < d; ++j)
      dx[r * d + j] = yr[j] * (dyr[j] - rowDot);
  }
}

template void runSoftmax<float>(const KernelCall &, float *, uint64_t);
template void runSoftmax<double>(const KernelCall &, double *, uint64_t);
template void runSoftmaxGrad<float>(const KernelCall &, float *, uint64_t);
template void runSoftmaxGrad<double>(const KernelCall &, double *, uint64_t);

} // namespace remat::runtime::cpu
