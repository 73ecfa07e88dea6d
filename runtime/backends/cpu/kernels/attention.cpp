//===- attention.cpp - attention and attention_grad (gemm + row loops) ---===//
//
// Per (batch, head) slice, the probabilities P = softmax(scale * Q K^T +
// causal mask) are materialized in the workspace (S*S elements; the
// masked entries are 0) and O = P V. attention_grad recomputes P, then
// dV = P^T dO, dP = dO V^T (the second S*S of the workspace),
// dS = P * (dP - rowsum(dP * P)) with the row dot product in double
// (laneSum, Common.h),
// dQ = scale dS K, dK = scale dS^T Q. The row loops run on the threads,
// as the GEMMs do. The GEMMs' scratchpad (where oneDNN runs them) follows
// the S*S blocks in the workspace.
//
// On bf16 tensors where oneDNN runs bf16 GEMMs (runAttentionBf16), a
// group of heads at a time (attentionBf16Group, each GEMM one oneDNN call
// for the group), the scores and dP = dO V^T, whose operands are bf16
// tensors, run as bf16 products summed into float32, the group's other
// operands are widened to float32 (not the whole tensors), and everything
// else is as above in float32, the results rounded to bf16 once: the math
// of the float32 kernel on widened copies, in another summation order.
//===----------------------------------------------------------------------===//
#include "runtime/backends/cpu/kernels/Common.h"

#include "runtime/backends/cpu/Bf16Staging.h"
#include "runtime/backends/cpu/CpuWorkspace.h"
#include "runtime/backends/cpu/Gemm.h"
#include "runtime/backends/cpu/kernels/Kernels.h"

#include <stdexcept>

