// Every verifier error of the plan dialect, one case each.
// RUN: remat-opt %s -split-input-file -verify-diagnostics

// An arena has a positive size.
// expected-error @+1 {{'plan.arena' op bytes must be positive, got 0}}
plan.arena bytes(0) alignment(64) {
}

// -----

// The alignment is a power of two.
// expected-error @+1 {{'plan.arena' op alignment must be a power of two, got 48}}
plan.arena bytes(64) alignment(48) {
}

// -----

// Only buffers, steps and frees live in an arena.
plan.arena bytes(64) alignment(64) {
  // expected-error @+1 {{'graph.constant' op cannot be in a plan.arena, which holds only plan.buffer, plan.step and plan.free}}
  %0 = graph.constant 1.0 : tensor<f32>
}

// -----

// The loss names a buffer of the arena.
// expected-error @+1 {{'plan.arena' op loss @loss is not a plan.buffer of this arena}}
plan.arena bytes(64) alignment(64) loss(@loss) {
  plan.buffer @l "activation" : f32 [] offset 0 bytes 4
}

// -----

// The loss is a float scalar.
// expected-error @+1 {{'plan.arena' op loss @l must be a float scalar (shape []), got f32 [2]}}
plan.arena bytes(64) alignment(64) loss(@l) {
  plan.buffer @l "activation" : f32 [2] offset 0 bytes 8
}

// -----

// Persistent buffers share bytes with no other buffer: 16 + 16 = 32 > 24.
plan.arena bytes(128) alignment(8) {
  plan.buffer @h "activation" : f32 [4] offset 24 bytes 16
  // expected-error @+1 {{'plan.buffer' op bytes [16, 32) of 'param' buffer @w overlap bytes [24, 40) of @h; param, optimizer and input buffers share bytes with no other buffer}}
  plan.buffer @w "param" : f32 [4] offset 16 bytes 16 init {kind = "zeros"}
}

// -----

// A buffer is freed once.
plan.arena bytes(64) alignment(64) {
  plan.buffer @h "activation" : f32 [4] offset 0 bytes 16
  plan.free @h
  // expected-error @+1 {{'plan.free' op frees @h twice}}
  plan.free @h
}

// -----

// No step reads a freed buffer ...
plan.arena bytes(128) alignment(64) {
  plan.buffer @h "activation" : f32 [4] offset 0 bytes 16
  plan.buffer @y "activation" : f32 [4] offset 64 bytes 16
  plan.free @h
  // expected-error @+1 {{'plan.step' op reads @h after its plan.free}}
  plan.step "relu" (@h) -> (@y) phase "forward"
}

// -----

// ... or writes it.
plan.arena bytes(128) alignment(64) {
  plan.buffer @h "activation" : f32 [4] offset 0 bytes 16
  plan.buffer @x "activation" : f32 [4] offset 64 bytes 16
  plan.free @h
  // expected-error @+1 {{'plan.step' op writes @h after its plan.free}}
  plan.step "relu" (@x) -> (@h) phase "forward"
}

// -----

// Buffer roles are those of the plan format.
plan.arena bytes(64) alignment(64) {
  // expected-error @+1 {{'plan.buffer' op role must be param, grad, optimizer, input, activation, temporary, state or accumulator, got 'weights'}}
  plan.buffer @w "weights" : f32 [4] offset 0 bytes 16
}

// -----

// So are dtypes.
plan.arena bytes(64) alignment(64) {
  // expected-error @+1 {{'plan.buffer' op dtype must be f32, f16, bf16, i32, i64 or f64, got f80}}
  plan.buffer @h "activation" : f80 [4] offset 0 bytes 32
}

// -----

// Every dim is at least 1.
plan.arena bytes(64) alignment(64) {
  // expected-error @+1 {{'plan.buffer' op dim 1 of shape [4, 0] is 0; every dim must be >= 1}}
  plan.buffer @h "activation" : f32 [4, 0] offset 0 bytes 0
}

// -----

