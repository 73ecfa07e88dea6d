//===- reduce.cu - reduce_sum, reduce_mean, sum_to (deterministic) -------===//
//
// A reduction of x to y is a segmented sum: output o (row-major over the
// kept dims) sums x over the reduced dims in row-major order r = 0..R-1,
// the CPU's order. Two shapes of launch, both deterministic (fixed thread
// to data map, no atomics):
//   one pass  (R small or many outputs): thread per output, sequential f32
//             sum in r order: bitwise equal to the CPU;
//   two pass  (long reductions): C chunks of R; pass 1 sums each chunk
//             sequentially into scratch[c][o], pass 2 adds the C partials
//             in c order. Scratch: C * O floats (reduceScratchBytes).
//
//===----------------------------------------------------------------------===//
#include "runtime/backends/cuda/kernels/common.cuh"

#include <algorithm>

namespace remat::runtime::cuda {

namespace {

struct ReduceGeometry {
  StridedIndex kept;    ///< output index -> x offset
  StridedIndex reduced; ///< reduction index -> x offset
  int64_t outputs = 1, length = 1, chunks = 1;
};

/// Chunks of the two-pass scheme: 1 (one pass) unless the reduction is long
/// and there are too few outputs to fill the device. Pass 1 aims at about
/// 2^18 threads (a full H100/H200: 132 SMs x 2048) because each thread's
/// loads are sequential; fewer leave a 4 GB sum_to (seed_mlp's bias
/// gradients) latency-bound.
int64_t chunksFor(int64_t outputs, int64_t length) {
  if (length <= 256 || outputs >= 32768)
    return 1;
  int64_t byLength = (length + 127) / 128;
  int64_t byOutputs = std::max<int64_t>(1, (int64_t(1) << 18) / outputs);
  return std::max<int64_t>(1, std::min({byLength, byOutputs, int64_t(1024)}));
}

/// Merges neighbouring entries of a (size, stride) list that walk memory as
/// one dim (stride[i] == size[i+1] * stride[i+1]) and drops size-1 dims.
/// The row-major index -> offset map is unchanged, so the summation order
/// (and every bit of the result) is too; it only makes the common cases
/// (bias gradients, last-axis and full reductions) rank 1, which the
/// kernel walks without a 64-bit division per element.
void collapse(Shape &shape, std::vector<int64_t> &strides) {
  Shape outShape;
  std::vector<int64_t> outStrides;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1)
      continue;
    if (!outShape.empty() && outStrides.back() == shape[d] * strides[d]) {
      outShape.back() *= shape[d];
      outStrides.back() = strides[d];
      continue;
    }
    outShape.push_back(shape[d]);
    outStrides.push_back(strides[d]);
  }
  shape = std::move(outShape);
  strides = std::move(outStrides);
}

/// `reducedDim[d]` says whether x's dim d is summed.
ReduceGeometry geometryOf(const Shape &x, const std::vector<bool> &reducedDim) {
  std::vector<int64_t> xStrides = stridesOf(x);
  Shape keptShape, reducedShape;
  std::vector<int64_t> keptStrides, reducedStrides;
  for (size_t d = 0; d < x.size(); ++d) {
    if (reducedDim[d]) {
      reducedShape.push_back(x[d]);
      reducedStrides.push_back(xStrides[d]);
    } else {
      keptShape.push_back(x[d]);
      keptStrides.push_back(xStrides[d]);
    }
  }
  ReduceGeometry g;
  g.outputs = numElementsOf(keptShape);
  g.length = numElementsOf(reducedShape);
  collapse(keptShape, keptStrides);
  collapse(reducedShape, reducedStrides);
  g.kept = makeStridedIndex(keptShape, keptStrides);
  g.reduced = makeStridedIndex(reducedShape, reducedStrides);
  g.chunks = chunksFor(g.outputs, g.length);
  return g;
}

std::vector<bool> axesMask(const Shape &x, const std::vector<int64_t> &axes) {
  std::vector<bool> mask(x.size(), false);
  for (int64_t a : axes)
    mask[size_t(a)] = true;
  return mask;
}

/// sum_to: x dims that y (right-aligned) has as 1 or lacks are reduced.
std::vector<bool> sumToMask(const Shape &x, const Shape &y) {
  std::vector<bool> mask(x.size(), false);
  size_t offset = x.size() - y.size();
  for (size_t d = 0; d < x.size(); ++d)
    mask[d] = d < offset || (y[d - offset] == 1 && x[d] != 1);
  return mask;
}

