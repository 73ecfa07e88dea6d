//===- GraphNormOps.td - normalization ops -----------------*- tablegen -*-===//
//
// Layer and batch normalization, their gradient ops, and the updates of
// the running statistics that batch normalization keeps as state.
//
//===----------------------------------------------------------------------===//

#ifndef REMAT_IR_GRAPHNORMOPS
#define REMAT_IR_GRAPHNORMOPS

include "ir/GraphOpBase.td"

//===----------------------------------------------------------------------===//
// Layer normalization
//===----------------------------------------------------------------------===//

def Graph_LayerNormOp : Graph_ForwardOp<"layer_norm", [OwnFlops]> {
  let kernelFamily = "LayerNorm";
  let autocast = "Float32Compute";
  let shapeRule = "Normalize";
  let summary = "layer normalization over the last dimension";
  let description = [{
    `y = (x - mean) / sqrt(var + epsilon) · gamma + beta` over the last dim
    `D` of `x`, with the biased variance. `gamma` and `beta` are `[D]`; `y`
    has the type of `x`. FLOPs: 8 per element of `x` (see getFlops).

    ```mlir
    %y = graph.layer_norm %x, %gamma, %beta {epsilon = 1.0e-06 : f32}
        : tensor<2x8xf32>, tensor<8xf32>, tensor<8xf32> -> tensor<2x8xf32>
    ```
  }];
  let arguments = (ins Graph_Tensor:$x, Graph_Tensor:$gamma,
                       Graph_Tensor:$beta,
                       Graph_F32Default<"1.0e-5">:$epsilon);
  let results = (outs Graph_Tensor:$y);
  let assemblyFormat = [{
    $x `,` $gamma `,` $beta attr-dict `:` type($x) `,` type($gamma) `,`
    type($beta) `->` type($y)
  }];
  // 8 per element of x: sum for the mean (1), subtract the mean (1), square
  // (1), sum of squares (1), multiply by rstd (1), by gamma (1), add beta (1),
  // and 1 for the per-row mean, rsqrt and division, bounded by one per element.
  let flops = [{ return times(8, elements(getX())); }];
}

def Graph_LayerNormGradOp : Graph_Op<"layer_norm_grad", [OwnFlops]> {
  let kernelFamily = "LayerNormGrad";
  let shapeRule = "NormalizeGrad";
  let summary = "gradient of layer_norm";
  let description = [{
    Mean and rstd are recomputed from `x`. `dy` and `dx` have the type of
    `x`; `dgamma` and `dbeta` have the type of `gamma` (`[D]`).

    ```mlir
    %dx, %dgamma, %dbeta = graph.layer_norm_grad %x, %gamma, %dy
        : tensor<2x8xf32>, tensor<8xf32>, tensor<2x8xf32>
          -> tensor<2x8xf32>, tensor<8xf32>, tensor<8xf32>
    ```
  }];
  let arguments = (ins Graph_Tensor:$x, Graph_Tensor:$gamma, Graph_Tensor:$dy,
                       Graph_F32Default<"1.0e-5">:$epsilon);
  let results = (outs Graph_Tensor:$dx, Graph_Tensor:$dgamma,
                      Graph_Tensor:$dbeta);
  let assemblyFormat = [{
    $x `,` $gamma `,` $dy attr-dict `:` type($x) `,` type($gamma) `,`
    type($dy) `->` type($dx) `,` type($dgamma) `,` type($dbeta)
  }];
  // 16 per element of x, an estimate: recompute mean and rstd (4), x̂ (2),
  // dgamma and dbeta accumulation (3), dx = rstd·(g - mean(g) - x̂·mean(g·x̂))
  // with g = dy·gamma (7).
  let flops = [{ return times(16, elements(getX())); }];
}

//===----------------------------------------------------------------------===//
// Batch normalization and its running statistics
//===----------------------------------------------------------------------===//

