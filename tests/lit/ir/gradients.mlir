// The VJP builders of the forward ops (GradientOpInterface). The test pass
// feeds each op's own results back as its result gradients, so every
// gradient below is built from the forward value %[[Y]]; the verifier then
// checks every built op.
// RUN: remat-opt %s -split-input-file -remat-test-build-gradients | FileCheck %s

// matmul (no transposes): da = dc·bᵀ, db = aᵀ·dc.
// CHECK-LABEL: func.func @matmul
// CHECK-SAME: (%[[A:.*]]: tensor<2x3xf32>, %[[B:.*]]: tensor<3x4xf32>)
// CHECK: %[[Y:.*]] = graph.matmul %[[A]], %[[B]] :
// CHECK-NEXT: graph.matmul %[[Y]], %[[B]] {transpose_b = true} : tensor<2x4xf32>, tensor<3x4xf32> -> tensor<2x3xf32>
// CHECK-NEXT: graph.matmul %[[A]], %[[Y]] {transpose_a = true} : tensor<2x3xf32>, tensor<2x4xf32> -> tensor<3x4xf32>
func.func @matmul(%a: tensor<2x3xf32>, %b: tensor<3x4xf32>) {
  %0 = graph.matmul %a, %b : tensor<2x3xf32>, tensor<3x4xf32> -> tensor<2x4xf32>
  return
}

// -----

// matmul with a shared rank-2 b, transposed: db is one GEMM over the rows
// of dc and a (sum_batch), [4, 3], never a batched [8, 4, 3] summed.
// CHECK-LABEL: func.func @matmul_shared_b
// CHECK-SAME: (%[[A:.*]]: tensor<8x2x3xf32>, %[[B:.*]]: tensor<4x3xf32>)
// CHECK: %[[Y:.*]] = graph.matmul %[[A]], %[[B]] {transpose_b = true}
// CHECK-NEXT: graph.matmul %[[Y]], %[[B]] : tensor<8x2x4xf32>, tensor<4x3xf32> -> tensor<8x2x3xf32>
// CHECK-NEXT: graph.matmul %[[Y]], %[[A]] {sum_batch = true, transpose_a = true} : tensor<8x2x4xf32>, tensor<8x2x3xf32> -> tensor<4x3xf32>
// CHECK-NOT: graph.sum_to
func.func @matmul_shared_b(%a: tensor<8x2x3xf32>, %b: tensor<4x3xf32>) {
  %0 = graph.matmul %a, %b {transpose_b = true} : tensor<8x2x3xf32>, tensor<4x3xf32> -> tensor<8x2x4xf32>
  return
}

// -----

// matmul with both transposes and a shared b: da is built transposed, then
// transposed back (a rank-2 first operand cannot take a batched second).
// CHECK-LABEL: func.func @matmul_transposes
// CHECK-SAME: (%[[A:.*]]: tensor<8x3x2xf32>, %[[B:.*]]: tensor<4x3xf32>)
// CHECK: %[[Y:.*]] = graph.matmul %[[A]], %[[B]] {transpose_a = true, transpose_b = true}
// CHECK-NEXT: %[[DAT:.*]] = graph.matmul %[[Y]], %[[B]] : tensor<8x2x4xf32>, tensor<4x3xf32> -> tensor<8x2x3xf32>
// CHECK-NEXT: graph.transpose %[[DAT]] {permutation = array<i64: 0, 2, 1>} : tensor<8x2x3xf32> -> tensor<8x3x2xf32>
// CHECK-NEXT: %[[DB:.*]] = graph.matmul %[[Y]], %[[A]] {transpose_a = true, transpose_b = true} : tensor<8x2x4xf32>, tensor<8x3x2xf32> -> tensor<8x4x3xf32>
// CHECK-NEXT: graph.sum_to %[[DB]] : tensor<8x4x3xf32> -> tensor<4x3xf32>
func.func @matmul_transposes(%a: tensor<8x3x2xf32>, %b: tensor<4x3xf32>) {
  %0 = graph.matmul %a, %b {transpose_a = true, transpose_b = true} : tensor<8x3x2xf32>, tensor<4x3xf32> -> tensor<8x2x4xf32>
  return
}

