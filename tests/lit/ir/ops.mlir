// Round trip of every graph op: custom form -> custom form is stable, and the
// generic form parses back to the same custom form.
// RUN: remat-opt %s | remat-opt | FileCheck %s
// RUN: remat-opt %s --mlir-print-op-generic | remat-opt | FileCheck %s
// Printing is a fixed point: printing the printed form changes nothing.
// RUN: remat-opt %s -o %t.once
// RUN: remat-opt %t.once -o %t.twice
// RUN: diff %t.once %t.twice

// Matmul with default flags, transposes and a shared rank-2 b.
// CHECK-LABEL: func.func @matmul
// CHECK-SAME: (%[[A:.*]]: tensor<8x2x3xf32>, %[[B:.*]]: tensor<4x3xf32>, %[[BB:.*]]: tensor<8x3x4xf32>, %[[AT:.*]]: tensor<3x2xf16>, %[[BT:.*]]: tensor<4x3xf16>)
func.func @matmul(%a: tensor<8x2x3xf32>, %b: tensor<4x3xf32>, %bb: tensor<8x3x4xf32>,
                  %at: tensor<3x2xf16>, %bt: tensor<4x3xf16>) {
  // CHECK: graph.matmul %[[A]], %[[B]] {transpose_b = true} : tensor<8x2x3xf32>, tensor<4x3xf32> -> tensor<8x2x4xf32>
  %0 = graph.matmul %a, %b {transpose_b = true} : tensor<8x2x3xf32>, tensor<4x3xf32> -> tensor<8x2x4xf32>
  // CHECK: graph.matmul %[[A]], %[[BB]] : tensor<8x2x3xf32>, tensor<8x3x4xf32> -> tensor<8x2x4xf32>
  %1 = graph.matmul %a, %bb : tensor<8x2x3xf32>, tensor<8x3x4xf32> -> tensor<8x2x4xf32>
  // Explicit defaults are elided when printed.
  // CHECK: graph.matmul %[[AT]], %[[BT]] {transpose_a = true, transpose_b = true} : tensor<3x2xf16>, tensor<4x3xf16> -> tensor<2x4xf16>
  %2 = graph.matmul %at, %bt {transpose_a = true, transpose_b = true} : tensor<3x2xf16>, tensor<4x3xf16> -> tensor<2x4xf16>
  // CHECK: graph.matmul %[[A]], %[[BB]] : tensor<8x2x3xf32>, tensor<8x3x4xf32> -> tensor<8x2x4xf32>
  %3 = graph.matmul %a, %bb {transpose_a = false} : tensor<8x2x3xf32>, tensor<8x3x4xf32> -> tensor<8x2x4xf32>
  return
}

// Broadcasting binary ops, including a scalar operand.
// CHECK-LABEL: func.func @binary
// CHECK-SAME: (%[[X:.*]]: tensor<2x3xbf16>, %[[R:.*]]: tensor<3xbf16>, %[[S:.*]]: tensor<bf16>, %[[C:.*]]: tensor<2x1xbf16>)
func.func @binary(%x: tensor<2x3xbf16>, %r: tensor<3xbf16>, %s: tensor<bf16>, %c: tensor<2x1xbf16>) {
  // CHECK: graph.add %[[X]], %[[R]] : tensor<2x3xbf16>, tensor<3xbf16> -> tensor<2x3xbf16>
  %0 = graph.add %x, %r : tensor<2x3xbf16>, tensor<3xbf16> -> tensor<2x3xbf16>
  // CHECK: graph.sub %[[S]], %[[X]] : tensor<bf16>, tensor<2x3xbf16> -> tensor<2x3xbf16>
  %1 = graph.sub %s, %x : tensor<bf16>, tensor<2x3xbf16> -> tensor<2x3xbf16>
  // CHECK: graph.mul %[[C]], %[[R]] : tensor<2x1xbf16>, tensor<3xbf16> -> tensor<2x3xbf16>
  %2 = graph.mul %c, %r : tensor<2x1xbf16>, tensor<3xbf16> -> tensor<2x3xbf16>
  // CHECK: graph.div %[[X]], %[[X]] : tensor<2x3xbf16>, tensor<2x3xbf16> -> tensor<2x3xbf16>
  %3 = graph.div %x, %x : tensor<2x3xbf16>, tensor<2x3xbf16> -> tensor<2x3xbf16>
  return
}

