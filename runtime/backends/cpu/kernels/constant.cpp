//===- constant.cpp - constant: fill the result with one value -----------===//
#include "runtime/backends/cpu/kernels/Common.h"

namespace remat::runtime::cpu {

template <typename T> void runConstant(const KernelCall &call, T *, uint64_t) {
  T *y = outData<T>(call, 0);
  std::fill(y, y + call.outputs[0].numElements, T(call.attrs->value));
}

template void runConstant<float>(const KernelCall &, float *, uint64_t);
template void runConstant<double>(const KernelCall &, double *, uint64_t);

} // namespace remat::runtime::cpu
