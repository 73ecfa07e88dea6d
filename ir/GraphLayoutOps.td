//===- GraphLayoutOps.td - layout and optimizer ops --------*- tablegen -*-===//
//
// The ops that move or reduce data: reshape, transpose, broadcasts and
// reductions, strided slices and joins, nearest-neighbour resizing, with
// their gradient ops; and the optimizer updates, whose sharded form
// updates one rank's slice of each state tensor.
//
//===----------------------------------------------------------------------===//

#ifndef REMAT_IR_GRAPHLAYOUTOPS
#define REMAT_IR_GRAPHLAYOUTOPS

include "ir/GraphOpBase.td"

//===----------------------------------------------------------------------===//
// Reshaping, broadcasts and reductions
//===----------------------------------------------------------------------===//

def Graph_ReshapeOp : Graph_ForwardOp<"reshape", [OwnFlops]> {
  let kernelFamily = "Reshape";
  let bf16Native = 1;
  let shapeRule = "Reshape";
  let inPlace = 1;
  let resultTypeGiven = 1;
  let summary = "reinterprets the shape, row-major";
  let description = [{
    `y` has the element count and element type of `x`. Float and index
    tensors are accepted. FLOPs: 0.

    ```mlir
    %y = graph.reshape %x : tensor<2x3x4xf32> -> tensor<6x4xf32>
    ```
  }];
  let arguments = (ins Graph_Tensor:$x);
  let results = (outs Graph_Tensor:$y);
  let assemblyFormat = "$x attr-dict `:` type($x) `->` type($y)";
  // 0: data movement only.
  let flops = [{ return 0; }];
}

def Graph_ConvertOp : Graph_ForwardOp<"convert", [OwnFlops]> {
  let kernelFamily = "Convert";
  let bf16Native = 1;
  let shapeRule = "Retype";
  let resultTypeGiven = 1;
  // Inserted by the compiler (--precision bf16), not written in models.
  let inModelFormat = 0;
  let summary = "converts float elements to the result's float type";
  let description = [{
    `y` has the shape of `x` and the float element type of the result
    type (f32, bf16 or f64): each element converted, rounded to the nearest
    value of the narrower type (ties to even). A widening convert is exact.
    Its gradient is the convert of dy back to x's type. FLOPs: 0.

    ```mlir
    %y = graph.convert %x : tensor<4x8xf32> -> tensor<4x8xbf16>
    ```
  }];
  let arguments = (ins Graph_Tensor:$x);
  let results = (outs Graph_Tensor:$y);
  let assemblyFormat = "$x attr-dict `:` type($x) `->` type($y)";
  // 0: a conversion per element, counted in bytes.
  let flops = [{ return 0; }];
}

def Graph_TransposeOp : Graph_ForwardOp<"transpose", [OwnFlops]> {
  let kernelFamily = "Transpose";
  let bf16Native = 1;
  let shapeRule = "Permute";
  let summary = "permutes the dimensions";
  let description = [{
    `y.shape[i] = x.shape[permutation[i]]`. Float and index tensors are
    accepted. FLOPs: 0.

    ```mlir
    %y = graph.transpose %x {permutation = array<i64: 0, 2, 1>}
        : tensor<2x3x4xf32> -> tensor<2x4x3xf32>
    ```
  }];
  let arguments = (ins Graph_Tensor:$x, DenseI64ArrayAttr:$permutation);
  let results = (outs Graph_Tensor:$y);
  let assemblyFormat = "$x attr-dict `:` type($x) `->` type($y)";
  // 0: data movement only.
  let flops = [{ return 0; }];
}

class Graph_ReduceOp<string mnemonic, string what>
    : Graph_ForwardOp<mnemonic, [OwnFlops]> {
  let kernelFamily = "Reduce";
  let autocast = "Float32";
  let shapeRule = "Reduce";
  let summary = what # " over the given axes";
  let description = [{
    `axes` are sorted, unique and in `[0, rank)`. With `keep_dims` the
    reduced dims stay as 1, otherwise they are dropped. FLOPs: one per
    element of `x` (reduce_mean adds one division per element of `y`).

    ```mlir
    %y = graph.}] # mnemonic # [{ %x {axes = array<i64: 1>, keep_dims = true}
        : tensor<2x3xf32> -> tensor<2x1xf32>
    ```
  }];
  let arguments = (ins Graph_Tensor:$x, DenseI64ArrayAttr:$axes,
                       Graph_FalseBool:$keep_dims);
  let results = (outs Graph_Tensor:$y);
  let assemblyFormat = "$x attr-dict `:` type($x) `->` type($y)";
}

