// RUN: remat-opt %s -remat-autodiff -remat-optimizer -remat-schedule -remat-test-print-memory | FileCheck %s --check-prefix=ALL
// RUN: remat-opt %s -remat-autodiff -remat-optimizer -remat-schedule -remat-rematerialize=budget-bytes=20000 -remat-test-print-memory | FileCheck %s --check-prefix=BUDGET
// RUN: remat-opt %s -remat-autodiff -remat-optimizer -remat-schedule -remat-rematerialize=budget-bytes=20000 | FileCheck %s --check-prefix=IR
// RUN: not remat-opt %s -remat-autodiff -remat-optimizer -remat-schedule -remat-rematerialize=budget-bytes=18000 2>&1 | FileCheck %s --check-prefix=TOOSMALL

// Four tanh layers sharing w. Persistent: x 4096 + w 1024 + momentum 1024
// = 6144 bytes; every activation is 64x16 f32 = 4096 bytes.
//
// Store-all: at op 14 (the first input gradient of layer 4) the live set is
// persistent 6144 + a1..a4 kept through their tanh (each tanh reuses its
// matmul's bytes: 4 x 4096) + the seed broadcast 4096 + dy of tanh_grad
// 4096 + the new gradient 4096 + the loss and seed 64 + 64 = 27712 bytes.
// ALL: memory: peak 27712 at op 14, arena 27712
//
// A budget of 20000 bytes (72% of store-all): h1 and h2 are dropped after
// the forward uses them and recomputed in the backward from x (the only
// checkpoint); the peak falls to 6144 + 3 x 4096 + 1088 + ... = 19520.
// BUDGET: memory: peak 19520 at op 14, arena 19520
// BUDGET: op 3 forward tanh 'tanh': live 10240
// BUDGET: op 16 forward matmul 'matmul': live 15424
// BUDGET: op 24 forward matmul 'matmul': live 15424
// BUDGET: op 32 optimizer sgd_update
//
// Recomputations are clones tagged remat.recompute, read by the backward.
// IR-LABEL: func.func @train_step
// IR-COUNT-6: remat.recompute
// IR-NOT: remat.recompute
// IR: graph.sgd_update
//
// Below the minimum the error names the smallest budget that works.
// TOOSMALL: error: no schedule fits the budget of 18000 bytes; minimum feasible budget: {{[0-9]+}} bytes
module attributes {graph.optimizer = {kind = "sgd", lr = 1.0e-2 : f64, momentum = 9.0e-01 : f64}} {
  func.func @forward(%x: tensor<64x16xf32> {graph.name = "x", graph.role = "input"},
                     %w: tensor<16x16xf32> {graph.name = "w", graph.role = "param"}) -> tensor<f32> {
    %a1 = graph.matmul %x, %w : tensor<64x16xf32>, tensor<16x16xf32> -> tensor<64x16xf32>
    %h1 = graph.tanh %a1 : tensor<64x16xf32> -> tensor<64x16xf32>
    %a2 = graph.matmul %h1, %w : tensor<64x16xf32>, tensor<16x16xf32> -> tensor<64x16xf32>
    %h2 = graph.tanh %a2 : tensor<64x16xf32> -> tensor<64x16xf32>
    %a3 = graph.matmul %h2, %w : tensor<64x16xf32>, tensor<16x16xf32> -> tensor<64x16xf32>
    %h3 = graph.tanh %a3 : tensor<64x16xf32> -> tensor<64x16xf32>
    %a4 = graph.matmul %h3, %w : tensor<64x16xf32>, tensor<16x16xf32> -> tensor<64x16xf32>
    %h4 = graph.tanh %a4 : tensor<64x16xf32> -> tensor<64x16xf32>
    %l = graph.reduce_sum %h4 {axes = array<i64: 0, 1>} : tensor<64x16xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}