// -----

// add: the broadcast operand's gradient is summed back to its shape.
// CHECK-LABEL: func.func @add
// CHECK: %[[Y:.*]] = graph.add
// CHECK-NEXT: graph.sum_to %[[Y]] : tensor<2x3xf32> -> tensor<3xf32>
// CHECK-NEXT: return
func.func @add(%a: tensor<2x3xf32>, %b: tensor<3xf32>) {
  %0 = graph.add %a, %b : tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xf32>
  return
}

// -----

// sub: db is the negated, summed dc.
// CHECK-LABEL: func.func @sub
// CHECK: %[[Y:.*]] = graph.sub
// CHECK-NEXT: %[[S:.*]] = graph.sum_to %[[Y]] : tensor<2x3xf32> -> tensor<1x3xf32>
// CHECK-NEXT: %[[M1:.*]] = graph.constant -1.000000e+00 : tensor<f32>
// CHECK-NEXT: graph.mul %[[S]], %[[M1]] : tensor<1x3xf32>, tensor<f32> -> tensor<1x3xf32>
func.func @sub(%a: tensor<2x3xf32>, %b: tensor<1x3xf32>) {
  %0 = graph.sub %a, %b : tensor<2x3xf32>, tensor<1x3xf32> -> tensor<2x3xf32>
  return
}

// -----

// mul: da = dc·b, db = sum_to(dc·a).
// CHECK-LABEL: func.func @mul
// CHECK-SAME: (%[[A:.*]]: tensor<2x3xf32>, %[[B:.*]]: tensor<3xf32>)
// CHECK: %[[Y:.*]] = graph.mul %[[A]], %[[B]]
// CHECK-NEXT: graph.mul %[[Y]], %[[B]] : tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xf32>
// CHECK-NEXT: %[[DB:.*]] = graph.mul %[[Y]], %[[A]] : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
// CHECK-NEXT: graph.sum_to %[[DB]] : tensor<2x3xf32> -> tensor<3xf32>
func.func @mul(%a: tensor<2x3xf32>, %b: tensor<3xf32>) {
  %0 = graph.mul %a, %b : tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xf32>
  return
}

// -----

// div: da = dc/b, db = -sum_to(dc·c/b).
// CHECK-LABEL: func.func @div
// CHECK-SAME: (%[[A:.*]]: tensor<2x3xf32>, %[[B:.*]]: tensor<3xf32>)
// CHECK: %[[Y:.*]] = graph.div %[[A]], %[[B]]
// CHECK-NEXT: graph.div %[[Y]], %[[B]]
// CHECK-NEXT: %[[DCC:.*]] = graph.mul %[[Y]], %[[Y]]
// CHECK-NEXT: %[[Q:.*]] = graph.div %[[DCC]], %[[B]]
// CHECK-NEXT: %[[S:.*]] = graph.sum_to %[[Q]] : tensor<2x3xf32> -> tensor<3xf32>
// CHECK-NEXT: %[[M1:.*]] = graph.constant -1.000000e+00
// CHECK-NEXT: graph.mul %[[S]], %[[M1]]
func.func @div(%a: tensor<2x3xf32>, %b: tensor<3xf32>) {
  %0 = graph.div %a, %b : tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xf32>
  return
}

// -----

