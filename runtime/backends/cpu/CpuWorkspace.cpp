//===- CpuWorkspace.cpp - The CPU backend's kernel scratch, by op ---------===//
#include "runtime/backends/cpu/CpuWorkspace.h"

#include "ops/ShapeRules.h"
#include "runtime/Strides.h"
#include "runtime/backends/cpu/DnnlConv.h"

#include <algorithm>
#include <string>

namespace remat::runtime::cpu {

uint64_t cpuMinimumWorkspaceElements(OpKind op, const OpAttrs &attrs,
                                     const std::vector<Shape> &inputs,
                                     const std::vector<Shape> &outputs) {
  if (op == OpKind::Conv2d || op == OpKind::Conv2dGradInput ||
      op == OpKind::Conv2dGradWeight)
    return convWorkspaceElements(op, attrs, inputs, outputs);
  if (op == OpKind::Attention || op == OpKind::AttentionGrad) {
    if (inputs.empty() || inputs[0].size() < 3 || inputs[0][2] < 0)
      return 0;
    uint64_t s = uint64_t(inputs[0][2]);
    uint64_t factor = op == OpKind::Attention ? 1 : 2;
    // Saturates instead of wrapping: a wrapped count would let the
    // backend allocate too little scratch.
    if (s != 0 && s > UINT64_MAX / s / factor)
      return UINT64_MAX;
    return factor * s * s;
  }
  return 0;
}

uint64_t cpuWorkspaceElements(OpKind op, const OpAttrs &attrs,
                              const std::vector<Shape> &inputs,
                              const std::vector<Shape> &outputs) {
  uint64_t own = cpuMinimumWorkspaceElements(op, attrs, inputs, outputs);
  uint64_t gemm = gemmScratchElements(op, attrs, inputs);
  uint64_t wanted = own > UINT64_MAX - gemm ? UINT64_MAX : own + gemm;
  if (std::optional<DnnlConvInfo> dnnl =
          dnnlConvInfo(op, attrs, inputs, outputs))
    wanted = std::max(wanted, (dnnl->workspaceBytes + sizeof(float) - 1) /
                                  sizeof(float));
  return wanted;
}

GemmShape matmulGemms(const OpAttrs &at, const Shape &as, const Shape &bs) {
  size_t ra = as.size(), rb = bs.size();
  GemmShape g;
  if (ra < 2 || rb < 2)
    return g;
  int64_t m = at.transposeA ? as[ra - 1] : as[ra - 2];
  int64_t k = at.transposeA ? as[ra - 2] : as[ra - 1];
  int64_t n = at.transposeB ? bs[rb - 2] : bs[rb - 1];
  int64_t batch = 1;
  for (size_t i = 0; i + 2 < ra; ++i)
    batch *= as[i];
  int64_t lda = at.transposeA ? m : k, ldb = at.transposeB ? k : n;
  if (at.sumBatch) {
    // [batch*K, M]^T x [batch*K, N]: the batches' products summed, as one
    // GEMM over the flattened rows.
    g = {true, false, m, n, batch * k, lda, ldb, n};
  } else if (rb == 2 && !at.transposeA) {
    // [batch*M, K] x [K, N]: one GEMM over all batches.
    g = {false, at.transposeB, batch * m, n, k, lda, ldb, n};
  } else {
    g = {at.transposeA, at.transposeB, m, n, k, lda, ldb, n};
    g.batch = batch;
    g.strideA = m * k;
    g.strideB = rb == 2 ? 0 : k * n;
    g.strideC = m * n;
  }
  return g;
}

int64_t transposedPieceRows(const GemmShape &g) {
  if (!g.transA || g.transB || g.beta != 0 || g.n <= 0 || g.m <= 8 * g.n)
    return 0;
  return std::min(g.m, kTransposedPieceRows);
}

GemmShape transposedPiece(const GemmShape &g, int64_t rows) {
  // C^T[n, rows] = op(B)^T [n, k] x A's columns [k, rows]: B as stored is
  // [k, n], so the piece's A is B transposed.
  return {true, false, g.n, rows, g.k, g.ldb, g.lda, rows, g.alpha, 0};
}

std::vector<AttentionBf16Gemm> attentionBf16Gemms(OpKind op, float scale,
                                                  int64_t s, int64_t dh,
                                                  int64_t group) {
  using T = GemmTypes;
  int64_t sq = s * s, hd = s * dh;
  // A head's products, the group's heads sq (an s x s matrix) or hd (a
  // head) elements apart in each operand.
  auto heads = [&](bool ta, bool tb, int64_t m, int64_t n, int64_t k,
                   int64_t lda, int64_t ldb, int64_t ldc, float alpha,
                   int64_t strideA, int64_t strideB, int64_t strideC) {
    return GemmShape{ta,  tb,    m, n,     k,       lda,     ldb,
                     ldc, alpha, 0, group, strideA, strideB, strideC};
  };
  std::vector<AttentionBf16Gemm> gemms = {
      {heads(false, true, s, s, dh, dh, dh, s, scale, hd, hd, sq), T::Bf16F32}};
  if (op == OpKind::Attention) {
    gemms.push_back(
        {heads(false, false, s, dh, s, s, dh, dh, 1, sq, hd, hd), T::F32});
  } else {
    gemms.push_back(
        {heads(true, false, s, dh, s, s, dh, dh, 1, sq, hd, hd), T::F32});
    gemms.push_back(
        {heads(false, true, s, s, dh, dh, dh, s, 1, hd, hd, sq), T::Bf16F32});
    gemms.push_back(
        {heads(false, false, s, dh, s, s, dh, dh, scale, sq, hd, hd), T::F32});
    gemms.push_back(
        {heads(true, false, s, dh, s, s, dh, dh, scale, sq, hd, hd), T::F32});
  }
  return gemms;
}

int64_t attentionBf16Group(int64_t heads, int64_t s) {
  int64_t most = s > 0 ? std::max<int64_t>(1, kAttentionBf16GroupRows / s) : 1;
  for (int64_t g = std::min(most, heads); g > 1; --g)
    if (heads % g == 0)
      return g;
  return 1;
}

uint64_t attentionBf16OwnBytes(OpKind op, int64_t s, int64_t dh,
                               int64_t group) {
  uint64_t square = stagingAligned(uint64_t(group * s * s) * sizeof(float));
  uint64_t head = stagingAligned(uint64_t(group * s * dh) * sizeof(float));
  return op == OpKind::Attention ? square + 2 * head : 2 * square + 6 * head;
}

uint64_t gemmScratchElements(OpKind op, const OpAttrs &attrs,
                             const std::vector<Shape> &inputs) {
  std::vector<GemmShape> gemms;
  if (ops::opInfo(op).shapeRule == ops::ShapeRule::Gemm && inputs.size() == 2) {
    gemms.push_back(oneGemm(matmulGemms(attrs, inputs[0], inputs[1])));
  } else if ((op == OpKind::Attention || op == OpKind::AttentionGrad) &&
             !inputs.empty() && inputs[0].size() == 4) {
    // Per (batch, head): the scores, then (attention_grad) dV, dP, dQ, dK;
    // the kernels in runtime/backends/cpu/kernels/attention.cpp.
    int64_t s = inputs[0][2], dh = inputs[0][3];
    float scale = attrs.scale;
    gemms.push_back({false, true, s, s, dh, dh, dh, s, scale, 0});
    if (op == OpKind::Attention) {
      gemms.push_back({false, false, s, dh, s, s, dh, dh, 1, 0});
    } else {
      gemms.push_back({true, false, s, dh, s, s, dh, dh, 1, 0});
      gemms.push_back({false, true, s, s, dh, dh, dh, s, 1, 0});
      gemms.push_back({false, false, s, dh, s, s, dh, dh, scale, 0});
      gemms.push_back({true, false, s, dh, s, s, dh, dh, scale, 0});
    }
  }
  uint64_t bytes = 0;
  for (const GemmShape &g : gemms)
    bytes = std::max(bytes, dnnlMatmulScratchBytes(g).value_or(0));
  // gemm() aligns the scratchpad to a cache line within what it is given.
  if (bytes > 0)
    bytes += kGemmScratchAlignment;
  return (bytes + sizeof(float) - 1) / sizeof(float);
}

int64_t convChunkColumns(int64_t k, int64_t positions) {
  int64_t columns =
      std::max<int64_t>(1, kConvScratchElements / std::max<int64_t>(k, 1));
  return std::max<int64_t>(1, std::min(positions, columns));
}

uint64_t convWorkspaceElements(OpKind op, const OpAttrs &attrs,
                               const std::vector<Shape> &inputs,
                               const std::vector<Shape> &outputs) {
  ConvShapes shapes(op, inputs, outputs);
  const Shape &w = shapes.w, &y = shapes.y;
  bool pointwise = w[2] == 1 && w[3] == 1 &&
                   attrs.strides == std::vector<int64_t>{1, 1} &&
                   attrs.pads == std::vector<int64_t>{0, 0, 0, 0};
  if (pointwise)
    return 0;
  int64_t k = w[1] * w[2] * w[3];
  return uint64_t(k) * uint64_t(convChunkColumns(k, y[2] * y[3]));
}

uint64_t cpuBudgetedWorkspaceBytes(uint64_t wanted, uint64_t least,
                                   uint64_t budget, uint64_t arenaBytes) {
  if (budget > 0)
    wanted = std::min(wanted, budget > arenaBytes ? budget - arenaBytes : 0);
  return std::max(least, wanted);
}

int momentsOperand(OpKind op) {
  const ops::OpInfo &info = ops::opInfo(op);
  if (info.family != ops::KernelFamily::BatchNorm &&
      info.family != ops::KernelFamily::BatchNormGrad &&
      info.family != ops::KernelFamily::RunningStatUpdate)
    return -1;
  for (size_t i = 0; i < info.operandNames.size(); ++i)
    if (std::string(info.operandNames[i]) == "x")
      return int(i);
  return -1;
}

uint64_t cpuWorkspaceBytes(uint64_t elements, uint64_t elementBytes) {
  if (elementBytes != 0 && elements > UINT64_MAX / elementBytes)
    return UINT64_MAX;
  return elements * elementBytes;
}

namespace {

bool allBf16(const std::vector<ops::TensorType> &inputs,
             const std::vector<ops::TensorType> &outputs) {
  for (const auto *list : {&inputs, &outputs})
    for (const ops::TensorType &t : *list)
      if (t.dtype != DType::BF16)
        return false;
  return true;
}

/// Whether `x` broadcasts to `y` without expanding along y's dim 0: its
/// right-aligned dims miss y's dim 0 or have 1 there.
bool broadcastAlongRows(const Shape &x, const Shape &y) {
  return x.size() < y.size() ||
         (x.size() == y.size() && !x.empty() && x[0] == 1 && y[0] != 1);
}

/// Rows of `rowElements` floats that make one piece (at least 1, at most
/// `rows`).
int64_t rowsPerPiece(int64_t rows, int64_t rowElements) {
  return std::max<int64_t>(
      1, std::min(rows,
                  kStagingPieceElements / std::max<int64_t>(1, rowElements)));
}

} // namespace

std::optional<GemmTypes>
bf16GemmTypes(OpKind op, const std::vector<ops::TensorType> &inputs,
              const std::vector<ops::TensorType> &outputs) {
  if (ops::opInfo(op).shapeRule != ops::ShapeRule::Gemm || inputs.size() != 2 ||
      outputs.size() != 1 || inputs[0].dtype != DType::BF16 ||
      inputs[1].dtype != DType::BF16)
    return std::nullopt;
  if (outputs[0].dtype == DType::BF16)
    return GemmTypes::Bf16;
  if (outputs[0].dtype == DType::F32)
    return GemmTypes::Bf16F32;
  return std::nullopt;
}

Bf16Staging cpuBf16Staging(OpKind op, const OpAttrs &attrs,
                           const std::vector<ops::TensorType> &inputs,
                           const std::vector<ops::TensorType> &outputs) {
  Bf16Staging s;
  const ops::OpInfo &info = ops::opInfo(op);
  // The elementwise arithmetic, activations and dropout (kernels/binary.cpp,
  // unary.cpp, dropout.cpp), a bias gradient's sum_to (reduce.cpp), and
  // the ops that take x's channel moments (batch
  // normalization and its running statistics) read and write bf16
  // themselves on the cpu.
  using Family = ops::KernelFamily;
  if (info.bf16Native || info.family == Family::Binary ||
      info.family == Family::Unary || info.family == Family::UnaryGrad ||
      info.family == Family::Dropout ||
      (info.family == Family::SumTo && inputs.size() == 1 &&
       outputs.size() == 1 && isSuffix(outputs[0].shape, inputs[0].shape)) ||
      momentsOperand(op) >= 0)
    return s;
  // Convolutions (bf16 activations, bf16 or float32 weights) through
  // oneDNN where this CPU has bf16 kernels.
  std::optional<ConvTypes> convTypes =
      inputs.size() == 2 && outputs.size() == 1
          ? bf16ConvTypes(op, inputs[0].dtype, inputs[1].dtype,
                          outputs[0].dtype)
          : std::nullopt;
  if (convTypes) {
    if (std::optional<DnnlConvInfo> conv =
            dnnlConvInfo(op, attrs, {inputs[0].shape, inputs[1].shape},
                         {outputs[0].shape}, *convTypes)) {
      s.kind = Bf16Staging::Kind::Dnnl;
      s.bytes = stagingAligned(conv->workspaceBytes);
      return s;
    }
  }
  // Attention (all operands bf16, heads of at most 2^15) through oneDNN's
  // bf16 GEMMs where it runs every one of them.
  if ((op == OpKind::Attention || op == OpKind::AttentionGrad) &&
      allBf16(inputs, outputs) && inputs[0].shape.size() == 4 &&
      inputs[0].shape[2] > 0 && inputs[0].shape[2] <= (1 << 15) &&
      inputs[0].shape[3] > 0) {
    int64_t len = inputs[0].shape[2], width = inputs[0].shape[3];
    int64_t group =
        attentionBf16Group(inputs[0].shape[0] * inputs[0].shape[1], len);
    uint64_t pad = 0;
    bool runs = true;
    for (const AttentionBf16Gemm &g :
         attentionBf16Gemms(op, attrs.scale, len, width, group)) {
      std::optional<uint64_t> bytes = dnnlMatmulScratchBytes(g.gemm, g.types);
      if (g.types == GemmTypes::F32) {
        // float32 ones go whole to oneDNN, or else a head at a time through
        // gemm() (Gemm.h), on OpenBLAS where oneDNN does not run them; it
        // aligns oneDNN's scratchpad in what it gets.
        GemmShape head = g.gemm;
        head.batch = 1;
        uint64_t most = std::max(bytes.value_or(0),
                                 dnnlMatmulScratchBytes(head).value_or(0));
        bytes = most ? most + kGemmScratchAlignment : 0;
      }
      runs = runs && bytes;
      pad = std::max(pad, bytes.value_or(0));
    }
    if (runs) {
      s.kind = Bf16Staging::Kind::Dnnl;
      s.bytes =
          attentionBf16OwnBytes(op, len, width, group) + stagingAligned(pad);
      return s;
    }
  }
  uint64_t whole = 0;
  for (const auto *list : {&inputs, &outputs})
    for (const ops::TensorType &t : *list) {
      if (t.dtype != DType::BF16)
        continue;
      std::optional<uint64_t> n = ops::checkedNumElements(t.shape);
      if (!n || *n > (uint64_t(1) << 61)) {
        s.kind = Bf16Staging::Kind::Whole;
        s.bytes = UINT64_MAX;
        return s;
      }
      whole += stagedBytes(int64_t(*n));
    }
  // float32 weights a bf16 convolution reads: copied rounded to bf16.
  if (int w = ops::roundedWeightsOperand(op, inputs, outputs); w >= 0)
    whole += stagedBytes(
        int64_t(ops::checkedNumElements(inputs[size_t(w)].shape).value_or(0)));
  if (whole == 0)
    return s;
  s.kind = Bf16Staging::Kind::Whole;
  s.bytes = whole;
  // GEMMs (bf16 operands, a bf16 or float32 result): through oneDNN on
  // the tensors themselves where this CPU has a bf16 kernel for them, else
  // pieces of A and C, or of A and B.
  if (std::optional<GemmTypes> types = bf16GemmTypes(op, inputs, outputs)) {
    const GemmShape m = matmulGemms(attrs, inputs[0].shape, inputs[1].shape);
    const GemmShape g = oneGemm(m);
    if (int64_t rows = transposedPieceRows(g); rows > 0 && m.batch == 1) {
      int64_t tail = g.m % rows;
      std::optional<uint64_t> full =
          dnnlMatmulScratchBytes(transposedPiece(g, rows), *types);
      std::optional<uint64_t> last =
          tail == 0 ? full
                    : dnnlMatmulScratchBytes(transposedPiece(g, tail), *types);
      if (full && last) {
        s.kind = Bf16Staging::Kind::Dnnl;
        s.block = rows;
        s.bytes = stagingAligned(std::max(*full, *last)) +
                  stagingAligned(uint64_t(rows * g.n) *
                                 ops::dtypeSize(outputs[0].dtype));
        return s;
      }
    }
    if (std::optional<uint64_t> pad = dnnlMatmulScratchBytes(g, *types)) {
      s.kind = Bf16Staging::Kind::Dnnl;
      s.bytes = stagingAligned(*pad);
      return s;
    }
    // The staging that copies the smallest operand or result whole: it
    // also re-reads the least (the others' pieces stream past it once).
    int64_t wholeA = m.m * m.k, wholeB = m.k * m.n, wholeC = m.m * m.n;
    // `whole` elements copied whole; `length` in blocks, each block's unit
    // `x` + `y` elements of the two streamed pieces.
    auto pick = [&](Bf16Staging::Kind kind, int64_t whole, int64_t length,
                    int64_t x, int64_t y) {
      s.kind = kind;
      s.block = rowsPerPiece(length, x + y);
      s.bytes = stagedBytes(whole) + stagedBytes(s.block * x) +
                stagedBytes(s.block * y);
    };
    using Kind = Bf16Staging::Kind;
    if (!m.transA && wholeB <= wholeA && wholeB <= wholeC)
      pick(Kind::GemmRows, wholeB, m.m, m.k, m.n);
    else if (!m.transA && wholeA <= wholeC)
      pick(Kind::GemmCols, wholeA, m.n, m.k, m.m);
    else if (!m.transA)
      pick(Kind::GemmSum, wholeC, m.k, m.m, m.n);
    else if (!m.transB && m.m <= m.k)
      pick(Kind::GemmDepth, wholeC, m.k, m.m, m.n);
    else if (!m.transB)
      pick(Kind::GemmDepthRows, wholeB, m.m, m.k, m.n);
    return s;
  }
  // Other elementwise ops: rows of the result at a time.
  bool elementwise = (info.shapeRule == ops::ShapeRule::Elementwise ||
                      info.shapeRule == ops::ShapeRule::Broadcast) &&
                     !info.updatesParam && outputs.size() == 1 &&
                     !outputs[0].shape.empty() && outputs[0].shape[0] > 0;
  if (!elementwise)
    return s;
  const Shape &y = outputs[0].shape;
  int64_t rows = y[0];
  int64_t rowElements = int64_t(*ops::checkedNumElements(y)) / rows;
  int64_t block = rowsPerPiece(rows, rowElements);
  uint64_t bytes = 0;
  for (const auto *list : {&inputs, &outputs})
    for (const ops::TensorType &t : *list) {
      if (t.shape != y && !broadcastAlongRows(t.shape, y))
        return s; // expanded along rows: copied whole
      if (t.dtype == DType::BF16)
        bytes += t.shape == y
                     ? stagedBytes(block * rowElements)
                     : stagedBytes(int64_t(*ops::checkedNumElements(t.shape)));
    }
  s.kind = Bf16Staging::Kind::Rows;
  s.block = block;
  s.bytes = bytes;
  return s;
}

uint64_t cpuStepScratchBytes(OpKind op, const OpAttrs &attrs,
                             const std::vector<ops::TensorType> &inputs,
                             const std::vector<ops::TensorType> &outputs,
                             bool least) {
  uint64_t elementBytes = sizeof(float);
  std::vector<Shape> inShapes, outShapes;
  for (const ops::TensorType &t : inputs) {
    inShapes.push_back(t.shape);
    if (t.dtype == DType::F64)
      elementBytes = sizeof(double);
  }
  for (const ops::TensorType &t : outputs) {
    outShapes.push_back(t.shape);
    if (t.dtype == DType::F64)
      elementBytes = sizeof(double);
  }
  // An op oneDNN runs on its bf16 tensors needs only oneDNN's scratch,
  // placed as float copies would be (below).
  Bf16Staging staging = cpuBf16Staging(op, attrs, inputs, outputs);
  if (staging.kind == Bf16Staging::Kind::Dnnl)
    return staging.bytes == 0 ? 0 : staging.bytes + kStagingAlignment;
  bool own = least || elementBytes != sizeof(float);
  uint64_t kernel = cpuWorkspaceBytes(
      own ? cpuMinimumWorkspaceElements(op, attrs, inShapes, outShapes)
          : cpuWorkspaceElements(op, attrs, inShapes, outShapes),
      elementBytes);
  if (staging.bytes == 0)
    return kernel;
  // The float copies lie at the end of the scratch from a 64-byte boundary
  // (CpuBackend::runStaged), after the kernel's own: one alignment more
  // leaves the kernel its bytes wherever the scratch starts.
  if (kernel > UINT64_MAX - staging.bytes - 2 * kStagingAlignment)
    return UINT64_MAX;
  kernel = stagingAligned(kernel);
  return kernel + staging.bytes + kStagingAlignment;
}

} // namespace remat::runtime::cpu
