// -remat-optimizer: @train_step's gradients become in-place optimizer updates
// on new state arguments; the function returns the loss, the new params and
// the new state.
// RUN: remat-opt %s -split-input-file -remat-optimizer | FileCheck %s
// The output is valid IR and deterministic.
// RUN: remat-opt %s -split-input-file -remat-optimizer -verify-each -o %t.once
// RUN: remat-opt %s -split-input-file -remat-optimizer -verify-each -o %t.twice
// RUN: diff %t.once %t.twice

// SGD on a linear layer (the output of -remat-autodiff): one momentum
// argument per param, each update right after its final gradient (b's
// sum_to comes before w's matmul), f32 hyperparameters, results (loss,
// w', b', momentum:w', momentum:b') naming the arguments they overwrite.
// CHECK-LABEL: func.func @train_step
// CHECK-SAME: (%[[X:.*]]: tensor<8x4xf32> {graph.name = "x", graph.role = "input"}, %[[T:.*]]: tensor<8x2xf32> {graph.name = "t", graph.role = "input"}, %[[W:.*]]: tensor<4x2xf32> {graph.init = {kind = "normal"}, graph.name = "w", graph.role = "param"}, %[[B:.*]]: tensor<2xf32> {graph.init = {kind = "zeros"}, graph.name = "b", graph.role = "param"},
// CHECK-SAME: %[[MW:.*]]: tensor<4x2xf32> {graph.init = {kind = "zeros"}, graph.name = "momentum:w", graph.param = 2 : i64, graph.role = "optimizer"}, %[[MB:.*]]: tensor<2xf32> {graph.init = {kind = "zeros"}, graph.name = "momentum:b", graph.param = 3 : i64, graph.role = "optimizer"})
// CHECK-SAME: -> (tensor<f32> {graph.name = "loss", graph.role = "loss"}, tensor<4x2xf32> {graph.name = "w", graph.role = "param", graph.updates = 2 : i64}, tensor<2xf32> {graph.name = "b", graph.role = "param", graph.updates = 3 : i64}, tensor<4x2xf32> {graph.name = "momentum:w", graph.role = "optimizer", graph.updates = 4 : i64}, tensor<2xf32> {graph.name = "momentum:b", graph.role = "optimizer", graph.updates = 5 : i64})
// CHECK: %[[LOSS:.*]] = graph.mse
// CHECK: %[[DY:.*]] = graph.mse_grad
// CHECK-NEXT: %[[DB:.*]] = graph.sum_to %[[DY]]
// CHECK-NEXT: %[[NEWB:.*]], %[[NEWMB:.*]] = graph.sgd_update %[[B]], %[[DB]], %[[MB]] {lr = 1.000000e-01 : f32, momentum = 5.000000e-01 : f32, weight_decay = 0.000000e+00 : f32} : tensor<2xf32>, tensor<2xf32>, tensor<2xf32> -> tensor<2xf32>, tensor<2xf32>
// CHECK-NEXT: %[[DW:.*]] = graph.matmul %[[X]], %[[DY]] {transpose_a = true}
// CHECK-NEXT: %[[NEWW:.*]], %[[NEWMW:.*]] = graph.sgd_update %[[W]], %[[DW]], %[[MW]] {lr = 1.000000e-01 : f32, momentum = 5.000000e-01 : f32, weight_decay = 0.000000e+00 : f32}
// CHECK-NEXT: return %[[LOSS]], %[[NEWW]], %[[NEWB]], %[[NEWMW]], %[[NEWMB]] :
module attributes {graph.optimizer = {kind = "sgd", lr = 1.000000e-01 : f64, momentum = 5.000000e-01 : f64, weight_decay = 0.000000e+00 : f64}} {
  func.func @train_step(%x: tensor<8x4xf32> {graph.name = "x", graph.role = "input"},
                        %t: tensor<8x2xf32> {graph.name = "t", graph.role = "input"},
                        %w: tensor<4x2xf32> {graph.init = {kind = "normal"}, graph.name = "w", graph.role = "param"},
                        %b: tensor<2xf32> {graph.init = {kind = "zeros"}, graph.name = "b", graph.role = "param"})
      -> (tensor<f32> {graph.name = "loss", graph.role = "loss"},
          tensor<4x2xf32> {graph.name = "grad:w", graph.param = 2 : i64, graph.role = "grad"},
          tensor<2xf32> {graph.name = "grad:b", graph.param = 3 : i64, graph.role = "grad"}) {
    %h = graph.matmul %x, %w : tensor<8x4xf32>, tensor<4x2xf32> -> tensor<8x2xf32>
    %y = graph.add %h, %b : tensor<8x2xf32>, tensor<2xf32> -> tensor<8x2xf32>
    %loss = graph.mse %y, %t : tensor<8x2xf32>, tensor<8x2xf32> -> tensor<f32>
    %seed = graph.constant 1.000000e+00 : tensor<f32>
    %dy = graph.mse_grad %y, %t, %seed : tensor<8x2xf32>, tensor<8x2xf32>, tensor<f32> -> tensor<8x2xf32>
    %db = graph.sum_to %dy : tensor<8x2xf32> -> tensor<2xf32>
    %dw = graph.matmul %x, %dy {transpose_a = true} : tensor<8x4xf32>, tensor<8x2xf32> -> tensor<4x2xf32>
    return %loss, %dw, %db : tensor<f32>, tensor<4x2xf32>, tensor<2xf32>
  }
}

