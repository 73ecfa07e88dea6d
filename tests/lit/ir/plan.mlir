// Round trip of the plan dialect: custom form -> custom form is stable, and
// the generic form parses back to the same custom form.
// RUN: remat-opt %s -split-input-file | remat-opt -split-input-file | FileCheck %s
// RUN: remat-opt %s -split-input-file --mlir-print-op-generic | remat-opt -split-input-file | FileCheck %s
// Printing is a fixed point: printing the printed form changes nothing.
// RUN: remat-opt %s -split-input-file -o %t.once
// RUN: remat-opt %t.once -split-input-file -o %t.twice
// RUN: diff %t.once %t.twice

// The tiny linear layer of docs/plan-format.md (SGD): every role, init and
// data dictionaries, a shared byte range (dy reuses h's bytes 640..703
// after plan.free @h), steps of every phase and the in-place update.
// CHECK-LABEL: plan.arena bytes(896) alignment(64) loss(@loss) {
// CHECK-NEXT: plan.buffer @x "input" : f32 [8, 4] offset 0 bytes 128 data {kind = "randn", mean = 0.000000e+00 : f64, std = 1.000000e+00 : f64}
// CHECK-NEXT: plan.buffer @w "param" : f32 [4, 2] offset 128 bytes 32 init {kind = "normal", mean = 0.000000e+00 : f64, std = 1.000000e-01 : f64}
// CHECK-NEXT: plan.buffer @b "param" : f32 [2] offset 192 bytes 8 init {kind = "zeros"}
// CHECK-NEXT: plan.buffer @"momentum:w" "optimizer" : f32 [4, 2] offset 320 bytes 32 init {kind = "zeros"}
// CHECK-NEXT: plan.buffer @"momentum:b" "optimizer" : f32 [2] offset 384 bytes 8 init {kind = "zeros"}
// CHECK-NEXT: plan.buffer @"grad:w" "grad" : f32 [4, 2] offset 448 bytes 32
// CHECK-NEXT: plan.buffer @"grad:b" "grad" : f32 [2] offset 512 bytes 8
// CHECK-NEXT: plan.buffer @target "activation" : f32 [8, 2] offset 576 bytes 64
// CHECK-NEXT: plan.buffer @h "activation" : f32 [8, 2] offset 640 bytes 64
// CHECK-NEXT: plan.buffer @y "activation" : f32 [8, 2] offset 704 bytes 64
// CHECK-NEXT: plan.buffer @loss "activation" : f32 [] offset 768 bytes 4
// CHECK-NEXT: plan.buffer @dloss "temporary" : f32 [] offset 832 bytes 4
// CHECK-NEXT: plan.buffer @dy "activation" : f32 [8, 2] offset 640 bytes 64
// CHECK-NEXT: plan.step "matmul" (@x, @w_teacher) -> (@target) phase "forward"
// CHECK-NEXT: plan.step "matmul" (@x, @w) -> (@h) phase "forward"
// CHECK-NEXT: plan.step "add" (@h, @b) -> (@y) phase "forward"
// CHECK-NEXT: plan.free @h
// CHECK-NEXT: plan.step "mse" (@y, @target) -> (@loss) phase "forward"
// CHECK-NEXT: plan.step "constant" () -> (@dloss) phase "backward" attrs {value = 1.000000e+00 : f32}
// CHECK-NEXT: plan.step "mse_grad" (@y, @target, @dloss) -> (@dy) phase "backward"
// CHECK-NEXT: plan.free @dloss
// CHECK-NEXT: plan.step "matmul" (@x, @dy) -> (@"grad:w") phase "backward" attrs {transpose_a = true}
// CHECK-NEXT: plan.step "sum_to" (@dy) -> (@"grad:b") phase "backward"
// CHECK-NEXT: plan.free @dy
// CHECK-NEXT: plan.step "sgd_update" (@w, @"grad:w", @"momentum:w") -> (@w, @"momentum:w") phase "optimizer" attrs {lr = 1.000000e-01 : f32, momentum = 5.000000e-01 : f32, weight_decay = 0.000000e+00 : f32}
// CHECK-NEXT: plan.step "sgd_update" (@b, @"grad:b", @"momentum:b") -> (@b, @"momentum:b") phase "optimizer" attrs {lr = 1.000000e-01 : f32, momentum = 5.000000e-01 : f32, weight_decay = 0.000000e+00 : f32}
// CHECK-NEXT: plan.buffer @w_teacher "param" : f32 [4, 2] offset 256 bytes 32 init {high = 1.000000e+00 : f64, kind = "uniform", low = -1.000000e+00 : f64}
// CHECK-NEXT: }
plan.arena bytes(896) alignment(64) loss(@loss) {
  plan.buffer @x "input" : f32 [8, 4] offset 0 bytes 128 data {kind = "randn", mean = 0.0 : f64, std = 1.0 : f64}
  plan.buffer @w "param" : f32 [4, 2] offset 128 bytes 32 init {kind = "normal", mean = 0.0 : f64, std = 0.1 : f64}
  plan.buffer @b "param" : f32 [2] offset 192 bytes 8 init {kind = "zeros"}
  plan.buffer @"momentum:w" "optimizer" : f32 [4, 2] offset 320 bytes 32 init {kind = "zeros"}
  plan.buffer @"momentum:b" "optimizer" : f32 [2] offset 384 bytes 8 init {kind = "zeros"}
  plan.buffer @"grad:w" "grad" : f32 [4, 2] offset 448 bytes 32
  plan.buffer @"grad:b" "grad" : f32 [2] offset 512 bytes 8
  plan.buffer @target "activation" : f32 [8, 2] offset 576 bytes 64
  plan.buffer @h "activation" : f32 [8, 2] offset 640 bytes 64
  plan.buffer @y "activation" : f32 [8, 2] offset 704 bytes 64
  plan.buffer @loss "activation" : f32 [] offset 768 bytes 4
  plan.buffer @dloss "temporary" : f32 [] offset 832 bytes 4
  plan.buffer @dy "activation" : f32 [8, 2] offset 640 bytes 64
  plan.step "matmul" (@x, @w_teacher) -> (@target) phase "forward"
  plan.step "matmul" (@x, @w) -> (@h) phase "forward"
  plan.step "add" (@h, @b) -> (@y) phase "forward"
  plan.free @h
  plan.step "mse" (@y, @target) -> (@loss) phase "forward"
  plan.step "constant" () -> (@dloss) phase "backward" attrs {value = 1.0 : f32}
  plan.step "mse_grad" (@y, @target, @dloss) -> (@dy) phase "backward"
  plan.free @dloss
  plan.step "matmul" (@x, @dy) -> (@"grad:w") phase "backward" attrs {transpose_a = true}
  plan.step "sum_to" (@dy) -> (@"grad:b") phase "backward"
  plan.free @dy
  plan.step "sgd_update" (@w, @"grad:w", @"momentum:w") -> (@w, @"momentum:w") phase "optimizer"
      attrs {lr = 0.1 : f32, momentum = 0.5 : f32, weight_decay = 0.0 : f32}
  plan.step "sgd_update" (@b, @"grad:b", @"momentum:b") -> (@b, @"momentum:b") phase "optimizer"
      attrs {lr = 0.1 : f32, momentum = 0.5 : f32, weight_decay = 0.0 : f32}
  // Buffers are symbols: a step may name one declared later.
  plan.buffer @w_teacher "param" : f32 [4, 2] offset 256 bytes 32 init {kind = "uniform", low = -1.0 : f64, high = 1.0 : f64}
}

