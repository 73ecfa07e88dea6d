// Every diagnostic of -remat-optimizer, one case each.
// RUN: remat-opt %s -split-input-file -remat-optimizer -verify-diagnostics

// The optimizer settings are a module attribute.
// expected-error @+1 {{the module has no graph.optimizer attribute (a dictionary with kind = "sgd" or "adamw")}}
module {
  func.func @train_step(%w: tensor<f32> {graph.name = "w", graph.role = "param"})
      -> (tensor<f32> {graph.name = "loss", graph.role = "loss"},
          tensor<f32> {graph.name = "grad:w", graph.param = 0 : i64, graph.role = "grad"}) {
    return %w, %w : tensor<f32>, tensor<f32>
  }
}

// -----

// ... a dictionary ...
// expected-error @+1 {{graph.optimizer must be a dictionary, got "sgd"}}
module attributes {graph.optimizer = "sgd"} {
  func.func @train_step(%w: tensor<f32> {graph.name = "w", graph.role = "param"})
      -> (tensor<f32> {graph.name = "loss", graph.role = "loss"}) {
    return %w : tensor<f32>
  }
}

// -----

// ... with a kind ...
// expected-error @+1 {{graph.optimizer needs a string 'kind' ("sgd" or "adamw")}}
module attributes {graph.optimizer = {lr = 1.0e-01 : f64}} {
  func.func @train_step(%w: tensor<f32> {graph.name = "w", graph.role = "param"})
      -> (tensor<f32> {graph.name = "loss", graph.role = "loss"}) {
    return %w : tensor<f32>
  }
}

// -----

// ... that remat knows.
// expected-error @+1 {{unknown optimizer kind 'rmsprop' (expected "sgd" or "adamw")}}
module attributes {graph.optimizer = {kind = "rmsprop"}} {
  func.func @train_step(%w: tensor<f32> {graph.name = "w", graph.role = "param"})
      -> (tensor<f32> {graph.name = "loss", graph.role = "loss"}) {
    return %w : tensor<f32>
  }
}

// -----

// A field the kind does not have is a mistake, not something to ignore.
// expected-error @+1 {{graph.optimizer: sgd has no field 'beta1'}}
module attributes {graph.optimizer = {kind = "sgd", beta1 = 9.0e-01 : f64}} {
  func.func @train_step(%w: tensor<f32> {graph.name = "w", graph.role = "param"})
      -> (tensor<f32> {graph.name = "loss", graph.role = "loss"}) {
    return %w : tensor<f32>
  }
}

// -----

// Settings are numbers.
// expected-error @+1 {{graph.optimizer: 'lr' must be a number, got "fast"}}
module attributes {graph.optimizer = {kind = "adamw", lr = "fast"}} {
  func.func @train_step(%w: tensor<f32> {graph.name = "w", graph.role = "param"})
      -> (tensor<f32> {graph.name = "loss", graph.role = "loss"}) {
    return %w : tensor<f32>
  }
}

// -----

// The learning rate is not negative.
// expected-error @+1 {{graph.optimizer: the learning rate must not be negative, got -1.000000e-01}}
module attributes {graph.optimizer = {kind = "sgd", lr = -1.0e-01 : f64}} {
  func.func @train_step(%w: tensor<f32> {graph.name = "w", graph.role = "param"})
      -> (tensor<f32> {graph.name = "loss", graph.role = "loss"}) {
    return %w : tensor<f32>
  }
}

// -----

// AdamW's betas are in [0, 1) (graph.adamw_update would reject them).
// expected-error @+1 {{graph.optimizer: 'beta2' must be in [0, 1), got 1.000000e+00}}
module attributes {graph.optimizer = {kind = "adamw", beta2 = 1 : i64}} {
  func.func @train_step(%w: tensor<f32> {graph.name = "w", graph.role = "param"})
      -> (tensor<f32> {graph.name = "loss", graph.role = "loss"}) {
    return %w : tensor<f32>
  }
}