def Graph_ReduceSumOp : Graph_ReduceOp<"reduce_sum", "sum"> {
  // One add per element of x.
  let flops = [{ return elements(getX()); }];
}
def Graph_ReduceMeanOp : Graph_ReduceOp<"reduce_mean", "mean"> {
  let averages = 1;
  // One add per element of x and one division per element of y.
  let flops = [{  return plus(elements(getX()), elements(getY())); }];
}

def Graph_BroadcastToOp : Graph_ForwardOp<"broadcast_to", [OwnFlops]> {
  let kernelFamily = "BroadcastTo";
  let shapeRule = "BroadcastTo";
  let resultTypeGiven = 1;
  let summary = "NumPy-broadcasts x to the result shape";
  let description = [{
    `x`'s shape must broadcast to exactly the result shape (dims aligned on
    the right, each equal or 1, or missing). Float and index tensors are
    accepted. FLOPs: 0.

    ```mlir
    %y = graph.broadcast_to %x : tensor<3xf32> -> tensor<2x3xf32>
    ```
  }];
  let arguments = (ins Graph_Tensor:$x);
  let results = (outs Graph_Tensor:$y);
  let assemblyFormat = "$x attr-dict `:` type($x) `->` type($y)";
  // 0: data movement only.
  let flops = [{ return 0; }];
}

def Graph_SumToOp : Graph_ForwardOp<"sum_to", [OwnFlops]> {
  let kernelFamily = "SumTo";
  let shapeRule = "Unbroadcast";
  let resultTypeGiven = 1;
  let summary = "sums x down to the result shape (adjoint of broadcast_to)";
  let description = [{
    Sums `x` over the dims that broadcasting the result shape to `x`'s shape
    would have expanded; the result shape must broadcast to `x`'s. FLOPs:
    one per element of `x`.

    ```mlir
    %y = graph.sum_to %x : tensor<2x3xf32> -> tensor<1x3xf32>
    ```
  }];
  let arguments = (ins Graph_Tensor:$x);
  let results = (outs Graph_Tensor:$y);
  let assemblyFormat = "$x attr-dict `:` type($x) `->` type($y)";
  // One add per element of x.
  let flops = [{ return elements(getX()); }];
}

//===----------------------------------------------------------------------===//
// Slices, joins and resizing
//===----------------------------------------------------------------------===//

def Graph_SliceOp : Graph_ForwardOp<"slice", [OwnFlops]> {
  let kernelFamily = "Slice";
  let shapeRule = "Slice";
  let summary = "a strided box of x";
  let description = [{
    `starts`, `ends` and `steps` have one entry per dim of `x`:
    `0 <= start <= end <= dim` and `step >= 1`; dim d of `y` has
    `ceil((end - start) / step)` elements, element i reading
    `x[start + i·step]`. FLOPs: 0.

    ```mlir
    %y = graph.slice %x {starts = array<i64: 0, 4>, ends = array<i64: 2, 8>,
                         steps = array<i64: 1, 1>}
        : tensor<2x12xf32> -> tensor<2x4xf32>
    ```
  }];
  let arguments = (ins Graph_Tensor:$x, DenseI64ArrayAttr:$starts,
                       DenseI64ArrayAttr:$ends, DenseI64ArrayAttr:$steps);
  let results = (outs Graph_Tensor:$y);
  let assemblyFormat = "$x attr-dict `:` type($x) `->` type($y)";
  // 0: the fill is counted as bytes written.
  // Copies only.
  let flops = [{ return 0; }];
}