// -----

// AdamW on the same layer: two state arguments per param (adam_m:<p>, then
// adam_v:<p>), in param order; results (loss, params, states in argument
// order). The f64 settings become f32 attributes.
// CHECK-LABEL: func.func @train_step
// CHECK-SAME: %[[W:[^:]*]]: tensor<4x2xf32> {graph.init = {kind = "normal"}, graph.name = "w", graph.role = "param"}, %[[B:[^:]*]]: tensor<2xf32> {graph.init = {kind = "zeros"}, graph.name = "b", graph.role = "param"},
// CHECK-SAME: %[[MW:.*]]: tensor<4x2xf32> {graph.init = {kind = "zeros"}, graph.name = "adam_m:w", graph.param = 2 : i64, graph.role = "optimizer"}, %[[VW:.*]]: tensor<4x2xf32> {graph.init = {kind = "zeros"}, graph.name = "adam_v:w", graph.param = 2 : i64, graph.role = "optimizer"},
// CHECK-SAME: %[[MB:.*]]: tensor<2xf32> {graph.init = {kind = "zeros"}, graph.name = "adam_m:b", graph.param = 3 : i64, graph.role = "optimizer"}, %[[VB:.*]]: tensor<2xf32> {graph.init = {kind = "zeros"}, graph.name = "adam_v:b", graph.param = 3 : i64, graph.role = "optimizer"})
// CHECK-SAME: -> (tensor<f32> {graph.name = "loss", graph.role = "loss"}, tensor<4x2xf32> {graph.name = "w", graph.role = "param", graph.updates = 2 : i64}, tensor<2xf32> {graph.name = "b", graph.role = "param", graph.updates = 3 : i64},
// CHECK-SAME: tensor<4x2xf32> {graph.name = "adam_m:w", graph.role = "optimizer", graph.updates = 4 : i64}, tensor<4x2xf32> {graph.name = "adam_v:w", graph.role = "optimizer", graph.updates = 5 : i64}, tensor<2xf32> {graph.name = "adam_m:b", graph.role = "optimizer", graph.updates = 6 : i64}, tensor<2xf32> {graph.name = "adam_v:b", graph.role = "optimizer", graph.updates = 7 : i64})
// CHECK: %[[DB:.*]] = graph.sum_to
// CHECK-NEXT: %[[NEWB:.*]], %[[NEWMB:.*]], %[[NEWVB:.*]] = graph.adamw_update %[[B]], %[[DB]], %[[MB]], %[[VB]] {beta1 = 0.899999976 : f32, beta2 = 9.990000e-01 : f32, eps = 9.99999993E-9 : f32, lr = 6.000000e-04 : f32, weight_decay = 0.00999999977 : f32} : tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32> -> tensor<2xf32>, tensor<2xf32>, tensor<2xf32>
// CHECK-NEXT: %[[DW:.*]] = graph.matmul
// CHECK-NEXT: %[[NEWW:.*]], %[[NEWMW:.*]], %[[NEWVW:.*]] = graph.adamw_update %[[W]], %[[DW]], %[[MW]], %[[VW]]
// CHECK-NEXT: return %{{.*}}, %[[NEWW]], %[[NEWB]], %[[NEWMW]], %[[NEWVW]], %[[NEWMB]], %[[NEWVB]] :
module attributes {graph.optimizer = {beta1 = 9.000000e-01 : f64, beta2 = 0.999 : f64, eps = 1.000000e-08 : f64, kind = "adamw", lr = 6.000000e-04 : f64, weight_decay = 1.000000e-02 : f64}} {
  func.func @train_step(%x: tensor<8x4xf32> {graph.name = "x", graph.role = "input"},
                        %t: tensor<8x2xf32> {graph.name = "t", graph.role = "input"},
                        %w: tensor<4x2xf32> {graph.init = {kind = "normal"}, graph.name = "w", graph.role = "param"},
                        %b: tensor<2xf32> {graph.init = {kind = "zeros"}, graph.name = "b", graph.role = "param"})
      -> (tensor<f32> {graph.name = "loss", graph.role = "loss"},
          tensor<4x2xf32> {graph.name = "grad:w", graph.param = 2 : i64, graph.role = "grad"},
          tensor<2xf32> {graph.name = "grad:b", graph.param = 3 : i64, graph.role = "grad"}) {
    %h = graph.matmul %x, %w : tensor<8x4xf32>, tensor<4x2xf32> -> tensor<8x2xf32>
    %y = graph.add %h, %b : tensor<8x2xf32>, tensor<2xf32> -> tensor<8x2xf32>
    %loss = graph.mse %y, %t : tensor<8x2xf32>, tensor<8x2xf32> -> tensor<f32>
    %seed = graph.constant 1.000000e+00 : tensor<f32>
    %dy = graph.mse_grad %y, %t, %seed : tensor<8x2xf32>, tensor<8x2xf32>, tensor<f32> -> tensor<8x2xf32>
    %db = graph.sum_to %dy : tensor<8x2xf32> -> tensor<2xf32>
    %dw = graph.matmul %x, %dy {transpose_a = true} : tensor<8x4xf32>, tensor<8x2xf32> -> tensor<4x2xf32>
    return %loss, %dw, %db : tensor<f32>, tensor<4x2xf32>, tensor<2xf32>
  }
}

