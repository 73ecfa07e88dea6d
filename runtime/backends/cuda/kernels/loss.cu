//===- loss.cu - cross_entropy, mse and their gradients ------------------===//
//
// Losses accumulate in double as on the CPU: cross_entropy writes each
// row's -log softmax[label] (double) to scratch, mse one double partial
// per block of a fixed grid (a function of the size only), and one block
// adds them in a fixed order. A label outside [0, C) is recorded in
// DeviceStatus (reported at synchronize) and its row contributes 0 (its
// gradient row is 0). cross_entropy and its gradient read bf16 logits
// (--precision bf16) as they are, widened per element, and write bf16
// dlogits each rounded once from the float result, as the CPU does. The
// rows (elements) of a micro-batch's padding sample (KernelCall::liveRows)
// add nothing to the loss and get zero gradients, as on the CPU.
//
//===----------------------------------------------------------------------===//
#include "runtime/backends/cuda/kernels/common.cuh"

#include <algorithm>

namespace remat::runtime::cuda {

namespace {

constexpr int kMseBlocks = 1024;

int64_t mseBlocks(int64_t n) {
  return std::min<int64_t>(kMseBlocks, (n + kThreads - 1) / kThreads);
}

/// The largest of a row's c values (every thread of the block gets it).
template <typename E>
__device__ inline float rowMaxOf(const E *row, int64_t c, float *sharedMax) {
  float localMax = -FLT_MAX;
  for (int64_t j = threadIdx.x; j < c; j += blockDim.x)
    localMax = fmaxf(localMax, loadFloat(row, j));
  return blockMax(localMax, sharedMax, -FLT_MAX);
}

/// E: float, or bf16 bits (uint16_t) for the logits (and dlogits).
template <typename E>
__global__ void crossEntropyRowKernel(const E *logits, const void *labels,
                                      bool labels64, int64_t c, double *rowLoss,
                                      DeviceStatus *status, int64_t stepIndex) {
  __shared__ float sharedMax[32];
  __shared__ double sharedSum[32];
  int64_t r = blockIdx.x;
  const E *row = logits + r * c;
  int64_t label = loadIndex(labels, labels64, r);
  if (label < 0 || label >= c) {
    if (threadIdx.x == 0) {
      recordIndexError(status, 1, stepIndex, label, r, c);
      rowLoss[r] = 0;
    }
    return; // the whole block takes this branch
  }
  float rowMax = rowMaxOf(row, c, sharedMax);
  double local = 0;
  for (int64_t j = threadIdx.x; j < c; j += blockDim.x)
    local += exp(double(loadFloat(row, j) - rowMax));
  double sum = blockSum(local, sharedSum);
  if (threadIdx.x == 0)
    rowLoss[r] = double(rowMax) + log(sum) - double(loadFloat(row, label));
}

/// dlogits = (softmax - onehot) * dloss / rows, each element (e * inv - 1
/// at the label) * scale in float, as softmaxRow's and the CPU's order.
/// dlogits may be logits' own bytes: every thread reads element j before
/// it writes it, and the row's max and sum are complete before any write.
template <typename E>
__global__ void crossEntropyGradKernel(const E *logits, const void *labels,
                                       bool labels64, const float *dloss,
                                       int64_t rows, int64_t live, int64_t c,
                                       E *dlogits, DeviceStatus *status,
                                       int64_t stepIndex) {
  __shared__ float sharedMax[32];
  __shared__ double sharedSum[32];
  int64_t r = blockIdx.x;
  const E *row = logits + r * c;
  E *out = dlogits + r * c;
  int64_t label = loadIndex(labels, labels64, r);
  if (label < 0 || label >= c || r >= live) {
    if (threadIdx.x == 0 && r < live)
      recordIndexError(status, 1, stepIndex, label, r, c);
    for (int64_t j = threadIdx.x; j < c; j += blockDim.x)
      storeFloat(out, j, 0.0f);
    return;
  }
  float scale = float(double(*dloss) / double(rows));
  float rowMax = rowMaxOf(row, c, sharedMax);
  double localSum = 0;
  for (int64_t j = threadIdx.x; j < c; j += blockDim.x)
    localSum += double(expf(loadFloat(row, j) - rowMax));
  double sum = blockSum(localSum, sharedSum);
  float inv = float(1.0 / sum);
  for (int64_t j = threadIdx.x; j < c; j += blockDim.x) {
    float v = expf(loadFloat(row, j) - rowMax) * inv;
    if (j == label)
      v -= 1.0f;
    storeFloat(out, j, v * scale);
  }
}

__global__ void msePartialKernel(const float *a, const float *b, int64_t n,
                                 double *partial) {
  __shared__ double shared[32];
  double local = 0;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    double d = double(a[i]) - double(b[i]);
    local += d * d;
  }
  double sum = blockSum(local, shared);
  if (threadIdx.x == 0)
    partial[blockIdx.x] = sum;
}

__global__ void mseGradKernel(const float *a, const float *b,
                              const float *dloss, float *da, int64_t n,
                              int64_t live) {
  float scale = float(2.0 * double(*dloss) / double(n));
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    da[i] = i < live ? scale * (a[i] - b[i]) : 0.0f;
}

} // namespace