def Graph_SliceGradOp : Graph_Op<"slice_grad", [OwnFlops]> {
  let kernelFamily = "Slice";
  let shapeRule = "SliceGrad";
  let resultTypeGiven = 1;
  let summary = "gradient of slice: dy placed in zeros of x's shape";
  let description = [{
    `dx` (its type given: `x`'s) is zero except at the elements `slice`
    read with the same `starts`, `ends` and `steps`, which hold `dy`.
    FLOPs: 0.

    ```mlir
    %dx = graph.slice_grad %dy {starts = array<i64: 0, 4>,
                                ends = array<i64: 2, 8>, steps = array<i64: 1, 1>}
        : tensor<2x4xf32> -> tensor<2x12xf32>
    ```
  }];
  let arguments = (ins Graph_Tensor:$dy, DenseI64ArrayAttr:$starts,
                       DenseI64ArrayAttr:$ends, DenseI64ArrayAttr:$steps);
  let results = (outs Graph_Tensor:$dx);
  let assemblyFormat = "$dy attr-dict `:` type($dy) `->` type($dx)";
  // A fill and a copy only.
  let flops = [{ return 0; }];
}

def Graph_ConcatOp : Graph_ForwardOp<"concat", [OwnFlops]> {
  let kernelFamily = "Concat";
  let shapeRule = "Concat";
  let summary = "joins a and b along one axis";
  let description = [{
    `a` and `b` have one dtype and equal dims except `axis` (in
    `[0, rank)`); `c` has their dims with `a`'s and `b`'s `axis` dims
    summed, `a` first. FLOPs: 0.

    ```mlir
    %c = graph.concat %a, %b {axis = 1}
        : tensor<2x3xf32>, tensor<2x5xf32> -> tensor<2x8xf32>
    ```
  }];
  let arguments = (ins Graph_Tensor:$a, Graph_Tensor:$b, I64Attr:$axis);
  let results = (outs Graph_Tensor:$c);
  let assemblyFormat = [{
    $a `,` $b attr-dict `:` type($a) `,` type($b) `->` type($c)
  }];
  let flops = [{ return 0; }];
}

def Graph_ResizeNearestOp : Graph_ForwardOp<"resize_nearest", [OwnFlops]> {
  let kernelFamily = "Resize";
  let shapeRule = "Upsample";
  let summary = "nearest-neighbour upsampling by integer factors";
  let description = [{
    `scales` has one factor >= 1 per dim of `x`;
    `y.shape[d] = x.shape[d]·scales[d]` and
    `y[i0, i1, ...] = x[i0 / scales[0], i1 / scales[1], ...]` (integer
    division: ONNX Resize with mode nearest, coordinate transformation
    asymmetric, nearest mode floor, as torch's nn.Upsample exports it).
    FLOPs: 0.

    ```mlir
    %y = graph.resize_nearest %x {scales = array<i64: 1, 1, 2, 2>}
        : tensor<1x2x3x3xf32> -> tensor<1x2x6x6xf32>
    ```
  }];
  let arguments = (ins Graph_Tensor:$x, DenseI64ArrayAttr:$scales);
  let results = (outs Graph_Tensor:$y);
  let assemblyFormat = "$x attr-dict `:` type($x) `->` type($y)";
  // 0: a gather of copies moves bytes only.
  let flops = [{ return 0; }];
}

def Graph_ResizeNearestGradOp : Graph_Op<"resize_nearest_grad", [OwnFlops]> {
  let kernelFamily = "Resize";
  let shapeRule = "UpsampleGrad";
  let summary = "gradient of resize_nearest: sums dy over the copies";
  let description = [{
    `dx[i] = Σ dy` over the `Π scales` elements that copy `x[i]`;
    `dx.shape[d] = dy.shape[d] / scales[d]` (each a whole multiple).
    FLOPs: one per element of `dy`.

    ```mlir
    %dx = graph.resize_nearest_grad %dy {scales = array<i64: 1, 1, 2, 2>}
        : tensor<1x2x6x6xf32> -> tensor<1x2x3x3xf32>
    ```
  }];
  let arguments = (ins Graph_Tensor:$dy, DenseI64ArrayAttr:$scales);
  let results = (outs Graph_Tensor:$dx);
  let assemblyFormat = "$dy attr-dict `:` type($dy) `->` type($dx)";
  // One add per element of dy.
  let flops = [{ return elements(getDy()); }];
}

def Graph_ResizeLinearOp : Graph_ForwardOp<"resize_linear", [OwnFlops]> {
  let kernelFamily = "Resize";
  let shapeRule = "ResizeLinear";
  let summary = "bilinear resizing of the last two dims of NCHW";
  let description = [{
    `x` is [N, C, H, W] and `y` [N, C, size[0], size[1]]. Along each of
    the two axes, output position o of O reads source position
    s = (o + 0.5)·I/O - 0.5 clamped below at 0 (ONNX's
    pytorch_half_pixel; torch's F.interpolate with mode bilinear) or,
    with `align_corners`, s = o·(I - 1)/(O - 1) (0 when O is 1), and
    blends x at ⌊s⌋ and ⌊s⌋ + 1 (the last row or column itself at the
    edge) with weights 1 - (s - ⌊s⌋) and s - ⌊s⌋, the weights computed in
    double. FLOPs: 9 per element of `y`.

    ```mlir
    %y = graph.resize_linear %x {size = array<i64: 8, 8>}
        : tensor<1x2x3x3xf32> -> tensor<1x2x8x8xf32>
    ```
  }];
  let arguments = (ins Graph_Tensor:$x, DenseI64ArrayAttr:$size,
                   Graph_FalseBool:$align_corners);
  let results = (outs Graph_Tensor:$y);
  let assemblyFormat = "$x attr-dict `:` type($x) `->` type($y)";
  // Two lerps of two products along W, one along H: 6 multiplies, 3 adds.
  let flops = [{ return times(elements(getY()), 9); }];
}

def Graph_ResizeLinearGradOp : Graph_Op<"resize_linear_grad", [OwnFlops]> {
  let kernelFamily = "Resize";
  let shapeRule = "ResizeLinear";
  let summary = "gradient of resize_linear: scatters dy by the weights";
  let description = [{
    `dy` is [N, C, O_H, O_W] and `dx` [N, C, size[0], size[1]] (x's
    spatial size): each dy element adds its four weighted shares to the
    dx elements resize_linear read, plane by plane in dy's row-major
    order (the CUDA kernel adds in the same order). FLOPs: 8 per element
    of `dy`.

    ```mlir
    %dx = graph.resize_linear_grad %dy {size = array<i64: 3, 3>}
        : tensor<1x2x8x8xf32> -> tensor<1x2x3x3xf32>
    ```
  }];
  let arguments = (ins Graph_Tensor:$dy, DenseI64ArrayAttr:$size,
                   Graph_FalseBool:$align_corners);
  let results = (outs Graph_Tensor:$dx);
  let assemblyFormat = "$dy attr-dict `:` type($dy) `->` type($dx)";
  // Four products and four adds per element of dy.
  let flops = [{ return times(elements(getDy()), 8); }];
}

//===----------------------------------------------------------------------===//
// Optimizer ops
//===----------------------------------------------------------------------===//

def Graph_SgdUpdateOp : Graph_Op<"sgd_update", [OwnFlops]> {
  let kernelFamily = "SgdUpdate";
  let shapeRule = "Elementwise";
  let inPlace = 1;
  let updatesParam = 1;
  let summary = "SGD with momentum and weight decay";
  let description = [{
    `g = grad + weight_decay·param; m' = momentum·m + g;
    param' = param - lr·m'`. Returns the new values; buffer assignment puts
    each result in its operand's buffer. All operands and results have one
    type, except with `shards` = N > 1 (`--shard-optimizer`, ZeRO-1,
    docs/distributed.md): the momentum buffer is then one rank's slice,
    `[ceil(numel/N)]`, and each rank updates only its element range of the
    param (FLOPs and state bytes per rank). FLOPs: 6 per element.

    ```mlir
    %p2, %m2 = graph.sgd_update %p, %g, %m
        {lr = 1.000000e-02 : f32, momentum = 0.899999976 : f32, weight_decay = 0.000000e+00 : f32}
        : tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>
          -> tensor<4x4xf32>, tensor<4x4xf32>
    ```
  }];
  // The operand is `momentum_buffer` because the attribute is `momentum`.
  let arguments = (ins Graph_Tensor:$param, Graph_Tensor:$grad,
                       Graph_Tensor:$momentum_buffer, Graph_F32:$lr,
                       Graph_F32:$momentum, Graph_F32:$weight_decay,
                       DefaultValuedAttr<I64Attr, "1">:$shards);
  let results = (outs Graph_Tensor:$new_param,
                      Graph_Tensor:$new_momentum_buffer);
  let assemblyFormat = [{
    $param `,` $grad `,` $momentum_buffer attr-dict `:` type($param) `,`
    type($grad) `,` type($momentum_buffer) `->` type($new_param) `,`
    type($new_momentum_buffer)
  }];
  // 6 per element: grad + wd·param (2), μ·m + g (2), param - lr·m' (2).
  // Sharded (ZeRO-1): per rank, over its slice (the state's elements).
  let flops = [{
    return times(6, elements(isSharded(*this) ? getMomentumBuffer()
                                              : getParam()));
  }];
}

def Graph_GradAccumulateOp : Graph_Op<"grad_accumulate", [OwnFlops]> {
  let kernelFamily = "GradAccumulate";
  let shapeRule = "Elementwise";
  let updatesState = 1;
  let summary = "adds a micro-batch's gradient into its accumulator";
  let description = [{
    `acc' = scale·grad` in the first micro-batch of a step, `acc + scale·grad`
    in every later one (`--microbatches`, docs/planner.md): the runtime
    tells the kernel which micro-batch runs. `scale` is the slice's share of
    the batch's mean loss. `acc` is an accumulator buffer; buffer assignment
    puts `acc'` in it. All operands and the result have one type. FLOPs: 2
    per element.

    ```mlir
    %a2 = graph.grad_accumulate %a, %g {scale = 2.500000e-01 : f32}
        : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>
    ```
  }];
  let arguments = (ins Graph_Tensor:$acc, Graph_Tensor:$grad, Graph_F32:$scale);
  let results = (outs Graph_Tensor:$new_acc);
  let assemblyFormat = [{
    $acc `,` $grad attr-dict `:` type($acc) `,` type($grad) `->`
    type($new_acc)
  }];
  let flops = [{ return times(2, elements(getAcc())); }];
}

def Graph_SgdPlainUpdateOp : Graph_Op<"sgd_plain_update", [OwnFlops]> {
  let kernelFamily = "SgdUpdate";
  let shapeRule = "Elementwise";
  let inPlace = 1;
  let updatesParam = 1;
  let summary = "SGD without momentum: no optimizer state";
  let description = [{
    `param' = param - lr·(grad + weight_decay·param)`: `sgd_update` with
    momentum 0, which needs no momentum buffer. Returns the new value;
    buffer assignment puts it in the param's buffer. All operands and the
    result have one type. FLOPs: 4 per element.

    ```mlir
    %p2 = graph.sgd_plain_update %p, %g
        {lr = 1.000000e-02 : f32, weight_decay = 0.000000e+00 : f32}
        : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>
    ```
  }];
  let arguments = (ins Graph_Tensor:$param, Graph_Tensor:$grad, Graph_F32:$lr,
                       Graph_F32:$weight_decay);
  let results = (outs Graph_Tensor:$new_param);
  let assemblyFormat = [{
    $param `,` $grad attr-dict `:` type($param) `,` type($grad) `->`
    type($new_param)
  }];
  let flops = [{  return times(4, elements(getParam())); }];
}

def Graph_AdamwUpdateOp : Graph_Op<"adamw_update", [OwnFlops]> {
  let kernelFamily = "AdamwUpdate";
  let shapeRule = "Elementwise";
  let inPlace = 1;
  let updatesParam = 1;
  let summary = "AdamW with decoupled weight decay";
  let description = [{
    With the runtime's 1-based step t: `param ← param·(1 - lr·wd)`;
    `m' = β1·m + (1-β1)·g`; `v' = β2·v + (1-β2)·g²`;
    `param' = param - lr·(m'/(1-β1ᵗ))/(sqrt(v'/(1-β2ᵗ)) + eps)`.
    `beta1` and `beta2` are in `[0, 1)`. All operands and results have one
    type, except with `shards` = N > 1 (`--shard-optimizer`, ZeRO-1,
    docs/distributed.md): `m` and `v` are then one rank's slice,
    `[ceil(numel/N)]`, and each rank updates only its element range of the
    param. FLOPs: 15 per element.

    ```mlir
    %p2, %m2, %v2 = graph.adamw_update %p, %g, %m, %v
        {beta1 = 0.899999976 : f32, beta2 = 0.999000012 : f32, eps = 9.99999993E-9 : f32,
         lr = 1.000000e-03 : f32, weight_decay = 0.00999999977 : f32}
        : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
          -> tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
    ```
  }];
  let arguments = (ins Graph_Tensor:$param, Graph_Tensor:$grad,
                       Graph_Tensor:$m, Graph_Tensor:$v, Graph_F32:$lr,
                       Graph_F32:$beta1, Graph_F32:$beta2, Graph_F32:$eps,
                       Graph_F32:$weight_decay,
                       DefaultValuedAttr<I64Attr, "1">:$shards);
  let results = (outs Graph_Tensor:$new_param, Graph_Tensor:$new_m,
                      Graph_Tensor:$new_v);
  let assemblyFormat = [{
    $param `,` $grad `,` $m `,` $v attr-dict `:` type($param) `,` type($grad)
    `,` type($m) `,` type($v) `->` type($new_param) `,` type($new_m) `,`
    type($new_v)
  }];
  // 15 per element: decay (1), m' (3), v' (4), two bias corrections (2),
  // sqrt (1), + eps (1), divide (1), lr· and subtract (2).
  // Sharded (ZeRO-1): per rank, over its slice (the state's elements).
  let flops = [{  return times(15, elements(isSharded(*this) ? getM() : getParam())); }];
}

#endif // REMAT_IR_GRAPHLAYOUTOPS
