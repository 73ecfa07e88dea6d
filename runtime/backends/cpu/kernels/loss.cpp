//===- loss.cpp - cross_entropy, mse and their gradients -----------------===//
//
// The losses accumulate in double: cross_entropy sums each row's
// logsumexp - logit[label] (the exponentials expOf in the float type,
// Common.h, summed in double by laneSum, a piece of the row at a time, and
// logged in double) and divides by the row count, mse sums squared
// differences and divides by the element count. The
// gradients scale by dloss / count: cross_entropy_grad's rows are the
// softmax (softmaxRow's arithmetic) minus the label's one-hot. Every label is
// checked against [0, C) before anything is written. Rows run on OpenMP's
// threads, the loss's row terms added in row order, so the bits do not depend
// on the thread count. The rows (elements) of a micro-batch's padding sample
// (KernelCall::liveRows) add nothing to the loss and get zero gradients; the
// count stays the slice's. bf16 logits (--precision bf16) are widened as read
// and the float32 loss computed from them; bf16 dlogits are each row's float
// result rounded to bf16.
//
//===----------------------------------------------------------------------===//
#include "runtime/backends/cpu/kernels/Common.h"

#include <vector>

namespace remat::runtime::cpu {

namespace {

/// Rows at a time whose loss terms the forward keeps before adding them in
/// row order; logits at a time whose exponentials a row keeps.
constexpr int64_t kLossRows = 4096, kExpPiece = 512;

/// Calls piece(e, j0, n) for the row's logits j0.. in pieces of at most
/// kExpPiece: e[i] = expOf(x[j0 + i] - shift), in float (T = float) or
/// double.
template <typename T, typename In, typename Piece>
void rowExps(const In *x, int64_t c, T shift, Piece piece) {
  T e[kExpPiece];
  for (int64_t j0 = 0; j0 < c; j0 += kExpPiece) {
    int64_t n = std::min(kExpPiece, c - j0);
    for (int64_t i = 0; i < n; ++i)
      e[i] = expOf(loadAs<T>(x, j0 + i) - shift);
    piece(e, j0, n);
  }
}

template <typename T, typename In>
void crossEntropy(const KernelCall &call, bool grad) {
  const TensorRef &labels = call.inputs[1];
  const In *logits = call.inputs[0].as<const In>();
  int64_t c = call.inputs[0].shape.back(),
          rows = call.inputs[0].numElements / c;
  for (int64_t r = 0; r < rows; ++r)
    checkedIndex(labels, r, c, "label");
  const int64_t live = call.liveRows(rows);
  auto rowMax = [&](const In *x) {
    return laneMax<T>(c, [&](int64_t j) { return loadAs<T>(x, j); });
  };
  // The denominator of the row's softmax: the exponentials summed in
  // double, each piece's by laneSum, the pieces' sums in order.
  auto rowSum = [&](const In *x, T maxValue) {
    double sum = 0;
    rowExps<T>(x, c, maxValue, [&](const T *e, int64_t, int64_t n) {
      sum += laneSum(n, [&](int64_t i) { return double(e[i]); });
    });
    return sum;
  };
  if (!grad) {
    // Each row's logsumexp - logit[label] in double, on the threads; then
    // added in row order, so the bits do not depend on the thread count.
    double total = 0;
    std::vector<double> terms(size_t(std::min(live, kLossRows)));
    for (int64_t r0 = 0; r0 < live; r0 += kLossRows) {
      int64_t n = std::min(kLossRows, live - r0);
      parallelRows(n, n * c, [&](int64_t i) {
        const In *x = logits + (r0 + i) * c;
        T maxValue = rowMax(x);
        terms[size_t(i)] = double(maxValue) + std::log(rowSum(x, maxValue)) -
                           double(loadAs<T>(x, readIndex(labels, r0 + i)));
      });
      for (int64_t i = 0; i < n; ++i)
        total += terms[size_t(i)];
    }
    outData<T>(call, 0)[0] = T(total / double(rows));
    return;
  }
  // dlogits = (softmax(x) - onehot(label)) * dloss / rows, each row on its
  // own (the exponentials computed twice instead of kept), bf16 dlogits
  // rounded once.
  T scale = T(double(inData<T>(call, 2)[0]) / double(rows));
  withStorage<T>(call.outputs[0].dtype, [&](auto stored) {
    auto *dlogits = call.outputs[0].as<decltype(stored)>();
    parallelRows(rows, rows * c, [&](int64_t r) {
      if (r >= live) { // a padding sample's row
        for (int64_t j = 0; j < c; ++j)
          storeAs(dlogits, r * c + j, T(0));
        return;
      }
      const In *x = logits + r * c;
      T maxValue = rowMax(x);
      T inv = T(1.0 / rowSum(x, maxValue));
      int64_t label = readIndex(labels, r);
      rowExps<T>(x, c, maxValue, [&](T *e, int64_t j0, int64_t n) {
        for (int64_t i = 0; i < n; ++i)
          storeAs(dlogits, r * c + j0 + i,
                  (e[i] * inv - (j0 + i == label ? T(1) : T(0))) * scale);
      });
    });
  });
}

template <typename T> void crossEntropy(const KernelCall &call, bool grad) {
  withStorage<T>(call.inputs[0].dtype, [&](auto stored) {
    crossEntropy<T, decltype(stored)>(call, grad);
  });
}

} // namespace

template <typename T>
void runCrossEntropy(const KernelCall &call, T *, uint64_t) {
  crossEntropy<T>(call, false);
}

template <typename T>
void runCrossEntropyGrad(const KernelCall &call, T *, uint64_t) {
  crossEntropy<T>(call, true);
}

template <typename T> void runMse(const KernelCall &call, T *, uint64_t) {
  const T *a = inData<T>(call, 0), *b = inData<T>(call, 1);
  int64_t n = call.inputs[0].numElements;
  double sum = 0;
  const int64_t live = call.liveRows(n);
  for (int64_t i = 0; i < live; ++i) {
    double d = double(a[i]) - double(b[i]);
    sum += d * d;
  }
  outData<T>(call, 0)[0] = T(sum / double(n));
}

template <typename T> void runMseGrad(const KernelCall &call, T *, uint64_t) {
  const T *a = inData<T>(call, 0), *b = inData<T>(call, 1);
  int64_t n = call.inputs[0].numElements;
  T scale = T(2.0 * double(inData<T>(call, 2)[0]) / double(n));
  T *da = outData<T>(call, 0);
  const int64_t live = call.liveRows(n);
  for (int64_t i = 0; i < n; ++i)
    da[i] = i < live ? scale * (a[i] - b[i]) : T(0);
}

template void runCrossEntropy<float>(const KernelCall &, float *, uint64_t);
template void runCrossEntropy<double>(const KernelCall &, double *, uint64_t);
template void runCrossEntropyGrad<float>(const KernelCall &, float *, uint64_t);
template void runCrossEntropyGrad<double>(const KernelCall &, double *,
                                          uint64_t);
template void runMse<float>(const KernelCall &, float *, uint64_t);
template void runMse<double>(const KernelCall &, double *, uint64_t);
template void runMseGrad<float>(const KernelCall &, float *, uint64_t);
template void runMseGrad<double>(const KernelCall &, double *, uint64_t);

} // namespace remat::runtime::cpu
