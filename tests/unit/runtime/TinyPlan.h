//===- TinyPlan.h - A hand-written plan: linear layer + mse + sgd_update -===//
//
// x [8,4] (randn) -> target = x @ w_teacher (a frozen, uniformly initialized
// param) ; y = x @ w + b ; loss = mse(y, target); backward; sgd_update of w
// and b. Learnable: the loss falls towards 0 as w approaches w_teacher.
// dy reuses the bytes of h (dead after the add): offset 640 twice.
//
//===----------------------------------------------------------------------===//
#ifndef REMAT_TESTS_UNIT_RUNTIME_TINYPLAN_H
#define REMAT_TESTS_UNIT_RUNTIME_TINYPLAN_H

namespace remat::runtime::test {

inline constexpr const char *kTinyLinearPlan = R"json(
{
 "format": "remat-plan",
 "version": 1,
 "model": "tiny_linear",
 "seed": 7,
 "alignment": 64,
 "arena_bytes": 896,
 "buffers": [
  {"name": "x", "role": "input", "dtype": "f32", "shape": [8, 4], "offset": 0, "bytes": 128,
   "data": {"kind": "randn", "mean": 0.0, "std": 1.0}},
  {"name": "w", "role": "param", "dtype": "f32", "shape": [4, 2], "offset": 128, "bytes": 32,
   "init": {"kind": "normal", "mean": 0.0, "std": 0.1}},
  {"name": "b", "role": "param", "dtype": "f32", "shape": [2], "offset": 192, "bytes": 8,
   "init": {"kind": "zeros"}},
  {"name": "w_teacher", "role": "param", "dtype": "f32", "shape": [4, 2], "offset": 256, "bytes": 32,
   "init": {"kind": "uniform", "low": -1.0, "high": 1.0}},
  {"name": "momentum:w", "role": "optimizer", "dtype": "f32", "shape": [4, 2], "offset": 320, "bytes": 32,
   "init": {"kind": "zeros"}},
  {"name": "momentum:b", "role": "optimizer", "dtype": "f32", "shape": [2], "offset": 384, "bytes": 8,
   "init": {"kind": "zeros"}},
  {"name": "grad:w", "role": "grad", "dtype": "f32", "shape": [4, 2], "offset": 448, "bytes": 32},
  {"name": "grad:b", "role": "grad", "dtype": "f32", "shape": [2], "offset": 512, "bytes": 8},
  {"name": "target", "role": "activation", "dtype": "f32", "shape": [8, 2], "offset": 576, "bytes": 64},
  {"name": "h", "role": "activation", "dtype": "f32", "shape": [8, 2], "offset": 640, "bytes": 64},
  {"name": "y", "role": "activation", "dtype": "f32", "shape": [8, 2], "offset": 704, "bytes": 64},
  {"name": "loss", "role": "activation", "dtype": "f32", "shape": [], "offset": 768, "bytes": 4},
  {"name": "dloss", "role": "temporary", "dtype": "f32", "shape": [], "offset": 832, "bytes": 4},
  {"name": "dy", "role": "activation", "dtype": "f32", "shape": [8, 2], "offset": 640, "bytes": 64}
 ],
 "steps": [
  {"op": "matmul", "inputs": [0, 3], "outputs": [8], "attrs": {}, "phase": "forward", "recompute": false},
  {"op": "matmul", "inputs": [0, 1], "outputs": [9], "attrs": {}, "phase": "forward", "recompute": false},
  {"op": "add", "inputs": [9, 2], "outputs": [10], "attrs": {}, "phase": "forward", "recompute": false},
  {"op": "mse", "inputs": [10, 8], "outputs": [11], "attrs": {}, "phase": "forward", "recompute": false},
  {"op": "constant", "inputs": [], "outputs": [12], "attrs": {"value": 1.0}, "phase": "backward", "recompute": false},
  {"op": "mse_grad", "inputs": [10, 8, 12], "outputs": [13], "attrs": {}, "phase": "backward", "recompute": false},
  {"op": "matmul", "inputs": [0, 13], "outputs": [6], "attrs": {"transpose_a": true}, "phase": "backward", "recompute": false},
  {"op": "sum_to", "inputs": [13], "outputs": [7], "attrs": {}, "phase": "backward", "recompute": false},
  {"op": "sgd_update", "inputs": [1, 6, 4], "outputs": [1, 4], "attrs": {"lr": 0.1, "momentum": 0.5, "weight_decay": 0.0}, "phase": "optimizer", "recompute": false},
  {"op": "sgd_update", "inputs": [2, 7, 5], "outputs": [2, 5], "attrs": {"lr": 0.1, "momentum": 0.5, "weight_decay": 0.0}, "phase": "optimizer", "recompute": false}
 ],
 "loss": 11,
 "tokens_per_sample": 1,
 "batch": 8,
 "report": {"budget_bytes": 1024, "planned_peak_bytes": 836, "note": "hand-written; dy reuses h's bytes (h is dead after step 2)"}
}
)json";

} // namespace remat::runtime::test

#endif // REMAT_TESTS_UNIT_RUNTIME_TINYPLAN_H
