// Every diagnostic of -remat-autodiff, one case each.
// RUN: remat-opt %s -split-input-file -remat-autodiff -verify-diagnostics

// A module without @forward has nothing to differentiate.
// expected-error @+1 {{no func.func @forward to differentiate}}
module {
  func.func @model(%w: tensor<f32>) -> tensor<f32> {
    return %w : tensor<f32>
  }
}

// -----

// @forward must have a body.
// expected-error @+1 {{@forward has no body}}
func.func private @forward(tensor<f32>) -> tensor<f32>

// -----

// Results after the loss are new state values.
// expected-error @+1 {{result #1 of @forward must be a new state value (graph.role = "state" with graph.updates)}}
func.func @forward(%w: tensor<f32> {graph.name = "w", graph.role = "param"}) -> (tensor<f32>, tensor<f32>) {
  return %w, %w : tensor<f32>, tensor<f32>
}

// -----

// The loss is a 0-d float tensor.
// expected-error @+1 {{the loss returned by @forward must be a 0-d float tensor, got 'tensor<2xf32>'}}
func.func @forward(%w: tensor<2xf32> {graph.name = "w", graph.role = "param"}) -> tensor<2xf32> {
  return %w : tensor<2xf32>
}

// -----

// Every argument is named.
// expected-error @+1 {{argument #0 of @forward has no string graph.name}}
func.func @forward(%w: tensor<f32> {graph.role = "param"}) -> tensor<f32> {
  return %w : tensor<f32>
}

// -----

// Every argument is an input, a param or state.
// expected-error @+1 {{argument #1 ('w') of @forward needs graph.role "input", "param" or "state"}}
func.func @forward(%x: tensor<f32> {graph.name = "x", graph.role = "input"},
                   %w: tensor<f32> {graph.name = "w", graph.role = "weight"}) -> tensor<f32> {
  %loss = graph.mse %x, %w : tensor<f32>, tensor<f32> -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// Params are float tensors.
// expected-error @+1 {{param argument #0 ('ids') must be a float tensor, got 'tensor<4xi32>'}}
func.func @forward(%ids: tensor<4xi32> {graph.name = "ids", graph.role = "param"},
                   %table: tensor<8x2xf32> {graph.name = "table", graph.role = "param"}) -> tensor<f32> {
  %e = graph.embedding %table, %ids : tensor<8x2xf32>, tensor<4xi32> -> tensor<4x2xf32>
  %loss = graph.reduce_sum %e {axes = array<i64: 0, 1>} : tensor<4x2xf32> -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// An op between a param and the loss without a gradient rule is an error at
// the op (a gradient op is not differentiable).
func.func @forward(%x: tensor<4xf32> {graph.name = "x", graph.role = "input"},
                   %w: tensor<4xf32> {graph.name = "w", graph.role = "param"}) -> tensor<f32> {
  // expected-error @+1 {{'graph.relu_grad' op has no gradient rule, but lies on the path from a param to the loss}}
  %g = graph.relu_grad %x, %w : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %loss = graph.mse %g, %x : tensor<4xf32>, tensor<4xf32> -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// autodiff does not overwrite an existing @train_step.
func.func @forward(%w: tensor<f32> {graph.name = "w", graph.role = "param"}) -> tensor<f32> {
  return %w : tensor<f32>
}
// expected-error @+1 {{the module already has a @train_step; autodiff would replace @forward with it}}
func.func @train_step() {
  return
}

// -----

// @forward is replaced, so nothing may call it.
// expected-error @+1 {{@forward is referenced in the module; autodiff replaces it with @train_step}}
func.func @forward(%w: tensor<f32> {graph.name = "w", graph.role = "param"}) -> tensor<f32> {
  return %w : tensor<f32>
}
func.func @caller(%w: tensor<f32>) -> tensor<f32> {
  %0 = func.call @forward(%w) : (tensor<f32>) -> tensor<f32>
  return %0 : tensor<f32>
}
