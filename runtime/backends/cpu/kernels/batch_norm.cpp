//===- batch_norm.cpp - batch_norm, its gradient and running statistics --===//
//
// x is [N, C, S...] viewed as [N, C, S] (S the product of the dims after C,
// 1 for rank 2); channel c's M = N·S elements are x[n·C·S + c·S + s].
// Per channel: mean and biased variance in double (two passes, n then s;
// each image's span in four interleaved partial sums, laneSum),
// rstd = 1 / sqrt(var + epsilon) in double, y = T((x - mean)·rstd)·gamma +
// beta, as for layer normalization. The gradient recomputes the statistics and
// sums dy and dy·x̂ in double, in one pass; dx = rstd·gamma·(dy - Σdy/M -
// x̂·Σ(dy·x̂)/M). The running updates compute the batch mean (or the unbiased
// variance, over M - 1) the same way and write running·momentum + batch·(1 -
// momentum). Channels are independent: parallelFor shares them among threads,
// and each channel's sums keep their order.
//
// x, y, dy and dx may be bf16 (--precision bf16): read widened, written
// rounded to nearest, as float copies of them would be.
//
// All four start from the same moments of x (mean and Σ(x - mean)²), so
// steps that read the same unchanged x can share them (SharedMoments.h):
// runWithMoments takes them from a ChannelMoments that an earlier step
// filled, or computes and stores them for the later ones. The same
// function computes them either way: the same bits.
//
//===----------------------------------------------------------------------===//
#include "runtime/backends/cpu/kernels/Common.h"

namespace remat::runtime::cpu {

namespace {

/// A float tensor as the kernel's T: T itself, or bf16 (--precision bf16)
/// widened as read and rounded to nearest as written, as float copies of
/// it would be (Bf16Staging.h): the same bits without the copies.
template <typename T> struct Floats {
  void *data;
  bool bf16;
  explicit Floats(const TensorRef &t)
      : data(t.data), bf16(t.dtype == DType::BF16) {}
  T operator[](int64_t i) const {
    return bf16 ? loadAs<T>(static_cast<const uint16_t *>(data), i)
                : loadAs<T>(static_cast<const T *>(data), i);
  }
  void set(int64_t i, T v) const {
    if (bf16)
      storeAs(static_cast<uint16_t *>(data), i, v);
    else
      storeAs(static_cast<T *>(data), i, v);
  }
};

/// The [N, C, S] view of x.
struct ChannelLayout {
  int64_t n, c, s;
  explicit ChannelLayout(const Shape &x)
      : n(x[0]), c(x[1]), s(product(x.begin() + 2, x.end())) {}
  int64_t count() const { return n * s; }
  /// Calls fn(offset) for channel `channel`'s elements, n then s.
  template <typename Fn> void forEach(int64_t channel, Fn fn) const {
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < s; ++j)
        fn((i * c + channel) * s + j);
  }
};

/// Two sums taken in one pass, added component by component (each
/// component in the order a lone double sum would have).
struct SumPair {
  double first = 0, second = 0;
  SumPair &operator+=(const SumPair &o) {
    first += o.first;
    second += o.second;
    return *this;
  }
  friend SumPair operator+(SumPair a, const SumPair &b) { return a += b; }
};

/// Σ f(offset) over channel `channel`'s elements: each image's contiguous
/// span summed by laneSum in four lanes, the spans added in image order.
template <typename V = double, typename F>
V channelSum(const ChannelLayout &layout, int64_t channel, F f) {
  V total{};
  for (int64_t i = 0; i < layout.n; ++i) {
    int64_t base = (i * layout.c + channel) * layout.s;
    total += laneSum<V, 4>(layout.s, [&](int64_t j) { return f(base + j); });
  }
  return total;
}

/// Mean and sum of squared deviations of one channel (two passes).
template <typename T>
void channelMoments(const Floats<T> &x, const ChannelLayout &layout,
                    int64_t channel, double &mean, double &squares) {
  mean = channelSum(layout, channel, [&](int64_t o) { return double(x[o]); }) /
         double(layout.count());
  squares = channelSum(layout, channel, [&](int64_t o) {
    double d = double(x[o]) - mean;
    return d * d;
  });
}

/// Channel moments from x, or from `shared` when it is filled (when it is
/// not, every channel's are stored in it for later steps).
template <typename T> struct MomentsSource {
  Floats<T> x;
  const ChannelLayout &layout;
  ChannelMoments *shared;

  MomentsSource(const Floats<T> &x, const ChannelLayout &layout,
                ChannelMoments *shared)
      : x(x), layout(layout), shared(shared) {
    if (shared && (shared->mean.size() < size_t(layout.c) ||
                   shared->squares.size() < size_t(layout.c)))
      throw std::logic_error(
          "shared channel moments hold " + std::to_string(shared->mean.size()) +
          " channels, the step has " + std::to_string(layout.c));
  }
  void get(int64_t ch, double &mean, double &squares) const {
    if (shared && shared->filled) {
      mean = shared->mean[size_t(ch)];
      squares = shared->squares[size_t(ch)];
      return;
    }
    channelMoments(x, layout, ch, mean, squares);
    if (shared) {
      shared->mean[size_t(ch)] = mean;
      shared->squares[size_t(ch)] = squares;
    }
  }
};

template <typename T>
void batchNorm(const KernelCall &call, ChannelMoments *shared) {
  Floats<T> x(call.inputs[0]), y(call.outputs[0]);
  const T *gamma = inData<T>(call, 1), *beta = inData<T>(call, 2);
  ChannelLayout layout(call.inputs[0].shape);
  MomentsSource<T> moments(x, layout, shared);
  parallelRows(layout.c, layout.c * layout.count(), [&](int64_t ch) {
    double mean, squares;
    moments.get(ch, mean, squares);
    double rstd = 1.0 / std::sqrt(squares / double(layout.count()) +
                                  double(call.attrs->epsilon));
    layout.forEach(ch, [&](int64_t o) {
      y.set(o, T((double(x[o]) - mean) * rstd) * gamma[ch] + beta[ch]);
    });
  });
}

template <typename T>
void batchNormGrad(const KernelCall &call, ChannelMoments *shared) {
  Floats<T> x(call.inputs[0]), dy(call.inputs[2]), dx(call.outputs[0]);
  const T *gamma = inData<T>(call, 1);
  T *dgamma = outData<T>(call, 1), *dbeta = outData<T>(call, 2);
  ChannelLayout layout(call.inputs[0].shape);
  MomentsSource<T> moments(x, layout, shared);
  double count = double(layout.count());
  parallelRows(layout.c, layout.c * layout.count(), [&](int64_t ch) {
    double mean, squares;
    moments.get(ch, mean, squares);
    double rstd =
        1.0 / std::sqrt(squares / count + double(call.attrs->epsilon));
    // Σdy and Σdy·x̂ in one pass over dy.
    SumPair sums = channelSum<SumPair>(layout, ch, [&](int64_t o) {
      double g = double(dy[o]);
      return SumPair{g, g * ((double(x[o]) - mean) * rstd)};
    });
    double sumDy = sums.first, sumDyXhat = sums.second;
    dgamma[ch] = T(sumDyXhat);
    dbeta[ch] = T(sumDy);
    double scale = rstd * double(gamma[ch]);
    double meanDy = sumDy / count, meanDyXhat = sumDyXhat / count;
    layout.forEach(ch, [&](int64_t o) {
      double xhat = (double(x[o]) - mean) * rstd;
      dx.set(o, T(scale * (double(dy[o]) - meanDy - xhat * meanDyXhat)));
    });
  });
}

template <typename T>
void runningStatUpdate(const KernelCall &call, ChannelMoments *shared) {
  bool variance = call.op == OpKind::RunningVarUpdate;
  Floats<T> running(call.inputs[0]), x(call.inputs[1]), out(call.outputs[0]);
  ChannelLayout layout(call.inputs[1].shape);
  MomentsSource<T> moments(x, layout, shared);
  double momentum = double(call.attrs->momentum);
  parallelRows(layout.c, layout.c * layout.count(), [&](int64_t ch) {
    double batch;
    if (variance || shared) {
      // Shared moments hold both (and a step that fills them computes
      // both); the mean is the same sum over the same count either way.
      double mean, squares;
      moments.get(ch, mean, squares);
      batch = variance
                  ? squares / double(std::max<int64_t>(layout.count() - 1, 1))
                  : mean;
    } else {
      // The mean alone: channelMoments' first pass (the same sum, so the
      // same bits), without its second.
      batch = channelSum(layout, ch, [&](int64_t o) { return double(x[o]); }) /
              double(layout.count());
    }
    out.set(ch, T(double(running[ch]) * momentum + batch * (1.0 - momentum)));
  });
}

} // namespace