def Graph_BatchNormOp : Graph_ForwardOp<"batch_norm", [OwnFlops]> {
  let kernelFamily = "BatchNorm";
  let autocast = "Float32Compute";
  let shapeRule = "ChannelNormalize";
  let summary = "batch normalization with batch statistics (training mode)";
  let description = [{
    `x` is `[N, C, ...]`; per channel c, over every other dim:
    `y = (x - mean_c) / sqrt(var_c + epsilon) · gamma_c + beta_c` with the
    biased variance of the batch. `gamma` and `beta` are `[C]`; `y` has the
    type of `x`. The running statistics are updated by separate
    `running_mean_update` / `running_var_update` ops. FLOPs: 8 per element.

    ```mlir
    %y = graph.batch_norm %x, %gamma, %beta {epsilon = 1.0e-05 : f32}
        : tensor<4x3x2x2xf32>, tensor<3xf32>, tensor<3xf32> -> tensor<4x3x2x2xf32>
    ```
  }];
  let arguments = (ins Graph_Tensor:$x, Graph_Tensor:$gamma,
                       Graph_Tensor:$beta,
                       Graph_F32Default<"1.0e-5">:$epsilon);
  let results = (outs Graph_Tensor:$y);
  let assemblyFormat = [{
    $x `,` $gamma `,` $beta attr-dict `:` type($x) `,` type($gamma) `,`
    type($beta) `->` type($y)
  }];
  // 8 per element of x, as layer_norm: the statistics are per channel
  // instead of per row.
  let flops = [{ return times(8, elements(getX())); }];
}

def Graph_BatchNormGradOp : Graph_Op<"batch_norm_grad", [OwnFlops]> {
  let kernelFamily = "BatchNormGrad";
  let shapeRule = "ChannelNormalizeGrad";
  let summary = "gradient of batch_norm";
  let description = [{
    The batch mean and rstd are recomputed from `x`. `dy` and `dx` have the
    type of `x`; `dgamma` and `dbeta` have the type of `gamma` (`[C]`).
    FLOPs: 16 per element.

    ```mlir
    %dx, %dgamma, %dbeta = graph.batch_norm_grad %x, %gamma, %dy
        : tensor<4x3xf32>, tensor<3xf32>, tensor<4x3xf32>
          -> tensor<4x3xf32>, tensor<3xf32>, tensor<3xf32>
    ```
  }];
  let arguments = (ins Graph_Tensor:$x, Graph_Tensor:$gamma, Graph_Tensor:$dy,
                       Graph_F32Default<"1.0e-5">:$epsilon);
  let results = (outs Graph_Tensor:$dx, Graph_Tensor:$dgamma,
                      Graph_Tensor:$dbeta);
  let assemblyFormat = [{
    $x `,` $gamma `,` $dy attr-dict `:` type($x) `,` type($gamma) `,`
    type($dy) `->` type($dx) `,` type($dgamma) `,` type($dbeta)
  }];
  // 16 per element of x, as layer_norm_grad.
  let flops = [{ return times(16, elements(getX())); }];
}

class Graph_RunningStatUpdateOp<string mnemonic, string statistic>
    : Graph_Op<mnemonic, [OwnFlops]> {
  let kernelFamily = "RunningStatUpdate";
  let autocast = "Float32Compute";
  let shapeRule = "RunningStat";
  let updatesState = 1;
  let summary = "updates a running " # statistic # " of batch_norm";
  let description = [{
    `running' = running·momentum + batch·(1 - momentum)` (ONNX's
    convention: PyTorch's momentum 0.1 is 0.9 here), where `batch` is the }]
    # statistic # [{ of `x` `[N, C, ...]` per channel over every other dim.
    `running` and `running'` are `[C]`; buffer assignment puts `running'` in
    `running`'s buffer. `momentum` is in [0, 1]. FLOPs: 3 per element of
    `x`.

    ```mlir
    %r2 = graph.}] # mnemonic # [{ %r, %x {momentum = 0.899999976 : f32}
        : tensor<3xf32>, tensor<4x3x2x2xf32> -> tensor<3xf32>
    ```
  }];
  let arguments = (ins Graph_Tensor:$running, Graph_Tensor:$x,
                       Graph_F32:$momentum);
  let results = (outs Graph_Tensor:$new_running);
  let assemblyFormat = [{
    $running `,` $x attr-dict `:` type($running) `,` type($x) `->`
    type($new_running)
  }];
}

def Graph_RunningMeanUpdateOp
    : Graph_RunningStatUpdateOp<"running_mean_update", "mean"> {
  // 3 per element of x: the sum (mean) or the deviation, its square and the
  // sum (variance; the mean pass counted in the same 3).
  let flops = [{ return times(3, elements(getX())); }];
}
def Graph_RunningVarUpdateOp : Graph_RunningStatUpdateOp<"running_var_update",
    "unbiased variance (over count - 1, as PyTorch's running_var)"> {
  let flops = [{ return times(3, elements(getX())); }];
}

#endif // REMAT_IR_GRAPHNORMOPS
