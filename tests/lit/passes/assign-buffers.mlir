// RUN: remat-opt %s -remat-autodiff -remat-optimizer -remat-schedule -remat-assign-buffers | FileCheck %s

// Fixed, aligned offsets in one arena (alignment 64). Arguments first, at
// the bottom: x 512 at 0, w1 256 at 512, w2 32 at 768 (64 aligned), the
// momenta at 832 and 1088 (1088 + 64 = 1152). Then the transient buffers,
// largest first, at the lowest offset free over their lifetime: h (512 B)
// at 1152; dh = dy w2^T (512 B) also at 1152, because dW2 (the last reader
// of h) runs before dh is computed. The arena equals the live-bytes lower
// bound, reached while dW1 runs: arguments 1152 + dh 512 + grad:w1 256 +
// grad:w2 64 + loss 64 = 2048, so no byte is lost to fragmentation.
// CHECK-LABEL: plan.arena bytes(2048) alignment(64) loss(@reduce_sum) attributes {remat.live_lower_bound_bytes = 2048 : i64}
// CHECK-NEXT: plan.buffer @x "input" : f32 [16, 8] offset 0 bytes 512
// CHECK-NEXT: plan.buffer @w1 "param" : f32 [8, 8] offset 512 bytes 256 init {kind = "zeros"}
// CHECK-NEXT: plan.buffer @w2 "param" : f32 [8, 1] offset 768 bytes 32
// CHECK-NEXT: plan.buffer @"momentum:w1" "optimizer" : f32 [8, 8] offset 832 bytes 256
// CHECK-NEXT: plan.buffer @"momentum:w2" "optimizer" : f32 [8, 1] offset 1088 bytes 32
// CHECK-NEXT: plan.buffer @matmul "activation" : f32 [16, 8] offset 1152 bytes 512
// CHECK: plan.buffer @"d/matmul:matmul#1" "temporary" : f32 [16, 8] offset 1152 bytes 512
// CHECK: plan.step "matmul" (@matmul, @"d/broadcast_to:broadcast_to") -> (@"grad:w2") phase "backward"
// CHECK-NEXT: plan.free @matmul
// CHECK-NEXT: plan.step "matmul" (@"d/broadcast_to:broadcast_to", @w2) -> (@"d/matmul:matmul#1") phase "backward"
// In-place updates write their argument's buffer; each gradient is freed
// right after its update reads it.
// CHECK: plan.step "sgd_update" (@w1, @"grad:w1", @"momentum:w1") -> (@w1, @"momentum:w1") phase "optimizer"
// CHECK-NEXT: plan.free @"grad:w1"
// CHECK-NOT: func.func
module attributes {graph.optimizer = {kind = "sgd", lr = 1.0e-2 : f64, momentum = 9.0e-01 : f64}} {
  func.func @forward(%x: tensor<16x8xf32> {graph.name = "x", graph.role = "input"},
                     %w1: tensor<8x8xf32> {graph.name = "w1", graph.role = "param"},
                     %w2: tensor<8x1xf32> {graph.name = "w2", graph.role = "param"}) -> tensor<f32> {
    %h = graph.matmul %x, %w1 : tensor<16x8xf32>, tensor<8x8xf32> -> tensor<16x8xf32>
    %y = graph.matmul %h, %w2 : tensor<16x8xf32>, tensor<8x1xf32> -> tensor<16x1xf32>
    %l = graph.reduce_sum %y {axes = array<i64: 0, 1>} : tensor<16x1xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}