// Offsets are not negative.
plan.arena bytes(64) alignment(64) {
  // expected-error @+1 {{'plan.buffer' op offset must not be negative, got -64}}
  plan.buffer @h "activation" : f32 [4] offset -64 bytes 16
}

// -----

// bytes is exactly product(shape) x the element size: 8 x 4 x 4 = 128.
plan.arena bytes(256) alignment(64) {
  // expected-error @+1 {{'plan.buffer' op bytes is 64 but shape [8, 4] of f32 needs 128}}
  plan.buffer @x "activation" : f32 [8, 4] offset 0 bytes 64
}

// -----

// A size past 2^63-1 bytes is an error, not an overflow.
plan.arena bytes(256) alignment(64) {
  // expected-error @+1 {{'plan.buffer' op shape [4294967296, 4294967296] of f32 needs more than 2^63-1 bytes}}
  plan.buffer @x "activation" : f32 [4294967296, 4294967296] offset 0 bytes 0
}

// -----

// Params and optimizer state are float.
plan.arena bytes(64) alignment(64) {
  // expected-error @+1 {{'plan.buffer' op 'param' buffers must be float, got i32}}
  plan.buffer @w "param" : i32 [4] offset 0 bytes 16 init {kind = "zeros"}
}

// -----

// Params and optimizer state say how they are initialized.
plan.arena bytes(64) alignment(64) {
  // expected-error @+1 {{'plan.buffer' op 'optimizer' buffers need an init (e.g. init {kind = "zeros"})}}
  plan.buffer @"momentum:w" "optimizer" : f32 [4] offset 0 bytes 16
}

// -----

// Other buffers have no init ...
plan.arena bytes(64) alignment(64) {
  // expected-error @+1 {{'plan.buffer' op init is only allowed on param, optimizer, state and accumulator buffers, not on 'activation'}}
  plan.buffer @h "activation" : f32 [4] offset 0 bytes 16 init {kind = "zeros"}
}

// -----

// ... and only inputs have data.
plan.arena bytes(64) alignment(64) {
  // expected-error @+1 {{'plan.buffer' op data is only allowed on input buffers, not on 'param'}}
  plan.buffer @w "param" : f32 [4] offset 0 bytes 16 init {kind = "zeros"} data {kind = "randn"}
}

// -----

// Offsets are multiples of the arena's alignment: 648 = 10 x 64 + 8.
plan.arena bytes(1024) alignment(64) {
  // expected-error @+1 {{'plan.buffer' op offset 648 is not aligned to 64, the arena's alignment}}
  plan.buffer @dy "activation" : f32 [4] offset 648 bytes 16
}

// -----

// A buffer ends inside the arena: 64 + 128 = 192 > 128.
plan.arena bytes(128) alignment(64) {
  // expected-error @+1 {{'plan.buffer' op offset 64 + bytes 128 ends past the arena's 128 bytes}}
  plan.buffer @x "activation" : f32 [8, 4] offset 64 bytes 128
}

// -----

// Buffers live in an arena.
// expected-error @+1 {{'plan.buffer' op expects parent op 'plan.arena'}}
plan.buffer @x "activation" : f32 [4] offset 0 bytes 16

// -----

// Buffer names are unique.
plan.arena bytes(128) alignment(64) {
  // expected-note @+1 {{see existing symbol definition here}}
  plan.buffer @x "activation" : f32 [4] offset 0 bytes 16
  // expected-error @+1 {{redefinition of symbol named 'x'}}
  plan.buffer @x "activation" : f32 [4] offset 64 bytes 16
}

// -----

// A step runs an op of docs/ops.md.
plan.arena bytes(64) alignment(64) {
  plan.buffer @x "activation" : f32 [4] offset 0 bytes 16
  // expected-error @+1 {{'plan.step' op 'sigmoid' is not an op of the graph dialect (docs/ops.md)}}
  plan.step "sigmoid" (@x) -> (@x) phase "forward"
}

// -----