// Unary ops: gelu, gelu_exact and silu from x; relu, tanh and softmax
// from y; exp is dy·y.
// CHECK-LABEL: func.func @unary
// CHECK-SAME: (%[[X:.*]]: tensor<4xf32>)
// CHECK: %[[R:.*]] = graph.relu %[[X]]
// CHECK-NEXT: graph.relu_grad %[[R]], %[[R]]
// CHECK: %[[G:.*]] = graph.gelu %[[X]]
// CHECK-NEXT: graph.gelu_grad %[[X]], %[[G]]
// CHECK: %[[T:.*]] = graph.tanh %[[X]]
// CHECK-NEXT: graph.tanh_grad %[[T]], %[[T]]
// CHECK: %[[E:.*]] = graph.exp %[[X]]
// CHECK-NEXT: graph.mul %[[E]], %[[E]]
// CHECK: %[[S:.*]] = graph.softmax %[[X]]
// CHECK-NEXT: graph.softmax_grad %[[S]], %[[S]]
// CHECK: %[[L:.*]] = graph.silu %[[X]]
// CHECK-NEXT: graph.silu_grad %[[X]], %[[L]]
// CHECK: %[[GE:.*]] = graph.gelu_exact %[[X]]
// CHECK-NEXT: graph.gelu_exact_grad %[[X]], %[[GE]]
func.func @unary(%x: tensor<4xf32>) {
  %0 = graph.relu %x : tensor<4xf32> -> tensor<4xf32>
  %1 = graph.gelu %x : tensor<4xf32> -> tensor<4xf32>
  %2 = graph.tanh %x : tensor<4xf32> -> tensor<4xf32>
  %3 = graph.exp %x : tensor<4xf32> -> tensor<4xf32>
  %4 = graph.softmax %x : tensor<4xf32> -> tensor<4xf32>
  %5 = graph.silu %x : tensor<4xf32> -> tensor<4xf32>
  %6 = graph.gelu_exact %x : tensor<4xf32> -> tensor<4xf32>
  return
}

// -----

// layer_norm: one layer_norm_grad with the same epsilon gives dx, dgamma, dbeta.
// CHECK-LABEL: func.func @layer_norm
// CHECK-SAME: (%[[X:.*]]: tensor<2x8xf32>, %[[G:.*]]: tensor<8xf32>, %[[B:.*]]: tensor<8xf32>)
// CHECK: %[[Y:.*]] = graph.layer_norm %[[X]], %[[G]], %[[B]] {epsilon = 1.000000e-03 : f32}
// CHECK-NEXT: graph.layer_norm_grad %[[X]], %[[G]], %[[Y]] {epsilon = 1.000000e-03 : f32} : tensor<2x8xf32>, tensor<8xf32>, tensor<2x8xf32> -> tensor<2x8xf32>, tensor<8xf32>, tensor<8xf32>
func.func @layer_norm(%x: tensor<2x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>) {
  %0 = graph.layer_norm %x, %g, %b {epsilon = 1.0e-3 : f32} : tensor<2x8xf32>, tensor<8xf32>, tensor<8xf32> -> tensor<2x8xf32>
  return
}

// -----

// embedding: the table gets a scatter-add; the indices get nothing.
// CHECK-LABEL: func.func @embedding
// CHECK-SAME: (%[[T:.*]]: tensor<10x3xf32>, %[[I:.*]]: tensor<2x5xi64>)
// CHECK: %[[Y:.*]] = graph.embedding %[[T]], %[[I]]
// CHECK-NEXT: graph.embedding_grad %[[I]], %[[Y]] : tensor<2x5xi64>, tensor<2x5x3xf32> -> tensor<10x3xf32>
// CHECK-NEXT: return
func.func @embedding(%t: tensor<10x3xf32>, %i: tensor<2x5xi64>) {
  %0 = graph.embedding %t, %i : tensor<10x3xf32>, tensor<2x5xi64> -> tensor<2x5x3xf32>
  return
}

// -----

// reshape and transpose invert themselves; an index reshape has no gradient.
// CHECK-LABEL: func.func @shape_ops
// CHECK: %[[R:.*]] = graph.reshape %{{.*}} : tensor<2x3x4xf32> -> tensor<6x4xf32>
// CHECK-NEXT: graph.reshape %[[R]] : tensor<6x4xf32> -> tensor<2x3x4xf32>
// CHECK: %[[T:.*]] = graph.transpose %{{.*}} {permutation = array<i64: 1, 2, 0>}
// CHECK-NEXT: graph.transpose %[[T]] {permutation = array<i64: 2, 0, 1>} : tensor<3x4x2xf32> -> tensor<2x3x4xf32>
// CHECK: graph.reshape %{{.*}} : tensor<2x5xi64> -> tensor<10xi64>
// CHECK-NEXT: return
func.func @shape_ops(%x: tensor<2x3x4xf32>, %i: tensor<2x5xi64>) {
  %0 = graph.reshape %x : tensor<2x3x4xf32> -> tensor<6x4xf32>
  %1 = graph.transpose %x {permutation = array<i64: 1, 2, 0>} : tensor<2x3x4xf32> -> tensor<3x4x2xf32>
  %2 = graph.reshape %i : tensor<2x5xi64> -> tensor<10xi64>
  return
}

