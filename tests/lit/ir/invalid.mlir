// Every verifier error of the graph dialect, one case each.
// RUN: remat-opt %s -split-input-file -verify-diagnostics

// A dynamic dim is rejected: shapes must be static.
func.func @case0(%x: tensor<?x3xf32>) {
  // expected-error @+1 {{'x' must have a static shape, got 'tensor<?x3xf32>'}}
  %0 = graph.relu %x : tensor<?x3xf32> -> tensor<?x3xf32>
  return
}

// -----

// A tensor whose element count overflows int64 is rejected.
func.func @case1(%x: tensor<4294967296x4294967296xf32>) {
  // expected-error @+1 {{'x' has more than 2^63-1 elements: 'tensor<4294967296x4294967296xf32>'}}
  %0 = graph.relu %x : tensor<4294967296x4294967296xf32> -> tensor<4294967296x4294967296xf32>
  return
}

// -----

// Float ops reject integer tensors.
func.func @case2(%x: tensor<2x3xi32>) {
  // expected-error @+1 {{'x' has dtype i32 but expects a float dtype (f32|f16|bf16)}}
  %0 = graph.exp %x : tensor<2x3xi32> -> tensor<2x3xi32>
  return
}

// -----

// Float ops reject other float types (f80).
func.func @case3(%x: tensor<2x3xf80>) {
  // expected-error @+1 {{'x' must be a tensor of f32, f16, bf16, i32, i64 or f64, got 'tensor<2x3xf80>'}}
  %0 = graph.tanh %x : tensor<2x3xf80> -> tensor<2x3xf80>
  return
}

// -----

// Embedding indices must be i32 or i64, not float.
func.func @case4(%t: tensor<10x4xf32>, %i: tensor<2xf32>) {
  // expected-error @+1 {{'indices' has dtype f32 but expects an index dtype (i32|i64)}}
  %0 = graph.embedding %t, %i : tensor<10x4xf32>, tensor<2xf32> -> tensor<2x4xf32>
  return
}

// -----

// Embedding indices must be i32 or i64, not i16.
func.func @case5(%t: tensor<10x4xf32>, %i: tensor<2xi16>) {
  // expected-error @+1 {{'indices' must be a tensor of f32, f16, bf16, i32, i64 or f64, got 'tensor<2xi16>'}}
  %0 = graph.embedding %t, %i : tensor<10x4xf32>, tensor<2xi16> -> tensor<2x4xf32>
  return
}

// -----

// Data-movement ops take float or i32/i64 tensors, not i8.
func.func @case6(%x: tensor<6xi8>) {
  // expected-error @+1 {{'x' must be a tensor of f32, f16, bf16, i32, i64 or f64, got 'tensor<6xi8>'}}
  %0 = graph.reshape %x : tensor<6xi8> -> tensor<2x3xi8>
  return
}

// -----

// Binary ops need one element type.
func.func @case7(%a: tensor<2xf32>, %b: tensor<2xf16>) {
  // expected-error @+1 {{'b' has dtype f16 but expects f32}}
  %0 = graph.add %a, %b : tensor<2xf32>, tensor<2xf16> -> tensor<2xf32>
  return
}

// -----

// The result of a binary op has the operands' element type.
func.func @case8(%a: tensor<2xf32>, %b: tensor<2xf32>) {
  // expected-error @+1 {{result has dtype bf16 but expects f32}}
  %0 = graph.mul %a, %b : tensor<2xf32>, tensor<2xf32> -> tensor<2xbf16>
  return
}

// -----

// Binary ops broadcast NumPy-style; 3 vs 4 does not broadcast.
func.func @case9(%a: tensor<2x3xf32>, %b: tensor<2x4xf32>) {
  // expected-error @+1 {{'a' [2,3] and 'b' [2,4] do not broadcast: dim 1 of the broadcast shape is 3 vs 4 (dims aligned on the right must be equal or 1)}}
  %0 = graph.sub %a, %b : tensor<2x3xf32>, tensor<2x4xf32> -> tensor<2x4xf32>
  return
}

// -----

