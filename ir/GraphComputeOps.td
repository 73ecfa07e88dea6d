//===- GraphComputeOps.td - ops that compute ---------------*- tablegen -*-===//
//
// The ops that compute: matmul, elementwise arithmetic and activations,
// the constant fill, embedding, the losses, dropout, attention,
// convolution and pooling, and the gradient ops of all of them.
//
//===----------------------------------------------------------------------===//

#ifndef REMAT_IR_GRAPHCOMPUTEOPS
#define REMAT_IR_GRAPHCOMPUTEOPS

include "ir/GraphOpBase.td"

//===----------------------------------------------------------------------===//
// Matrix product
//===----------------------------------------------------------------------===//

def Graph_MatmulOp : Graph_ForwardOp<"matmul", [OwnFlops]> {
  let kernelFamily = "Matmul";
  let autocast = "Bf16";
  let shapeRule = "Gemm";
  let summary = "batched matrix product with optional transposes";
  let description = [{
    `a` is `[..., M, K]` (`[..., K, M]` with `transpose_a`), `b` is
    `[..., K, N]` (`[..., N, K]` with `transpose_b`) or rank 2 `[K, N]`
    shared by every batch; `c` is `[..., M, N]`. Batch dims of `a` and `b`
    must be equal. With `sum_batch` (with `transpose_a`, without
    `transpose_b`, `b` of `a`'s batch dims) `c` is `[M, N]`, the sum over
    the batch of `a_iᵀ·b_i`: one product of `a` and `b` flattened to rows,
    `[batch·K, M]ᵀ·[batch·K, N]` (a shared weight's gradient).
    FLOPs: 2·batch·M·N·K.

    ```mlir
    %c = graph.matmul %a, %b {transpose_b = true}
        : tensor<8x2x3xf32>, tensor<4x3xf32> -> tensor<8x2x4xf32>
    ```
  }];
  let arguments = (ins Graph_Tensor:$a, Graph_Tensor:$b,
                       Graph_FalseBool:$transpose_a,
                       Graph_FalseBool:$transpose_b,
                       Graph_FalseBool:$sum_batch);
  let results = (outs Graph_Tensor:$c);
  let assemblyFormat = [{
    $a `,` $b attr-dict `:` type($a) `,` type($b) `->` type($c)
  }];
  // 2·batch·M·N·K, batch being the product of a's leading dims.
  let flops = [{
    auto typeA = llvm::dyn_cast<RankedTensorType>(getA().getType());
    auto typeB = llvm::dyn_cast<RankedTensorType>(getB().getType());
    if (!typeA || !typeB || typeA.getRank() < 2 || typeB.getRank() < 2 ||
        !typeA.hasStaticShape() || !typeB.hasStaticShape())
      return 0;
    ArrayRef<int64_t> shapeA = typeA.getShape(), shapeB = typeB.getShape();
    size_t rankA = shapeA.size(), rankB = shapeB.size();
    int64_t batch = shape::saturatingElementCount(shapeA.drop_back(2));
    int64_t m = getTransposeA() ? shapeA[rankA - 1] : shapeA[rankA - 2];
    int64_t k = getTransposeA() ? shapeA[rankA - 2] : shapeA[rankA - 1];
    int64_t n = getTransposeB() ? shapeB[rankB - 2] : shapeB[rankB - 1];
    return times(times(times(times(2, batch), m), n), k);
  }];
}

//===----------------------------------------------------------------------===//
// Elementwise arithmetic and activations
//===----------------------------------------------------------------------===//

class Graph_BinaryOp<string mnemonic, string symbol>
    : Graph_ForwardOp<mnemonic, [ElementwiseCost]> {
  let kernelFamily = "Binary";
  let shapeRule = "Broadcast";
  let inPlace = 1;
  let summary = "elementwise " # symbol # " with NumPy broadcasting";
  let description = [{
    Shapes are aligned on the right; each pair of dims is equal or one of
    them is 1 (or missing). `c` has the broadcast shape and the element type
    of the operands. FLOPs: one per element of `c`.

    ```mlir
    %c = graph.}] # mnemonic # [{ %a, %b
        : tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xf32>
    ```
  }];
  let arguments = (ins Graph_Tensor:$a, Graph_Tensor:$b);
  let results = (outs Graph_Tensor:$c);
  let assemblyFormat = [{
    $a `,` $b attr-dict `:` type($a) `,` type($b) `->` type($c)
  }];
}

def Graph_AddOp : Graph_BinaryOp<"add", "a + b"> {
  let autocast = "BiasAdd";
}
def Graph_SubOp : Graph_BinaryOp<"sub", "a - b">;
def Graph_MulOp : Graph_BinaryOp<"mul", "a · b">;
def Graph_DivOp : Graph_BinaryOp<"div", "a / b">;

class Graph_UnaryOp<string mnemonic, string formula, string flopsText,
                    list<Trait> traits = []>
    : Graph_ForwardOp<mnemonic, traits> {
  let kernelFamily = "Unary";
  let shapeRule = "Elementwise";
  let inPlace = 1;
  let summary = "elementwise " # formula;
  let description = [{
    `y` has the type of `x`. FLOPs: }] # flopsText # [{.

    ```mlir
    %y = graph.}] # mnemonic # [{ %x : tensor<2x3xf32> -> tensor<2x3xf32>
    ```
  }];
  let arguments = (ins Graph_Tensor:$x);
  let results = (outs Graph_Tensor:$y);
  let assemblyFormat = "$x attr-dict `:` type($x) `->` type($y)";
}