/// Pass 1 (or the only pass): out[c * outputs + o] = sum over chunk c.
__global__ void chunkSumKernel(const float *x, StridedIndex kept,
                               StridedIndex reduced, int64_t outputs,
                               int64_t length, int64_t chunks, float *out,
                               float scale) {
  int64_t total = outputs * chunks;
  int64_t chunkLen = (length + chunks - 1) / chunks;
  for (int64_t t = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; t < total;
       t += int64_t(gridDim.x) * blockDim.x) {
    int64_t o = t % outputs, c = t / outputs;
    int64_t base = stridedOffset(kept, o);
    int64_t begin = c * chunkLen, end = min(length, begin + chunkLen);
    float sum = 0.0f;
    if (reduced.rank <= 1) {
      // The common case after collapse(): one stride, no index division.
      int64_t stride = reduced.rank == 1 ? reduced.stride[0] : 0;
      const float *p = x + base;
#pragma unroll 4
      for (int64_t r = begin; r < end; ++r)
        sum += p[r * stride];
    } else {
      for (int64_t r = begin; r < end; ++r)
        sum += x[base + stridedOffset(reduced, r)];
    }
    out[t] = chunks == 1 && scale != 1.0f ? sum * scale : sum;
  }
}

/// Pass 2: y[o] = sum_c partial[c][o], in c order.
__global__ void combineKernel(const float *partial, int64_t outputs,
                              int64_t chunks, float *y, float scale) {
  for (int64_t o = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; o < outputs;
       o += int64_t(gridDim.x) * blockDim.x) {
    float sum = 0.0f;
    for (int64_t c = 0; c < chunks; ++c)
      sum += partial[c * outputs + o];
    y[o] = scale != 1.0f ? sum * scale : sum;
  }
}

void run(const KernelCall &call, const DeviceContext &ctx,
         const ReduceGeometry &g, float scale) {
  const float *x = call.inputs[0].as<const float>();
  float *y = call.outputs[0].as<float>();
  if (g.chunks == 1) {
    REMAT_LAUNCH(gridFor(g.outputs), kThreads, 0, ctx.stream, chunkSumKernel)
    (x, g.kept, g.reduced, g.outputs, g.length, 1, y, scale);
    REMAT_CUDA_CHECK_LAUNCH("chunkSumKernel");
    return;
  }
  float *partial = static_cast<float *>(ctx.scratch);
  REMAT_LAUNCH(gridFor(g.outputs * g.chunks), kThreads, 0, ctx.stream,
               chunkSumKernel)
  (x, g.kept, g.reduced, g.outputs, g.length, g.chunks, partial, 1.0f);
  REMAT_CUDA_CHECK_LAUNCH("chunkSumKernel");
  REMAT_LAUNCH(gridFor(g.outputs), kThreads, 0, ctx.stream, combineKernel)
  (partial, g.outputs, g.chunks, y, scale);
  REMAT_CUDA_CHECK_LAUNCH("combineKernel");
}

uint64_t scratchOf(const ReduceGeometry &g) {
  return g.chunks == 1 ? 0 : uint64_t(g.chunks * g.outputs) * sizeof(float);
}

} // namespace

uint64_t reduceScratchBytes(const Shape &x, const Shape &y, bool isSumTo,
                            const std::vector<int64_t> &axes) {
  return scratchOf(
      geometryOf(x, isSumTo ? sumToMask(x, y) : axesMask(x, axes)));
}

void launchReduce(const KernelCall &call, const DeviceContext &ctx) {
  const Shape &x = call.inputs[0].shape;
  ReduceGeometry g = geometryOf(x, axesMask(x, call.attrs->axes));
  // The CPU scales the sum by float(1/count) for reduce_mean.
  float scale = call.op == OpKind::ReduceMean
                    ? float(1.0 / double(std::max<int64_t>(g.length, 1)))
                    : 1.0f;
  run(call, ctx, g, scale);
}

void launchSumTo(const KernelCall &call, const DeviceContext &ctx) {
  const Shape &x = call.inputs[0].shape;
  run(call, ctx, geometryOf(x, sumToMask(x, call.outputs[0].shape)), 1.0f);
}

} // namespace remat::runtime::cuda