// Broadcast dims are numbered in the broadcast shape when ranks differ.
func.func @case10(%a: tensor<5x2x3xf32>, %b: tensor<4x3xf32>) {
  // expected-error @+1 {{'a' [5,2,3] and 'b' [4,3] do not broadcast: dim 1 of the broadcast shape is 2 vs 4 (dims aligned on the right must be equal or 1)}}
  %0 = graph.div %a, %b : tensor<5x2x3xf32>, tensor<4x3xf32> -> tensor<5x2x3xf32>
  return
}

// -----

// The result of a binary op has the broadcast shape.
func.func @case11(%a: tensor<2x3xf32>, %b: tensor<3xf32>) {
  // expected-error @+1 {{result has shape [3] but expects [2,3] (the broadcast shape)}}
  %0 = graph.add %a, %b : tensor<2x3xf32>, tensor<3xf32> -> tensor<3xf32>
  return
}

// -----

// Unary ops keep the operand type.
func.func @case12(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{result has shape [3,2] but expects [2,3]}}
  %0 = graph.gelu %x : tensor<2x3xf32> -> tensor<3x2xf32>
  return
}

// -----

// Matmul needs matrices (rank >= 2).
func.func @case13(%a: tensor<3xf32>, %b: tensor<3x4xf32>) {
  // expected-error @+1 {{'a' has shape [3] but expects rank >= 2}}
  %0 = graph.matmul %a, %b : tensor<3xf32>, tensor<3x4xf32> -> tensor<4xf32>
  return
}

// -----

// Matmul's b is rank 2 (shared) or has a's rank.
func.func @case14(%a: tensor<2x3x4xf32>, %b: tensor<5x2x4x6xf32>) {
  // expected-error @+1 {{'b' has shape [5,2,4,6] but expects batch dims [2] of 'a' [2,3,4] (or rank 2)}}
  %0 = graph.matmul %a, %b : tensor<2x3x4xf32>, tensor<5x2x4x6xf32> -> tensor<2x3x6xf32>
  return
}

// -----

// Matmul batch dims must be equal (no broadcasting of batches).
func.func @case15(%a: tensor<8x2x3xf32>, %b: tensor<4x3x5xf32>) {
  // expected-error @+1 {{'b' has shape [4,3,5] but expects batch dims [8] of 'a' [8,2,3] (or rank 2)}}
  %0 = graph.matmul %a, %b : tensor<8x2x3xf32>, tensor<4x3x5xf32> -> tensor<8x2x5xf32>
  return
}

// -----

// Matmul inner dims must agree.
func.func @case16(%a: tensor<2x64xf32>, %b: tensor<128x4xf32>) {
  // expected-error @+1 {{'b' has shape [128,4] but expects K=64 (the first of its last two dims) to match 'a' [2,64]}}
  %0 = graph.matmul %a, %b : tensor<2x64xf32>, tensor<128x4xf32> -> tensor<2x4xf32>
  return
}

// -----

// transpose_a makes a [K, M]: its K is dim 0.
func.func @case17(%a: tensor<3x2xf32>, %b: tensor<2x4xf32>) {
  // expected-error @+1 {{'b' has shape [2,4] but expects K=3 (the first of its last two dims) to match 'a' [3,2] transposed}}
  %0 = graph.matmul %a, %b {transpose_a = true} : tensor<3x2xf32>, tensor<2x4xf32> -> tensor<2x4xf32>
  return
}

// -----

// Matmul result shape is [..., M, N] (transpose_b makes b [N, K]).
func.func @case18(%a: tensor<2x3xf32>, %b: tensor<4x3xf32>) {
  // expected-error @+1 {{result has shape [2,5] but expects [2,4]}}
  %0 = graph.matmul %a, %b {transpose_b = true} : tensor<2x3xf32>, tensor<4x3xf32> -> tensor<2x5xf32>
  return
}

// -----

// Softmax needs at least one dim.
func.func @case19(%x: tensor<f32>) {
  // expected-error @+1 {{'x' has shape [] but expects rank >= 1}}
  %0 = graph.softmax %x : tensor<f32> -> tensor<f32>
  return
}

// -----