// Elementwise unary ops and softmax.
// CHECK-LABEL: func.func @unary
// CHECK-SAME: (%[[X:.*]]: tensor<2x3xf32>)
func.func @unary(%x: tensor<2x3xf32>) {
  // CHECK: graph.relu %[[X]] : tensor<2x3xf32> -> tensor<2x3xf32>
  %0 = graph.relu %x : tensor<2x3xf32> -> tensor<2x3xf32>
  // CHECK: graph.gelu %[[X]] : tensor<2x3xf32> -> tensor<2x3xf32>
  %1 = graph.gelu %x : tensor<2x3xf32> -> tensor<2x3xf32>
  // CHECK: graph.gelu_exact %[[X]] : tensor<2x3xf32> -> tensor<2x3xf32>
  %g = graph.gelu_exact %x : tensor<2x3xf32> -> tensor<2x3xf32>
  // CHECK: graph.tanh %[[X]] : tensor<2x3xf32> -> tensor<2x3xf32>
  %2 = graph.tanh %x : tensor<2x3xf32> -> tensor<2x3xf32>
  // CHECK: graph.exp %[[X]] : tensor<2x3xf32> -> tensor<2x3xf32>
  %3 = graph.exp %x : tensor<2x3xf32> -> tensor<2x3xf32>
  // CHECK: graph.softmax %[[X]] : tensor<2x3xf32> -> tensor<2x3xf32>
  %4 = graph.softmax %x : tensor<2x3xf32> -> tensor<2x3xf32>
  // CHECK: graph.silu %[[X]] : tensor<2x3xf32> -> tensor<2x3xf32>
  %5 = graph.silu %x : tensor<2x3xf32> -> tensor<2x3xf32>
  return
}

// layer_norm with the default and an explicit epsilon.
// CHECK-LABEL: func.func @layer_norm
// CHECK-SAME: (%[[X:.*]]: tensor<2x8xf32>, %[[G:.*]]: tensor<8xf32>, %[[B:.*]]: tensor<8xf32>)
func.func @layer_norm(%x: tensor<2x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>) {
  // CHECK: graph.layer_norm %[[X]], %[[G]], %[[B]] : tensor<2x8xf32>, tensor<8xf32>, tensor<8xf32> -> tensor<2x8xf32>
  %0 = graph.layer_norm %x, %g, %b : tensor<2x8xf32>, tensor<8xf32>, tensor<8xf32> -> tensor<2x8xf32>
  // CHECK: graph.layer_norm %[[X]], %[[G]], %[[B]] {epsilon = 1.000000e-03 : f32} : tensor<2x8xf32>, tensor<8xf32>, tensor<8xf32> -> tensor<2x8xf32>
  %1 = graph.layer_norm %x, %g, %b {epsilon = 1.0e-3 : f32} : tensor<2x8xf32>, tensor<8xf32>, tensor<8xf32> -> tensor<2x8xf32>
  return
}

// Embedding with i64 and i32 indices.
// CHECK-LABEL: func.func @embedding
// CHECK-SAME: (%[[T:.*]]: tensor<100x16xf32>, %[[I:.*]]: tensor<2x5xi64>, %[[J:.*]]: tensor<7xi32>)
func.func @embedding(%t: tensor<100x16xf32>, %i: tensor<2x5xi64>, %j: tensor<7xi32>) {
  // CHECK: graph.embedding %[[T]], %[[I]] : tensor<100x16xf32>, tensor<2x5xi64> -> tensor<2x5x16xf32>
  %0 = graph.embedding %t, %i : tensor<100x16xf32>, tensor<2x5xi64> -> tensor<2x5x16xf32>
  // CHECK: graph.embedding %[[T]], %[[J]] : tensor<100x16xf32>, tensor<7xi32> -> tensor<7x16xf32>
  %1 = graph.embedding %t, %j : tensor<100x16xf32>, tensor<7xi32> -> tensor<7x16xf32>
  return
}

