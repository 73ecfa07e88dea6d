// Graph ops are Pure, optimizer updates included (they return new values),
// so CSE merges duplicates and DCE drops unused results.
// RUN: remat-opt %s -split-input-file -cse -canonicalize | FileCheck %s

// Two identical matmuls become one; the unused relu disappears.
// CHECK-LABEL: func.func @cse_and_dce
// CHECK-SAME: (%[[A:.*]]: tensor<2x3xf32>, %[[B:.*]]: tensor<3x4xf32>)
// CHECK: %[[C:.*]] = graph.matmul %[[A]], %[[B]]
// CHECK-NOT: graph.matmul
// CHECK-NOT: graph.relu
// CHECK: graph.add %[[C]], %[[C]]
func.func @cse_and_dce(%a: tensor<2x3xf32>, %b: tensor<3x4xf32>) -> tensor<2x4xf32> {
  %0 = graph.matmul %a, %b : tensor<2x3xf32>, tensor<3x4xf32> -> tensor<2x4xf32>
  %1 = graph.matmul %a, %b : tensor<2x3xf32>, tensor<3x4xf32> -> tensor<2x4xf32>
  %2 = graph.relu %0 : tensor<2x4xf32> -> tensor<2x4xf32>
  %3 = graph.add %0, %1 : tensor<2x4xf32>, tensor<2x4xf32> -> tensor<2x4xf32>
  return %3 : tensor<2x4xf32>
}

// -----

// An optimizer update whose results are unused is dead code.
// CHECK-LABEL: func.func @dead_update
// CHECK-NOT: graph.sgd_update
// CHECK: return
func.func @dead_update(%p: tensor<4xf32>, %g: tensor<4xf32>, %m: tensor<4xf32>) {
  %0:2 = graph.sgd_update %p, %g, %m {lr = 0.1 : f32, momentum = 0.9 : f32, weight_decay = 0.0 : f32} : tensor<4xf32>, tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>, tensor<4xf32>
  return
}