// layer_norm's gamma is [D], D the last dim of x.
func.func @case20(%x: tensor<2x4xf32>, %g: tensor<5xf32>, %b: tensor<4xf32>) {
  // expected-error @+1 {{'gamma' has shape [5] but expects [4] ([D], D the last dim of 'x')}}
  %0 = graph.layer_norm %x, %g, %b : tensor<2x4xf32>, tensor<5xf32>, tensor<4xf32> -> tensor<2x4xf32>
  return
}

// -----

// layer_norm's beta has x's element type.
func.func @case21(%x: tensor<2x4xf32>, %g: tensor<4xf32>, %b: tensor<4xf16>) {
  // expected-error @+1 {{'beta' has dtype f16 but expects f32}}
  %0 = graph.layer_norm %x, %g, %b : tensor<2x4xf32>, tensor<4xf32>, tensor<4xf16> -> tensor<2x4xf32>
  return
}

// -----

// layer_norm's epsilon must be positive.
func.func @case22(%x: tensor<2x4xf32>, %g: tensor<4xf32>, %b: tensor<4xf32>) {
  // expected-error @+1 {{attribute 'epsilon' must be positive, got 0}}
  %0 = graph.layer_norm %x, %g, %b {epsilon = 0.0 : f32} : tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32> -> tensor<2x4xf32>
  return
}

// -----

// The embedding table is [V, D].
func.func @case23(%t: tensor<2x10x4xf32>, %i: tensor<2xi32>) {
  // expected-error @+1 {{'table' has shape [2,10,4] but expects rank 2 [V,D]}}
  %0 = graph.embedding %t, %i : tensor<2x10x4xf32>, tensor<2xi32> -> tensor<2x4xf32>
  return
}

// -----

// Embedding result is [..., D].
func.func @case24(%t: tensor<10x4xf32>, %i: tensor<2x3xi64>) {
  // expected-error @+1 {{result has shape [6,4] but expects [2,3,4] (indices shape + [D])}}
  %0 = graph.embedding %t, %i : tensor<10x4xf32>, tensor<2x3xi64> -> tensor<6x4xf32>
  return
}

// -----

// Reshape keeps the element count.
func.func @case25(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{the result shape [2,4] does not have the element count of 'x' [2,3]}}
  %0 = graph.reshape %x : tensor<2x3xf32> -> tensor<2x4xf32>
  return
}

// -----

// Reshape keeps the element type.
func.func @case26(%x: tensor<6xi32>) {
  // expected-error @+1 {{result has dtype i64 but expects i32}}
  %0 = graph.reshape %x : tensor<6xi32> -> tensor<2x3xi64>
  return
}

// -----

// A transpose permutation has one entry per dim.
func.func @case27(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{attribute 'permutation' has 3 entries but 'x' has rank 2}}
  %0 = graph.transpose %x {permutation = array<i64: 0, 1, 2>} : tensor<2x3xf32> -> tensor<2x3xf32>
  return
}

// -----

// A transpose permutation lists every dim once.
func.func @case28(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{attribute 'permutation' [0,0] is not a permutation of [0, 2)}}
  %0 = graph.transpose %x {permutation = array<i64: 0, 0>} : tensor<2x3xf32> -> tensor<2x2xf32>
  return
}

// -----

// Transpose result dims follow the permutation.
func.func @case29(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{result has shape [2,3] but expects [3,2]}}
  %0 = graph.transpose %x {permutation = array<i64: 1, 0>} : tensor<2x3xf32> -> tensor<2x3xf32>
  return
}

// -----

// Reduction axes must be in range.
func.func @case30(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{attribute 'axes' has axis 2 outside [0, 2) for 'x' [2,3]}}
  %0 = graph.reduce_sum %x {axes = array<i64: 2>} : tensor<2x3xf32> -> tensor<2xf32>
  return
}

// -----

// Reduction axes must be sorted and unique.
func.func @case31(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{attribute 'axes' [1,0] must be sorted and unique}}
  %0 = graph.reduce_mean %x {axes = array<i64: 1, 0>} : tensor<2x3xf32> -> tensor<f32>
  return
}

// -----