// -----

// Sharded optimizer state (graph.optimizer_shards = 3, --shard-optimizer with
// --ranks 3, ZeRO-1): each state argument is one rank's slice,
// tensor<ceil(numel/3)xf32> (w: 8 elements -> 3, b: 2 -> 1), and the
// updates carry shards = 3 with whole params and gradients.
// CHECK-LABEL: func.func @train_step
// CHECK-SAME: %[[MW:[^:]*]]: tensor<3xf32> {graph.init = {kind = "zeros"}, graph.name = "adam_m:w", graph.param = 2 : i64, graph.role = "optimizer"}, %[[VW:[^:]*]]: tensor<3xf32> {graph.init = {kind = "zeros"}, graph.name = "adam_v:w", graph.param = 2 : i64, graph.role = "optimizer"},
// CHECK-SAME: %[[MB:[^:]*]]: tensor<1xf32> {graph.init = {kind = "zeros"}, graph.name = "adam_m:b", graph.param = 3 : i64, graph.role = "optimizer"}, %[[VB:[^:]*]]: tensor<1xf32> {graph.init = {kind = "zeros"}, graph.name = "adam_v:b", graph.param = 3 : i64, graph.role = "optimizer"})
// CHECK-SAME: tensor<3xf32> {graph.name = "adam_m:w", graph.role = "optimizer", graph.updates = 4 : i64}
// CHECK: graph.adamw_update %{{.*}}, %{{.*}}, %[[MB]], %[[VB]] {{{.*}}shards = 3 : i64{{.*}}} : tensor<2xf32>, tensor<2xf32>, tensor<1xf32>, tensor<1xf32> -> tensor<2xf32>, tensor<1xf32>, tensor<1xf32>
// CHECK: graph.adamw_update %{{.*}}, %{{.*}}, %[[MW]], %[[VW]] {{{.*}}shards = 3 : i64{{.*}}} : tensor<4x2xf32>, tensor<4x2xf32>, tensor<3xf32>, tensor<3xf32> -> tensor<4x2xf32>, tensor<3xf32>, tensor<3xf32>
module attributes {graph.optimizer = {kind = "adamw"}, graph.optimizer_shards = 3 : i64} {
  func.func @train_step(%x: tensor<8x4xf32> {graph.name = "x", graph.role = "input"},
                        %t: tensor<8x2xf32> {graph.name = "t", graph.role = "input"},
                        %w: tensor<4x2xf32> {graph.init = {kind = "normal"}, graph.name = "w", graph.role = "param"},
                        %b: tensor<2xf32> {graph.init = {kind = "zeros"}, graph.name = "b", graph.role = "param"})
      -> (tensor<f32> {graph.name = "loss", graph.role = "loss"},
          tensor<4x2xf32> {graph.name = "grad:w", graph.param = 2 : i64, graph.role = "grad"},
          tensor<2xf32> {graph.name = "grad:b", graph.param = 3 : i64, graph.role = "grad"}) {
    %h = graph.matmul %x, %w : tensor<8x4xf32>, tensor<4x2xf32> -> tensor<8x2xf32>
    %y = graph.add %h, %b : tensor<8x2xf32>, tensor<2xf32> -> tensor<8x2xf32>
    %loss = graph.mse %y, %t : tensor<8x2xf32>, tensor<8x2xf32> -> tensor<f32>
    %seed = graph.constant 1.000000e+00 : tensor<f32>
    %dy = graph.mse_grad %y, %t, %seed : tensor<8x2xf32>, tensor<8x2xf32>, tensor<f32> -> tensor<8x2xf32>
    %db = graph.sum_to %dy : tensor<8x2xf32> -> tensor<2xf32>
    %dw = graph.matmul %x, %dy {transpose_a = true} : tensor<8x4xf32>, tensor<8x2xf32> -> tensor<4x2xf32>
    return %loss, %dw, %db : tensor<f32>, tensor<4x2xf32>, tensor<2xf32>
  }
}

