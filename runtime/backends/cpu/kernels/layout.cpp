//===- layout.cpp - reshape, transpose, broadcast_to, slice, concat ------===//
//
// reshape copies the bytes unless source and result are the same range.
// transpose, broadcast_to and slice gather: result element i reads x at a
// strided offset. slice_grad zero-fills dx and scatters dy into the box
// slice reads; concat scatters a and b into their boxes of the result.
// reshape and transpose also move index tensors and bf16 ones, in their
// dtype. convert converts between the float type the kernels compute in (T:
// the plan's f32, or f64) and bf16 (ops/BFloat16.h: round to nearest even).
//
//===----------------------------------------------------------------------===//
#include "runtime/backends/cpu/kernels/Common.h"

#include "ops/BFloat16.h"
#include "runtime/Strides.h"

#include <cstring>

namespace remat::runtime::cpu {

namespace {

/// y = x permuted: each row of y (its last dimension, contiguous) gathers
/// x at that dimension's stride, the rows shared among the threads.
template <typename E> void transposeAs(const KernelCall &call) {
  const Shape &xs = call.inputs[0].shape, &ys = call.outputs[0].shape;
  std::vector<int64_t> xStrides = stridesOf(xs), strides(xs.size());
  for (size_t d = 0; d < xs.size(); ++d)
    strides[d] = xStrides[call.attrs->permutation[d]];
  const E *x = call.inputs[0].template as<const E>();
  E *y = call.outputs[0].template as<E>();
  int64_t total = call.outputs[0].numElements;
  if (ys.empty()) { // a scalar
    y[0] = x[0];
    return;
  }
  int64_t inner = ys.back(), step = strides.back();
  if (total == 0 || inner == 0)
    return;
  parallelRows(total / inner, total, [&](int64_t row) {
    // The row's first element in x: its index over y's outer dimensions.
    int64_t offset = 0;
    for (int64_t d = int64_t(ys.size()) - 2, rest = row; d >= 0; --d) {
      offset += rest % ys[size_t(d)] * strides[size_t(d)];
      rest /= ys[size_t(d)];
    }
    E *out = y + row * inner;
    const E *in = x + offset;
    for (int64_t j = 0; j < inner; ++j)
      out[j] = in[j * step];
  });
}

} // namespace

template <typename T> void runReshape(const KernelCall &call, T *, uint64_t) {
  const TensorRef &x = call.inputs[0];
  // An f32 tensor holds T (double when tests run the kernels in f64); a
  // bf16 or index tensor its own dtype.
  size_t elementBytes = isFloatDType(x.dtype) && x.dtype != DType::BF16
                            ? sizeof(T)
                            : size_t(dtypeSize(x.dtype));
  if (call.outputs[0].data != x.data)
    std::memmove(call.outputs[0].data, x.data,
                 size_t(x.numElements) * elementBytes);
}

template <typename T> void runTranspose(const KernelCall &call, T *, uint64_t) {
  // transpose also moves index and bf16 tensors, whose elements are not T.
  if (call.inputs[0].dtype == DType::BF16)
    return transposeAs<uint16_t>(call);
  if (call.inputs[0].dtype == DType::I64)
    return transposeAs<int64_t>(call);
  if (call.inputs[0].dtype == DType::I32)
    return transposeAs<int32_t>(call);
  transposeAs<T>(call);
}

template <typename T>
void runBroadcastTo(const KernelCall &call, T *, uint64_t) {
  const T *x = inData<T>(call, 0);
  T *y = outData<T>(call, 0);
  std::vector<int64_t> strides[1] = {
      broadcastStrides(call.inputs[0].shape, call.outputs[0].shape)};
  walk(call.outputs[0].shape, strides,
       [&](int64_t i, const int64_t *off) { y[i] = x[off[0]]; });
}

template <typename T> void runSlice(const KernelCall &call, T *, uint64_t) {
  const OpAttrs &attrs = *call.attrs;
  const T *in = inData<T>(call, 0);
  T *out = outData<T>(call, 0);
  if (call.op == OpKind::Slice) {
    StridedBox box =
        sliceBox(call.inputs[0].shape, attrs.starts, attrs.steps);
    std::vector<int64_t> strides[1] = {box.strides};
    walk(call.outputs[0].shape, strides, [&](int64_t i, const int64_t *off) {
      out[i] = in[box.offset + off[0]];
    });
    return;
  }
  if (call.op != OpKind::SliceGrad)
    throwNoKernel(call.op);
  std::fill(out, out + call.outputs[0].numElements, T(0));
  StridedBox box = sliceBox(call.outputs[0].shape, attrs.starts, attrs.steps);
  std::vector<int64_t> strides[1] = {box.strides};
  walk(call.inputs[0].shape, strides, [&](int64_t i, const int64_t *off) {
    out[box.offset + off[0]] = in[i];
  });
}

template <typename T> void runConcat(const KernelCall &call, T *, uint64_t) {
  const Shape &shape = call.outputs[0].shape;
  size_t axis = size_t(call.attrs->axis);
  T *c = outData<T>(call, 0);
  StridedBox boxes[2] = {
      {0, stridesOf(shape)},
      concatSecondBox(shape, axis, call.inputs[0].shape[axis])};
  for (int k = 0; k < 2; ++k) {
    const T *part = inData<T>(call, k);
    std::vector<int64_t> strides[1] = {boxes[k].strides};
    walk(call.inputs[k].shape, strides, [&](int64_t i, const int64_t *off) {
      c[boxes[k].offset + off[0]] = part[i];
    });
  }
}

template <typename T> void runConvert(const KernelCall &call, T *, uint64_t) {
  const TensorRef &x = call.inputs[0], &y = call.outputs[0];
  int64_t n = x.numElements;
  bool fromBf16 = x.dtype == DType::BF16, toBf16 = y.dtype == DType::BF16;
  if (fromBf16 == toBf16) { // the same float type: a copy
    if (y.data != x.data)
      std::memmove(y.data, x.data,
                   size_t(n) * (fromBf16 ? sizeof(uint16_t) : sizeof(T)));
  } else if (fromBf16) {
    const uint16_t *in = x.as<const uint16_t>();
    T *out = y.as<T>();
    parallelElements(n,
                     [&](int64_t i) { out[i] = T(ops::bf16ToFloat(in[i])); });
  } else {
    // From T through float (for T = double the f64 test mode, rounding
    // twice: to float, then to bf16).
    const T *in = x.as<const T>();
    uint16_t *out = y.as<uint16_t>();
    parallelElements(
        n, [&](int64_t i) { out[i] = ops::floatToBf16(float(in[i])); });
  }
}

template void runConvert<float>(const KernelCall &, float *, uint64_t);
template void runConvert<double>(const KernelCall &, double *, uint64_t);
template void runReshape<float>(const KernelCall &, float *, uint64_t);
template void runReshape<double>(const KernelCall &, double *, uint64_t);
template void runTranspose<float>(const KernelCall &, float *, uint64_t);
template void runTranspose<double>(const KernelCall &, double *, uint64_t);
template void runBroadcastTo<float>(const KernelCall &, float *, uint64_t);
template void runBroadcastTo<double>(const KernelCall &, double *, uint64_t);
template void runSlice<float>(const KernelCall &, float *, uint64_t);
template void runSlice<double>(const KernelCall &, double *, uint64_t);
template void runConcat<float>(const KernelCall &, float *, uint64_t);
template void runConcat<double>(const KernelCall &, double *, uint64_t);

} // namespace remat::runtime::cpu