def Graph_ReluOp : Graph_UnaryOp<"relu", "max(x, 0)", "1 per element",
    [ElementwiseCost]>;
def Graph_GeluOp : Graph_UnaryOp<"gelu",
    "0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))) (GELU, tanh form)",
    "about 8 per element, tanh counted as one (see getFlops)", [OwnFlops]> {
  // 8 per element, an estimate of the tanh form: x³ (2), 0.044715·x³ + x (2),
  // ·√(2/π) (1), tanh (1, counted as one op), 1 + t (1), 0.5·x·(…) (1, with
  // 0.5·x hoisted).
  let flops = [{ return times(8, elements(getX())); }];
}
def Graph_GeluExactOp : Graph_UnaryOp<"gelu_exact",
    "0.5·x·(1 + erf(x/√2)) (GELU, the erf form of nn.GELU())",
    "3 per element, erf counted as one (see getFlops)", [OwnFlops]> {
  // 3 per element: x·(1/√2) (1), erf (1, counted as one op), 0.5·x·(1 + e)
  // (1, with 0.5·x hoisted and the add folded in, as for gelu).
  let flops = [{ return times(3, elements(getX())); }];
}
def Graph_TanhOp : Graph_UnaryOp<"tanh", "tanh(x)",
    "1 per element (tanh counted as one)", [ElementwiseCost]>;
def Graph_ExpOp : Graph_UnaryOp<"exp", "exp(x)",
    "1 per element (exp counted as one)", [ElementwiseCost]>;
def Graph_SiluOp : Graph_UnaryOp<"silu",
    "x·σ(x), σ(x) = 1/(1 + exp(-x)) (SiLU, swish)",
    "4 per element (negate, exp, add, divide; the product with x)",
    [OwnFlops]> {
  // 4 per element: σ(x) = 1/(1 + exp(-x)) (exp counted as one) and x·σ.
  let flops = [{ return times(4, elements(getX())); }];
}
def Graph_SoftmaxOp : Graph_UnaryOp<"softmax",
    "softmax over the last dimension, max-subtracted",
    "5 per element (row max, subtract, exp, row sum, divide)", [OwnFlops]> {
  let kernelFamily = "Softmax";
  let autocast = "Float32";
  let shapeRule = "RowWise";
  let inPlace = 0;
  // 5 per element: row max, subtract, exp, row sum, divide.
  let flops = [{ return times(5, elements(getX())); }];
}

def Graph_ErfOp : Graph_UnaryOp<"erf", "erf(x), the error function",
    "1 per element (erf counted as one)", [ElementwiseCost]>;

def Graph_PowOp : Graph_ForwardOp<"pow", [ElementwiseCost]> {
  let kernelFamily = "Unary";
  let shapeRule = "Elementwise";
  let inPlace = 1;
  let summary = "elementwise x^exponent for a constant exponent";
  let description = [{
    `y = x^exponent` as `pow` of the C library (a negative `x` with a
    non-integer exponent gives NaN); `y` has the type of `x`. FLOPs: 1 per
    element.

    ```mlir
    %y = graph.pow %x {exponent = 2.000000e+00 : f32}
        : tensor<2x3xf32> -> tensor<2x3xf32>
    ```
  }];
  let arguments = (ins Graph_Tensor:$x, Graph_F32:$exponent);
  let results = (outs Graph_Tensor:$y);
  let assemblyFormat = "$x attr-dict `:` type($x) `->` type($y)";
}

def Graph_ClipOp : Graph_ForwardOp<"clip", [ElementwiseCost]> {
  let kernelFamily = "Clip";
  let shapeRule = "Elementwise";
  let inPlace = 1;
  let summary = "elementwise min(max(x, min), max)";
  let description = [{
    `y` has the type of `x`; `min <= max`. ReLU6 is `clip` to [0, 6].
    FLOPs: 1 per element.

    ```mlir
    %y = graph.clip %x {max = 6.000000e+00 : f32, min = 0.000000e+00 : f32}
        : tensor<2x3xf32> -> tensor<2x3xf32>
    ```
  }];
  let arguments = (ins Graph_Tensor:$x, Graph_F32:$min, Graph_F32:$max);
  let results = (outs Graph_Tensor:$y);
  let assemblyFormat = "$x attr-dict `:` type($x) `->` type($y)";
}