// -----

// convert's gradient converts dy back to x's type.
// CHECK-LABEL: func.func @convert
// CHECK: %[[Y:.*]] = graph.convert %{{.*}} : tensor<2x3xf32> -> tensor<2x3xbf16>
// CHECK-NEXT: graph.convert %[[Y]] : tensor<2x3xbf16> -> tensor<2x3xf32>
func.func @convert(%x: tensor<2x3xf32>) {
  %0 = graph.convert %x : tensor<2x3xf32> -> tensor<2x3xbf16>
  return
}

// -----

// broadcast_to and sum_to are each other's adjoints.
// CHECK-LABEL: func.func @broadcasts
// CHECK: %[[B:.*]] = graph.broadcast_to %{{.*}} : tensor<3xf32> -> tensor<2x3xf32>
// CHECK-NEXT: graph.sum_to %[[B]] : tensor<2x3xf32> -> tensor<3xf32>
// CHECK: %[[S:.*]] = graph.sum_to %{{.*}} : tensor<2x3xf32> -> tensor<1x3xf32>
// CHECK-NEXT: graph.broadcast_to %[[S]] : tensor<1x3xf32> -> tensor<2x3xf32>
func.func @broadcasts(%r: tensor<3xf32>, %x: tensor<2x3xf32>) {
  %0 = graph.broadcast_to %r : tensor<3xf32> -> tensor<2x3xf32>
  %1 = graph.sum_to %x : tensor<2x3xf32> -> tensor<1x3xf32>
  return
}

// -----

// Reductions: dy gets its reduced dims back as 1 (reshape unless keep_dims),
// mean scales by 1/4, then broadcast_to x's shape.
// CHECK-LABEL: func.func @reductions
// CHECK: %[[S:.*]] = graph.reduce_sum %{{.*}} {axes = array<i64: 0, 2>}
// CHECK-NEXT: %[[K:.*]] = graph.reshape %[[S]] : tensor<3xf32> -> tensor<1x3x1xf32>
// CHECK-NEXT: graph.broadcast_to %[[K]] : tensor<1x3x1xf32> -> tensor<2x3x2xf32>
// CHECK: %[[M:.*]] = graph.reduce_mean %{{.*}} {axes = array<i64: 0, 2>, keep_dims = true}
// CHECK-NEXT: %[[Q:.*]] = graph.constant 2.500000e-01 : tensor<f32>
// CHECK-NEXT: %[[MS:.*]] = graph.mul %[[M]], %[[Q]] : tensor<1x3x1xf32>, tensor<f32> -> tensor<1x3x1xf32>
// CHECK-NEXT: graph.broadcast_to %[[MS]] : tensor<1x3x1xf32> -> tensor<2x3x2xf32>
func.func @reductions(%x: tensor<2x3x2xf32>) {
  %0 = graph.reduce_sum %x {axes = array<i64: 0, 2>} : tensor<2x3x2xf32> -> tensor<3xf32>
  %1 = graph.reduce_mean %x {axes = array<i64: 0, 2>, keep_dims = true} : tensor<2x3x2xf32> -> tensor<1x3x1xf32>
  return
}

// -----

