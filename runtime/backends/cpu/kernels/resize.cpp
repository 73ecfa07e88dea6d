//===- resize.cpp - resize_nearest and resize_nearest_grad ----------------===//
//
// resize_nearest: y[i] = x[i / scales] per dim. Its gradient gathers: each
// dx element sums, in the float type, the dy elements that copy it, in
// row-major order of their offsets within the copy block (the CUDA kernel
// sums in the same order, so the two agree bitwise).
//
//===----------------------------------------------------------------------===//
#include "runtime/backends/cpu/kernels/Common.h"

namespace remat::runtime::cpu {

namespace {

/// Row-major strides of a shape.
std::vector<int64_t> rowMajorStrides(const Shape &shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (size_t d = shape.size(); d-- > 1;)
    strides[d - 1] = strides[d] * shape[d];
  return strides;
}

} // namespace

template <typename T> void runResize(const KernelCall &call, T *, uint64_t) {
  const std::vector<int64_t> &scales = call.attrs->scales;
  const T *in = inData<T>(call, 0);
  T *out = outData<T>(call, 0);
  size_t rank = scales.size();
  switch (call.op) {
  case OpKind::ResizeNearest: {
    const Shape &y = call.outputs[0].shape;
    std::vector<int64_t> xStrides = rowMajorStrides(call.inputs[0].shape);
    for (int64_t i = 0, n = call.outputs[0].numElements; i < n; ++i) {
      int64_t rest = i, source = 0;
      for (size_t d = rank; d-- > 0;) {
        source += (rest % y[d]) / scales[d] * xStrides[d];
        rest /= y[d];
      }
      out[i] = in[source];
    }
    return;
  }
  case OpKind::ResizeNearestGrad: {
    const Shape &dx = call.outputs[0].shape;
    std::vector<int64_t> dyStrides = rowMajorStrides(call.inputs[0].shape);
    int64_t copies = product(scales.begin(), scales.end());
    for (int64_t i = 0, n = call.outputs[0].numElements; i < n; ++i) {
      // The first copy's offset in dy.
      int64_t rest = i, first = 0;
      for (size_t d = rank; d-- > 0;) {
        first += (rest % dx[d]) * scales[d] * dyStrides[d];
        rest /= dx[d];
      }
      T sum = T(0);
      for (int64_t k = 0; k < copies; ++k) {
        int64_t krest = k, offset = first;
        for (size_t d = rank; d-- > 0;) {
          offset += (krest % scales[d]) * dyStrides[d];
          krest /= scales[d];
        }
        sum += in[offset];
      }
      out[i] = sum;
    }
    return;
  }
  default:
    throwNoKernel(call.op);
  }
}

template void runResize<float>(const KernelCall &, float *, uint64_t);
template void runResize<double>(const KernelCall &, double *, uint64_t);

} // namespace remat::runtime::cpu
