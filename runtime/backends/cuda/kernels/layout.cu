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

/// y[i] = x[offset(i)]. Element is the dtype's bits (uint32_t for f32 and
/// i32, uint64_t for i64: transpose accepts index tensors too); Index
/// is uint32_t below 2^31 elements (see fitsIndex32), else int64_t.
template <typename Element, typename Index>
__global__ void gatherKernel(const Element *x, StridedIndex ix, Element *y,
                             Index n) {
  for (Index i = Index(blockIdx.x) * Index(blockDim.x) + Index(threadIdx.x);
       i < n; i += Index(gridDim.x) * Index(blockDim.x))
    y[i] = x[stridedOffsetAs(ix, i)];
}

template <typename Element>
void gatherAs(const KernelCall &call, const DeviceContext &ctx,
              const StridedIndex &ix) {
  const TensorRef &y = call.outputs[0];
  const Element *x = call.inputs[0].as<const Element>();
  int64_t n = y.numElements;
  if (fitsIndex32(n))
    REMAT_LAUNCH(gridFor(n), kThreads, 0, ctx.stream,
                 gatherKernel<Element, uint32_t>)
    (x, ix, y.as<Element>(), uint32_t(n));
  else
    REMAT_LAUNCH(gridFor(n), kThreads, 0, ctx.stream,
                 gatherKernel<Element, int64_t>)
    (x, ix, y.as<Element>(), n);
  REMAT_CUDA_CHECK_LAUNCH("gatherKernel");
}

void gather(const KernelCall &call, const DeviceContext &ctx,
            const std::vector<int64_t> &strides) {
  StridedIndex ix = makeStridedIndex(call.outputs[0].shape, strides);
  if (dtypeSize(call.inputs[0].dtype) == 8)
    gatherAs<uint64_t>(call, ctx, ix);
  else
    gatherAs<uint32_t>(call, ctx, ix);
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
