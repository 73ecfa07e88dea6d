// Running statistics through the training-step passes: @forward returns
// the new value of a state argument after the loss; -remat-autodiff gives
// the state no gradient and returns the new value after the gradients;
// -remat-optimizer keeps it last, untouched by the optimizer.
// RUN: remat-opt %s -remat-autodiff | FileCheck %s --check-prefix=GRAD
// RUN: remat-opt %s -remat-autodiff -remat-optimizer | FileCheck %s --check-prefix=OPT
// RUN: remat-opt %s -remat-autodiff -remat-optimizer -verify-each -o %t.once
// RUN: remat-opt %s -remat-autodiff -remat-optimizer -verify-each -o %t.twice
// RUN: diff %t.once %t.twice

// GRAD-LABEL: func.func @train_step
// GRAD-SAME: %[[RM:[^:]*]]: tensor<3xf32> {graph.init = {kind = "zeros"}, graph.name = "rm", graph.role = "state"}
// GRAD-SAME: -> (tensor<f32> {graph.name = "loss", graph.role = "loss"}, tensor<3xf32> {graph.name = "grad:g", graph.param = 1 : i64, graph.role = "grad"}, tensor<3xf32> {graph.name = "grad:b", graph.param = 2 : i64, graph.role = "grad"}, tensor<3xf32> {graph.name = "rm", graph.role = "state", graph.updates = 3 : i64})
// GRAD: %[[Y:.*]] = graph.batch_norm %[[X:[^,]*]],
// GRAD-NEXT: %[[NEWRM:.*]] = graph.running_mean_update %[[RM]], %[[X]] {momentum = 0.899999976 : f32}
// GRAD: graph.batch_norm_grad %[[X]],
// GRAD-NOT: running_mean_update
// GRAD: return %{{.*}}, %{{.*}}, %{{.*}}, %[[NEWRM]] :

// OPT-LABEL: func.func @train_step
// OPT-SAME: -> (tensor<f32> {graph.name = "loss", graph.role = "loss"}, tensor<3xf32> {graph.name = "g", graph.role = "param", graph.updates = 1 : i64}, tensor<3xf32> {graph.name = "b", graph.role = "param", graph.updates = 2 : i64}, tensor<3xf32> {graph.name = "rm", graph.role = "state", graph.updates = 3 : i64})
// OPT: %[[NEWRM:.*]] = graph.running_mean_update
// OPT-NOT: sgd_plain_update %{{.*}}rm
// OPT: return %{{.*}}, %{{.*}}, %{{.*}}, %[[NEWRM]] :
module attributes {graph.optimizer = {kind = "sgd", lr = 1.000000e-01 : f64}} {
  func.func @forward(%x: tensor<4x3xf32> {graph.name = "x", graph.role = "input"},
                     %g: tensor<3xf32> {graph.name = "g", graph.role = "param", graph.init = {kind = "ones"}},
                     %b: tensor<3xf32> {graph.name = "b", graph.role = "param", graph.init = {kind = "zeros"}},
                     %rm: tensor<3xf32> {graph.name = "rm", graph.role = "state", graph.init = {kind = "zeros"}},
                     %t: tensor<4x3xf32> {graph.name = "t", graph.role = "input"})
      -> (tensor<f32>, tensor<3xf32> {graph.name = "rm", graph.role = "state", graph.updates = 3 : i64}) {
    %y = graph.batch_norm %x, %g, %b : tensor<4x3xf32>, tensor<3xf32>, tensor<3xf32> -> tensor<4x3xf32>
    %rm2 = graph.running_mean_update %rm, %x {momentum = 0.9 : f32} : tensor<3xf32>, tensor<4x3xf32> -> tensor<3xf32>
    %loss = graph.mse %y, %t : tensor<4x3xf32>, tensor<4x3xf32> -> tensor<f32>
    return %loss, %rm2 : tensor<f32>, tensor<3xf32>
  }
}