// Shape ops: reshape (also of indices), transpose, broadcast_to, sum_to,
// convert.
// CHECK-LABEL: func.func @shape_ops
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x4xf32>, %[[I:.*]]: tensor<2x5xi64>, %[[R:.*]]: tensor<3xf32>)
func.func @shape_ops(%x: tensor<2x3x4xf32>, %i: tensor<2x5xi64>, %r: tensor<3xf32>) {
  // CHECK: graph.reshape %[[X]] : tensor<2x3x4xf32> -> tensor<6x4xf32>
  %0 = graph.reshape %x : tensor<2x3x4xf32> -> tensor<6x4xf32>
  // CHECK: graph.reshape %[[I]] : tensor<2x5xi64> -> tensor<10xi64>
  %1 = graph.reshape %i : tensor<2x5xi64> -> tensor<10xi64>
  // CHECK: graph.transpose %[[X]] {permutation = array<i64: 0, 2, 1>} : tensor<2x3x4xf32> -> tensor<2x4x3xf32>
  %2 = graph.transpose %x {permutation = array<i64: 0, 2, 1>} : tensor<2x3x4xf32> -> tensor<2x4x3xf32>
  // CHECK: graph.broadcast_to %[[R]] : tensor<3xf32> -> tensor<2x3xf32>
  %3 = graph.broadcast_to %r : tensor<3xf32> -> tensor<2x3xf32>
  // CHECK: graph.sum_to %[[X]] : tensor<2x3x4xf32> -> tensor<3x1xf32>
  %4 = graph.sum_to %x : tensor<2x3x4xf32> -> tensor<3x1xf32>
  // CHECK: graph.convert %[[X]] : tensor<2x3x4xf32> -> tensor<2x3x4xbf16>
  %5 = graph.convert %x : tensor<2x3x4xf32> -> tensor<2x3x4xbf16>
  return
}

// Reductions with and without keep_dims.
// CHECK-LABEL: func.func @reductions
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x4xf32>)
func.func @reductions(%x: tensor<2x3x4xf32>) {
  // CHECK: graph.reduce_sum %[[X]] {axes = array<i64: 0, 2>} : tensor<2x3x4xf32> -> tensor<3xf32>
  %0 = graph.reduce_sum %x {axes = array<i64: 0, 2>} : tensor<2x3x4xf32> -> tensor<3xf32>
  // CHECK: graph.reduce_mean %[[X]] {axes = array<i64: 1>, keep_dims = true} : tensor<2x3x4xf32> -> tensor<2x1x4xf32>
  %1 = graph.reduce_mean %x {axes = array<i64: 1>, keep_dims = true} : tensor<2x3x4xf32> -> tensor<2x1x4xf32>
  // CHECK: graph.reduce_sum %[[X]] {axes = array<i64: 0, 1, 2>} : tensor<2x3x4xf32> -> tensor<f32>
  %2 = graph.reduce_sum %x {axes = array<i64: 0, 1, 2>} : tensor<2x3x4xf32> -> tensor<f32>
  return
}