// Losses: labels get no gradient; mse's db is -da.
// CHECK-LABEL: func.func @losses
// CHECK-SAME: (%[[L:.*]]: tensor<4x10xf32>, %[[Y:.*]]: tensor<4xi32>, %[[P:.*]]: tensor<4x1xf32>, %[[T:.*]]: tensor<4x1xf32>)
// CHECK: %[[CE:.*]] = graph.cross_entropy %[[L]], %[[Y]]
// CHECK-NEXT: graph.cross_entropy_grad %[[L]], %[[Y]], %[[CE]] : tensor<4x10xf32>, tensor<4xi32>, tensor<f32> -> tensor<4x10xf32>
// CHECK-NEXT: %[[MSE:.*]] = graph.mse %[[P]], %[[T]]
// CHECK-NEXT: %[[DA:.*]] = graph.mse_grad %[[P]], %[[T]], %[[MSE]] : tensor<4x1xf32>, tensor<4x1xf32>, tensor<f32> -> tensor<4x1xf32>
// CHECK-NEXT: %[[M1:.*]] = graph.constant -1.000000e+00
// CHECK-NEXT: graph.mul %[[DA]], %[[M1]]
func.func @losses(%l: tensor<4x10xf32>, %y: tensor<4xi32>, %p: tensor<4x1xf32>, %t: tensor<4x1xf32>) {
  %0 = graph.cross_entropy %l, %y : tensor<4x10xf32>, tensor<4xi32> -> tensor<f32>
  %1 = graph.mse %p, %t : tensor<4x1xf32>, tensor<4x1xf32> -> tensor<f32>
  return
}

// -----

// dropout's gradient is dropout of dy with the same rate and seed (same mask);
// attention's is one attention_grad with the same flags.
// CHECK-LABEL: func.func @dropout_attention
// CHECK: %[[D:.*]] = graph.dropout %{{.*}} {rate = 2.500000e-01 : f32, seed = 7 : i64}
// CHECK-NEXT: graph.dropout %[[D]] {rate = 2.500000e-01 : f32, seed = 7 : i64}
// CHECK: %[[O:.*]] = graph.attention %[[Q:.*]], %[[K:.*]], %[[V:[^ ]*]] {scale
// CHECK-NEXT: graph.attention_grad %[[Q]], %[[K]], %[[V]], %[[O]] {scale = 1.250000e-01 : f32}
func.func @dropout_attention(%x: tensor<4xf32>, %q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>) {
  %0 = graph.dropout %x {rate = 0.25 : f32, seed = 7} : tensor<4xf32> -> tensor<4xf32>
  %1 = graph.attention %q, %k, %v {causal = true, scale = 0.125 : f32} : tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32> -> tensor<1x2x4x8xf32>
  return
}

// -----

// erf from x; pow's dy·(p·x^(p-1)), x itself for p = 2;
// slice places dy with slice_grad; concat slices dc into its two parts.
// CHECK-LABEL: func.func @transformer_ops
// CHECK-SAME: (%[[X:.*]]: tensor<2x6xf32>, %[[B:.*]]: tensor<2x2xf32>)
// CHECK: %[[E:.*]] = graph.erf %[[X]]
// CHECK-NEXT: graph.erf_grad %[[X]], %[[E]]
// CHECK: %[[P:.*]] = graph.pow %[[X]] {exponent = 3.000000e+00 : f32}
// CHECK-NEXT: %[[SQ:.*]] = graph.pow %[[X]] {exponent = 2.000000e+00 : f32}
// CHECK-NEXT: %[[THREE:.*]] = graph.constant 3.000000e+00
// CHECK-NEXT: %[[D3:.*]] = graph.mul %[[SQ]], %[[THREE]]
// CHECK-NEXT: graph.mul %[[P]], %[[D3]]
// CHECK: %[[Q:.*]] = graph.pow %[[X]] {exponent = 2.000000e+00 : f32}
// CHECK-NEXT: %[[TWO2:.*]] = graph.constant 2.000000e+00
// CHECK-NEXT: %[[D2:.*]] = graph.mul %[[X]], %[[TWO2]]
// CHECK-NEXT: graph.mul %[[Q]], %[[D2]]
// CHECK: %[[L:.*]] = graph.slice %[[X]] {ends = array<i64: 2, 5>, starts = array<i64: 0, 1>, steps = array<i64: 1, 2>}
// CHECK-NEXT: graph.slice_grad %[[L]] {ends = array<i64: 2, 5>, starts = array<i64: 0, 1>, steps = array<i64: 1, 2>} : tensor<2x2xf32> -> tensor<2x6xf32>
// CHECK: %[[C:.*]] = graph.concat %[[X]], %[[B]] {axis = 1 : i64}
// CHECK-NEXT: graph.slice %[[C]] {ends = array<i64: 2, 6>, starts = array<i64: 0, 0>, steps = array<i64: 1, 1>} : tensor<2x8xf32> -> tensor<2x6xf32>
// CHECK-NEXT: graph.slice %[[C]] {ends = array<i64: 2, 8>, starts = array<i64: 0, 6>, steps = array<i64: 1, 1>} : tensor<2x8xf32> -> tensor<2x2xf32>
func.func @transformer_ops(%x: tensor<2x6xf32>, %b: tensor<2x2xf32>) {
  %0 = graph.erf %x : tensor<2x6xf32> -> tensor<2x6xf32>
  %2 = graph.pow %x {exponent = 3.0 : f32} : tensor<2x6xf32> -> tensor<2x6xf32>
  %3 = graph.pow %x {exponent = 2.0 : f32} : tensor<2x6xf32> -> tensor<2x6xf32>
  %4 = graph.slice %x {starts = array<i64: 0, 1>, ends = array<i64: 2, 5>, steps = array<i64: 1, 2>} : tensor<2x6xf32> -> tensor<2x2xf32>
  %5 = graph.concat %x, %b {axis = 1} : tensor<2x6xf32>, tensor<2x2xf32> -> tensor<2x8xf32>
  return
}