// -----

// A recomputed forward step, every dtype and its size (f16/bf16 2 bytes,
// i32 4, i64 8), AdamW's in-place update and an arena without a loss.
// CHECK-LABEL: plan.arena bytes(1024) alignment(16) {
// CHECK-NEXT: plan.buffer @ids "input" : i64 [2, 3] offset 0 bytes 48
// CHECK-NEXT: plan.buffer @labels "input" : i32 [2, 3] offset 48 bytes 24
// CHECK-NEXT: plan.buffer @half "activation" : f16 [4] offset 80 bytes 8
// CHECK-NEXT: plan.buffer @brain "temporary" : bf16 [4] offset 96 bytes 8
// CHECK-NEXT: plan.buffer @p "param" : f32 [4] offset 112 bytes 16 init {kind = "ones"}
// CHECK-NEXT: plan.buffer @"adam_m:p" "optimizer" : f32 [4] offset 128 bytes 16 init {kind = "zeros"}
// CHECK-NEXT: plan.buffer @"adam_v:p" "optimizer" : f32 [4] offset 144 bytes 16 init {kind = "zeros"}
// CHECK-NEXT: plan.buffer @"grad:p" "grad" : f32 [4] offset 160 bytes 16
// CHECK-NEXT: plan.buffer @r "activation" : f32 [4] offset 176 bytes 16
// CHECK-NEXT: plan.step "relu" (@p) -> (@r) phase "forward"
// CHECK-NEXT: plan.free @r
// CHECK-NEXT: plan.step "relu" (@p) -> (@"grad:p") phase "backward" recompute
// CHECK-NEXT: plan.step "adamw_update" (@p, @"grad:p", @"adam_m:p", @"adam_v:p") -> (@p, @"adam_m:p", @"adam_v:p") phase "optimizer" attrs {beta1 = 0.899999976 : f32, beta2 = 9.990000e-01 : f32, eps = 9.99999993E-9 : f32, lr = 1.000000e-03 : f32, weight_decay = 0.00999999977 : f32}
plan.arena bytes(1024) alignment(16) {
  plan.buffer @ids "input" : i64 [2, 3] offset 0 bytes 48
  plan.buffer @labels "input" : i32 [2, 3] offset 48 bytes 24
  plan.buffer @half "activation" : f16 [4] offset 80 bytes 8
  plan.buffer @brain "temporary" : bf16 [4] offset 96 bytes 8
  plan.buffer @p "param" : f32 [4] offset 112 bytes 16 init {kind = "ones"}
  plan.buffer @"adam_m:p" "optimizer" : f32 [4] offset 128 bytes 16 init {kind = "zeros"}
  plan.buffer @"adam_v:p" "optimizer" : f32 [4] offset 144 bytes 16 init {kind = "zeros"}
  plan.buffer @"grad:p" "grad" : f32 [4] offset 160 bytes 16
  plan.buffer @r "activation" : f32 [4] offset 176 bytes 16
  plan.step "relu" (@p) -> (@r) phase "forward"
  plan.free @r
  plan.step "relu" (@p) -> (@"grad:p") phase "backward" recompute
  plan.step "adamw_update" (@p, @"grad:p", @"adam_m:p", @"adam_v:p") -> (@p, @"adam_m:p", @"adam_v:p") phase "optimizer"
      attrs {beta1 = 0.899999976 : f32, beta2 = 0.999000012 : f32, eps = 9.99999993E-9 : f32, lr = 1.000000e-03 : f32, weight_decay = 0.00999999977 : f32}
}

// -----

// An empty arena is valid (nothing to run yet).
// CHECK-LABEL: plan.arena bytes(64) alignment(64) {
// CHECK-NEXT: }
plan.arena bytes(64) alignment(64) {
}