// Phases are forward, backward or optimizer.
plan.arena bytes(128) alignment(64) {
  plan.buffer @x "activation" : f32 [4] offset 0 bytes 16
  plan.buffer @y "activation" : f32 [4] offset 64 bytes 16
  // expected-error @+1 {{'plan.step' op phase must be forward, backward or optimizer, got 'fwd'}}
  plan.step "relu" (@x) -> (@y) phase "fwd"
}

// -----

// A step writes something.
plan.arena bytes(64) alignment(64) {
  plan.buffer @x "activation" : f32 [4] offset 0 bytes 16
  // expected-error @+1 {{'plan.step' op 'relu' step writes no buffer}}
  plan.step "relu" (@x) -> () phase "forward"
}

// -----

// The results of one step are distinct buffers.
plan.arena bytes(256) alignment(64) {
  plan.buffer @x "activation" : f32 [2, 4] offset 0 bytes 32
  plan.buffer @g "input" : f32 [4] offset 64 bytes 16
  plan.buffer @dy "activation" : f32 [2, 4] offset 128 bytes 32
  plan.buffer @d "activation" : f32 [2, 4] offset 192 bytes 32
  // expected-error @+1 {{'plan.step' op writes @d twice; the results of one step never overlap}}
  plan.step "layer_norm_grad" (@x, @g, @dy) -> (@d, @d, @d) phase "backward"
}

// -----

// Inputs name buffers ...
plan.arena bytes(128) alignment(64) {
  plan.buffer @y "activation" : f32 [4] offset 64 bytes 16
  // expected-error @+1 {{'plan.step' op input #0 @x is not a plan.buffer}}
  plan.step "relu" (@x) -> (@y) phase "forward"
}

// -----

// ... and so do outputs.
plan.arena bytes(128) alignment(64) {
  plan.buffer @x "activation" : f32 [4] offset 0 bytes 16
  // expected-error @+1 {{'plan.step' op output #0 @y is not a plan.buffer}}
  plan.step "relu" (@x) -> (@y) phase "forward"
}

// -----

// No step writes an input.
plan.arena bytes(128) alignment(64) {
  plan.buffer @x "input" : f32 [4] offset 0 bytes 16
  plan.buffer @h "activation" : f32 [4] offset 64 bytes 16
  // expected-error @+1 {{'plan.step' op writes @x, an 'input' buffer; no step writes an input}}
  plan.step "relu" (@h) -> (@x) phase "forward"
}

// -----

// Only the optimizer updates write params and state.
plan.arena bytes(128) alignment(64) {
  plan.buffer @w "param" : f32 [4] offset 0 bytes 16 init {kind = "zeros"}
  plan.buffer @h "activation" : f32 [4] offset 64 bytes 16
  // expected-error @+1 {{'plan.step' op 'relu' writes @w, a 'param' buffer; only optimizer updates (sgd_update, sgd_plain_update, adamw_update) write params and optimizer state}}
  plan.step "relu" (@h) -> (@w) phase "forward"
}

// -----

// sgd_update writes its param and momentum in place.
plan.arena bytes(256) alignment(64) {
  plan.buffer @w "param" : f32 [4] offset 0 bytes 16 init {kind = "zeros"}
  plan.buffer @"grad:w" "grad" : f32 [4] offset 64 bytes 16
  plan.buffer @"momentum:w" "optimizer" : f32 [4] offset 128 bytes 16 init {kind = "zeros"}
  // expected-error @+1 {{'plan.step' op 'sgd_update' must update in place: inputs (param, grad, momentum_buffer) and outputs (param, momentum_buffer) naming the same param and state buffers}}
  plan.step "sgd_update" (@w, @"grad:w", @"momentum:w") -> (@"momentum:w", @w) phase "optimizer"
}

// -----

