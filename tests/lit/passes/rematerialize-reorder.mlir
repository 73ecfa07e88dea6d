// RUN: remat-opt %s -remat-autodiff -remat-optimizer -remat-test-print-memory | FileCheck %s --check-prefix=GIVEN
// RUN: remat-opt %s -remat-autodiff -remat-optimizer -remat-rematerialize=budget-bytes=42000 -remat-test-print-memory | FileCheck %s --check-prefix=MOVED
// RUN: remat-opt %s -remat-autodiff -remat-optimizer -remat-rematerialize=budget-bytes=42000 | FileCheck %s --check-prefix=IR
// RUN: remat-opt %s -remat-autodiff -remat-optimizer "-remat-rematerialize=budget-bytes=42000 reorder=false" | FileCheck %s --check-prefix=FIXED
// RUN: remat-opt %s -remat-autodiff -remat-optimizer -remat-rematerialize -remat-test-print-memory | FileCheck %s --check-prefix=LEAST
// RUN: remat-opt %s -remat-autodiff -remat-optimizer -remat-rematerialize | FileCheck %s --check-prefix=LEAST-IR

// The planner moves ops, not only recomputes them. The step is given in
// autodiff's order (no -remat-schedule): the 64x64 tanh of xb (16384 bytes)
// comes first but its reduce_sum comes last, so it is live through the
// whole forward. Persistent: x 4096 + xb 16384 + w 1024 + momentum 1024 =
// 22528 bytes.
//
// Given order: at the second reduce_sum the live set is 22528 + tanh(xb)
// 16384 + the chain's two kept activations 2 x 4096 + the two sums 64 + 64.
// GIVEN: memory: peak 47232 at op 6, arena 47232
//
// Budget 42000: the subtree-first order runs the reduce_sum right after
// its tanh, so 16384 bytes die before the chain starts: 22528 + 16384 + 64
// = 38976, nothing recomputed.
// MOVED: memory: peak 38976 at op 1, arena 39040
// MOVED-NEXT: op 0 forward tanh 'tanh': live 38912
// MOVED-NEXT: op 1 forward reduce_sum 'reduce_sum': live 38976
// MOVED-NEXT: op 2 forward matmul 'matmul': live 26688
//
// IR: remat.plan = {{.*}}order = "subtree-first", recompute_overhead = 0.000000e+00
// IR-LABEL: func.func @train_step
// IR: %[[E:.*]] = graph.tanh %arg1 : tensor<64x64xf32>
// IR-NEXT: graph.reduce_sum %[[E]]
// IR-NOT: remat.recompute
//
// Without a budget: nothing recomputed, in the order of least memory, the
// same subtree-first order (38976 against the given order's 47232).
// LEAST: memory: peak 38976 at op 1, arena 39040
// LEAST-IR: remat.plan = {budget_bytes = 0 : i64{{.*}}order = "subtree-first", recompute_overhead = 0.000000e+00{{.*}}solver = "store-all"
// LEAST-IR-NOT: remat.recompute
//
// Keeping the order, the same budget costs recomputation.
// FIXED: remat.plan = {{.*}}order = "given"
// FIXED-LABEL: func.func @train_step
// FIXED: remat.recompute
module attributes {graph.optimizer = {kind = "sgd", lr = 1.0e-2 : f64, momentum = 9.0e-01 : f64}} {
  func.func @forward(%x: tensor<64x16xf32> {graph.name = "x", graph.role = "input"},
                     %xb: tensor<64x64xf32> {graph.name = "xb", graph.role = "input"},
                     %w: tensor<16x16xf32> {graph.name = "w", graph.role = "param"}) -> tensor<f32> {
    %e = graph.tanh %xb : tensor<64x64xf32> -> tensor<64x64xf32>
    %a1 = graph.matmul %x, %w : tensor<64x16xf32>, tensor<16x16xf32> -> tensor<64x16xf32>
    %h1 = graph.tanh %a1 : tensor<64x16xf32> -> tensor<64x16xf32>
    %a2 = graph.matmul %h1, %w : tensor<64x16xf32>, tensor<16x16xf32> -> tensor<64x16xf32>
    %h2 = graph.tanh %a2 : tensor<64x16xf32> -> tensor<64x16xf32>
    %l1 = graph.reduce_sum %h2 {axes = array<i64: 0, 1>} : tensor<64x16xf32> -> tensor<f32>
    %l2 = graph.reduce_sum %e {axes = array<i64: 0, 1>} : tensor<64x64xf32> -> tensor<f32>
    %l = graph.add %l1, %l2 : tensor<f32>, tensor<f32> -> tensor<f32>
    return %l : tensor<f32>
  }
}