// -----

// In-place safety: w's gradient (the sum_to) is final before the backward
// reads w again (dh = dy·w), so w's update waits for that reader; the
// missing sgd settings take their defaults (lr 0.01, momentum 0, wd 0), and
// momentum 0 keeps no state: sgd_plain_update, no momentum arguments.
// CHECK-LABEL: func.func @train_step
// CHECK-SAME: (%[[X:[^:]*]]: tensor<8x3xf32> {{.*}}, %[[V:[^:]*]]: tensor<3x2xf32> {{.*}}, %[[W:[^:]*]]: tensor<2xf32> {graph.name = "w", graph.role = "param"}) -> (tensor<f32>
// CHECK: %[[DW:.*]] = graph.sum_to
// CHECK-NEXT: %[[DH:.*]] = graph.mul %{{.*}}, %[[W]] :
// CHECK-NEXT: graph.sgd_plain_update %[[W]], %[[DW]] {lr = 0.00999999977 : f32, weight_decay = 0.000000e+00 : f32}
// CHECK-NEXT: %[[DV:.*]] = graph.matmul %[[X]], %[[DH]] {transpose_a = true}
// CHECK-NEXT: graph.sgd_plain_update %[[V]], %[[DV]]
// CHECK-NEXT: return
module attributes {graph.optimizer = {kind = "sgd"}} {
  func.func @train_step(%x: tensor<8x3xf32> {graph.name = "x", graph.role = "input"},
                        %v: tensor<3x2xf32> {graph.name = "v", graph.role = "param"},
                        %w: tensor<2xf32> {graph.name = "w", graph.role = "param"})
      -> (tensor<f32> {graph.name = "loss", graph.role = "loss"},
          tensor<3x2xf32> {graph.name = "grad:v", graph.param = 1 : i64, graph.role = "grad"},
          tensor<2xf32> {graph.name = "grad:w", graph.param = 2 : i64, graph.role = "grad"}) {
    %h = graph.matmul %x, %v : tensor<8x3xf32>, tensor<3x2xf32> -> tensor<8x2xf32>
    %y = graph.mul %w, %h : tensor<2xf32>, tensor<8x2xf32> -> tensor<8x2xf32>
    %loss = graph.reduce_sum %y {axes = array<i64: 0, 1>} : tensor<8x2xf32> -> tensor<f32>
    %seed = graph.constant 1.000000e+00 : tensor<f32>
    %dy = graph.broadcast_to %seed : tensor<f32> -> tensor<8x2xf32>
    %dwb = graph.mul %dy, %h : tensor<8x2xf32>, tensor<8x2xf32> -> tensor<8x2xf32>
    %dw = graph.sum_to %dwb : tensor<8x2xf32> -> tensor<2xf32>
    %dh = graph.mul %dy, %w : tensor<8x2xf32>, tensor<2xf32> -> tensor<8x2xf32>
    %dv = graph.matmul %x, %dh {transpose_a = true} : tensor<8x3xf32>, tensor<8x2xf32> -> tensor<3x2xf32>
    return %loss, %dv, %dw : tensor<f32>, tensor<3x2xf32>, tensor<2xf32>
  }
}