// conv2d: dx = conv2d_grad_input(w, dy), dw = conv2d_grad_weight(x, dy), with
// the forward's attributes and the operands' types as result types.
// CHECK-LABEL: func.func @conv2d
// CHECK-SAME: (%[[X:.*]]: tensor<1x4x6x6xf32>, %[[W:.*]]: tensor<2x2x3x3xf32>)
// CHECK: %[[Y:.*]] = graph.conv2d %[[X]], %[[W]]
// CHECK-NEXT: graph.conv2d_grad_input %[[W]], %[[Y]] {dilations = array<i64: 1, 1>, groups = 2 : i64, pads = array<i64: 1, 1, 0, 0>, strides = array<i64: 2, 2>} : tensor<2x2x3x3xf32>, tensor<1x2x3x3xf32> -> tensor<1x4x6x6xf32>
// CHECK-NEXT: graph.conv2d_grad_weight %[[X]], %[[Y]] {dilations = array<i64: 1, 1>, groups = 2 : i64, pads = array<i64: 1, 1, 0, 0>, strides = array<i64: 2, 2>} : tensor<1x4x6x6xf32>, tensor<1x2x3x3xf32> -> tensor<2x2x3x3xf32>
func.func @conv2d(%x: tensor<1x4x6x6xf32>, %w: tensor<2x2x3x3xf32>) {
  %0 = graph.conv2d %x, %w {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 0, 0>, dilations = array<i64: 1, 1>, groups = 2} : tensor<1x4x6x6xf32>, tensor<2x2x3x3xf32> -> tensor<1x2x3x3xf32>
  return
}

// -----

// batch_norm: one batch_norm_grad with the same epsilon, from x (not y):
// the statistics are recomputed.
// CHECK-LABEL: func.func @batch_norm
// CHECK-SAME: (%[[X:.*]]: tensor<4x3x2x2xf32>, %[[G:.*]]: tensor<3xf32>, %[[B:.*]]: tensor<3xf32>)
// CHECK: %[[Y:.*]] = graph.batch_norm %[[X]], %[[G]], %[[B]] {epsilon = 1.000000e-03 : f32}
// CHECK-NEXT: graph.batch_norm_grad %[[X]], %[[G]], %[[Y]] {epsilon = 1.000000e-03 : f32} : tensor<4x3x2x2xf32>, tensor<3xf32>, tensor<4x3x2x2xf32> -> tensor<4x3x2x2xf32>, tensor<3xf32>, tensor<3xf32>
func.func @batch_norm(%x: tensor<4x3x2x2xf32>, %g: tensor<3xf32>, %b: tensor<3xf32>) {
  %0 = graph.batch_norm %x, %g, %b {epsilon = 1.0e-3 : f32} : tensor<4x3x2x2xf32>, tensor<3xf32>, tensor<3xf32> -> tensor<4x3x2x2xf32>
  return
}