// keep_dims keeps reduced dims as 1.
func.func @case32(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{result has shape [2] but expects [2,1]}}
  %0 = graph.reduce_sum %x {axes = array<i64: 1>, keep_dims = true} : tensor<2x3xf32> -> tensor<2xf32>
  return
}

// -----

// broadcast_to only expands dims of size 1.
func.func @case33(%x: tensor<3xf32>) {
  // expected-error @+1 {{'x' has shape [3] which does not broadcast to the result shape [2,4]}}
  %0 = graph.broadcast_to %x : tensor<3xf32> -> tensor<2x4xf32>
  return
}

// -----

// broadcast_to cannot lower the rank.
func.func @case34(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{'x' has shape [2,3] which does not broadcast to the result shape [3]}}
  %0 = graph.broadcast_to %x : tensor<2x3xf32> -> tensor<3xf32>
  return
}

// -----

// sum_to's result must broadcast back to x's shape.
func.func @case35(%x: tensor<2x4xf32>) {
  // expected-error @+1 {{the result shape [3] does not broadcast to 'x' shape [2,4]}}
  %0 = graph.sum_to %x : tensor<2x4xf32> -> tensor<3xf32>
  return
}

// -----

// Cross-entropy labels are logits' shape without the class dim.
func.func @case36(%l: tensor<2x4x10xf32>, %y: tensor<4xi32>) {
  // expected-error @+1 {{'labels' has shape [4] but expects [2,4] ('logits' shape without the last dim)}}
  %0 = graph.cross_entropy %l, %y : tensor<2x4x10xf32>, tensor<4xi32> -> tensor<f32>
  return
}

// -----

// Cross-entropy labels are integers.
func.func @case37(%l: tensor<4x10xf32>, %y: tensor<4xf32>) {
  // expected-error @+1 {{'labels' has dtype f32 but expects an index dtype (i32|i64)}}
  %0 = graph.cross_entropy %l, %y : tensor<4x10xf32>, tensor<4xf32> -> tensor<f32>
  return
}

// -----

// Cross-entropy's loss is a 0-d tensor.
func.func @case38(%l: tensor<4x10xf32>, %y: tensor<4xi64>) {
  // expected-error @+1 {{result has shape [4] but expects [] (a scalar loss)}}
  %0 = graph.cross_entropy %l, %y : tensor<4x10xf32>, tensor<4xi64> -> tensor<4xf32>
  return
}

// -----

// MSE compares tensors of one type.
func.func @case39(%a: tensor<4x1xf32>, %b: tensor<4xf32>) {
  // expected-error @+1 {{'b' has shape [4] but expects [4,1] (like 'a')}}
  %0 = graph.mse %a, %b : tensor<4x1xf32>, tensor<4xf32> -> tensor<f32>
  return
}

// -----

// MSE's loss has the operands' element type.
func.func @case40(%a: tensor<4xf32>, %b: tensor<4xf32>) {
  // expected-error @+1 {{result has dtype f16 but expects f32}}
  %0 = graph.mse %a, %b : tensor<4xf32>, tensor<4xf32> -> tensor<f16>
  return
}

// -----

// The dropout rate is in [0, 1): 1 would drop everything and divide by 0.
func.func @case41(%x: tensor<4xf32>) {
  // expected-error @+1 {{attribute 'rate' must be in [0, 1), got 1}}
  %0 = graph.dropout %x {rate = 1.0 : f32, seed = 1} : tensor<4xf32> -> tensor<4xf32>
  return
}

// -----

// Attention operands are [B, H, S, Dh].
func.func @case42(%q: tensor<4x8x64xf32>) {
  // expected-error @+1 {{'q' has shape [4,8,64] but expects rank 4 [B,H,S,Dh]}}
  %0 = graph.attention %q, %q, %q {scale = 0.125 : f32} : tensor<4x8x64xf32>, tensor<4x8x64xf32>, tensor<4x8x64xf32> -> tensor<4x8x64xf32>
  return
}

// -----

