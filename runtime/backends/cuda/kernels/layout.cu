//===- layout.cu - reshape, transpose, broadcast_to ----------------------===//
//
// reshape is a device copy when source and result differ (the loader only
// lets them share bytes when they are the very same range). transpose and
// broadcast_to gather: result element i reads x at a strided offset.
//
//===----------------------------------------------------------------------===//
#include "runtime/backends/cuda/kernels/common.cuh"

#include "runtime/backends/cuda/CudaCheck.h"

namespace remat::runtime::cuda {

namespace {

__global__ void gatherKernel(const float *x, StridedIndex ix, float *y,
                             int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    y[i] = x[stridedOffset(ix, i)];
}

void gather(const KernelCall &call, const DeviceContext &ctx,
            const std::vector<int64_t> &strides) {
  const TensorRef &y = call.outputs[0];
  StridedIndex ix = makeStridedIndex(y.shape, strides);
  gatherKernel<<<gridFor(y.numElements), kThreads, 0, ctx.stream>>>(
      call.inputs[0].as<const float>(), ix, y.as<float>(), y.numElements);
  REMAT_CUDA_CHECK_LAUNCH("gatherKernel");
}

} // namespace

void launchReshape(const KernelCall &call, const DeviceContext &ctx) {
  const TensorRef &x = call.inputs[0];
  if (call.outputs[0].data == x.data)
    return;
  REMAT_CUDA_CHECK(cudaMemcpyAsync(call.outputs[0].data, x.data,
                                   size_t(x.numElements) * dtypeSize(x.dtype),
                                   cudaMemcpyDeviceToDevice, ctx.stream));
}

void launchTranspose(const KernelCall &call, const DeviceContext &ctx) {
  const Shape &xs = call.inputs[0].shape;
  std::vector<int64_t> xStrides = stridesOf(xs);
  std::vector<int64_t> strides(xs.size());
  for (size_t d = 0; d < xs.size(); ++d)
    strides[d] = xStrides[size_t(call.attrs->permutation[d])];
  gather(call, ctx, strides);
}

void launchBroadcastTo(const KernelCall &call, const DeviceContext &ctx) {
  gather(call, ctx,
         broadcastStrides(call.inputs[0].shape, call.outputs[0].shape));
}

} // namespace remat::runtime::cuda