// Losses, dropout, attention and constant.
// CHECK-LABEL: func.func @losses_and_friends
// CHECK-SAME: (%[[L:.*]]: tensor<4x10xf32>, %[[Y:.*]]: tensor<4xi32>, %[[P:.*]]: tensor<4x1xf32>, %[[Q:.*]]: tensor<2x4x8x64xf32>)
func.func @losses_and_friends(%l: tensor<4x10xf32>, %y: tensor<4xi32>, %p: tensor<4x1xf32>, %q: tensor<2x4x8x64xf32>) {
  // CHECK: graph.cross_entropy %[[L]], %[[Y]] : tensor<4x10xf32>, tensor<4xi32> -> tensor<f32>
  %0 = graph.cross_entropy %l, %y : tensor<4x10xf32>, tensor<4xi32> -> tensor<f32>
  // CHECK: graph.mse %[[P]], %[[P]] : tensor<4x1xf32>, tensor<4x1xf32> -> tensor<f32>
  %1 = graph.mse %p, %p : tensor<4x1xf32>, tensor<4x1xf32> -> tensor<f32>
  // CHECK: graph.dropout %[[L]] {rate = 1.000000e-01 : f32, seed = 42 : i64} : tensor<4x10xf32> -> tensor<4x10xf32>
  %2 = graph.dropout %l {rate = 0.1 : f32, seed = 42} : tensor<4x10xf32> -> tensor<4x10xf32>
  // CHECK: graph.attention %[[Q]], %[[Q]], %[[Q]] {scale = 1.250000e-01 : f32} : tensor<2x4x8x64xf32>, tensor<2x4x8x64xf32>, tensor<2x4x8x64xf32> -> tensor<2x4x8x64xf32>
  %3 = graph.attention %q, %q, %q {causal = true, scale = 0.125 : f32} : tensor<2x4x8x64xf32>, tensor<2x4x8x64xf32>, tensor<2x4x8x64xf32> -> tensor<2x4x8x64xf32>
  // causal is true unless given (the default is not printed).
  // CHECK: graph.attention %[[Q]], %[[Q]], %[[Q]] {causal = false, scale = 1.000000e+00 : f32}
  %4 = graph.attention %q, %q, %q {causal = false, scale = 1.0 : f32} : tensor<2x4x8x64xf32>, tensor<2x4x8x64xf32>, tensor<2x4x8x64xf32> -> tensor<2x4x8x64xf32>
  // CHECK: graph.constant -2.500000e+00 : tensor<4x10xf32>
  %5 = graph.constant -2.5 : tensor<4x10xf32>
  // CHECK: graph.constant 0.000000e+00 : tensor<f16>
  %6 = graph.constant 0.0 : tensor<f16>
  return
}