// Attention's k has q's type.
func.func @case43(%q: tensor<1x2x8x64xf32>, %k: tensor<1x2x8x32xf32>) {
  // expected-error @+1 {{'k' has shape [1,2,8,32] but expects [1,2,8,64] (like 'q')}}
  %0 = graph.attention %q, %k, %q {scale = 0.125 : f32} : tensor<1x2x8x64xf32>, tensor<1x2x8x32xf32>, tensor<1x2x8x64xf32> -> tensor<1x2x8x64xf32>
  return
}

// -----

// A constant is a float tensor.
func.func @case44() {
  // expected-error @+1 {{result has dtype i32 but expects a float dtype (f32|f16|bf16)}}
  %0 = graph.constant 1.0 : tensor<2xi32>
  return
}

// -----

// relu_grad's dy has y's type.
func.func @case45(%x: tensor<2x3xf32>, %dy: tensor<2x3xf16>) {
  // expected-error @+1 {{'dy' has dtype f16 but expects f32}}
  %0 = graph.relu_grad %x, %dy : tensor<2x3xf32>, tensor<2x3xf16> -> tensor<2x3xf32>
  return
}

// -----

// tanh_grad's dx has y's type.
func.func @case46(%y: tensor<2x3xf32>) {
  // expected-error @+1 {{result has shape [3] but expects [2,3]}}
  %0 = graph.tanh_grad %y, %y : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<3xf32>
  return
}

// -----

// layer_norm_grad's dgamma has gamma's type.
func.func @case47(%x: tensor<2x4xf32>, %g: tensor<4xf32>) {
  // expected-error @+1 {{result 'dgamma' has shape [2,4] but expects [4] ([D])}}
  %0:3 = graph.layer_norm_grad %x, %g, %x : tensor<2x4xf32>, tensor<4xf32>, tensor<2x4xf32> -> tensor<2x4xf32>, tensor<2x4xf32>, tensor<4xf32>
  return
}

// -----

// embedding_grad's dy is [..., D] for the indices and dtable [V, D].
func.func @case48(%i: tensor<3xi32>, %dy: tensor<2x4xf32>) {
  // expected-error @+1 {{'dy' has shape [2,4] but expects [3,4] (indices shape + [D])}}
  %0 = graph.embedding_grad %i, %dy : tensor<3xi32>, tensor<2x4xf32> -> tensor<10x4xf32>
  return
}

// -----

// cross_entropy_grad's dloss is 0-d.
func.func @case49(%l: tensor<4x10xf32>, %y: tensor<4xi32>, %d: tensor<1xf32>) {
  // expected-error @+1 {{'dloss' has shape [1] but expects [] (a scalar dloss)}}
  %0 = graph.cross_entropy_grad %l, %y, %d : tensor<4x10xf32>, tensor<4xi32>, tensor<1xf32> -> tensor<4x10xf32>
  return
}

// -----

// mse_grad's da has a's type.
func.func @case50(%a: tensor<4xf32>, %d: tensor<f32>) {
  // expected-error @+1 {{result has shape [4,1] but expects [4]}}
  %0 = graph.mse_grad %a, %a, %d : tensor<4xf32>, tensor<4xf32>, tensor<f32> -> tensor<4x1xf32>
  return
}

// -----

// attention_grad's dout has q's type.
func.func @case51(%q: tensor<1x2x4x8xf32>, %d: tensor<1x2x4x4xf32>) {
  // expected-error @+1 {{'dout' has shape [1,2,4,4] but expects [1,2,4,8] (like 'q')}}
  %0:3 = graph.attention_grad %q, %q, %q, %d {scale = 0.5 : f32} : tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x4xf32> -> tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>
  return
}

// -----

// sgd_update's momentum buffer has param's type.
func.func @case52(%p: tensor<4xf32>, %m: tensor<4xf16>) {
  // expected-error @+1 {{'momentum_buffer' has dtype f16 but expects f32}}
  %0:2 = graph.sgd_update %p, %p, %m {lr = 0.1 : f32, momentum = 0.9 : f32, weight_decay = 0.0 : f32} : tensor<4xf32>, tensor<4xf32>, tensor<4xf16> -> tensor<4xf32>, tensor<4xf32>
  return
}

// -----