namespace remat::runtime::cpu {

namespace {

/// The workspace after its first `used` elements, for the GEMMs.
struct GemmScratch {
  void *data;
  uint64_t bytes;
  template <typename T>
  GemmScratch(T *workspace, uint64_t elements, uint64_t used)
      : data(workspace + used),
        bytes(elements > used ? (elements - used) * sizeof(T) : 0) {}
};

/// The `rows` rows of s x s scores p (of rows / s heads one after another)
/// made probabilities in place: each row's softmax over its visible
/// entries, the masked ones 0.
template <typename T>
void softmaxScores(const OpAttrs &attrs, int64_t s, int64_t rows, T *p) {
  parallelRows(rows, rows * s, [&](int64_t r) {
    int64_t visible = attrs.causal ? r % s + 1 : s;
    softmaxRow(p + r * s, p + r * s, visible);
    std::fill(p + r * s + visible, p + (r + 1) * s, T(0));
  });
}

/// dS = P * (dP - rowsum(dP * P)) in place of dP's `rows` rows of s, the
/// row dot product in double.
template <typename T>
void softmaxGradient(int64_t s, int64_t rows, const T *p, T *dp) {
  parallelRows(rows, rows * s, [&](int64_t i) {
    T rowDot = T(laneSum(s, [&](int64_t j) {
      return double(dp[i * s + j]) * double(p[i * s + j]);
    }));
    for (int64_t j = 0; j < s; ++j)
      dp[i * s + j] = p[i * s + j] * (dp[i * s + j] - rowDot);
  });
}

/// Probabilities of one (batch, head): p = softmax(scale * q k^T + mask).
template <typename T>
void attentionProbs(const OpAttrs &attrs, const T *q, const T *k, int64_t s,
                    int64_t dh, T *p, const GemmScratch &g) {
  gemm<T>(false, true, s, s, dh, T(attrs.scale), q, dh, k, dh, T(0), p, s,
          g.data, g.bytes);
  softmaxScores(attrs, s, s, p);
}

} // namespace

template <typename T>
void runAttention(const KernelCall &call, T *workspace, uint64_t elements) {
  const Shape &shape = call.inputs[0].shape;
  int64_t heads = shape[0] * shape[1], s = shape[2], dh = shape[3];
  T *p = workspace;
  GemmScratch g(workspace, elements, uint64_t(s * s));
  for (int64_t bh = 0; bh < heads; ++bh) {
    int64_t base = bh * s * dh;
    attentionProbs(*call.attrs, inData<T>(call, 0) + base,
                   inData<T>(call, 1) + base, s, dh, p, g);
    gemm<T>(false, false, s, dh, s, T(1), p, s, inData<T>(call, 2) + base, dh,
            T(0), outData<T>(call, 0) + base, dh, g.data, g.bytes);
  }
}

template <typename T>
void runAttentionGrad(const KernelCall &call, T *workspace, uint64_t elements) {
  const Shape &shape = call.inputs[0].shape;
  int64_t heads = shape[0] * shape[1], s = shape[2], dh = shape[3];
  T *p = workspace, *dp = workspace + s * s;
  GemmScratch g(workspace, elements, uint64_t(2 * s * s));
  T scale = T(call.attrs->scale);
  for (int64_t bh = 0; bh < heads; ++bh) {
    int64_t base = bh * s * dh;
    const T *q = inData<T>(call, 0) + base, *k = inData<T>(call, 1) + base,
            *v = inData<T>(call, 2) + base, *dout = inData<T>(call, 3) + base;
    T *dq = outData<T>(call, 0) + base, *dk = outData<T>(call, 1) + base,
      *dv = outData<T>(call, 2) + base;
    attentionProbs(*call.attrs, q, k, s, dh, p, g);
    // dv = p^T dout; dp = dout v^T.
    gemm<T>(true, false, s, dh, s, T(1), p, s, dout, dh, T(0), dv, dh, g.data,
            g.bytes);
    gemm<T>(false, true, s, s, dh, T(1), dout, dh, v, dh, T(0), dp, s, g.data,
            g.bytes);
    softmaxGradient(s, s, p, dp); // ds, in place of dp
    // dq = scale * ds k; dk = scale * ds^T q.
    gemm<T>(false, false, s, dh, s, scale, dp, s, k, dh, T(0), dq, dh, g.data,
            g.bytes);
    gemm<T>(true, false, s, dh, s, scale, dp, s, q, dh, T(0), dk, dh, g.data,
            g.bytes);
  }
}

bool runAttentionBf16(const KernelCall &call, char *scratch, uint64_t bytes) {
  const Shape &shape = call.inputs[0].shape;
  int64_t heads = shape[0] * shape[1], s = shape[2], dh = shape[3];
  int64_t group = attentionBf16Group(heads, s);
  bool forward = call.op == OpKind::Attention;
  std::vector<AttentionBf16Gemm> gemms =
      attentionBf16Gemms(call.op, call.attrs->scale, s, dh, group);
  uint64_t own = attentionBf16OwnBytes(call.op, s, dh, group);
  if (own > bytes)
    return false;
  for (const AttentionBf16Gemm &g : gemms) {
    if (g.types == GemmTypes::F32)
      continue; // run() below, on oneDNN or a head at a time on gemm()
    std::optional<uint64_t> pad = dnnlMatmulScratchBytes(g.gemm, g.types);
    if (!pad || *pad > bytes - own)
      return false;
  }
  // The blocks of attentionBf16OwnBytes, each for the group's heads: P,
  // then dP for the gradient (dS in place), then float32 heads: V and O
  // (forward), or dO, K, Q, dV, dQ and dK.
  uint64_t square = stagingAligned(uint64_t(group * s * s) * sizeof(float));
  uint64_t head = stagingAligned(uint64_t(group * s * dh) * sizeof(float));
  auto *p = reinterpret_cast<float *>(scratch);
  auto *dp = reinterpret_cast<float *>(scratch + square);
  char *heads0 = scratch + (forward ? 1 : 2) * square;
  auto block = [&](int i) {
    return reinterpret_cast<float *>(heads0 + i * head);
  };
  char *pad = scratch + own;
  uint64_t padBytes = bytes - own;
  auto run = [&](size_t i, const void *a, const void *b, float *c) {
    const GemmShape &g = gemms[i].gemm;
    if (dnnlMatmulRun(g, gemms[i].types, a, b, c, pad, padBytes))
      return;
    if (gemms[i].types != GemmTypes::F32)
      throw std::logic_error("oneDNN did not run a bf16 attention GEMM");
    gemmEach<float>(g, static_cast<const float *>(a),
                    static_cast<const float *>(b), c, pad, padBytes);
  };
  int64_t elements = group * s * dh;
  for (int64_t first = 0; first < heads; first += group) {
    int64_t base = first * s * dh;
    const uint16_t *q = call.inputs[0].as<const uint16_t>() + base,
                   *k = call.inputs[1].as<const uint16_t>() + base,
                   *v = call.inputs[2].as<const uint16_t>() + base;
    // P = softmax(scale q k^T + mask), the products summed into float32.
    run(0, q, k, p);
    softmaxScores(*call.attrs, s, group * s, p);
    if (forward) {
      float *vf = block(0), *of = block(1);
      widenBf16(v, vf, elements);
      run(1, p, vf, of); // O = P V
      narrowBf16(of, call.outputs[0].as<uint16_t>() + base, elements);
      continue;
    }
    const uint16_t *dout = call.inputs[3].as<const uint16_t>() + base;
    float *dof = block(0), *kf = block(1), *qf = block(2), *dvf = block(3),
          *dqf = block(4), *dkf = block(5);
    widenBf16(dout, dof, elements);
    run(1, p, dof, dvf); // dV = P^T dO
    run(2, dout, v, dp); // dP = dO V^T, bf16 products into float32
    softmaxGradient(s, group * s, p, dp); // dS, in place of dP
    widenBf16(k, kf, elements);
    widenBf16(q, qf, elements);
    run(3, dp, kf, dqf); // dQ = scale dS K
    run(4, dp, qf, dkf); // dK = scale dS^T Q
    narrowBf16(dqf, call.outputs[0].as<uint16_t>() + base, elements);
    narrowBf16(dkf, call.outputs[1].as<uint16_t>() + base, elements);
    narrowBf16(dvf, call.outputs[2].as<uint16_t>() + base, elements);
  }
  return true;
}

template void runAttention<float>(const KernelCall &, float *, uint64_t);
template void runAttention<double>(const KernelCall &, double *, uint64_t);
template void runAttentionGrad<float>(const KernelCall &, float *, uint64_t);
template void runAttentionGrad<double>(const KernelCall &, double *, uint64_t);

} // namespace remat::runtime::cpu