// -----

// Pools: max_pool2d_grad recomputes the argmax from x; avg_pool2d_grad takes
// only dy and has x's type.
// CHECK-LABEL: func.func @pools
// CHECK-SAME: (%[[X:.*]]: tensor<1x2x6x6xf32>)
// CHECK: %[[M:.*]] = graph.max_pool2d %[[X]]
// CHECK-NEXT: graph.max_pool2d_grad %[[X]], %[[M]] {ceil_mode = true, dilations = array<i64: 1, 1>, kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : tensor<1x2x6x6xf32>, tensor<1x2x4x4xf32> -> tensor<1x2x6x6xf32>
// CHECK: %[[A:.*]] = graph.avg_pool2d %[[X]]
// CHECK-NEXT: graph.avg_pool2d_grad %[[A]] {count_include_pad = true, kernel_shape = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>} : tensor<1x2x3x3xf32> -> tensor<1x2x6x6xf32>
func.func @pools(%x: tensor<1x2x6x6xf32>) {
  %0 = graph.max_pool2d %x {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, ceil_mode = true} : tensor<1x2x6x6xf32> -> tensor<1x2x4x4xf32>
  %1 = graph.avg_pool2d %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, count_include_pad = true} : tensor<1x2x6x6xf32> -> tensor<1x2x3x3xf32>
  return
}

// -----

// clip: clip_grad from y with the same bounds.
// CHECK-LABEL: func.func @clip
// CHECK-SAME: (%[[X:.*]]: tensor<2x3xf32>)
// CHECK: %[[Y:.*]] = graph.clip %[[X]]
// CHECK-NEXT: graph.clip_grad %[[Y]], %[[Y]] {max = 6.000000e+00 : f32, min = 0.000000e+00 : f32} : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
func.func @clip(%x: tensor<2x3xf32>) {
  %0 = graph.clip %x {min = 0.0 : f32, max = 6.0 : f32} : tensor<2x3xf32> -> tensor<2x3xf32>
  return
}

// -----

// resize_nearest: the gradient sums the copies back to x's shape.
// CHECK-LABEL: func.func @resize_nearest
// CHECK-SAME: (%[[X:.*]]: tensor<1x2x3x3xf32>)
// CHECK: %[[Y:.*]] = graph.resize_nearest %[[X]]
// CHECK-NEXT: graph.resize_nearest_grad %[[Y]] {scales = array<i64: 1, 1, 2, 2>} : tensor<1x2x6x6xf32> -> tensor<1x2x3x3xf32>
func.func @resize_nearest(%x: tensor<1x2x3x3xf32>) {
  %0 = graph.resize_nearest %x {scales = array<i64: 1, 1, 2, 2>} : tensor<1x2x3x3xf32> -> tensor<1x2x6x6xf32>
  return
}

// -----

// resize_linear: the gradient scatters back to x's spatial size, with the
// forward's coordinate mode.
// CHECK-LABEL: func.func @resize_linear
// CHECK-SAME: (%[[X:.*]]: tensor<1x2x3x3xf32>)
// CHECK: %[[Y:.*]] = graph.resize_linear %[[X]]
// CHECK-NEXT: graph.resize_linear_grad %[[Y]] {align_corners = true, size = array<i64: 3, 3>} : tensor<1x2x7x5xf32> -> tensor<1x2x3x3xf32>
func.func @resize_linear(%x: tensor<1x2x3x3xf32>) {
  %0 = graph.resize_linear %x {size = array<i64: 7, 5>, align_corners = true} : tensor<1x2x3x3xf32> -> tensor<1x2x7x5xf32>
  return
}