def Graph_ConstantOp : Graph_Op<"constant", [OwnFlops]> {
  let kernelFamily = "Constant";
  let shapeRule = "Fill";
  let inModelFormat = 1;
  let resultTypeGiven = 1;
  let summary = "a float tensor with every element equal to value";
  let description = [{
    FLOPs: 0 (the fill is counted as bytes written).

    ```mlir
    %zero = graph.constant 0.000000e+00 : tensor<2x3xf32>
    ```
  }];
  let arguments = (ins Graph_F32:$value);
  let results = (outs Graph_Tensor:$y);
  let assemblyFormat = "$value attr-dict `:` type($y)";
  let flops = [{ return 0; }];
}

//===----------------------------------------------------------------------===//
// Embedding, losses, dropout and attention
//===----------------------------------------------------------------------===//

def Graph_EmbeddingOp : Graph_ForwardOp<"embedding", [OwnFlops]> {
  let kernelFamily = "Embedding";
  let autocast = "Float32";
  let shapeRule = "Gather";
  let summary = "gathers rows of a table";
  let description = [{
    `table` is `[V, D]` (float), `indices` is `[...]` (i32 or i64), `y` is
    `[..., D]`. An index outside `[0, V)` is a runtime error. FLOPs: 0.

    ```mlir
    %y = graph.embedding %table, %ids
        : tensor<100x16xf32>, tensor<2x5xi64> -> tensor<2x5x16xf32>
    ```
  }];
  let arguments = (ins Graph_Tensor:$table, Graph_Tensor:$indices);
  let results = (outs Graph_Tensor:$y);
  let assemblyFormat = [{
    $table `,` $indices attr-dict `:` type($table) `,` type($indices) `->`
    type($y)
  }];
  // 0: a gather moves bytes only.
  let flops = [{ return 0; }];
}

def Graph_CrossEntropyOp : Graph_ForwardOp<"cross_entropy", [OwnFlops]> {
  let kernelFamily = "CrossEntropy";
  let bf16Native = 1;
  let autocast = "Float32";
  let shapeRule = "ClassLoss";
  let averages = 1;
  let summary = "mean softmax cross-entropy over all positions";
  let description = [{
    `logits` is `[..., C]` (float), `labels` is `[...]` (i32 or i64), `loss`
    is a 0-d tensor: the mean over all positions of
    `-log softmax(logits)[label]`. FLOPs: 5 per logit (see getFlops).

    ```mlir
    %loss = graph.cross_entropy %logits, %labels
        : tensor<4x10xf32>, tensor<4xi32> -> tensor<f32>
    ```
  }];
  let arguments = (ins Graph_Tensor:$logits, Graph_Tensor:$labels);
  let results = (outs Graph_Tensor:$loss);
  let assemblyFormat = [{
    $logits `,` $labels attr-dict `:` type($logits) `,` type($labels) `->`
    type($loss)
  }];
  // 5 per logit: row max, subtract, exp, row sum, pick the label's term; the
  // log and the mean over positions (a few per row) are not counted.
  let flops = [{ return times(5, elements(getLogits())); }];
}

def Graph_MseOp : Graph_ForwardOp<"mse", [OwnFlops]> {
  let kernelFamily = "Mse";
  let autocast = "Float32";
  let shapeRule = "PairLoss";
  let averages = 1;
  let summary = "mean squared error";
  let description = [{
    `loss = mean((a - b)²)` as a 0-d tensor; `a` and `b` have the same type.
    FLOPs: 3 per element (subtract, square, sum).

    ```mlir
    %loss = graph.mse %a, %b : tensor<4x1xf32>, tensor<4x1xf32> -> tensor<f32>
    ```
  }];
  let arguments = (ins Graph_Tensor:$a, Graph_Tensor:$b);
  let results = (outs Graph_Tensor:$loss);
  let assemblyFormat = [{
    $a `,` $b attr-dict `:` type($a) `,` type($b) `->` type($loss)
  }];
  // 3 per element: subtract, square, sum.
  let flops = [{ return times(3, elements(getA())); }];
}