// Gradient ops.
// CHECK-LABEL: func.func @gradients
// CHECK-SAME: (%[[X:.*]]: tensor<2x8xf32>, %[[G:.*]]: tensor<8xf32>, %[[I:.*]]: tensor<2xi64>, %[[DL:.*]]: tensor<f32>, %[[Q:.*]]: tensor<1x2x4x8xf32>)
func.func @gradients(%x: tensor<2x8xf32>, %g: tensor<8xf32>, %i: tensor<2xi64>, %dl: tensor<f32>, %q: tensor<1x2x4x8xf32>) {
  // CHECK: graph.relu_grad %[[X]], %[[X]] : tensor<2x8xf32>, tensor<2x8xf32> -> tensor<2x8xf32>
  %0 = graph.relu_grad %x, %x : tensor<2x8xf32>, tensor<2x8xf32> -> tensor<2x8xf32>
  // CHECK: graph.gelu_grad %[[X]], %[[X]] : tensor<2x8xf32>, tensor<2x8xf32> -> tensor<2x8xf32>
  %1 = graph.gelu_grad %x, %x : tensor<2x8xf32>, tensor<2x8xf32> -> tensor<2x8xf32>
  // CHECK: graph.gelu_exact_grad %[[X]], %[[X]] : tensor<2x8xf32>, tensor<2x8xf32> -> tensor<2x8xf32>
  %ge = graph.gelu_exact_grad %x, %x : tensor<2x8xf32>, tensor<2x8xf32> -> tensor<2x8xf32>
  // CHECK: graph.tanh_grad %[[X]], %[[X]] : tensor<2x8xf32>, tensor<2x8xf32> -> tensor<2x8xf32>
  %2 = graph.tanh_grad %x, %x : tensor<2x8xf32>, tensor<2x8xf32> -> tensor<2x8xf32>
  // CHECK: graph.softmax_grad %[[X]], %[[X]] : tensor<2x8xf32>, tensor<2x8xf32> -> tensor<2x8xf32>
  %3 = graph.softmax_grad %x, %x : tensor<2x8xf32>, tensor<2x8xf32> -> tensor<2x8xf32>
  // CHECK: graph.silu_grad %[[X]], %[[X]] : tensor<2x8xf32>, tensor<2x8xf32> -> tensor<2x8xf32>
  %silu_dx = graph.silu_grad %x, %x : tensor<2x8xf32>, tensor<2x8xf32> -> tensor<2x8xf32>
  // The default epsilon (1e-5) is elided.
  // CHECK: graph.layer_norm_grad %[[X]], %[[G]], %[[X]] : tensor<2x8xf32>, tensor<8xf32>, tensor<2x8xf32> -> tensor<2x8xf32>, tensor<8xf32>, tensor<8xf32>
  %4:3 = graph.layer_norm_grad %x, %g, %x {epsilon = 1.0e-5 : f32} : tensor<2x8xf32>, tensor<8xf32>, tensor<2x8xf32> -> tensor<2x8xf32>, tensor<8xf32>, tensor<8xf32>
  // CHECK: graph.embedding_grad %[[I]], %[[X]] : tensor<2xi64>, tensor<2x8xf32> -> tensor<100x8xf32>
  %5 = graph.embedding_grad %i, %x : tensor<2xi64>, tensor<2x8xf32> -> tensor<100x8xf32>
  // CHECK: graph.cross_entropy_grad %[[X]], %[[I]], %[[DL]] : tensor<2x8xf32>, tensor<2xi64>, tensor<f32> -> tensor<2x8xf32>
  %6 = graph.cross_entropy_grad %x, %i, %dl : tensor<2x8xf32>, tensor<2xi64>, tensor<f32> -> tensor<2x8xf32>
  // CHECK: graph.mse_grad %[[X]], %[[X]], %[[DL]] : tensor<2x8xf32>, tensor<2x8xf32>, tensor<f32> -> tensor<2x8xf32>
  %7 = graph.mse_grad %x, %x, %dl : tensor<2x8xf32>, tensor<2x8xf32>, tensor<f32> -> tensor<2x8xf32>
  // CHECK: graph.attention_grad %[[Q]], %[[Q]], %[[Q]], %[[Q]] {scale = 5.000000e-01 : f32}
  // CHECK-SAME: -> tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>
  %8:3 = graph.attention_grad %q, %q, %q, %q {causal = true, scale = 0.5 : f32} : tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32> -> tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>
  return
}

// Optimizer updates return new values.
// CHECK-LABEL: func.func @optimizers
// CHECK-SAME: (%[[P:.*]]: tensor<4x4xf32>)
func.func @optimizers(%p: tensor<4x4xf32>) -> (tensor<4x4xf32>, tensor<4x4xf32>) {
  // CHECK: %[[NP:[^,]*]], %{{.*}} = graph.sgd_update %[[P]], %[[P]], %[[P]] {lr = 0.00999999977 : f32, momentum = 0.899999976 : f32, weight_decay = 0.000000e+00 : f32}
  // CHECK-SAME: : tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>, tensor<4x4xf32>
  %0:2 = graph.sgd_update %p, %p, %p {lr = 0.01 : f32, momentum = 0.9 : f32, weight_decay = 0.0 : f32} : tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>, tensor<4x4xf32>
  // CHECK: %{{.*}} = graph.sgd_plain_update %[[P]], %[[P]] {lr = 0.00999999977 : f32, weight_decay = 0.000000e+00 : f32}
  // CHECK-SAME: : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>
  %plain = graph.sgd_plain_update %p, %p {lr = 0.01 : f32, weight_decay = 0.0 : f32} : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>
  // CHECK: %[[NA:[^,]*]], %{{.*}}, %{{.*}} = graph.adamw_update %[[NP]], %[[P]], %[[P]], %[[P]] {beta1 = 0.899999976 : f32, beta2 = 9.990000e-01 : f32, eps = 9.99999993E-9 : f32, lr = 1.000000e-03 : f32, weight_decay = 0.00999999977 : f32}
  // CHECK-SAME: -> tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>
  %1:3 = graph.adamw_update %0#0, %p, %p, %p {lr = 1.0e-3 : f32, beta1 = 0.9 : f32, beta2 = 0.999 : f32, eps = 1.0e-8 : f32, weight_decay = 0.01 : f32} : tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>
  // CHECK: return %[[NP]], %[[NA]] :
  return %0#0, %1#0 : tensor<4x4xf32>, tensor<4x4xf32>
}