// -----

// The pass runs after -remat-autodiff.
// expected-error @+1 {{no func.func @train_step to update (run -remat-autodiff first)}}
module attributes {graph.optimizer = {kind = "sgd"}} {
  func.func @forward(%w: tensor<f32> {graph.name = "w", graph.role = "param"}) -> tensor<f32> {
    return %w : tensor<f32>
  }
}

// -----

// Result #0 is the loss.
module attributes {graph.optimizer = {kind = "sgd"}} {
  // expected-error @+1 {{result #0 of @train_step must be the loss (graph.role = "loss"); run -remat-autodiff first}}
  func.func @train_step(%w: tensor<f32> {graph.name = "w", graph.role = "param"}) -> tensor<f32> {
    return %w : tensor<f32>
  }
}

// -----

// Every other result is a gradient naming its param.
module attributes {graph.optimizer = {kind = "sgd"}} {
  // expected-error @+1 {{result #1 of @train_step is not a gradient (graph.role = "grad" with graph.param)}}
  func.func @train_step(%w: tensor<f32> {graph.name = "w", graph.role = "param"})
      -> (tensor<f32> {graph.name = "loss", graph.role = "loss"},
          tensor<f32> {graph.name = "grad:w", graph.role = "grad"}) {
    return %w, %w : tensor<f32>, tensor<f32>
  }
}

// -----

// graph.param is an argument index.
module attributes {graph.optimizer = {kind = "sgd"}} {
  // expected-error @+1 {{result #1 is the gradient of argument #3, but @train_step has 1 arguments}}
  func.func @train_step(%w: tensor<f32> {graph.name = "w", graph.role = "param"})
      -> (tensor<f32> {graph.name = "loss", graph.role = "loss"},
          tensor<f32> {graph.name = "grad:w", graph.param = 3 : i64, graph.role = "grad"}) {
    return %w, %w : tensor<f32>, tensor<f32>
  }
}

// -----

// ... of a param, not an input.
module attributes {graph.optimizer = {kind = "sgd"}} {
  // expected-error @+1 {{result #1 is the gradient of argument #0, which is not a named param (graph.role = "param")}}
  func.func @train_step(%x: tensor<f32> {graph.name = "x", graph.role = "input"})
      -> (tensor<f32> {graph.name = "loss", graph.role = "loss"},
          tensor<f32> {graph.name = "grad:x", graph.param = 0 : i64, graph.role = "grad"}) {
    return %x, %x : tensor<f32>, tensor<f32>
  }
}

// -----

// One gradient per param.
module attributes {graph.optimizer = {kind = "sgd"}} {
  // expected-error @+1 {{results #1 and #2 are both gradients of argument #0}}
  func.func @train_step(%w: tensor<f32> {graph.name = "w", graph.role = "param"})
      -> (tensor<f32> {graph.name = "loss", graph.role = "loss"},
          tensor<f32> {graph.name = "grad:w", graph.param = 0 : i64, graph.role = "grad"},
          tensor<f32> {graph.name = "grad:w", graph.param = 0 : i64, graph.role = "grad"}) {
    return %w, %w, %w : tensor<f32>, tensor<f32>, tensor<f32>
  }
}

// -----

// A gradient has its param's type.
module attributes {graph.optimizer = {kind = "sgd"}} {
  // expected-error @+1 {{result #1 has type 'tensor<2xf32>', but its param (argument #0) has type 'tensor<3xf32>'}}
  func.func @train_step(%w: tensor<3xf32> {graph.name = "w", graph.role = "param"}, %g: tensor<2xf32>)
      -> (tensor<f32> {graph.name = "loss", graph.role = "loss"},
          tensor<2xf32> {graph.name = "grad:w", graph.param = 0 : i64, graph.role = "grad"}) {
    %loss = graph.constant 0.0 : tensor<f32>
    return %loss, %g : tensor<f32>, tensor<2xf32>
  }
}