def Graph_DropoutOp : Graph_ForwardOp<"dropout", [OwnFlops]> {
  let kernelFamily = "Dropout";
  let shapeRule = "Elementwise";
  let inPlace = 1;
  let summary = "inverted dropout with a counter-based (Philox) mask";
  let description = [{
    `y = x·keep/(1-rate)`; element i is kept when
    `philox(seed, step, i) >= rate` (docs/ops.md), so the mask is the same on
    every backend and every recompute. `rate` is in `[0, 1)`. FLOPs: 2 per
    element (compare, multiply); random-number generation is not counted.

    ```mlir
    %y = graph.dropout %x {rate = 1.000000e-01 : f32, seed = 42 : i64}
        : tensor<2x3xf32> -> tensor<2x3xf32>
    ```
  }];
  let arguments = (ins Graph_Tensor:$x, Graph_F32:$rate, I64Attr:$seed);
  let results = (outs Graph_Tensor:$y);
  let assemblyFormat = "$x attr-dict `:` type($x) `->` type($y)";
  // 2 per element: compare with the rate, multiply by keep/(1-rate). The
  // Philox rounds are not counted.
  let flops = [{ return times(2, elements(getX())); }];
}

def Graph_AttentionOp : Graph_ForwardOp<"attention", [OwnFlops]> {
  let kernelFamily = "Attention";
  let autocast = "Bf16";
  let shapeRule = "Attention";
  let summary = "scaled dot-product attention";
  let description = [{
    `o = softmax(scale·q·kᵀ + mask)·v`; `q`, `k`, `v` and `o` are all
    `[B, H, S, Dh]`; with `causal` the mask is -∞ above the diagonal.
    FLOPs: 4·B·H·S·S·Dh for the two GEMMs plus 5·B·H·S·S for the softmax,
    the full square counted even when causal.

    ```mlir
    %o = graph.attention %q, %k, %v {causal = true, scale = 1.250000e-01 : f32}
        : tensor<2x4x8x64xf32>, tensor<2x4x8x64xf32>, tensor<2x4x8x64xf32>
          -> tensor<2x4x8x64xf32>
    ```
  }];
  let arguments = (ins Graph_Tensor:$q, Graph_Tensor:$k, Graph_Tensor:$v,
                       Graph_TrueBool:$causal, Graph_F32:$scale);
  let results = (outs Graph_Tensor:$o);
  let assemblyFormat = [{
    $q `,` $k `,` $v attr-dict `:` type($q) `,` type($k) `,` type($v) `->`
    type($o)
  }];
  // 4·B·H·S·S·Dh for the two GEMMs (q·kᵀ and p·v) plus 5·B·H·S·S for the
  // softmax. The full S×S square is counted even when causal: the masked half
  // is what kernels skip at best, and the planner wants an upper bound.
  let flops = [{
    int64_t scores = 0, scoresTimesHead = 0;
    if (!attentionSizes(getQ(), scores, scoresTimesHead))
      return 0;
    return plus(times(4, scoresTimesHead), times(5, scores));
  }];
}

//===----------------------------------------------------------------------===//
// Convolution and pooling (NCHW)
//===----------------------------------------------------------------------===//

// Windows over the last two dims of an NCHW tensor: `strides` [sh, sw],
// `pads` [top, left, bottom, right] (zeros outside, asymmetric allowed),
// `dilations` [dh, dw]. Each output dim is
// floor((in + pad_begin + pad_end - dilation·(k - 1) - 1) / stride) + 1
// (pools with `ceil_mode` round up, as PyTorch does: the last window must
// start inside the input or its begin padding).

def Graph_Conv2dOp : Graph_ForwardOp<"conv2d", [OwnFlops]> {
  let kernelFamily = "Conv";
  let autocast = "Bf16";
  let shapeRule = "Conv";
  let summary = "2-D convolution (cross-correlation), NCHW";
  let description = [{
    `x` is `[N, C, H, W]`, `w` is `[O, C/groups, kh, kw]`, `y` is
    `[N, O, OH, OW]`; input channels and output channels are split into
    `groups` groups (`groups = C = O` is depthwise). No bias (add one with a
    broadcasting `add` of an `[O, 1, 1]` tensor). FLOPs:
    2·N·O·OH·OW·(C/groups)·kh·kw.

    ```mlir
    %y = graph.conv2d %x, %w {strides = array<i64: 2, 2>,
        pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>}
        : tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32> -> tensor<2x4x4x4xf32>
    ```
  }];
  let arguments = (ins Graph_Tensor:$x, Graph_Tensor:$w,
                       DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$pads,
                       DenseI64ArrayAttr:$dilations,
                       DefaultValuedAttr<I64Attr, "1">:$groups);
  let results = (outs Graph_Tensor:$y);
  let assemblyFormat = [{
    $x `,` $w attr-dict `:` type($x) `,` type($w) `->` type($y)
  }];
  // 2·N·O·OH·OW·(C/groups)·kh·kw.
  let flops = [{ return convFlops(getY(), getW()); }];
}

