//===- layer_norm.cu - layer_norm and layer_norm_grad --------------------===//
//
// One block per row; mean and biased variance in double (two passes, as on
// the CPU), y = float((x - mean) * rstd) * gamma + beta. The gradient
// stores each row's mean and rstd in scratch, writes dx per row, then sums
// dgamma / dbeta over rows deterministically: C row chunks summed in f32
// into scratch, then the C partials added in order (the CPU adds rows one
// by one; the results differ in the last bits only).
//
//===----------------------------------------------------------------------===//
#include "runtime/backends/cuda/kernels/common.cuh"

#include <algorithm>

namespace remat::runtime::cuda {

namespace {

/// Mean and rstd of one row; every thread gets them.
__device__ void rowStats(const float *x, int64_t d, float epsilon, double &mean,
                         double &rstd) {
  __shared__ double shared[32];
  double local = 0;
  for (int64_t j = threadIdx.x; j < d; j += blockDim.x)
    local += double(x[j]);
  mean = blockSum(local, shared) / double(d);
  local = 0;
  for (int64_t j = threadIdx.x; j < d; j += blockDim.x) {
    double c = double(x[j]) - mean;
    local += c * c;
  }
  double var = blockSum(local, shared) / double(d);
  rstd = 1.0 / sqrt(var + double(epsilon));
}

__global__ void layerNormKernel(const float *x, const float *gamma,
                                const float *beta, float *y, int64_t d,
                                float epsilon) {
  int64_t row = blockIdx.x;
  const float *xr = x + row * d;
  double mean, rstd;
  rowStats(xr, d, epsilon, mean, rstd);
  for (int64_t j = threadIdx.x; j < d; j += blockDim.x)
    y[row * d + j] = float((double(xr[j]) - mean) * rstd) * gamma[j] + beta[j];
}

__global__ void layerNormDxKernel(const float *x, const float *gamma,
                                  const float *dy, float *dx, double *stats,
                                  int64_t d, float epsilon) {
  __shared__ double shared[32];
  int64_t row = blockIdx.x;
  const float *xr = x + row * d, *dyr = dy + row * d;
  double mean, rstd;
  rowStats(xr, d, epsilon, mean, rstd);
  double localDxhat = 0, localDxhatXhat = 0;
  for (int64_t j = threadIdx.x; j < d; j += blockDim.x) {
    double xhat = (double(xr[j]) - mean) * rstd;
    double dxhat = double(dyr[j]) * double(gamma[j]);
    localDxhat += dxhat;
    localDxhatXhat += dxhat * xhat;
  }
  double meanDxhat = blockSum(localDxhat, shared) / double(d);
  double meanDxhatXhat = blockSum(localDxhatXhat, shared) / double(d);
  for (int64_t j = threadIdx.x; j < d; j += blockDim.x) {
    double xhat = (double(xr[j]) - mean) * rstd;
    double dxhat = double(dyr[j]) * double(gamma[j]);
    dx[row * d + j] = float(rstd * (dxhat - meanDxhat - xhat * meanDxhatXhat));
  }
  if (threadIdx.x == 0) {
    stats[2 * row] = mean;
    stats[2 * row + 1] = rstd;
  }
}

/// partial[c][j] (dgamma) and partial[C + c][j] (dbeta) over row chunk c.
__global__ void layerNormParamChunkKernel(const float *x, const float *dy,
                                          const double *stats, int64_t rows,
                                          int64_t d, int64_t chunks,
                                          float *partial) {
  int64_t chunkLen = (rows + chunks - 1) / chunks;
  for (int64_t t = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
       t < d * chunks; t += int64_t(gridDim.x) * blockDim.x) {
    int64_t j = t % d, c = t / d;
    int64_t begin = c * chunkLen, end = min(rows, begin + chunkLen);
    float dgamma = 0.0f, dbeta = 0.0f;
    for (int64_t r = begin; r < end; ++r) {
      double xhat = (double(x[r * d + j]) - stats[2 * r]) * stats[2 * r + 1];
      float g = dy[r * d + j];
      dgamma += float(double(g) * xhat);
      dbeta += g;
    }
    partial[c * d + j] = dgamma;
    partial[(chunks + c) * d + j] = dbeta;
  }
}

__global__ void layerNormParamCombineKernel(const float *partial, int64_t d,
                                            int64_t chunks, float *dgamma,
                                            float *dbeta) {
  for (int64_t j = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; j < d;
       j += int64_t(gridDim.x) * blockDim.x) {
    float g = 0.0f, b = 0.0f;
    for (int64_t c = 0; c < chunks; ++c) {
      g += partial[c * d + j];
      b += partial[(chunks + c) * d + j];
    }
    dgamma[j] = g;
    dbeta[j] = b;
  }
}

/// Row chunks of the dgamma / dbeta sums: at least 32 rows each, and about
/// 2^18 threads in all (a full H100/H200) since each thread walks its rows
/// one load after another; GPT-2's [8192, 768] gets 256 chunks of 32 rows.
int64_t paramChunks(int64_t rows, int64_t d) {
  if (rows <= 64)
    return 1;
  return std::max<int64_t>(
      1,
      std::min({(rows + 31) / 32, std::max<int64_t>(1, (int64_t(1) << 18) / d),
                int64_t(1024)}));
}

} // namespace

uint64_t layerNormGradScratchBytes(const Shape &x) {
  int64_t d = x.back(), rows = numElementsOf(x) / d;
  return uint64_t(rows) * 2 * sizeof(double) +
         uint64_t(2 * paramChunks(rows, d) * d) * sizeof(float);
}

void launchLayerNorm(const KernelCall &call, const DeviceContext &ctx) {
  int64_t d = call.inputs[0].shape.back();
  int64_t rows = call.inputs[0].numElements / d;
  REMAT_LAUNCH(rowGrid(rows, "layerNormKernel"), rowThreads(d), 0, ctx.stream,
               layerNormKernel)
  (call.inputs[0].as<const float>(), call.inputs[1].as<const float>(),
   call.inputs[2].as<const float>(), call.outputs[0].as<float>(), d,
   call.attrs->epsilon);
  REMAT_CUDA_CHECK_LAUNCH("layerNormKernel");
}

void launchLayerNormGrad(const KernelCall &call, const DeviceContext &ctx) {
  int64_t d = call.inputs[0].shape.back();
  int64_t rows = call.inputs[0].numElements / d;
  const float *x = call.inputs[0].as<const float>();
  const float *dy = call.inputs[2].as<const float>();
  double *stats = static_cast<double *>(ctx.scratch);
  float *partial = reinterpret_cast<float *>(stats + 2 * rows);
  REMAT_LAUNCH(rowGrid(rows, "layerNormDxKernel"), rowThreads(d), 0, ctx.stream,
               layerNormDxKernel)
  (x, call.inputs[1].as<const float>(), dy, call.outputs[0].as<float>(), stats,
   d, call.attrs->epsilon);
  REMAT_CUDA_CHECK_LAUNCH("layerNormDxKernel");
  int64_t chunks = paramChunks(rows, d);
  REMAT_LAUNCH(gridFor(d * chunks), kThreads, 0, ctx.stream,
               layerNormParamChunkKernel)
  (x, dy, stats, rows, d, chunks, partial);
  REMAT_CUDA_CHECK_LAUNCH("layerNormParamChunkKernel");
  REMAT_LAUNCH(gridFor(d), kThreads, 0, ctx.stream, layerNormParamCombineKernel)
  (partial, d, chunks, call.outputs[1].as<float>(),
   call.outputs[2].as<float>());
  REMAT_CUDA_CHECK_LAUNCH("layerNormParamCombineKernel");
}

} // namespace remat::runtime::cuda
