//===- attention.cpp - attention and attention_grad (gemm + row loops) ---===//
//
// Per (batch, head) slice, the probabilities P = softmax(scale * Q K^T +
// causal mask) are materialized in the workspace (S*S elements; the
// masked entries are 0) and O = P V. attention_grad recomputes P, then
// dV = P^T dO, dP = dO V^T (the second S*S of the workspace),
// dS = P * (dP - rowsum(dP * P)) with the row dot product in double,
// dQ = scale dS K, dK = scale dS^T Q. The row loops run on the threads,
// as the GEMMs do. The GEMMs' scratchpad (where oneDNN runs them) follows
// the S*S blocks in the workspace.
//
//===----------------------------------------------------------------------===//
#include "runtime/backends/cpu/kernels/Common.h"

#include "runtime/backends/cpu/Gemm.h"

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

/// Probabilities of one (batch, head): p = softmax(scale * q k^T + mask).
template <typename T>
void attentionProbs(const OpAttrs &attrs, const T *q, const T *k, int64_t s,
                    int64_t dh, T *p, const GemmScratch &g) {
  gemm<T>(false, true, s, s, dh, T(attrs.scale), q, dh, k, dh, T(0), p, s,
          g.data, g.bytes);
  parallelRows(s, s * s, [&](int64_t i) {
    int64_t visible = attrs.causal ? i + 1 : s;
    softmaxRow(p + i * s, p + i * s, visible);
    std::fill(p + i * s + visible, p + (i + 1) * s, T(0));
  });
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
    // ds = p * (dp - rowsum(dp * p)), in place of dp.
    parallelRows(s, s * s, [&](int64_t i) {
      double dot = 0;
      for (int64_t j = 0; j < s; ++j)
        dot += double(dp[i * s + j]) * double(p[i * s + j]);
      for (int64_t j = 0; j < s; ++j)
        dp[i * s + j] = p[i * s + j] * (dp[i * s + j] - T(dot));
    });
    // dq = scale * ds k; dk = scale * ds^T q.
    gemm<T>(false, false, s, dh, s, scale, dp, s, k, dh, T(0), dq, dh, g.data,
            g.bytes);
    gemm<T>(true, false, s, dh, s, scale, dp, s, q, dh, T(0), dk, dh, g.data,
            g.bytes);
  }
}

template void runAttention<float>(const KernelCall &, float *, uint64_t);
template void runAttention<double>(const KernelCall &, double *, uint64_t);
template void runAttentionGrad<float>(const KernelCall &, float *, uint64_t);
template void runAttentionGrad<double>(const KernelCall &, double *, uint64_t);

} // namespace remat::runtime::cpu