def Graph_MaxPool2dOp : Graph_ForwardOp<"max_pool2d", [OwnFlops]> {
  let kernelFamily = "Pool";
  let shapeRule = "Pool";
  let summary = "2-D max pooling, NCHW";
  let description = [{
    `x` is `[N, C, H, W]`, `y` is `[N, C, OH, OW]`: the maximum of each
    `kernel_shape` window (padding never wins; a window with no input
    element gives 0). Each pad is at most half its kernel dim. FLOPs: one
    per window element.

    ```mlir
    %y = graph.max_pool2d %x {kernel_shape = array<i64: 3, 3>,
        strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>,
        dilations = array<i64: 1, 1>}
        : tensor<2x4x8x8xf32> -> tensor<2x4x4x4xf32>
    ```
  }];
  let arguments = (ins Graph_Tensor:$x, DenseI64ArrayAttr:$kernel_shape,
                       DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$pads,
                       DenseI64ArrayAttr:$dilations,
                       Graph_FalseBool:$ceil_mode);
  let results = (outs Graph_Tensor:$y);
  let assemblyFormat = "$x attr-dict `:` type($x) `->` type($y)";
  // One comparison per window element.
  let flops = [{ return poolFlops(getY(), getKernelShape()); }];
}

def Graph_AvgPool2dOp : Graph_ForwardOp<"avg_pool2d", [OwnFlops]> {
  let kernelFamily = "Pool";
  let shapeRule = "Pool";
  let summary = "2-D average pooling, NCHW";
  let description = [{
    `x` is `[N, C, H, W]`, `y` is `[N, C, OH, OW]`: the mean of each
    `kernel_shape` window. The divisor counts the window's input elements,
    or with `count_include_pad` also its padding (up to the end padding, as
    PyTorch). Each pad is at most half its kernel dim. FLOPs: one per
    window element.

    ```mlir
    %y = graph.avg_pool2d %x {kernel_shape = array<i64: 2, 2>,
        strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>}
        : tensor<2x4x8x8xf32> -> tensor<2x4x4x4xf32>
    ```
  }];
  let arguments = (ins Graph_Tensor:$x, DenseI64ArrayAttr:$kernel_shape,
                       DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$pads,
                       Graph_FalseBool:$ceil_mode,
                       Graph_FalseBool:$count_include_pad);
  let results = (outs Graph_Tensor:$y);
  let assemblyFormat = "$x attr-dict `:` type($x) `->` type($y)";
  // One add per window element (the division is not counted).
  let flops = [{ return poolFlops(getY(), getKernelShape()); }];
}

//===----------------------------------------------------------------------===//
// Gradient ops of the ops above (created by the autodiff pass)
//===----------------------------------------------------------------------===//

class Graph_UnaryGradOp<string mnemonic, string input, string formula>
    : Graph_Op<mnemonic, [OwnFlops]> {
  let kernelFamily = "UnaryGrad";
  let shapeRule = "Elementwise";
  let inPlace = 1;
  let summary = "gradient: dx = " # formula;
  let description = [{
    `}] # input # [{`, `dy` and `dx` all have the same type.

    ```mlir
    %dx = graph.}] # mnemonic # [{ %}] # input # [{, %dy
        : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
    ```
  }];
  let results = (outs Graph_Tensor:$dx);
}