// The ops of transformer models imported from ONNX: erf and its gradient,
// pow, slice and its gradient, concat.
// CHECK-LABEL: func.func @transformer_ops
// CHECK-SAME: (%[[X:.*]]: tensor<2x12xf32>, %[[Y:.*]]: tensor<2x4xf32>)
func.func @transformer_ops(%x: tensor<2x12xf32>, %y: tensor<2x4xf32>) {
  // CHECK: graph.erf %[[X]] : tensor<2x12xf32> -> tensor<2x12xf32>
  %0 = graph.erf %x : tensor<2x12xf32> -> tensor<2x12xf32>
  // CHECK: graph.erf_grad %[[X]], %[[X]] : tensor<2x12xf32>, tensor<2x12xf32> -> tensor<2x12xf32>
  %1 = graph.erf_grad %x, %x : tensor<2x12xf32>, tensor<2x12xf32> -> tensor<2x12xf32>
  // CHECK: graph.pow %[[X]] {exponent = 2.000000e+00 : f32} : tensor<2x12xf32> -> tensor<2x12xf32>
  %3 = graph.pow %x {exponent = 2.0 : f32} : tensor<2x12xf32> -> tensor<2x12xf32>
  // CHECK: graph.slice %[[X]] {ends = array<i64: 2, 12>, starts = array<i64: 0, 4>, steps = array<i64: 1, 2>} : tensor<2x12xf32> -> tensor<2x4xf32>
  %4 = graph.slice %x {starts = array<i64: 0, 4>, ends = array<i64: 2, 12>, steps = array<i64: 1, 2>} : tensor<2x12xf32> -> tensor<2x4xf32>
  // CHECK: graph.slice_grad %[[Y]] {ends = array<i64: 2, 12>, starts = array<i64: 0, 4>, steps = array<i64: 1, 2>} : tensor<2x4xf32> -> tensor<2x12xf32>
  %5 = graph.slice_grad %y {starts = array<i64: 0, 4>, ends = array<i64: 2, 12>, steps = array<i64: 1, 2>} : tensor<2x4xf32> -> tensor<2x12xf32>
  // CHECK: graph.concat %[[Y]], %[[X]] {axis = 1 : i64} : tensor<2x4xf32>, tensor<2x12xf32> -> tensor<2x16xf32>
  %6 = graph.concat %y, %x {axis = 1} : tensor<2x4xf32>, tensor<2x12xf32> -> tensor<2x16xf32>
  return
}