template <typename T> void runBatchNorm(const KernelCall &call, T *, uint64_t) {
  if (call.op != OpKind::BatchNorm)
    throwNoKernel(call.op);
  batchNorm<T>(call, nullptr);
}

template <typename T>
void runBatchNormGrad(const KernelCall &call, T *, uint64_t) {
  if (call.op != OpKind::BatchNormGrad)
    throwNoKernel(call.op);
  batchNormGrad<T>(call, nullptr);
}

template <typename T>
void runRunningStatUpdate(const KernelCall &call, T *, uint64_t) {
  if (call.op != OpKind::RunningMeanUpdate &&
      call.op != OpKind::RunningVarUpdate)
    throwNoKernel(call.op);
  runningStatUpdate<T>(call, nullptr);
}

template <typename T>
void runWithMoments(const KernelCall &call, ChannelMoments &moments) {
  switch (call.op) {
  case OpKind::BatchNorm:
    return batchNorm<T>(call, &moments);
  case OpKind::BatchNormGrad:
    return batchNormGrad<T>(call, &moments);
  case OpKind::RunningMeanUpdate:
  case OpKind::RunningVarUpdate:
    return runningStatUpdate<T>(call, &moments);
  default:
    throwNoKernel(call.op);
  }
}

template void runBatchNorm<float>(const KernelCall &, float *, uint64_t);
template void runBatchNorm<double>(const KernelCall &, double *, uint64_t);
template void runBatchNormGrad<float>(const KernelCall &, float *, uint64_t);
template void runBatchNormGrad<double>(const KernelCall &, double *, uint64_t);
template void runRunningStatUpdate<float>(const KernelCall &, float *,
                                          uint64_t);
template void runRunningStatUpdate<double>(const KernelCall &, double *,
                                           uint64_t);
template void runWithMoments<float>(const KernelCall &, ChannelMoments &);
template void runWithMoments<double>(const KernelCall &, ChannelMoments &);

} // namespace remat::runtime::cpu
