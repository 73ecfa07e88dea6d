//===- reduce.cpp - reduce_sum, reduce_mean, sum_to ----------------------===//
//
// Every output element is a running sum in the float type over x in
// row-major order (a full reduction is one running sum); reduce_mean then
// scales by T(1 / count).
//
//===----------------------------------------------------------------------===//
#include "runtime/backends/cpu/kernels/Common.h"

#include "runtime/Strides.h"

namespace remat::runtime::cpu {

namespace {

/// Sums x into y where `yStrides` maps each x dim to y (0 = reduced).
template <typename T>
void sumInto(const KernelCall &call, const std::vector<int64_t> &yStrides,
             T *y) {
  const T *x = inData<T>(call, 0);
  std::fill(y, y + call.outputs[0].numElements, T(0));
  if (std::all_of(yStrides.begin(), yStrides.end(),
                  [](int64_t s) { return s == 0; })) {
    // A full reduction: one running sum in row-major order.
    T total = T(0);
    for (int64_t i = 0, n = call.inputs[0].numElements; i < n; ++i)
      total += x[i];
    y[0] = total;
    return;
  }
  std::vector<int64_t> strides[1] = {yStrides};
  walk(call.inputs[0].shape, strides,
       [&](int64_t i, const int64_t *off) { y[off[0]] += x[i]; });
}

template <typename T> void reduce(const KernelCall &call, bool mean) {
  const Shape &xs = call.inputs[0].shape;
  const std::vector<int64_t> &axes = call.attrs->axes;
  Shape kept(xs.size());
  int64_t count = 1;
  for (size_t d = 0; d < xs.size(); ++d) {
    bool reduced =
        std::find(axes.begin(), axes.end(), int64_t(d)) != axes.end();
    kept[d] = reduced ? 1 : xs[d];
    if (reduced)
      count *= xs[d];
  }
  // y has x's layout with reduced dims of size 1 (keep_dims or not).
  std::vector<int64_t> yStrides = stridesOf(kept);
  for (size_t d = 0; d < xs.size(); ++d)
    if (kept[d] == 1)
      yStrides[d] = 0;
  T *y = outData<T>(call, 0);
  sumInto(call, yStrides, y);
  if (mean) {
    T inv = T(1.0 / double(count));
    for (int64_t i = 0, n = call.outputs[0].numElements; i < n; ++i)
      y[i] *= inv;
  }
}

} // namespace

template <typename T> void runReduce(const KernelCall &call, T *, uint64_t) {
  switch (call.op) {
  case OpKind::ReduceSum:
    return reduce<T>(call, false);
  case OpKind::ReduceMean:
    return reduce<T>(call, true);
  default:
    throwNoKernel(call.op);
  }
}

template <typename T> void runSumTo(const KernelCall &call, T *, uint64_t) {
  const Shape &xs = call.inputs[0].shape, &ys = call.outputs[0].shape;
  if (isSuffix(ys, xs)) {
    // Bias-gradient shape: y[j] sums x over whole rows of numel(y), in
    // the same row-major order as the general walk, so the bits match; by
    // blocks of columns on the threads. bf16 x and y (float kernels; only
    // this shape, CpuWorkspace.cpp) are widened as read and rounded once
    // as written, the bits of float copies.
    withStorage<T>(call.inputs[0].dtype, [&](auto xs) {
      withStorage<T>(call.outputs[0].dtype, [&](auto ys) {
        const auto *x = call.inputs[0].as<const decltype(xs)>();
        auto *y = call.outputs[0].as<decltype(ys)>();
        int64_t ny = call.outputs[0].numElements,
                n = call.inputs[0].numElements;
        constexpr int64_t kColumns = 64;
        parallelRows((ny + kColumns - 1) / kColumns, n, [&](int64_t block) {
          int64_t j0 = block * kColumns, j1 = std::min(ny, j0 + kColumns);
          T sums[kColumns] = {};
          for (int64_t i = 0; i < n; i += ny)
            for (int64_t j = j0; j < j1; ++j)
              sums[j - j0] += loadAs<T>(x, i + j);
          for (int64_t j = j0; j < j1; ++j)
            storeAs(y, j, sums[j - j0]);
        });
      });
    });
    return;
  }
  sumInto(call, broadcastStrides(ys, xs), outData<T>(call, 0));
}

template void runReduce<float>(const KernelCall &, float *, uint64_t);
template void runReduce<double>(const KernelCall &, double *, uint64_t);
template void runSumTo<float>(const KernelCall &, float *, uint64_t);
template void runSumTo<double>(const KernelCall &, double *, uint64_t);

} // namespace remat::runtime::cpu