// Convolution and pooling, their gradients; groups = 1, ceil_mode = false
// and count_include_pad = false are elided.
// CHECK-LABEL: func.func @conv_pool
// CHECK-SAME: (%[[X:.*]]: tensor<2x4x8x8xf32>, %[[W:.*]]: tensor<6x2x3x3xf32>, %[[DY:.*]]: tensor<2x6x4x4xf32>, %[[P:.*]]: tensor<2x4x4x4xf32>)
func.func @conv_pool(%x: tensor<2x4x8x8xf32>, %w: tensor<6x2x3x3xf32>, %dy: tensor<2x6x4x4xf32>, %p: tensor<2x4x4x4xf32>) {
  // CHECK: graph.conv2d %[[X]], %[[W]] {dilations = array<i64: 1, 1>, groups = 2 : i64, pads = array<i64: 1, 0, 1, 1>, strides = array<i64: 2, 2>} : tensor<2x4x8x8xf32>, tensor<6x2x3x3xf32> -> tensor<2x6x4x4xf32>
  %0 = graph.conv2d %x, %w {strides = array<i64: 2, 2>, pads = array<i64: 1, 0, 1, 1>, dilations = array<i64: 1, 1>, groups = 2} : tensor<2x4x8x8xf32>, tensor<6x2x3x3xf32> -> tensor<2x6x4x4xf32>
  // CHECK: graph.conv2d_grad_input %[[W]], %[[DY]] {dilations = array<i64: 1, 1>, groups = 2 : i64, pads = array<i64: 1, 0, 1, 1>, strides = array<i64: 2, 2>} : tensor<6x2x3x3xf32>, tensor<2x6x4x4xf32> -> tensor<2x4x8x8xf32>
  %1 = graph.conv2d_grad_input %w, %dy {strides = array<i64: 2, 2>, pads = array<i64: 1, 0, 1, 1>, dilations = array<i64: 1, 1>, groups = 2} : tensor<6x2x3x3xf32>, tensor<2x6x4x4xf32> -> tensor<2x4x8x8xf32>
  // CHECK: graph.conv2d_grad_weight %[[X]], %[[DY]] {dilations = array<i64: 1, 1>, groups = 2 : i64, pads = array<i64: 1, 0, 1, 1>, strides = array<i64: 2, 2>} : tensor<2x4x8x8xf32>, tensor<2x6x4x4xf32> -> tensor<6x2x3x3xf32>
  %2 = graph.conv2d_grad_weight %x, %dy {strides = array<i64: 2, 2>, pads = array<i64: 1, 0, 1, 1>, dilations = array<i64: 1, 1>, groups = 2} : tensor<2x4x8x8xf32>, tensor<2x6x4x4xf32> -> tensor<6x2x3x3xf32>
  // ceil_mode: (8 + 2 - 3) / 2 rounds up to 4, + 1 = 5.
  // CHECK: graph.max_pool2d %[[X]] {ceil_mode = true, dilations = array<i64: 1, 1>, kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : tensor<2x4x8x8xf32> -> tensor<2x4x5x5xf32>
  %3 = graph.max_pool2d %x {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, ceil_mode = true} : tensor<2x4x8x8xf32> -> tensor<2x4x5x5xf32>
  // CHECK: graph.max_pool2d_grad %[[X]], %[[P]] {dilations = array<i64: 1, 1>, kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : tensor<2x4x8x8xf32>, tensor<2x4x4x4xf32> -> tensor<2x4x8x8xf32>
  %4 = graph.max_pool2d_grad %x, %p {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, ceil_mode = false} : tensor<2x4x8x8xf32>, tensor<2x4x4x4xf32> -> tensor<2x4x8x8xf32>
  // CHECK: graph.avg_pool2d %[[X]] {count_include_pad = true, kernel_shape = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>} : tensor<2x4x8x8xf32> -> tensor<2x4x4x4xf32>
  %5 = graph.avg_pool2d %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, count_include_pad = true} : tensor<2x4x8x8xf32> -> tensor<2x4x4x4xf32>
  // CHECK: graph.avg_pool2d_grad %[[P]] {kernel_shape = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>} : tensor<2x4x4x4xf32> -> tensor<2x4x8x8xf32>
  %6 = graph.avg_pool2d_grad %p {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>} : tensor<2x4x4x4xf32> -> tensor<2x4x8x8xf32>
  return
}

