// RUN: remat-opt %s -split-input-file -remat-autodiff -remat-optimizer -remat-schedule -remat-test-print-memory | FileCheck %s

// The memory-aware order: the weight gradient of w2 (dW2 = h^T dy) runs
// before the input gradient dh = dy w2^T, so h (512 B) is freed before dh
// (512 B) exists and dh takes h's bytes. Persistent: x 512 + w1 256 + w2 32
// (aligned to 64) + momentum 256 + 64 = 1216 bytes.
// CHECK-LABEL: memory: peak 2048 at op 8, arena 2048
// CHECK: op 0 forward matmul 'matmul': live 1664
// CHECK: op 2 forward reduce_sum
// The backward starts after the loss, even the parts that need no forward
// value (the gradient of a sum is a broadcast of the seed).
// CHECK: op 3 backward constant
// CHECK: op 6 backward matmul 'd/matmul:matmul': live 1856
// CHECK: op 7 backward matmul 'd/matmul:matmul': live 1856
// CHECK: op 8 backward matmul 'd/matmul:matmul': live 2048
// CHECK: op 9 optimizer sgd_update
// CHECK: op 10 optimizer sgd_update
// h lives from op 0 to dW2 at op 6; dh (op 7) reuses its offset.
// CHECK: buffer 'matmul' activation bytes 512 offset [[H:[0-9]+]] live [0, 6]
// CHECK: buffer 'grad:w2' grad bytes 32 offset {{[0-9]+}} live [6, 10]
// CHECK: buffer 'd/matmul:matmul#1' temporary bytes 512 offset [[H]] live [7, 8]
// In-place updates share their argument's buffer.
// CHECK: buffer 'w1'' param bytes 256 offset 512 live [0, 10] shares 'w1'
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

// -----

// A constant read by a forward op and by the backward: it is placed once,
// right before its first reader, and every op runs once, after its
// operands (the update after the gradient it reads).
// CHECK-LABEL: memory: peak
// CHECK: op 0 forward constant
// CHECK-NEXT: op 1 forward mul
// CHECK-NEXT: op 2 forward mul
// CHECK-NEXT: op 3 forward reduce_sum
// CHECK: op 8 backward mul
// CHECK-NEXT: op 9 optimizer sgd_update
// CHECK-NOT: op 10
module attributes {graph.optimizer = {kind = "sgd", lr = 1.0e-2 : f64, momentum = 9.0e-01 : f64}} {
  func.func @forward(%x: tensor<4xf32> {graph.name = "x", graph.role = "input"},
                     %b: tensor<4xf32> {graph.name = "b", graph.role = "param"}) -> tensor<f32> {
    %c = graph.constant 2.000000e+00 : tensor<4xf32>
    %y = graph.mul %b, %c : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
    %z = graph.mul %y, %x : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
    %l = graph.reduce_sum %z {axes = array<i64: 0>} : tensor<4xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}
