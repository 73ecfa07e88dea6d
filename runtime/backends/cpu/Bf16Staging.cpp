//===- Bf16Staging.cpp - ops on float copies of their bf16 tensors --------===//
#include "runtime/backends/cpu/Bf16Staging.h"

#include "ops/BFloat16.h"
#include "ops/ShapeRules.h"
#include "runtime/backends/cpu/DnnlConv.h"
#include "runtime/backends/cpu/Gemm.h"
#include "runtime/backends/cpu/Kernels.h"
#include "runtime/backends/cpu/kernels/Common.h"
#include "runtime/backends/cpu/kernels/Kernels.h"

#include <algorithm>
#include <stdexcept>
#include <type_traits>

namespace remat::runtime::cpu {

namespace {

/// Hands out consecutive 64-aligned pieces of the copies' area.
struct Pieces {
  char *next;
  float *take(int64_t elements) {
    float *p = reinterpret_cast<float *>(next);
    next += stagedBytes(elements);
    return p;
  }
};

/// The types of a GEMM of bf16 operands into a C of TC (bf16's bits or
/// float).
template <typename TC> GemmTypes gemmTypesOf() {
  return std::is_same_v<TC, float> ? GemmTypes::Bf16F32 : GemmTypes::Bf16;
}

/// `n` float results into C: rounded to bf16, or (a float32 C) as they are.
void storeC(const float *from, uint16_t *to, int64_t n) {
  narrowBf16(from, to, n);
}
void storeC(const float *from, float *to, int64_t n) {
  std::copy(from, from + n, to);
}

/// `rows` x `cols` of `from` (row stride cols) into `to` (row stride
/// `toStride`), rounded to bf16 or as they are.
template <typename TC>
void storeBlock(const float *from, TC *to, int64_t toStride, int64_t rows,
                int64_t cols) {
  parallelElements(rows * cols, [&](int64_t i) {
    float v = from[i];
    TC &out = to[(i / cols) * toStride + i % cols];
    if constexpr (std::is_same_v<TC, float>)
      out = v;
    else
      out = ops::floatToBf16(v);
  });
}

/// C = A^T B (bf16 A and B, a bf16 or float32 C; `gemm`) as C^T = B^T A in
/// pieces of `rows` rows of C (transposedPieceRows, CpuWorkspace.h): each
/// piece's product lands in the last bytes of `scratch` and is transposed into
/// C in tiles on the threads. False when oneDNN does not run a piece.
template <typename TC>
bool transposedPieces(const GemmShape &gemm, int64_t rows, const uint16_t *a,
                      const uint16_t *b, TC *c, char *scratch,
                      uint64_t scratchBytes) {
  uint64_t pieceBytes = stagingAligned(uint64_t(rows * gemm.n) * sizeof(TC));
  if (pieceBytes > scratchBytes)
    return false;
  uint64_t padBytes = scratchBytes - pieceBytes;
  auto *piece = reinterpret_cast<TC *>(scratch + padBytes);
  constexpr int64_t kTile = 32;
  for (int64_t first = 0; first < gemm.m; first += rows) {
    int64_t count = std::min(rows, gemm.m - first);
    if (!dnnlMatmulRun(transposedPiece(gemm, count), gemmTypesOf<TC>(), b,
                       a + first, piece, scratch, padBytes))
      return false;
    // piece is [n, count]: row i of this part of C is its column i.
    TC *out = c + first * gemm.ldc;
    parallelRows((count + kTile - 1) / kTile, count * gemm.n,
                 [&](int64_t tile) {
                   int64_t i0 = tile * kTile, i1 = std::min(count, i0 + kTile);
                   for (int64_t d0 = 0; d0 < gemm.n; d0 += kTile) {
                     int64_t d1 = std::min(gemm.n, d0 + kTile);
                     for (int64_t i = i0; i < i1; ++i)
                       for (int64_t d = d0; d < d1; ++d)
                         out[i * gemm.ldc + d] = piece[d * count + i];
                   }
                 });
  }
  return true;
}

/// `rows` x `cols` of `from` (row stride `fromStride`) widened into `to`
/// (row stride cols).
void widenBlock(const uint16_t *from, int64_t fromStride, float *to,
                int64_t rows, int64_t cols) {
  parallelElements(rows * cols, [&](int64_t i) {
    to[i] = ops::bf16ToFloat(from[(i / cols) * fromStride + i % cols]);
  });
}

/// Rows of op(A) (A untransposed, [m, k] with row stride lda) at a time:
/// B whole in float, then each block of A's rows and C's rows.
template <typename TC>
void gemmRows(const GemmShape &s, const uint16_t *a, const uint16_t *b, TC *c,
              int64_t block, Pieces pieces, float *scratch,
              uint64_t scratchBytes) {
  float *bf = pieces.take(s.k * s.n);
  float *af = pieces.take(block * s.k);
  float *cf = pieces.take(block * s.n);
  for (int64_t i = 0; i < s.batch; ++i) {
    // B as stored: [k, n] (ldb n) or, transposed, [n, k] (ldb k).
    widenBf16(b + i * s.strideB, bf, s.k * s.n);
    for (int64_t r0 = 0; r0 < s.m; r0 += block) {
      int64_t rows = std::min(block, s.m - r0);
      widenBf16(a + i * s.strideA + r0 * s.lda, af, rows * s.k);
      gemm<float>(false, s.transB, rows, s.n, s.k, 1.0f, af, s.k, bf, s.ldb,
                  0.0f, cf, s.n, scratch, scratchBytes);
      storeC(cf, c + i * s.strideC + r0 * s.ldc, rows * s.n);
    }
  }
}

/// op(A) B with A whole in float, `block` columns of op(B) and of C at a
/// time: B is read once, A (the smaller, m <= n) once per block.
template <typename TC>
void gemmCols(const GemmShape &s, const uint16_t *a, const uint16_t *b, TC *c,
              int64_t block, Pieces pieces, float *scratch,
              uint64_t scratchBytes) {
  float *af = pieces.take(s.m * s.k);
  float *bf = pieces.take(block * s.k);
  float *cf = pieces.take(s.m * block);
  for (int64_t i = 0; i < s.batch; ++i) {
    widenBf16(a + i * s.strideA, af, s.m * s.k);
    const uint16_t *bi = b + i * s.strideB;
    for (int64_t c0 = 0; c0 < s.n; c0 += block) {
      int64_t cols = std::min(block, s.n - c0);
      if (s.transB) // B as stored: [n, k], columns c0.. are rows c0..
        widenBf16(bi + c0 * s.ldb, bf, cols * s.k);
      else // [k, n]: a column block, as [k, cols]
        widenBlock(bi + c0, s.ldb, bf, s.k, cols);
      gemm<float>(false, s.transB, s.m, cols, s.k, 1.0f, af, s.k, bf,
                  s.transB ? s.k : cols, 0.0f, cf, cols, scratch, scratchBytes);
      storeBlock(cf, c + i * s.strideC + c0, s.ldc, s.m, cols);
    }
  }
}

/// op(A) B with C in float, `block` columns of A and rows of op(B) (the
/// summed dimension) at a time, accumulated into C.
template <typename TC>
void gemmSum(const GemmShape &s, const uint16_t *a, const uint16_t *b, TC *c,
             int64_t block, Pieces pieces, float *scratch,
             uint64_t scratchBytes) {
  float *cf = pieces.take(s.m * s.n);
  float *af = pieces.take(s.m * block);
  float *bf = pieces.take(block * s.n);
  for (int64_t i = 0; i < s.batch; ++i) {
    const uint16_t *ai = a + i * s.strideA, *bi = b + i * s.strideB;
    for (int64_t p0 = 0; p0 < s.k; p0 += block) {
      int64_t depth = std::min(block, s.k - p0);
      widenBlock(ai + p0, s.lda, af, s.m, depth);
      if (s.transB) // B as stored: [n, k]; its columns p0.. as [n, depth]
        widenBlock(bi + p0, s.ldb, bf, s.n, depth);
      else // [k, n]: rows p0..
        widenBf16(bi + p0 * s.ldb, bf, depth * s.n);
      gemm<float>(false, s.transB, s.m, s.n, depth, 1.0f, af, depth, bf,
                  s.transB ? depth : s.n, p0 == 0 ? 0.0f : 1.0f, cf, s.n,
                  scratch, scratchBytes);
    }
    if (s.k == 0)
      std::fill(cf, cf + s.m * s.n, 0.0f);
    storeC(cf, c + i * s.strideC, s.m * s.n);
  }
}

/// A^T B with B whole in float, `block` rows of C at a time (the same
/// columns of A), each over the whole depth: C is never whole in float.
template <typename TC>
void gemmDepthRows(const GemmShape &s, const uint16_t *a, const uint16_t *b,
                   TC *c, int64_t block, Pieces pieces, float *scratch,
                   uint64_t scratchBytes) {
  float *bf = pieces.take(s.k * s.n);
  float *af = pieces.take(s.k * block);
  float *cf = pieces.take(block * s.n);
  for (int64_t i = 0; i < s.batch; ++i) {
    widenBf16(b + i * s.strideB, bf, s.k * s.n);
    for (int64_t r0 = 0; r0 < s.m; r0 += block) {
      int64_t rows = std::min(block, s.m - r0);
      // A as stored: [k, m] (lda m); columns r0.. as [k, rows].
      widenBlock(a + i * s.strideA + r0, s.lda, af, s.k, rows);
      gemm<float>(true, false, rows, s.n, s.k, 1.0f, af, rows, bf, s.n, 0.0f,
                  cf, s.n, scratch, scratchBytes);
      storeC(cf, c + i * s.strideC + r0 * s.ldc, rows * s.n);
    }
  }
}

/// A^T B summed over A's and B's rows (the depth k) a block at a time into
/// C in float.
template <typename TC>
void gemmDepth(const GemmShape &s, const uint16_t *a, const uint16_t *b, TC *c,
               int64_t block, Pieces pieces, float *scratch,
               uint64_t scratchBytes) {
  float *cf = pieces.take(s.m * s.n);
  float *af = pieces.take(block * s.m);
  float *bf = pieces.take(block * s.n);
  for (int64_t i = 0; i < s.batch; ++i) {
    for (int64_t p0 = 0; p0 < s.k; p0 += block) {
      int64_t depth = std::min(block, s.k - p0);
      widenBf16(a + i * s.strideA + p0 * s.lda, af, depth * s.m);
      widenBf16(b + i * s.strideB + p0 * s.ldb, bf, depth * s.n);
      gemm<float>(true, false, s.m, s.n, depth, 1.0f, af, s.m, bf, s.n,
                  p0 == 0 ? 0.0f : 1.0f, cf, s.n, scratch, scratchBytes);
    }
    if (s.k == 0)
      std::fill(cf, cf + s.m * s.n, 0.0f);
    storeC(cf, c + i * s.strideC, s.m * s.n);
  }
}

/// An elementwise op `block` rows of its result at a time; an operand
/// broadcast along the rows is read whole (converted once).
void rows(const KernelCall &call, int64_t block, Pieces pieces, float *scratch,
          uint64_t scratchElements) {
  const Shape &y = call.outputs[0].shape;
  int64_t total = y[0];
  int64_t rowElements = call.outputs[0].numElements / total;
  std::vector<TensorRef> ins(call.inputs, call.inputs + call.numInputs),
      outs(call.outputs, call.outputs + call.numOutputs);
  // Per tensor: its piece (a bf16 row-shaped tensor) or null.
  std::vector<float *> inPiece(ins.size(), nullptr),
      outPiece(outs.size(), nullptr);
  for (size_t i = 0; i < ins.size(); ++i) {
    bool rowShaped = call.inputs[i].shape == y;
    if (call.inputs[i].dtype != DType::BF16)
      continue;
    if (rowShaped) {
      inPiece[i] = pieces.take(block * rowElements);
    } else { // broadcast along the rows: whole, once
      float *whole = pieces.take(call.inputs[i].numElements);
      widenBf16(call.inputs[i].as<const uint16_t>(), whole,
            call.inputs[i].numElements);
      ins[i].data = whole;
      ins[i].dtype = DType::F32;
    }
  }
  for (size_t o = 0; o < outs.size(); ++o)
    if (call.outputs[o].dtype == DType::BF16)
      outPiece[o] = pieces.take(block * rowElements);
  for (int64_t r0 = 0; r0 < total; r0 += block) {
    int64_t count = std::min(block, total - r0);
    int64_t offset = r0 * rowElements, n = count * rowElements;
    auto piece = [&](TensorRef &t, const TensorRef &full, float *copy) {
      t.shape = full.shape;
      t.shape[0] = count;
      t.numElements = n;
      if (copy) {
        t.data = copy;
        t.dtype = DType::F32;
      } else {
        t.data = full.as<float>() + offset;
      }
    };
    for (size_t i = 0; i < ins.size(); ++i)
      if (call.inputs[i].shape == y) {
        piece(ins[i], call.inputs[i], inPiece[i]);
        if (inPiece[i])
          widenBf16(call.inputs[i].as<const uint16_t>() + offset, inPiece[i], n);
      }
    for (size_t o = 0; o < outs.size(); ++o)
      piece(outs[o], call.outputs[o], outPiece[o]);
    KernelCall part = call;
    part.inputs = ins.data();
    part.outputs = outs.data();
    runKernel<float>(part, scratch, scratchElements);
    for (size_t o = 0; o < outs.size(); ++o)
      if (outPiece[o])
        narrowBf16(outPiece[o], call.outputs[o].as<uint16_t>() + offset, n);
  }
}

/// Every bf16 tensor copied whole, and float32 weights of a bf16
/// convolution copied rounded to bf16.
void whole(const KernelCall &call, Pieces pieces, float *scratch,
           uint64_t scratchElements) {
  std::vector<TensorRef> ins(call.inputs, call.inputs + call.numInputs),
      outs(call.outputs, call.outputs + call.numOutputs);
  int rounded = -1;
  if (call.numInputs == 2 && call.numOutputs == 1)
    rounded =
        ops::roundedWeightsOperand(call.op, call.inputs[0].dtype,
                                   call.inputs[1].dtype, call.outputs[0].dtype);
  for (size_t i = 0; i < ins.size(); ++i) {
    TensorRef &t = ins[i];
    if (int(i) == rounded) {
      float *copy = pieces.take(t.numElements);
      const float *from = t.as<const float>();
      parallelElements(t.numElements, [&](int64_t j) {
        copy[j] = ops::bf16ToFloat(ops::floatToBf16(from[j]));
      });
      t.data = copy;
    } else if (t.dtype == DType::BF16) {
      float *copy = pieces.take(t.numElements);
      widenBf16(t.as<const uint16_t>(), copy, t.numElements);
      t.data = copy;
      t.dtype = DType::F32;
    }
  }
  for (TensorRef &t : outs)
    if (t.dtype == DType::BF16) {
      t.data = pieces.take(t.numElements);
      t.dtype = DType::F32;
    }
  KernelCall staged = call;
  staged.inputs = ins.data();
  staged.outputs = outs.data();
  runKernel<float>(staged, scratch, scratchElements);
  for (int o = 0; o < call.numOutputs; ++o)
    if (call.outputs[o].dtype == DType::BF16)
      narrowBf16(outs[size_t(o)].as<const float>(), call.outputs[o].as<uint16_t>(),
             call.outputs[o].numElements);
}

} // namespace

void runOnFloatCopies(const KernelCall &call, const Bf16Staging &staging,
                      char *copies, float *scratch, uint64_t scratchElements) {
  Pieces pieces{copies};
  switch (staging.kind) {
  case Bf16Staging::Kind::GemmRows:
  case Bf16Staging::Kind::GemmCols:
  case Bf16Staging::Kind::GemmSum:
  case Bf16Staging::Kind::GemmDepth:
  case Bf16Staging::Kind::GemmDepthRows: {
    GemmShape g =
        matmulGemms(*call.attrs, call.inputs[0].shape, call.inputs[1].shape);
    auto stage = [&](auto *c) {
      using TC = std::remove_pointer_t<decltype(c)>;
      auto run = staging.kind == Bf16Staging::Kind::GemmRows   ? gemmRows<TC>
                 : staging.kind == Bf16Staging::Kind::GemmCols ? gemmCols<TC>
                 : staging.kind == Bf16Staging::Kind::GemmSum  ? gemmSum<TC>
                 : staging.kind == Bf16Staging::Kind::GemmDepth
                     ? gemmDepth<TC>
                     : gemmDepthRows<TC>;
      run(g, call.inputs[0].as<const uint16_t>(),
          call.inputs[1].as<const uint16_t>(), c, staging.block, pieces,
          scratch, scratchElements * sizeof(float));
    };
    if (call.outputs[0].dtype == DType::F32)
      stage(call.outputs[0].as<float>());
    else
      stage(call.outputs[0].as<uint16_t>());
    return;
  }
  case Bf16Staging::Kind::Dnnl: {
    auto refused = [&] {
      return std::logic_error(std::string("oneDNN did not run the bf16 ") +
                              opName(call.op) + " it was planned for");
    };
    if (call.op == OpKind::Attention || call.op == OpKind::AttentionGrad) {
      if (!runAttentionBf16(call, copies, staging.bytes))
        throw refused();
      return;
    }
    if (ops::opInfo(call.op).shapeRule != ops::ShapeRule::Gemm) {
      std::vector<Shape> ins = {call.inputs[0].shape, call.inputs[1].shape};
      std::optional<ConvTypes> types =
          bf16ConvTypes(call.op, call.inputs[0].dtype, call.inputs[1].dtype,
                        call.outputs[0].dtype);
      if (!types ||
          !dnnlConvRun(call.op, *call.attrs, ins, {call.outputs[0].shape},
                       call.inputs[0].data, call.inputs[1].data,
                       call.outputs[0].data, copies, staging.bytes, *types))
        throw refused();
      return;
    }
    GemmShape g =
        matmulGemms(*call.attrs, call.inputs[0].shape, call.inputs[1].shape);
    const auto *a = call.inputs[0].as<const uint16_t>();
    const auto *b = call.inputs[1].as<const uint16_t>();
    auto gemm = [&](auto *c) {
      using TC = std::remove_pointer_t<decltype(c)>;
      if (staging.block > 0) {
        if (!transposedPieces(g, staging.block, a, b, c, copies, staging.bytes))
          throw refused();
        return;
      }
      for (int64_t i = 0; i < g.batch; ++i)
        if (!dnnlMatmulRun(oneGemm(g), gemmTypesOf<TC>(), a + i * g.strideA,
                           b + i * g.strideB, c + i * g.strideC, copies,
                           staging.bytes))
          throw refused();
    };
    if (call.outputs[0].dtype == DType::F32)
      gemm(call.outputs[0].as<float>());
    else
      gemm(call.outputs[0].as<uint16_t>());
    return;
  }
  case Bf16Staging::Kind::Rows:
    return rows(call, staging.block, pieces, scratch, scratchElements);
  case Bf16Staging::Kind::Whole:
    return whole(call, pieces, scratch, scratchElements);
  case Bf16Staging::Kind::None:
    return;
  }
}

void widenBf16(const uint16_t *from, float *to, int64_t n) {
  parallelElements(n, [&](int64_t i) { to[i] = ops::bf16ToFloat(from[i]); });
}

void narrowBf16(const float *from, uint16_t *to, int64_t n) {
  parallelElements(n, [&](int64_t i) { to[i] = ops::floatToBf16(from[i]); });
}

} // namespace remat::runtime::cpu
