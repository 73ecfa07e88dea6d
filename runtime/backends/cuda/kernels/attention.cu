//===- attention.cu - attention and attention_grad (cuBLAS + row kernels) -===//
//
// Not fused: per chunk of (batch, head) slices, the probabilities are
// materialized in scratch, P = softmax(scale * Q K^T + causal mask), with
// strided-batched cuBLAS GEMMs around one row kernel, exactly the CPU's
// sequence. attention_grad recomputes P, then dV = P^T dO, dP = dO V^T,
// dS = P * (dP - rowsum(dP * P)) (double dot), dQ = scale dS K,
// dK = scale dS^T Q.
//
// Scratch: slicesPerChunk * S * S floats (x2 for the gradient), where
// slicesPerChunk = clamp(REMAT_CUDA_ATTENTION_SCRATCH_BYTES / bytes per
// slice, 1, B*H); default 128 MiB.
//
//===----------------------------------------------------------------------===//
#include "runtime/backends/cuda/kernels/common.cuh"

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <stdexcept>
#include <string>

namespace remat::runtime::cuda {

namespace {

constexpr uint64_t kDefaultScratchCap = uint64_t(128) << 20;

uint64_t scratchCap() {
  const char *env = std::getenv("REMAT_CUDA_ATTENTION_SCRATCH_BYTES");
  if (env && *env) {
    char *end = nullptr;
    unsigned long long v = std::strtoull(env, &end, 10);
    if (end && *end == '\0' && v > 0)
      return uint64_t(v);
  }
  return kDefaultScratchCap;
}

struct AttentionGeometry {
  int64_t slices, s, dh, perChunk;
};

AttentionGeometry geometryOf(OpKind op, const Shape &q) {
  AttentionGeometry g{q[0] * q[1], q[2], q[3], 1};
  // The row kernels launch one block per row of the chunk: count * S must
  // fit grid.x (2^31 - 1) even under a huge scratch cap.
  int64_t gridLimit = std::max<int64_t>(1, INT_MAX / g.s);
  int64_t byCap = int64_t(scratchCap() / attentionSliceBytes(op, q));
  g.perChunk = std::clamp<int64_t>(std::min(byCap, gridLimit), 1, g.slices);
  return g;
}

/// geometryOf, but never past the scratch the executor actually reserved
/// (it sized it with the same function; this only guards against the cap's
/// environment variable changing in between, which would otherwise write
/// past the workspace).
AttentionGeometry launchGeometry(const KernelCall &call,
                                 const DeviceContext &ctx) {
  AttentionGeometry g = geometryOf(call.op, call.inputs[0].shape);
  uint64_t perSlice = attentionSliceBytes(call.op, call.inputs[0].shape);
  if (ctx.scratchBytes < perSlice)
    throw std::runtime_error(std::string("cuda: ") + opName(call.op) +
                             " needs " + std::to_string(perSlice) +
                             " B of scratch per (batch, head) but the "
                             "workspace reserved " +
                             std::to_string(ctx.scratchBytes) + " B");
  g.perChunk =
      std::min<int64_t>(g.perChunk, int64_t(ctx.scratchBytes / perSlice));
  return g;
}

/// Row r of the chunk's [count * S, S] scores: softmax over the visible
/// prefix (all of it unless causal), zeros after it.
__global__ void maskedSoftmaxKernel(float *p, int64_t s, bool causal) {
  int64_t row = blockIdx.x;
  int64_t visible = causal ? row % s + 1 : s;
  softmaxRow(p + row * s, p + row * s, visible, s);
}

/// ds = p * (dp - sum_j dp * p), in place of dp.
__global__ void softmaxBackwardRowKernel(const float *p, float *dp, int64_t s) {
  __shared__ double shared[32];
  int64_t row = blockIdx.x;
  const float *pr = p + row * s;
  float *dpr = dp + row * s;
  double local = 0;
  for (int64_t j = threadIdx.x; j < s; j += blockDim.x)
    local += double(dpr[j]) * double(pr[j]);
  float dot = float(blockSum(local, shared));
  for (int64_t j = threadIdx.x; j < s; j += blockDim.x)
    dpr[j] = pr[j] * (dpr[j] - dot);
}

/// P of slices [first, first + count) into p.
void probabilities(const DeviceContext &ctx, const AttentionGeometry &g,
                   const OpAttrs &at, const float *q, const float *k,
                   int64_t count, float *p) {
  int64_t ss = g.s * g.s, sd = g.s * g.dh;
  gemmRowMajor(ctx, false, true, g.s, g.s, g.dh, at.scale, q, g.dh, sd, k, g.dh,
               sd, 0.0f, p, g.s, ss, count);
  REMAT_LAUNCH(unsigned(count * g.s), rowThreads(g.s), 0, ctx.stream,
               maskedSoftmaxKernel)
  (p, g.s, at.causal);
  REMAT_CUDA_CHECK_LAUNCH("maskedSoftmaxKernel");
}

} // namespace

uint64_t attentionSliceBytes(OpKind op, const Shape &q) {
  return uint64_t(q[2]) * uint64_t(q[2]) * sizeof(float) *
         (op == OpKind::AttentionGrad ? 2 : 1);
}

uint64_t attentionScratchBytes(OpKind op, const Shape &q) {
  AttentionGeometry g = geometryOf(op, q);
  return uint64_t(g.perChunk) * attentionSliceBytes(op, q);
}

void launchAttention(const KernelCall &call, const DeviceContext &ctx) {
  const OpAttrs &at = *call.attrs;
  AttentionGeometry g = launchGeometry(call, ctx);
  int64_t ss = g.s * g.s, sd = g.s * g.dh;
  float *p = static_cast<float *>(ctx.scratch);
  for (int64_t first = 0; first < g.slices; first += g.perChunk) {
    int64_t count = std::min(g.perChunk, g.slices - first);
    int64_t base = first * sd;
    probabilities(ctx, g, at, call.inputs[0].as<const float>() + base,
                  call.inputs[1].as<const float>() + base, count, p);
    gemmRowMajor(ctx, false, false, g.s, g.dh, g.s, 1.0f, p, g.s, ss,
                 call.inputs[2].as<const float>() + base, g.dh, sd, 0.0f,
                 call.outputs[0].as<float>() + base, g.dh, sd, count);
  }
}

void launchAttentionGrad(const KernelCall &call, const DeviceContext &ctx) {
  const OpAttrs &at = *call.attrs;
  AttentionGeometry g = launchGeometry(call, ctx);
  int64_t ss = g.s * g.s, sd = g.s * g.dh;
  float *p = static_cast<float *>(ctx.scratch);
  float *dp = p + g.perChunk * ss;
  for (int64_t first = 0; first < g.slices; first += g.perChunk) {
    int64_t count = std::min(g.perChunk, g.slices - first);
    int64_t base = first * sd;
    const float *q = call.inputs[0].as<const float>() + base;
    const float *k = call.inputs[1].as<const float>() + base;
    const float *v = call.inputs[2].as<const float>() + base;
    const float *dout = call.inputs[3].as<const float>() + base;
    float *dq = call.outputs[0].as<float>() + base;
    float *dk = call.outputs[1].as<float>() + base;
    float *dv = call.outputs[2].as<float>() + base;
    probabilities(ctx, g, at, q, k, count, p);
    gemmRowMajor(ctx, true, false, g.s, g.dh, g.s, 1.0f, p, g.s, ss, dout, g.dh,
                 sd, 0.0f, dv, g.dh, sd, count);
    gemmRowMajor(ctx, false, true, g.s, g.s, g.dh, 1.0f, dout, g.dh, sd, v,
                 g.dh, sd, 0.0f, dp, g.s, ss, count);
    REMAT_LAUNCH(unsigned(count * g.s), rowThreads(g.s), 0, ctx.stream,
                 softmaxBackwardRowKernel)
    (p, dp, g.s);
    REMAT_CUDA_CHECK_LAUNCH("softmaxBackwardRowKernel");
    gemmRowMajor(ctx, false, false, g.s, g.dh, g.s, at.scale, dp, g.s, ss, k,
                 g.dh, sd, 0.0f, dq, g.dh, sd, count);
    gemmRowMajor(ctx, true, false, g.s, g.dh, g.s, at.scale, dp, g.s, ss, q,
                 g.dh, sd, 0.0f, dk, g.dh, sd, count);
  }
}

} // namespace remat::runtime::cuda