// adamw_update's new state has param's type.
func.func @case53(%p: tensor<4xf32>) {
  // expected-error @+1 {{result 'new_v' has shape [2,2] but expects [4]}}
  %0:3 = graph.adamw_update %p, %p, %p, %p {lr = 0.1 : f32, beta1 = 0.9 : f32, beta2 = 0.999 : f32, eps = 1.0e-8 : f32, weight_decay = 0.0 : f32} : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>, tensor<4xf32>, tensor<2x2xf32>
  return
}

// -----

// AdamW's betas are in [0, 1).
func.func @case54(%p: tensor<4xf32>) {
  // expected-error @+1 {{attribute 'beta1' must be in [0, 1), got 1.5}}
  %0:3 = graph.adamw_update %p, %p, %p, %p {lr = 0.1 : f32, beta1 = 1.5 : f32, beta2 = 0.999 : f32, eps = 1.0e-8 : f32, weight_decay = 0.0 : f32} : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
  return
}

// -----

// Unranked tensors are rejected by the ODS type constraint.
func.func @case55(%x: tensor<*xf32>) {
  // expected-error @+1 {{operand #0 must be ranked tensor of any type values, but got 'tensor<*xf32>'}}
  %0 = "graph.relu"(%x) : (tensor<*xf32>) -> tensor<*xf32>
  return
}

// -----

// A required attribute (dropout's seed) must be present.
func.func @case56(%x: tensor<4xf32>) {
  // expected-error @+1 {{requires attribute 'seed'}}
  %0 = graph.dropout %x {rate = 0.5 : f32} : tensor<4xf32> -> tensor<4xf32>
  return
}

// -----

// A slice box must lie inside the sliced tensor.
func.func @slice_out_of_range(%x: tensor<2x12xf32>) {
  // expected-error @+1 {{dim 1 of the sliced tensor [2,12] has start 4 and end 13 but expects 0 <= start <= end <= 12}}
  %0 = graph.slice %x {starts = array<i64: 0, 4>, ends = array<i64: 2, 13>, steps = array<i64: 1, 1>} : tensor<2x12xf32> -> tensor<2x9xf32>
  return
}

// -----

// batch_norm's gamma is [C], C the channel dim 1 of x.
func.func @case_bn_gamma(%x: tensor<4x3x2x2xf32>, %g: tensor<2xf32>, %b: tensor<3xf32>) {
  // expected-error @+1 {{'gamma' has shape [2] but expects [3] ([C], C dim 1 of 'x')}}
  %0 = graph.batch_norm %x, %g, %b : tensor<4x3x2x2xf32>, tensor<2xf32>, tensor<3xf32> -> tensor<4x3x2x2xf32>
  return
}

// -----

// conv2d's weight must have C/groups input channels.
func.func @conv_channels(%x: tensor<1x4x5x5xf32>, %w: tensor<2x4x3x3xf32>) {
  // expected-error @+1 {{'w' has shape [2,4,3,3] but expects [O,2,kh,kw] with O divisible by 2}}
  %0 = graph.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 2} : tensor<1x4x5x5xf32>, tensor<2x4x3x3xf32> -> tensor<1x2x3x3xf32>
  return
}

// -----

// clip's bounds are ordered.
func.func @case_clip_bounds(%x: tensor<4xf32>) {
  // expected-error @+1 {{attribute 'min' (6) must not exceed 'max' (0)}}
  %0 = graph.clip %x {min = 6.0 : f32, max = 0.0 : f32} : tensor<4xf32> -> tensor<4xf32>
  return
}

// -----

// slice_grad's dy must be the box of its given result type.
func.func @slice_grad_wrong_box(%dy: tensor<2x5xf32>) {
  // expected-error @+1 {{'dy' has shape [2,5] but expects [2,4] (the box starts/ends/steps select from the result shape [2,12])}}
  %0 = graph.slice_grad %dy {starts = array<i64: 0, 4>, ends = array<i64: 2, 12>, steps = array<i64: 1, 2>} : tensor<2x5xf32> -> tensor<2x12xf32>
  return
}

// -----

// resize_nearest has one scale per dim.
func.func @case_resize_rank(%x: tensor<1x2x3x3xf32>) {
  // expected-error @+1 {{attribute 'scales' has 2 entries but 'x' has rank 4}}
  %0 = graph.resize_nearest %x {scales = array<i64: 2, 2>} : tensor<1x2x3x3xf32> -> tensor<1x2x6x6xf32>
  return
}

