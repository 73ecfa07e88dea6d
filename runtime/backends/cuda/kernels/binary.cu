//===- binary.cu - add, sub, mul, div with NumPy broadcasting ------------===//
//
// Operands that repeat every numel elements of c (c's shape, a scalar, a
// bias-style suffix) index by modulo; anything else walks c's shape with
// broadcast strides. 32-bit index arithmetic below 2^31 elements. Operands
// and result are all f32, or all bf16 (--precision bf16: each widened
// exactly, computed in float, the result rounded to bf16 as the CPU's
// staged kernel does).
//
//===----------------------------------------------------------------------===//
#include "runtime/backends/cuda/kernels/common.cuh"

namespace remat::runtime::cuda {

namespace {

enum class BinaryOp { Add, Sub, Mul, Div };

template <BinaryOp Op> __device__ inline float apply(float a, float b) {
  if constexpr (Op == BinaryOp::Add)
    return a + b;
  else if constexpr (Op == BinaryOp::Sub)
    return a - b;
  else if constexpr (Op == BinaryOp::Mul)
    return a * b;
  else
    return a / b;
}

/// Element i of an operand that repeats every `period` elements of c: c's
/// shape (period n), a scalar (1) or a bias-style suffix of c's shape.
template <typename Index>
__device__ inline Index repeatIndex(Index i, Index period, Index n) {
  return period == n ? i : period == 1 ? Index(0) : i % period;
}

/// c[i] = a[i mod na] op b[i mod nb]. Index is uint32_t when c has fewer
/// than 2^31 elements (see fitsIndex32), else int64_t: a 64-bit modulo per
/// element would cost more than the memory traffic of a bias add.
template <BinaryOp Op, typename E, typename Index>
__global__ void binaryModKernel(const E *a, Index na, const E *b, Index nb,
                                E *c, Index n) {
  for (Index i = Index(blockIdx.x) * Index(blockDim.x) + Index(threadIdx.x);
       i < n; i += Index(gridDim.x) * Index(blockDim.x))
    storeFloat(c, i,
               apply<Op>(loadFloat(a, repeatIndex(i, na, n)),
                         loadFloat(b, repeatIndex(i, nb, n))));
}

template <BinaryOp Op, typename E, typename Index>
__global__ void binaryStridedKernel(const E *a, StridedIndex ia, const E *b,
                                    StridedIndex ib, E *c, Index n) {
  for (Index i = Index(blockIdx.x) * Index(blockDim.x) + Index(threadIdx.x);
       i < n; i += Index(gridDim.x) * Index(blockDim.x))
    storeFloat(c, i,
               apply<Op>(loadFloat(a, stridedOffsetAs(ia, i)),
                         loadFloat(b, stridedOffsetAs(ib, i))));
}

template <BinaryOp Op, typename E, typename Index>
void launchMod(const E *a, int64_t na, const E *b, int64_t nb, E *c, int64_t n,
               const DeviceContext &ctx) {
  REMAT_LAUNCH(gridFor(n), kThreads, 0, ctx.stream,
               binaryModKernel<Op, E, Index>)
  (a, Index(na), b, Index(nb), c, Index(n));
  REMAT_CUDA_CHECK_LAUNCH("binaryModKernel");
}

template <BinaryOp Op, typename E, typename Index>
void launchStrided(const E *a, const StridedIndex &ia, const E *b,
                   const StridedIndex &ib, E *c, int64_t n,
                   const DeviceContext &ctx) {
  REMAT_LAUNCH(gridFor(n), kThreads, 0, ctx.stream,
               binaryStridedKernel<Op, E, Index>)
  (a, ia, b, ib, c, Index(n));
  REMAT_CUDA_CHECK_LAUNCH("binaryStridedKernel");
}

template <BinaryOp Op, typename E>
void launchAs(const KernelCall &call, const DeviceContext &ctx) {
  const TensorRef &ta = call.inputs[0], &tb = call.inputs[1];
  const TensorRef &tc = call.outputs[0];
  const E *a = ta.as<const E>(), *b = tb.as<const E>();
  E *c = tc.as<E>();
  int64_t n = tc.numElements;
  // Every element gets the same a and b values on every path, so the path
  // does not change the bits (the CPU's fast paths are a subset of this
  // one: they need a to have c's shape, it also takes 1 - x and the like).
  if (isSuffix(ta.shape, tc.shape) && isSuffix(tb.shape, tc.shape)) {
    if (fitsIndex32(n))
      launchMod<Op, E, uint32_t>(a, ta.numElements, b, tb.numElements, c, n,
                                 ctx);
    else
      launchMod<Op, E, int64_t>(a, ta.numElements, b, tb.numElements, c, n,
                                ctx);
    return;
  }
  StridedIndex ia =
      makeStridedIndex(tc.shape, broadcastStrides(ta.shape, tc.shape));
  StridedIndex ib =
      makeStridedIndex(tc.shape, broadcastStrides(tb.shape, tc.shape));
  if (fitsIndex32(n))
    launchStrided<Op, E, uint32_t>(a, ia, b, ib, c, n, ctx);
  else
    launchStrided<Op, E, int64_t>(a, ia, b, ib, c, n, ctx);
}

template <BinaryOp Op>
void launch(const KernelCall &call, const DeviceContext &ctx) {
  withElementType(call.outputs[0].dtype,
                  [&](auto e) { launchAs<Op, decltype(e)>(call, ctx); });
}

} // namespace

void launchBinary(const KernelCall &call, const DeviceContext &ctx) {
  switch (call.op) {
  case OpKind::Add:
    return launch<BinaryOp::Add>(call, ctx);
  case OpKind::Sub:
    return launch<BinaryOp::Sub>(call, ctx);
  case OpKind::Mul:
    return launch<BinaryOp::Mul>(call, ctx);
  default:
    return launch<BinaryOp::Div>(call, ctx);
  }
}

} // namespace remat::runtime::cuda