uint64_t lossScratchBytes(OpKind op, const Shape &x) {
  if (op == OpKind::CrossEntropy)
    return uint64_t(numElementsOf(x) / x.back()) * sizeof(double);
  return uint64_t(mseBlocks(numElementsOf(x))) * sizeof(double);
}

void launchCrossEntropy(const KernelCall &call, const DeviceContext &ctx) {
  const TensorRef &logits = call.inputs[0], &labels = call.inputs[1];
  int64_t c = logits.shape.back(), rows = logits.numElements / c;
  double *rowLoss = static_cast<double *>(ctx.scratch);
  withElementType(logits.dtype, [&](auto e) {
    using E = decltype(e);
    REMAT_LAUNCH(rowGrid(rows, "crossEntropyRowKernel"), rowThreads(c), 0,
                 ctx.stream, crossEntropyRowKernel<E>)
    (logits.as<const E>(), labels.data, labels.dtype == DType::I64, c, rowLoss,
     ctx.status, int64_t(call.stepIndex));
  });
  REMAT_CUDA_CHECK_LAUNCH("crossEntropyRowKernel");
  launchSumDoubles(rowLoss, call.liveRows(rows), double(rows),
                   call.outputs[0].as<float>(), ctx.stream);
}

void launchCrossEntropyGrad(const KernelCall &call, const DeviceContext &ctx) {
  const TensorRef &logits = call.inputs[0], &labels = call.inputs[1];
  int64_t c = logits.shape.back(), rows = logits.numElements / c;
  withElementType(logits.dtype, [&](auto e) {
    using E = decltype(e);
    REMAT_LAUNCH(rowGrid(rows, "crossEntropyGradKernel"), rowThreads(c), 0,
                 ctx.stream, crossEntropyGradKernel<E>)
    (logits.as<const E>(), labels.data, labels.dtype == DType::I64,
     call.inputs[2].as<const float>(), rows, call.liveRows(rows), c,
     call.outputs[0].as<E>(), ctx.status, int64_t(call.stepIndex));
  });
  REMAT_CUDA_CHECK_LAUNCH("crossEntropyGradKernel");
}

void launchMse(const KernelCall &call, const DeviceContext &ctx) {
  int64_t n = call.inputs[0].numElements;
  int64_t blocks = mseBlocks(n);
  double *partial = static_cast<double *>(ctx.scratch);
  REMAT_LAUNCH(unsigned(blocks), kThreads, 0, ctx.stream, msePartialKernel)
  (call.inputs[0].as<const float>(), call.inputs[1].as<const float>(),
   call.liveRows(n), partial);
  REMAT_CUDA_CHECK_LAUNCH("msePartialKernel");
  launchSumDoubles(partial, blocks, double(n), call.outputs[0].as<float>(),
                   ctx.stream);
}

void launchMseGrad(const KernelCall &call, const DeviceContext &ctx) {
  int64_t n = call.inputs[0].numElements;
  REMAT_LAUNCH(gridFor(n), kThreads, 0, ctx.stream, mseGradKernel)
  (call.inputs[0].as<const float>(), call.inputs[1].as<const float>(),
   call.inputs[2].as<const float>(), call.outputs[0].as<float>(), n,
   call.liveRows(n));
  REMAT_CUDA_CHECK_LAUNCH("mseGradKernel");
}

} // namespace remat::runtime::cuda