def Graph_ReluGradOp : Graph_UnaryGradOp<"relu_grad", "y",
    "dy·(y > 0), from the output y = relu(x) (y > 0 exactly where x > 0, " #
    "so relu's input need not be kept for the backward)"> {
  let arguments = (ins Graph_Tensor:$y, Graph_Tensor:$dy);
  let assemblyFormat = [{
    $y `,` $dy attr-dict `:` type($y) `,` type($dy) `->` type($dx)
  }];
  // 1 per element: a select.
  let flops = [{ return elements(getY()); }];
}
def Graph_GeluGradOp : Graph_UnaryGradOp<"gelu_grad", "x",
    "dy·gelu'(x) (tanh form)"> {
  let arguments = (ins Graph_Tensor:$x, Graph_Tensor:$dy);
  let assemblyFormat = [{
    $x `,` $dy attr-dict `:` type($x) `,` type($dy) `->` type($dx)
  }];
  // 16 per element, an estimate: the forward's inner polynomial and tanh (6)
  // plus the derivative 0.5·(1+t) + 0.5·x·(1-t²)·√(2/π)·(1+3·0.044715·x²) (9)
  // and the product with dy (1).
  let flops = [{ return times(16, elements(getX())); }];
}
def Graph_GeluExactGradOp : Graph_UnaryGradOp<"gelu_exact_grad", "x",
    "dy·(Φ(x) + x·φ(x)), Φ(x) = 0.5·(1 + erf(x/√2)), " #
    "φ(x) = exp(-x²/2)/√(2π) (gelu_exact's derivative)"> {
  let arguments = (ins Graph_Tensor:$x, Graph_Tensor:$dy);
  let assemblyFormat = [{
    $x `,` $dy attr-dict `:` type($x) `,` type($dy) `->` type($dx)
  }];
  // 8 per element: Φ (3, erf counted as one), φ (3: x², exp, the scale),
  // Φ + x·φ (2); the product with dy is folded into the count.
  let flops = [{ return times(8, elements(getX())); }];
}
def Graph_TanhGradOp : Graph_UnaryGradOp<"tanh_grad", "y",
    "dy·(1 - y²), from the output y"> {
  let arguments = (ins Graph_Tensor:$y, Graph_Tensor:$dy);
  let assemblyFormat = [{
    $y `,` $dy attr-dict `:` type($y) `,` type($dy) `->` type($dx)
  }];
  // 3 per element: y², 1 - y², product with dy.
  let flops = [{ return times(3, elements(getY())); }];
}
def Graph_SiluGradOp : Graph_UnaryGradOp<"silu_grad", "x",
    "dy·σ(x)·(1 + x·(1 - σ(x)))"> {
  let arguments = (ins Graph_Tensor:$x, Graph_Tensor:$dy);
  let assemblyFormat = [{
    $x `,` $dy attr-dict `:` type($x) `,` type($dy) `->` type($dx)
  }];
  // 8 per element: σ(x) (4), 1 - σ, x·(1 - σ), 1 + that, ·σ, ·dy.
  let flops = [{ return times(8, elements(getX())); }];
}
def Graph_SoftmaxGradOp : Graph_UnaryGradOp<"softmax_grad", "y",
    "y·(dy - Σ_last(dy·y)), from the output y"> {
  let kernelFamily = "SoftmaxGrad";
  let shapeRule = "RowWise";
  let inPlace = 0;
  let arguments = (ins Graph_Tensor:$y, Graph_Tensor:$dy);
  let assemblyFormat = [{
    $y `,` $dy attr-dict `:` type($y) `,` type($dy) `->` type($dx)
  }];
  // 4 per element: dy·y, row sum, subtract, multiply by y.
  let flops = [{ return times(4, elements(getY())); }];
}

def Graph_ErfGradOp : Graph_UnaryGradOp<"erf_grad", "x",
    "dy·(2/√π)·exp(-x²)"> {
  let arguments = (ins Graph_Tensor:$x, Graph_Tensor:$dy);
  let assemblyFormat = [{
    $x `,` $dy attr-dict `:` type($x) `,` type($dy) `->` type($dx)
  }];
  // 4 per element: x², exp(-x²) (counted as one), ·2/√π, ·dy.
  let flops = [{ return times(4, elements(getX())); }];
}

def Graph_ClipGradOp : Graph_Op<"clip_grad", [ElementwiseCost]> {
  let kernelFamily = "Clip";
  let shapeRule = "Elementwise";
  let inPlace = 1;
  let summary = "gradient of clip: dx = dy·(min < y < max), y = clip(x)";
  let description = [{
    From the output `y`: for `min < max`, `min < y < max` exactly where
    `min < x < max`, so clip's input need not be kept for the backward.
    Zero at the boundaries, as PyTorch's hardtanh (ReLU6) backward.
    `y`, `dy` and `dx` have one type. FLOPs: 1 per element.

    ```mlir
    %dx = graph.clip_grad %y, %dy {max = 6.000000e+00 : f32, min = 0.000000e+00 : f32}
        : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
    ```
  }];
  let arguments = (ins Graph_Tensor:$y, Graph_Tensor:$dy, Graph_F32:$min,
                       Graph_F32:$max);
  let results = (outs Graph_Tensor:$dx);
  let assemblyFormat = [{
    $y `,` $dy attr-dict `:` type($y) `,` type($dy) `->` type($dx)
  }];
}

def Graph_EmbeddingGradOp : Graph_Op<"embedding_grad", [OwnFlops]> {
  let kernelFamily = "EmbeddingGrad";
  let shapeRule = "GatherGrad";
  let resultTypeGiven = 1;
  let summary = "gradient of embedding: scatter-add of dy rows";
  let description = [{
    `indices` is `[...]` (i32 or i64), `dy` is `[..., D]`, `dtable` is
    `[V, D]` with V taken from the result type.

    ```mlir
    %dtable = graph.embedding_grad %ids, %dy
        : tensor<2x5xi64>, tensor<2x5x16xf32> -> tensor<100x16xf32>
    ```
  }];
  let arguments = (ins Graph_Tensor:$indices, Graph_Tensor:$dy);
  let results = (outs Graph_Tensor:$dtable);
  let assemblyFormat = [{
    $indices `,` $dy attr-dict `:` type($indices) `,` type($dy) `->`
    type($dtable)
  }];
  // One add per element of dy (the scatter-add).
  let flops = [{ return elements(getDy()); }];
}