// -----

// pads has four entries (top, left, bottom, right).
func.func @conv_pads(%x: tensor<1x4x5x5xf32>, %w: tensor<2x4x3x3xf32>) {
  // expected-error @+1 {{attribute 'pads' [1,1] must have 4 entries, each >= 0}}
  %0 = graph.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 1, 1>, dilations = array<i64: 1, 1>} : tensor<1x4x5x5xf32>, tensor<2x4x3x3xf32> -> tensor<1x2x5x5xf32>
  return
}

// -----

// The unbiased running variance needs two values per channel.
func.func @case_running_var_one(%r: tensor<3xf32>, %x: tensor<1x3xf32>) {
  // expected-error @+1 {{'x' [1,3] has one value per channel; running statistics need two}}
  %0 = graph.running_var_update %r, %x {momentum = 0.9 : f32} : tensor<3xf32>, tensor<1x3xf32> -> tensor<3xf32>
  return
}

// -----

// concat's operands agree on every dim but the axis.
func.func @concat_mismatch(%a: tensor<2x3xf32>, %b: tensor<3x3xf32>) {
  // expected-error @+1 {{'b' has shape [3,3] but expects [2,3] (the dims of 'a' but axis 1)}}
  %0 = graph.concat %a, %b {axis = 1} : tensor<2x3xf32>, tensor<3x3xf32> -> tensor<2x6xf32>
  return
}

// -----

// The result shape follows the window arithmetic: (5 + 2 - 3) / 2 + 1 = 3.
func.func @conv_result(%x: tensor<1x4x5x5xf32>, %w: tensor<2x4x3x3xf32>) {
  // expected-error @+1 {{result has shape [1,2,5,5] but expects [1,2,3,3]}}
  %0 = graph.conv2d %x, %w {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>} : tensor<1x4x5x5xf32>, tensor<2x4x3x3xf32> -> tensor<1x2x5x5xf32>
  return
}

// -----

// A pool's pad is at most half its kernel dim.
func.func @pool_pad(%x: tensor<1x1x6x6xf32>) {
  // expected-error @+1 {{attribute 'pads' [2,0,0,0] has a pad larger than half of kernel_shape [3,3]}}
  %0 = graph.avg_pool2d %x {kernel_shape = array<i64: 3, 3>, strides = array<i64: 1, 1>, pads = array<i64: 2, 0, 0, 0>} : tensor<1x1x6x6xf32> -> tensor<1x1x6x4xf32>
  return
}

// -----

// The dy of max_pool2d_grad has the pool's output shape.
func.func @pool_grad_dy(%x: tensor<1x1x6x6xf32>, %dy: tensor<1x1x2x2xf32>) {
  // expected-error @+1 {{'dy' has shape [1,1,2,2] but expects [1,1,3,3] (the pool's output)}}
  %0 = graph.max_pool2d_grad %x, %dy {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : tensor<1x1x6x6xf32>, tensor<1x1x2x2xf32> -> tensor<1x1x6x6xf32>
  return
}

// -----

// The running statistics' momentum is in [0, 1].
func.func @case_running_momentum(%r: tensor<3xf32>, %x: tensor<4x3xf32>) {
  // expected-error @+1 {{attribute 'momentum' must be in [0, 1], got 1.5}}
  %0 = graph.running_mean_update %r, %x {momentum = 1.5 : f32} : tensor<3xf32>, tensor<4x3xf32> -> tensor<3xf32>
  return
}

// -----

// convert keeps the shape and converts to a float type.
func.func @convert_shape(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{the result shape [3,2] is not the shape [2,3] of 'x'}}
  %0 = graph.convert %x : tensor<2x3xf32> -> tensor<3x2xbf16>
  return
}

// -----

func.func @convert_to_index(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{the result dtype i32 is not a float dtype (f32|f16|bf16|f64)}}
  %0 = graph.convert %x : tensor<2x3xf32> -> tensor<2x3xi32>
  return
}
