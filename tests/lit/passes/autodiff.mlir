// -remat-autodiff: @forward (returns the loss) becomes @train_step, which
// returns the loss and the gradient of every param in argument order.
// RUN: remat-opt %s -split-input-file -remat-autodiff | FileCheck %s
// The output is valid IR and deterministic.
// RUN: remat-opt %s -split-input-file -remat-autodiff -verify-each -o %t.once
// RUN: remat-opt %s -split-input-file -remat-autodiff -verify-each -o %t.twice
// RUN: diff %t.once %t.twice

// A linear layer with mse: dW = xᵀ·dy (transpose_a), the bias gradient sums
// dy over the batch (sum_to), and the input x gets no gradient (no
// dy·Wᵀ). The signature keeps the argument attributes and gains the result
// attributes of the contract.
// CHECK-LABEL: func.func @train_step
// CHECK-SAME: (%[[X:.*]]: tensor<8x4xf32> {graph.name = "x", graph.role = "input"}, %[[T:.*]]: tensor<8x2xf32> {graph.name = "t", graph.role = "input"}, %[[W:.*]]: tensor<4x2xf32> {graph.init = {kind = "zeros"}, graph.name = "w", graph.role = "param"}, %[[B:.*]]: tensor<2xf32> {graph.init = {kind = "zeros"}, graph.name = "b", graph.role = "param"})
// CHECK-SAME: -> (tensor<f32> {graph.name = "loss", graph.role = "loss"}, tensor<4x2xf32> {graph.name = "grad:w", graph.param = 2 : i64, graph.role = "grad"}, tensor<2xf32> {graph.name = "grad:b", graph.param = 3 : i64, graph.role = "grad"})
// CHECK: %[[H:.*]] = graph.matmul %[[X]], %[[W]] :
// CHECK-NEXT: %[[Y:.*]] = graph.add %[[H]], %[[B]] :
// CHECK-NEXT: %[[LOSS:.*]] = graph.mse %[[Y]], %[[T]] :
// CHECK-NEXT: %[[SEED:.*]] = graph.constant 1.000000e+00 : tensor<f32>
// CHECK-NEXT: %[[DY:.*]] = graph.mse_grad %[[Y]], %[[T]], %[[SEED]] :
// CHECK-NEXT: %[[DB:.*]] = graph.sum_to %[[DY]] : tensor<8x2xf32> -> tensor<2xf32>
// CHECK-NEXT: %[[DW:.*]] = graph.matmul %[[X]], %[[DY]] {transpose_a = true} : tensor<8x4xf32>, tensor<8x2xf32> -> tensor<4x2xf32>
// CHECK-NEXT: return %[[LOSS]], %[[DW]], %[[DB]] : tensor<f32>, tensor<4x2xf32>, tensor<2xf32>
// CHECK-NOT: @forward
func.func @forward(%x: tensor<8x4xf32> {graph.name = "x", graph.role = "input"},
                   %t: tensor<8x2xf32> {graph.name = "t", graph.role = "input"},
                   %w: tensor<4x2xf32> {graph.name = "w", graph.role = "param", graph.init = {kind = "zeros"}},
                   %b: tensor<2xf32> {graph.name = "b", graph.role = "param", graph.init = {kind = "zeros"}}) -> tensor<f32> {
  %h = graph.matmul %x, %w : tensor<8x4xf32>, tensor<4x2xf32> -> tensor<8x2xf32>
  %y = graph.add %h, %b : tensor<8x2xf32>, tensor<2xf32> -> tensor<8x2xf32>
  %loss = graph.mse %y, %t : tensor<8x2xf32>, tensor<8x2xf32> -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// Two layers: the hidden activation's gradient is dX = dy·W2ᵀ (transpose_b),
// then relu_grad (of relu's output), then dW1 = xᵀ·dh; backward ops follow
// the forward in reverse order.
// CHECK-LABEL: func.func @train_step
// CHECK-SAME: (%[[X:.*]]: tensor<8x4xf32> {{.*}}, %[[T:.*]]: tensor<8x2xf32> {{.*}}, %[[W1:.*]]: tensor<4x3xf32> {{.*}}, %[[W2:.*]]: tensor<3x2xf32> {{.*}})
// CHECK: %[[H:.*]] = graph.matmul %[[X]], %[[W1]] :
// CHECK-NEXT: %[[R:.*]] = graph.relu %[[H]] :
// CHECK-NEXT: %[[Y:.*]] = graph.matmul %[[R]], %[[W2]] :
// CHECK-NEXT: %[[LOSS:.*]] = graph.mse %[[Y]], %[[T]] :
// CHECK-NEXT: %[[SEED:.*]] = graph.constant 1.000000e+00
// CHECK-NEXT: %[[DY:.*]] = graph.mse_grad %[[Y]], %[[T]], %[[SEED]] :
// CHECK-NEXT: %[[DR:.*]] = graph.matmul %[[DY]], %[[W2]] {transpose_b = true} : tensor<8x2xf32>, tensor<3x2xf32> -> tensor<8x3xf32>
// CHECK-NEXT: %[[DW2:.*]] = graph.matmul %[[R]], %[[DY]] {transpose_a = true} : tensor<8x3xf32>, tensor<8x2xf32> -> tensor<3x2xf32>
// CHECK-NEXT: %[[DH:.*]] = graph.relu_grad %[[R]], %[[DR]] :
// CHECK-NEXT: %[[DW1:.*]] = graph.matmul %[[X]], %[[DH]] {transpose_a = true} : tensor<8x4xf32>, tensor<8x3xf32> -> tensor<4x3xf32>
// CHECK-NEXT: return %[[LOSS]], %[[DW1]], %[[DW2]] :
func.func @forward(%x: tensor<8x4xf32> {graph.name = "x", graph.role = "input"},
                   %t: tensor<8x2xf32> {graph.name = "t", graph.role = "input"},
                   %w1: tensor<4x3xf32> {graph.name = "w1", graph.role = "param"},
                   %w2: tensor<3x2xf32> {graph.name = "w2", graph.role = "param"}) -> tensor<f32> {
  %h = graph.matmul %x, %w1 : tensor<8x4xf32>, tensor<4x3xf32> -> tensor<8x3xf32>
  %r = graph.relu %h : tensor<8x3xf32> -> tensor<8x3xf32>
  %y = graph.matmul %r, %w2 : tensor<8x3xf32>, tensor<3x2xf32> -> tensor<8x2xf32>
  %loss = graph.mse %y, %t : tensor<8x2xf32>, tensor<8x2xf32> -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// Fan-out: %h feeds relu and tanh, so its gradient is the sum of both
// contributions, in reverse op order (tanh's first); the param %w, used by
// two ops, gets a sum as well.
// CHECK-LABEL: func.func @train_step
// CHECK-SAME: (%[[T:.*]]: tensor<4xf32> {{.*}}, %[[W:.*]]: tensor<4xf32> {{.*}})
// CHECK: %[[H:.*]] = graph.mul %[[W]], %[[W]] :
// CHECK-NEXT: %[[A:.*]] = graph.relu %[[H]] :
// CHECK-NEXT: %[[B:.*]] = graph.tanh %[[H]] :
// CHECK-NEXT: %[[S:.*]] = graph.add %[[A]], %[[B]] :
// CHECK-NEXT: graph.mse %[[S]], %[[T]] :
// CHECK-NEXT: %[[SEED:.*]] = graph.constant 1.000000e+00
// CHECK-NEXT: %[[DS:.*]] = graph.mse_grad %[[S]], %[[T]], %[[SEED]] :
// CHECK-NEXT: %[[DH1:.*]] = graph.tanh_grad %[[B]], %[[DS]] :
// CHECK-NEXT: %[[DH2:.*]] = graph.relu_grad %[[A]], %[[DS]] :
// CHECK-NEXT: %[[DH:.*]] = graph.add %[[DH1]], %[[DH2]] :
// CHECK-NEXT: %[[DW1:.*]] = graph.mul %[[DH]], %[[W]] :
// CHECK-NEXT: %[[DW2:.*]] = graph.mul %[[DH]], %[[W]] :
// CHECK-NEXT: %[[DW:.*]] = graph.add %[[DW1]], %[[DW2]] :
// CHECK-NEXT: return {{.*}}, %[[DW]] :
func.func @forward(%t: tensor<4xf32> {graph.name = "t", graph.role = "input"},
                   %w: tensor<4xf32> {graph.name = "w", graph.role = "param"}) -> tensor<f32> {
  %h = graph.mul %w, %w : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %a = graph.relu %h : tensor<4xf32> -> tensor<4xf32>
  %b = graph.tanh %h : tensor<4xf32> -> tensor<4xf32>
  %s = graph.add %a, %b : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %loss = graph.mse %s, %t : tensor<4xf32>, tensor<4xf32> -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// Inputs get no gradient: nothing is built for the op that only touches
// the input (exp of %x), nor for the input operand of the mul.
// CHECK-LABEL: func.func @train_step
// CHECK-SAME: (%[[X:.*]]: tensor<4xf32> {{.*}}, %[[W:.*]]: tensor<4xf32> {{.*}}) -> (tensor<f32> {{.*}}, tensor<4xf32> {{.*}})
// CHECK: %[[E:.*]] = graph.exp %[[X]] :
// CHECK-NEXT: %[[Y:.*]] = graph.mul %[[E]], %[[W]] :
// CHECK-NEXT: %[[LOSS:.*]] = graph.mse %[[Y]], %[[X]] :
// CHECK-NEXT: %[[SEED:.*]] = graph.constant 1.000000e+00
// CHECK-NEXT: %[[DY:.*]] = graph.mse_grad %[[Y]], %[[X]], %[[SEED]] :
// CHECK-NEXT: %[[DW:.*]] = graph.mul %[[DY]], %[[E]] :
// CHECK-NEXT: return %[[LOSS]], %[[DW]] :
func.func @forward(%x: tensor<4xf32> {graph.name = "x", graph.role = "input"},
                   %w: tensor<4xf32> {graph.name = "w", graph.role = "param"}) -> tensor<f32> {
  %e = graph.exp %x : tensor<4xf32> -> tensor<4xf32>
  %y = graph.mul %e, %w : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %loss = graph.mse %y, %x : tensor<4xf32>, tensor<4xf32> -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// A param that does not reach the loss gets a zero gradient of its type;
// its forward op stays and gets no backward.
// CHECK-LABEL: func.func @train_step
// CHECK-SAME: -> (tensor<f32> {{.*}}, tensor<4xf32> {graph.name = "grad:w", graph.param = 1 : i64, graph.role = "grad"}, tensor<2x3xf32> {graph.name = "grad:unused", graph.param = 2 : i64, graph.role = "grad"})
// CHECK: graph.relu
// CHECK-NOT: graph.relu_grad
// CHECK: %[[ZERO:.*]] = graph.constant 0.000000e+00 : tensor<2x3xf32>
// CHECK-NEXT: return %{{.*}}, %{{.*}}, %[[ZERO]] :
func.func @forward(%x: tensor<4xf32> {graph.name = "x", graph.role = "input"},
                   %w: tensor<4xf32> {graph.name = "w", graph.role = "param"},
                   %unused: tensor<2x3xf32> {graph.name = "unused", graph.role = "param"}) -> tensor<f32> {
  %dead = graph.relu %unused : tensor<2x3xf32> -> tensor<2x3xf32>
  %loss = graph.mse %w, %x : tensor<4xf32>, tensor<4xf32> -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// cross_entropy with i32 labels and an embedding with i64 indices: the
// labels and indices get no gradient; the table gets embedding_grad; the
// head, shared by every batch, gets one GEMM over the rows (sum_batch), no
// batched temporary summed with sum_to.
// CHECK-LABEL: func.func @train_step
// CHECK-SAME: (%[[IDS:.*]]: tensor<2x5xi64> {{.*}}, %[[LABELS:.*]]: tensor<2x5xi32> {{.*}}, %[[TABLE:.*]]: tensor<10x8xf32> {{.*}}, %[[HEAD:.*]]: tensor<8x7xf32> {{.*}})
// CHECK: %[[E:.*]] = graph.embedding %[[TABLE]], %[[IDS]] :
// CHECK-NEXT: %[[LOGITS:.*]] = graph.matmul %[[E]], %[[HEAD]] :
// CHECK-NEXT: %[[LOSS:.*]] = graph.cross_entropy %[[LOGITS]], %[[LABELS]] :
// CHECK-NEXT: %[[SEED:.*]] = graph.constant 1.000000e+00
// CHECK-NEXT: %[[DLOGITS:.*]] = graph.cross_entropy_grad %[[LOGITS]], %[[LABELS]], %[[SEED]] : tensor<2x5x7xf32>, tensor<2x5xi32>, tensor<f32> -> tensor<2x5x7xf32>
// CHECK-NEXT: %[[DE:.*]] = graph.matmul %[[DLOGITS]], %[[HEAD]] {transpose_b = true} :
// CHECK-NEXT: %[[DHEAD:.*]] = graph.matmul %[[E]], %[[DLOGITS]] {sum_batch = true, transpose_a = true} : tensor<2x5x8xf32>, tensor<2x5x7xf32> -> tensor<8x7xf32>
// CHECK-NEXT: %[[DTABLE:.*]] = graph.embedding_grad %[[IDS]], %[[DE]] : tensor<2x5xi64>, tensor<2x5x8xf32> -> tensor<10x8xf32>
// CHECK-NEXT: return %[[LOSS]], %[[DTABLE]], %[[DHEAD]] :
func.func @forward(%ids: tensor<2x5xi64> {graph.name = "ids", graph.role = "input"},
                   %labels: tensor<2x5xi32> {graph.name = "labels", graph.role = "input"},
                   %table: tensor<10x8xf32> {graph.name = "table", graph.role = "param"},
                   %head: tensor<8x7xf32> {graph.name = "head", graph.role = "param"}) -> tensor<f32> {
  %e = graph.embedding %table, %ids : tensor<10x8xf32>, tensor<2x5xi64> -> tensor<2x5x8xf32>
  %logits = graph.matmul %e, %head : tensor<2x5x8xf32>, tensor<8x7xf32> -> tensor<2x5x7xf32>
  %loss = graph.cross_entropy %logits, %labels : tensor<2x5x7xf32>, tensor<2x5xi32> -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// Other module contents stay; only @forward is replaced.
// CHECK-LABEL: func.func @helper
// CHECK-LABEL: func.func @train_step
// CHECK-SAME: (%[[W:.*]]: tensor<f32> {{.*}}) -> (tensor<f32> {{.*}}, tensor<f32> {{.*}})
// CHECK-NEXT: %[[LOSS:.*]] = graph.mse %[[W]], %[[W]] :
// CHECK-NEXT: %[[SEED:.*]] = graph.constant 1.000000e+00
// CHECK-NEXT: %[[DA:.*]] = graph.mse_grad %[[W]], %[[W]], %[[SEED]] :
// CHECK-NEXT: %[[MINUS:.*]] = graph.constant -1.000000e+00 : tensor<f32>
// CHECK-NEXT: %[[DB:.*]] = graph.mul %[[DA]], %[[MINUS]] :
// CHECK-NEXT: %[[DW:.*]] = graph.add %[[DA]], %[[DB]] :
// CHECK-NEXT: return %[[LOSS]], %[[DW]] :
func.func @helper() {
  return
}
func.func @forward(%w: tensor<f32> {graph.name = "w", graph.role = "param"}) -> tensor<f32> {
  %loss = graph.mse %w, %w : tensor<f32>, tensor<f32> -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// --precision bf16: a parameter's bf16 copy read by one matmul (w1) gets
// its float32 gradient from that matmul itself (bf16 operands, a float32
// result); the bf16 copy of an activation (r) keeps a bf16 gradient
// converted back, and a copy read by two matmuls (w2) the sum of two bf16
// gradients, converted.
// CHECK-LABEL: func.func @train_step
// CHECK-SAME: (%[[X:.*]]: tensor<8x4xbf16> {{.*}}, %[[T:.*]]: tensor<8x2xf32> {{.*}}, %[[W1:.*]]: tensor<4x3xf32> {{.*}}, %[[W2:.*]]: tensor<3x3xf32> {{.*}})
// CHECK: %[[W2B:.*]] = graph.convert %[[W2]] : tensor<3x3xf32> -> tensor<3x3xbf16>
// CHECK: %[[DW2A:.*]] = graph.matmul %{{.*}}, %{{.*}} {transpose_a = true} : tensor<8x3xbf16>, tensor<8x3xbf16> -> tensor<3x3xbf16>
// CHECK-NEXT: %[[DR:.*]] = graph.matmul %{{.*}}, %[[W2B]] {transpose_b = true} : tensor<8x3xbf16>, tensor<3x3xbf16> -> tensor<8x3xbf16>
// CHECK-NEXT: %[[DW2B:.*]] = graph.matmul %{{.*}}, %{{.*}} {transpose_a = true} : tensor<8x3xbf16>, tensor<8x3xbf16> -> tensor<3x3xbf16>
// CHECK-NEXT: %[[DW2:.*]] = graph.add %[[DW2A]], %[[DW2B]] : tensor<3x3xbf16>, tensor<3x3xbf16> -> tensor<3x3xbf16>
// CHECK-NEXT: %[[DW2F:.*]] = graph.convert %[[DW2]] : tensor<3x3xbf16> -> tensor<3x3xf32>
// CHECK-NEXT: graph.convert %[[DR]] : tensor<8x3xbf16> -> tensor<8x3xf32>
// CHECK: %[[DW1:.*]] = graph.matmul %[[X]], %{{.*}} {transpose_a = true} : tensor<8x4xbf16>, tensor<8x3xbf16> -> tensor<4x3xf32>
// CHECK-NEXT: return %{{.*}}, %[[DW1]], %[[DW2F]] :
func.func @forward(%x: tensor<8x4xbf16> {graph.name = "x", graph.role = "input"},
                   %t: tensor<8x2xf32> {graph.name = "t", graph.role = "input"},
                   %w1: tensor<4x3xf32> {graph.name = "w1", graph.role = "param"},
                   %w2: tensor<3x3xf32> {graph.name = "w2", graph.role = "param"}) -> tensor<f32> {
  %w1b = graph.convert %w1 : tensor<4x3xf32> -> tensor<4x3xbf16>
  %h = graph.matmul %x, %w1b : tensor<8x4xbf16>, tensor<4x3xbf16> -> tensor<8x3xbf16>
  %hf = graph.convert %h : tensor<8x3xbf16> -> tensor<8x3xf32>
  %r = graph.relu %hf : tensor<8x3xf32> -> tensor<8x3xf32>
  %rb = graph.convert %r : tensor<8x3xf32> -> tensor<8x3xbf16>
  %w2b = graph.convert %w2 : tensor<3x3xf32> -> tensor<3x3xbf16>
  %g = graph.matmul %rb, %w2b : tensor<8x3xbf16>, tensor<3x3xbf16> -> tensor<8x3xbf16>
  %u = graph.matmul %g, %w2b : tensor<8x3xbf16>, tensor<3x3xbf16> -> tensor<8x3xbf16>
  %uf = graph.convert %u : tensor<8x3xbf16> -> tensor<8x3xf32>
  %y = graph.slice %uf {starts = array<i64: 0, 0>, ends = array<i64: 8, 2>, steps = array<i64: 1, 1>} : tensor<8x3xf32> -> tensor<8x2xf32>
  %loss = graph.mse %y, %t : tensor<8x2xf32>, tensor<8x2xf32> -> tensor<f32>
  return %loss : tensor<f32>
}