// batch_norm over NC and NCHW, its gradient, the running-statistics
// updates, clip and clip_grad, resize_nearest, resize_linear and their
// gradients.
// CHECK-LABEL: func.func @batch_norm_clip_resize
// CHECK-SAME: (%[[X:.*]]: tensor<4x3x2x2xf32>, %[[V:.*]]: tensor<5x3xf32>, %[[C:.*]]: tensor<3xf32>)
func.func @batch_norm_clip_resize(%x: tensor<4x3x2x2xf32>, %v: tensor<5x3xf32>, %c: tensor<3xf32>) {
  // CHECK: graph.batch_norm %[[X]], %[[C]], %[[C]] : tensor<4x3x2x2xf32>, tensor<3xf32>, tensor<3xf32> -> tensor<4x3x2x2xf32>
  %0 = graph.batch_norm %x, %c, %c : tensor<4x3x2x2xf32>, tensor<3xf32>, tensor<3xf32> -> tensor<4x3x2x2xf32>
  // CHECK: graph.batch_norm %[[V]], %[[C]], %[[C]] {epsilon = 1.000000e-03 : f32} : tensor<5x3xf32>, tensor<3xf32>, tensor<3xf32> -> tensor<5x3xf32>
  %1 = graph.batch_norm %v, %c, %c {epsilon = 1.0e-3 : f32} : tensor<5x3xf32>, tensor<3xf32>, tensor<3xf32> -> tensor<5x3xf32>
  // CHECK: graph.batch_norm_grad %[[X]], %[[C]], %[[X]] : tensor<4x3x2x2xf32>, tensor<3xf32>, tensor<4x3x2x2xf32> -> tensor<4x3x2x2xf32>, tensor<3xf32>, tensor<3xf32>
  %2:3 = graph.batch_norm_grad %x, %c, %x : tensor<4x3x2x2xf32>, tensor<3xf32>, tensor<4x3x2x2xf32> -> tensor<4x3x2x2xf32>, tensor<3xf32>, tensor<3xf32>
  // CHECK: graph.running_mean_update %[[C]], %[[X]] {momentum = 0.899999976 : f32} : tensor<3xf32>, tensor<4x3x2x2xf32> -> tensor<3xf32>
  %3 = graph.running_mean_update %c, %x {momentum = 0.9 : f32} : tensor<3xf32>, tensor<4x3x2x2xf32> -> tensor<3xf32>
  // CHECK: graph.running_var_update %[[C]], %[[V]] {momentum = 0.899999976 : f32} : tensor<3xf32>, tensor<5x3xf32> -> tensor<3xf32>
  %4 = graph.running_var_update %c, %v {momentum = 0.9 : f32} : tensor<3xf32>, tensor<5x3xf32> -> tensor<3xf32>
  // CHECK: graph.clip %[[V]] {max = 6.000000e+00 : f32, min = 0.000000e+00 : f32} : tensor<5x3xf32> -> tensor<5x3xf32>
  %5 = graph.clip %v {min = 0.0 : f32, max = 6.0 : f32} : tensor<5x3xf32> -> tensor<5x3xf32>
  // CHECK: graph.clip_grad %[[V]], %[[V]] {max = 6.000000e+00 : f32, min = 0.000000e+00 : f32} : tensor<5x3xf32>, tensor<5x3xf32> -> tensor<5x3xf32>
  %6 = graph.clip_grad %v, %v {min = 0.0 : f32, max = 6.0 : f32} : tensor<5x3xf32>, tensor<5x3xf32> -> tensor<5x3xf32>
  // CHECK: graph.resize_nearest %[[X]] {scales = array<i64: 1, 1, 2, 3>} : tensor<4x3x2x2xf32> -> tensor<4x3x4x6xf32>
  %7 = graph.resize_nearest %x {scales = array<i64: 1, 1, 2, 3>} : tensor<4x3x2x2xf32> -> tensor<4x3x4x6xf32>
  // CHECK: graph.resize_nearest_grad %{{.*}} {scales = array<i64: 1, 1, 2, 3>} : tensor<4x3x4x6xf32> -> tensor<4x3x2x2xf32>
  %8 = graph.resize_nearest_grad %7 {scales = array<i64: 1, 1, 2, 3>} : tensor<4x3x4x6xf32> -> tensor<4x3x2x2xf32>
  // CHECK: graph.resize_linear %[[X]] {align_corners = true, size = array<i64: 5, 3>} : tensor<4x3x2x2xf32> -> tensor<4x3x5x3xf32>
  %9 = graph.resize_linear %x {size = array<i64: 5, 3>, align_corners = true} : tensor<4x3x2x2xf32> -> tensor<4x3x5x3xf32>
  // CHECK: graph.resize_linear_grad %{{.*}} {size = array<i64: 2, 2>} : tensor<4x3x5x3xf32> -> tensor<4x3x2x2xf32>
  %10 = graph.resize_linear_grad %9 {size = array<i64: 2, 2>} : tensor<4x3x5x3xf32> -> tensor<4x3x2x2xf32>
  return
}