def Graph_CrossEntropyGradOp : Graph_Op<"cross_entropy_grad", [OwnFlops]> {
  let kernelFamily = "CrossEntropyGrad";
  let bf16Native = 1;
  let shapeRule = "ClassLossGrad";
  let inPlace = 1;
  let summary = "gradient of cross_entropy with respect to the logits";
  let description = [{
    `dlogits = dloss·(softmax(logits) - onehot(labels))/positions`; `dloss`
    is 0-d and `dlogits` has the type of `logits`.

    ```mlir
    %dlogits = graph.cross_entropy_grad %logits, %labels, %dloss
        : tensor<4x10xf32>, tensor<4xi32>, tensor<f32> -> tensor<4x10xf32>
    ```
  }];
  let arguments = (ins Graph_Tensor:$logits, Graph_Tensor:$labels,
                       Graph_Tensor:$dloss);
  let results = (outs Graph_Tensor:$dlogits);
  let assemblyFormat = [{
    $logits `,` $labels `,` $dloss attr-dict `:` type($logits) `,`
    type($labels) `,` type($dloss) `->` type($dlogits)
  }];
  // 7 per logit: the softmax (5), subtract the one-hot, scale by
  // dloss/positions.
  let flops = [{  return times(7, elements(getLogits())); }];
}

def Graph_MseGradOp : Graph_Op<"mse_grad", [OwnFlops]> {
  let kernelFamily = "MseGrad";
  let shapeRule = "PairLossGrad";
  let inPlace = 1;
  let summary = "gradient of mse with respect to a (db is -da)";
  let description = [{
    `da = dloss·2(a - b)/numel`; `dloss` is 0-d and `da` has the type of `a`.

    ```mlir
    %da = graph.mse_grad %a, %b, %dloss
        : tensor<4x1xf32>, tensor<4x1xf32>, tensor<f32> -> tensor<4x1xf32>
    ```
  }];
  let arguments = (ins Graph_Tensor:$a, Graph_Tensor:$b, Graph_Tensor:$dloss);
  let results = (outs Graph_Tensor:$da);
  let assemblyFormat = [{
    $a `,` $b `,` $dloss attr-dict `:` type($a) `,` type($b) `,` type($dloss)
    `->` type($da)
  }];
  // 2 per element: subtract, multiply by 2·dloss/numel.
  let flops = [{ return times(2, elements(getA())); }];
}

def Graph_AttentionGradOp : Graph_Op<"attention_grad", [OwnFlops]> {
  let kernelFamily = "AttentionGrad";
  let shapeRule = "AttentionGrad";
  let summary = "gradient of attention";
  let description = [{
    The probabilities are recomputed from `q` and `k`. All operands and
    results are `[B, H, S, Dh]` of one type. FLOPs: 10·B·H·S·S·Dh for the
    five GEMMs (scores, dv, dp, dq, dk) plus 9·B·H·S·S (softmax recompute
    5, softmax backward 4).

    ```mlir
    %dq, %dk, %dv = graph.attention_grad %q, %k, %v, %dout {scale = 1.250000e-01 : f32}
        : tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>,
          tensor<1x2x4x8xf32>
          -> tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>
    ```
  }];
  let arguments = (ins Graph_Tensor:$q, Graph_Tensor:$k, Graph_Tensor:$v,
                       Graph_Tensor:$dout, Graph_TrueBool:$causal,
                       Graph_F32:$scale);
  let results = (outs Graph_Tensor:$dq, Graph_Tensor:$dk, Graph_Tensor:$dv);
  let assemblyFormat = [{
    $q `,` $k `,` $v `,` $dout attr-dict `:` type($q) `,` type($k) `,`
    type($v) `,` type($dout) `->` type($dq) `,` type($dk) `,` type($dv)
  }];
  // 10·B·H·S·S·Dh for five GEMMs (scores, dv, dp, dq, dk) plus 9·B·H·S·S
  // (softmax recompute 5, softmax backward 4); the full square even if causal.
  let flops = [{
    int64_t scores = 0, scoresTimesHead = 0;
    if (!attentionSizes(getQ(), scores, scoresTimesHead))
      return 0;
    return plus(times(10, scoresTimesHead), times(9, scores));
  }];
}