// adamw_update writes its param and both moments in place.
plan.arena bytes(512) alignment(64) {
  plan.buffer @w "param" : f32 [4] offset 0 bytes 16 init {kind = "zeros"}
  plan.buffer @"grad:w" "grad" : f32 [4] offset 64 bytes 16
  plan.buffer @"adam_m:w" "optimizer" : f32 [4] offset 128 bytes 16 init {kind = "zeros"}
  plan.buffer @"adam_v:w" "optimizer" : f32 [4] offset 192 bytes 16 init {kind = "zeros"}
  plan.buffer @v2 "activation" : f32 [4] offset 256 bytes 16
  // expected-error @+1 {{'plan.step' op 'adamw_update' must update in place: inputs (param, grad, m, v) and outputs (param, m, v) naming the same param and state buffers}}
  plan.step "adamw_update" (@w, @"grad:w", @"adam_m:w", @"adam_v:w") -> (@w, @"adam_m:w", @v2) phase "optimizer"
}

// -----

// A free names a buffer.
plan.arena bytes(64) alignment(64) {
  // expected-error @+1 {{'plan.free' op frees @h, which is not a plan.buffer}}
  plan.free @h
}

// -----

// Params, optimizer state and inputs are never freed.
plan.arena bytes(64) alignment(64) {
  plan.buffer @x "input" : f32 [4] offset 0 bytes 16
  // expected-error @+1 {{'plan.free' op cannot free @x: 'input' buffers live across steps}}
  plan.free @x
}

// -----

// Two buffers live at the same time share no bytes: @h (steps 0 to 2) and
// @g (written at step 1, read at 2) both sit at offset 64.
plan.arena bytes(192) alignment(64) loss(@l) {
  plan.buffer @x "input" : f32 [4] offset 0 bytes 16 data {kind = "randn"}
  plan.buffer @h "activation" : f32 [4] offset 64 bytes 16
  // expected-error @+1 {{'plan.buffer' op bytes [64, 80) of @g (live from step 1 to 2) overlap bytes [64, 80) of @h (live from step 0 to 2); buffers live at the same time share no bytes}}
  plan.buffer @g "activation" : f32 [4] offset 64 bytes 16
  plan.buffer @l "activation" : f32 [] offset 128 bytes 4
  plan.step "relu" (@x) -> (@h) phase "forward"
  plan.step "tanh" (@x) -> (@g) phase "forward"
  plan.step "mse" (@h, @g) -> (@l) phase "forward"
}

// -----

// A buffer may take the bytes of one that died before it was written:
// @g reuses @h's bytes after @h's last reader (step 1).
plan.arena bytes(256) alignment(64) loss(@l) {
  plan.buffer @x "input" : f32 [4] offset 0 bytes 16 data {kind = "randn"}
  plan.buffer @h "activation" : f32 [4] offset 64 bytes 16
  plan.buffer @y "activation" : f32 [4] offset 128 bytes 16
  plan.buffer @g "activation" : f32 [4] offset 64 bytes 16
  plan.buffer @l "activation" : f32 [] offset 192 bytes 4
  plan.step "relu" (@x) -> (@h) phase "forward"
  plan.step "tanh" (@h) -> (@y) phase "forward"
  plan.free @h
  plan.step "exp" (@y) -> (@g) phase "forward"
  plan.step "mse" (@y, @g) -> (@l) phase "forward"
}

// -----

// Only the state updates write state (running statistics).
plan.arena bytes(128) alignment(64) {
  plan.buffer @s "state" : f32 [4] offset 0 bytes 16 init {kind = "zeros"}
  plan.buffer @h "activation" : f32 [4] offset 64 bytes 16
  // expected-error @+1 {{'plan.step' op 'relu' writes @s, a 'state' buffer; only state updates (the running statistics of batch normalization) write state}}
  plan.step "relu" (@h) -> (@s) phase "forward"
}

// -----

// A state update writes in place of its state operand.
plan.arena bytes(256) alignment(64) {
  plan.buffer @s "state" : f32 [2] offset 0 bytes 8 init {kind = "zeros"}
  plan.buffer @t "state" : f32 [2] offset 64 bytes 8 init {kind = "zeros"}
  plan.buffer @x "input" : f32 [3, 2] offset 128 bytes 24
  // expected-error @+1 {{'plan.step' op 'running_mean_update' must update in place: output 0 names the state buffer of input 0}}
  plan.step "running_mean_update" (@s, @x) -> (@t) phase "forward" attrs {momentum = 0.9 : f32}
}