// -----

// Two params with the same final gradient value: both updates follow its
// op, in param order; a zero gradient (a param that does not reach the
// loss) is updated right after its constant.
// CHECK-LABEL: func.func @train_step
// CHECK-SAME: (%[[X:[^:]*]]: tensor<4xf32> {{.*}}, %[[P:[^:]*]]: tensor<4xf32> {{.*}}, %[[Q:[^:]*]]: tensor<4xf32> {{.*}}, %[[R:[^:]*]]: tensor<4xf32> {{.*}}, %[[MP:[^:]*]]: tensor<4xf32> {{.*}}, %[[MQ:[^:]*]]: tensor<4xf32> {{.*}}, %[[MR:[^:]*]]: tensor<4xf32> {{.*}})
// CHECK: %[[D:.*]] = graph.mse_grad
// CHECK-NEXT: %[[NEWP:.*]], %{{.*}} = graph.sgd_update %[[P]], %[[D]], %[[MP]]
// CHECK-NEXT: %[[NEWQ:.*]], %{{.*}} = graph.sgd_update %[[Q]], %[[D]], %[[MQ]]
// CHECK-NEXT: %[[ZERO:.*]] = graph.constant 0.000000e+00
// CHECK-NEXT: %[[NEWR:.*]], %{{.*}} = graph.sgd_update %[[R]], %[[ZERO]], %[[MR]]
// CHECK-NEXT: return %{{.*}}, %[[NEWP]], %[[NEWQ]], %[[NEWR]],
module attributes {graph.optimizer = {kind = "sgd", lr = 1.0e-01 : f64, momentum = 9.0e-01 : f64}} {
  func.func @train_step(%x: tensor<4xf32> {graph.name = "x", graph.role = "input"},
                        %p: tensor<4xf32> {graph.name = "p", graph.role = "param"},
                        %q: tensor<4xf32> {graph.name = "q", graph.role = "param"},
                        %r: tensor<4xf32> {graph.name = "r", graph.role = "param"})
      -> (tensor<f32> {graph.name = "loss", graph.role = "loss"},
          tensor<4xf32> {graph.name = "grad:p", graph.param = 1 : i64, graph.role = "grad"},
          tensor<4xf32> {graph.name = "grad:q", graph.param = 2 : i64, graph.role = "grad"},
          tensor<4xf32> {graph.name = "grad:r", graph.param = 3 : i64, graph.role = "grad"}) {
    %y = graph.add %p, %q : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
    %loss = graph.mse %y, %x : tensor<4xf32>, tensor<4xf32> -> tensor<f32>
    %seed = graph.constant 1.000000e+00 : tensor<f32>
    %dy = graph.mse_grad %y, %x, %seed : tensor<4xf32>, tensor<4xf32>, tensor<f32> -> tensor<4xf32>
    %zero = graph.constant 0.000000e+00 : tensor<4xf32>
    return %loss, %dy, %dy, %zero : tensor<f32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
  }
}
