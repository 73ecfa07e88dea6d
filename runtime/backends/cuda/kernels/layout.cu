//===- layout.cu - reshape, transpose, broadcast_to, slice, concat -------===//
//
// reshape is a device copy when source and result differ (the loader only
// lets them share bytes when they are the very same range). transpose,
// broadcast_to and slice gather: result element i reads x at a strided
// offset. slice_grad zero-fills dx and scatters dy into the box slice
// reads; concat scatters a and b into their boxes of the result. convert
// converts f32 and bf16 as the CPU does (ops/BFloat16.h: round to nearest,
// ties to even, on the bits).
//
//===----------------------------------------------------------------------===//
#include "runtime/backends/cuda/kernels/common.cuh"

#include "runtime/backends/cuda/CudaCheck.h"

#include <algorithm>

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

/// f32 <-> bf16 on the bits, as ops/BFloat16.h.
__global__ void convertKernel(const void *x, void *y, int64_t n, bool toBf16) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    if (toBf16)
      static_cast<uint16_t *>(y)[i] =
          narrowToBf16(static_cast<const float *>(x)[i]);
    else
      static_cast<float *>(y)[i] =
          widenBf16(static_cast<const uint16_t *>(x)[i]);
  }
}

/// dst[offset(i)] = src[i]: src walks the box `ix` of dst.
template <typename Index>
__global__ void scatterKernel(const float *src, StridedIndex ix, float *dst,
                              Index n) {
  for (Index i = Index(blockIdx.x) * Index(blockDim.x) + Index(threadIdx.x);
       i < n; i += Index(gridDim.x) * Index(blockDim.x))
    dst[stridedOffsetAs(ix, i)] = src[i];
}

/// Scatters f32 `src` into the box of `dst` (`dst` having `dstElements`).
void scatter(const TensorRef &src, float *dst, int64_t dstElements,
             const StridedBox &box, const DeviceContext &ctx) {
  StridedIndex ix = makeStridedIndex(src.shape, box.strides);
  int64_t n = src.numElements;
  if (n == 0)
    return;
  const float *from = src.as<const float>();
  float *to = dst + box.offset;
  if (fitsIndex32(dstElements))
    REMAT_LAUNCH(gridFor(n), kThreads, 0, ctx.stream, scatterKernel<uint32_t>)
    (from, ix, to, uint32_t(n));
  else
    REMAT_LAUNCH(gridFor(n), kThreads, 0, ctx.stream, scatterKernel<int64_t>)
    (from, ix, to, n);
  REMAT_CUDA_CHECK_LAUNCH("scatterKernel");
}

/// `offset`: the element of x that result element 0 reads.
template <typename Element>
void gatherAs(const KernelCall &call, const DeviceContext &ctx,
              const StridedIndex &ix, int64_t offset = 0) {
  const TensorRef &y = call.outputs[0];
  const Element *x = call.inputs[0].as<const Element>() + offset;
  int64_t n = y.numElements;
  // 32-bit offsets need the operand, which a slice reads only part of, to
  // fit as well.
  if (fitsIndex32(std::max(n, call.inputs[0].numElements)))
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
  else if (dtypeSize(call.inputs[0].dtype) == 2) // bf16
    gatherAs<uint16_t>(call, ctx, ix);
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

void launchConvert(const KernelCall &call, const DeviceContext &ctx) {
  const TensorRef &x = call.inputs[0], &y = call.outputs[0];
  int64_t n = x.numElements;
  if (x.dtype == y.dtype) {
    if (y.data != x.data)
      REMAT_CUDA_CHECK(cudaMemcpyAsync(y.data, x.data,
                                       size_t(n) * dtypeSize(x.dtype),
                                       cudaMemcpyDeviceToDevice, ctx.stream));
    return;
  }
  if (n == 0)
    return;
  REMAT_LAUNCH(gridFor(n), kThreads, 0, ctx.stream, convertKernel)
  (x.data, y.data, n, y.dtype == DType::BF16);
  REMAT_CUDA_CHECK_LAUNCH("convertKernel");
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

void launchSlice(const KernelCall &call, const DeviceContext &ctx) {
  const OpAttrs &attrs = *call.attrs;
  if (call.op == OpKind::Slice) {
    StridedBox box =
        sliceBox(call.inputs[0].shape, attrs.starts, attrs.steps);
    StridedIndex ix = makeStridedIndex(call.outputs[0].shape, box.strides);
    gatherAs<uint32_t>(call, ctx, ix, box.offset);
    return;
  }
  // slice_grad (the family's other op).
  const TensorRef &dx = call.outputs[0];
  REMAT_CUDA_CHECK(cudaMemsetAsync(dx.data, 0,
                                   size_t(dx.numElements) * sizeof(float),
                                   ctx.stream));
  scatter(call.inputs[0], dx.as<float>(), dx.numElements,
          sliceBox(dx.shape, attrs.starts, attrs.steps), ctx);
}

void launchConcat(const KernelCall &call, const DeviceContext &ctx) {
  const Shape &shape = call.outputs[0].shape;
  size_t axis = size_t(call.attrs->axis);
  float *c = call.outputs[0].as<float>();
  int64_t n = call.outputs[0].numElements;
  scatter(call.inputs[0], c, n, StridedBox{0, stridesOf(shape)}, ctx);
  scatter(call.inputs[1], c, n,
          concatSecondBox(shape, axis, call.inputs[0].shape[axis]), ctx);
}

} // namespace remat::runtime::cuda