def Graph_Conv2dGradInputOp : Graph_Op<"conv2d_grad_input", [OwnFlops]> {
  let kernelFamily = "Conv";
  let shapeRule = "ConvGradInput";
  let resultTypeGiven = 1;
  let summary = "gradient of conv2d with respect to x";
  let description = [{
    `w` is `[O, C/groups, kh, kw]`, `dy` is `[N, O, OH, OW]`, `dx` is the
    given `[N, C, H, W]` (conv2d of it with `w` has `dy`'s shape); the
    attributes are conv2d's. FLOPs: those of the conv2d.

    ```mlir
    %dx = graph.conv2d_grad_input %w, %dy {strides = array<i64: 2, 2>,
        pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>}
        : tensor<4x3x3x3xf32>, tensor<2x4x4x4xf32> -> tensor<2x3x8x8xf32>
    ```
  }];
  let arguments = (ins Graph_Tensor:$w, Graph_Tensor:$dy,
                       DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$pads,
                       DenseI64ArrayAttr:$dilations,
                       DefaultValuedAttr<I64Attr, "1">:$groups);
  let results = (outs Graph_Tensor:$dx);
  let assemblyFormat = [{
    $w `,` $dy attr-dict `:` type($w) `,` type($dy) `->` type($dx)
  }];
  // The conv2d's FLOPs: dy [N, O, OH, OW] against w.
  let flops = [{ return convFlops(getDy(), getW()); }];
}

def Graph_Conv2dGradWeightOp : Graph_Op<"conv2d_grad_weight", [OwnFlops]> {
  let kernelFamily = "Conv";
  let shapeRule = "ConvGradWeight";
  let resultTypeGiven = 1;
  let summary = "gradient of conv2d with respect to w";
  let description = [{
    `x` is `[N, C, H, W]`, `dy` is `[N, O, OH, OW]`, `dw` is the given
    `[O, C/groups, kh, kw]`, summed over the batch; the attributes are
    conv2d's. FLOPs: those of the conv2d.

    ```mlir
    %dw = graph.conv2d_grad_weight %x, %dy {strides = array<i64: 2, 2>,
        pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>}
        : tensor<2x3x8x8xf32>, tensor<2x4x4x4xf32> -> tensor<4x3x3x3xf32>
    ```
  }];
  let arguments = (ins Graph_Tensor:$x, Graph_Tensor:$dy,
                       DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$pads,
                       DenseI64ArrayAttr:$dilations,
                       DefaultValuedAttr<I64Attr, "1">:$groups);
  let results = (outs Graph_Tensor:$dw);
  let assemblyFormat = [{
    $x `,` $dy attr-dict `:` type($x) `,` type($dy) `->` type($dw)
  }];
  // The conv2d's FLOPs: dy [N, O, OH, OW] against dw.
  let flops = [{ return convFlops(getDy(), getDw()); }];
}

def Graph_MaxPool2dGradOp : Graph_Op<"max_pool2d_grad", [OwnFlops]> {
  let kernelFamily = "PoolGrad";
  let shapeRule = "PoolGrad";
  let summary = "gradient of max_pool2d";
  let description = [{
    Each `dy` element goes to its window's maximum in `x`, the first in
    row-major window order on ties; `dx` has the type of `x`. FLOPs: one per
    window element.

    ```mlir
    %dx = graph.max_pool2d_grad %x, %dy {kernel_shape = array<i64: 3, 3>,
        strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>,
        dilations = array<i64: 1, 1>}
        : tensor<2x4x8x8xf32>, tensor<2x4x4x4xf32> -> tensor<2x4x8x8xf32>
    ```
  }];
  let arguments = (ins Graph_Tensor:$x, Graph_Tensor:$dy,
                       DenseI64ArrayAttr:$kernel_shape,
                       DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$pads,
                       DenseI64ArrayAttr:$dilations,
                       Graph_FalseBool:$ceil_mode);
  let results = (outs Graph_Tensor:$dx);
  let assemblyFormat = [{
    $x `,` $dy attr-dict `:` type($x) `,` type($dy) `->` type($dx)
  }];
  // The argmax recomputed (one comparison per window element) and one add
  // per dy element.
  let flops = [{  return plus(poolFlops(getDy(), getKernelShape()), elements(getDy())); }];
}

def Graph_AvgPool2dGradOp : Graph_Op<"avg_pool2d_grad", [OwnFlops]> {
  let kernelFamily = "PoolGrad";
  let shapeRule = "PoolGradGiven";
  let resultTypeGiven = 1;
  let summary = "gradient of avg_pool2d";
  let description = [{
    Each `dy` element, divided by its window's divisor, is added to the
    window's input elements; `dx` is the given `[N, C, H, W]`. FLOPs: one
    per window element.

    ```mlir
    %dx = graph.avg_pool2d_grad %dy {kernel_shape = array<i64: 2, 2>,
        strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>}
        : tensor<2x4x4x4xf32> -> tensor<2x4x8x8xf32>
    ```
  }];
  let arguments = (ins Graph_Tensor:$dy, DenseI64ArrayAttr:$kernel_shape,
                       DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$pads,
                       Graph_FalseBool:$ceil_mode,
                       Graph_FalseBool:$count_include_pad);
  let results = (outs Graph_Tensor:$dx);
  let assemblyFormat = "$dy attr-dict `:` type($dy) `->` type($dx)";
  // One add per window element.
  let flops = [{  return poolFlops(getDy(), getKernelShape()); }];
}

#endif // REMAT_IR_GRAPHCOMPUTEOPS
