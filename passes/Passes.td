//===- Passes.td - the training-step passes ----------------*- tablegen -*-===//
//
// Declares remat's passes (generated with -gen-pass-decls; registered by
// remat::registerAllPasses in Pipelines.cpp). Each pass's algorithm is the
// doc comment of its implementation; the description here is its contract:
// the IR it expects and the IR it leaves, which later stages depend on.
//
//===----------------------------------------------------------------------===//

#ifndef REMAT_PASSES_PASSES
#define REMAT_PASSES_PASSES

include "mlir/Pass/PassBase.td"

def AutodiffPass : Pass<"remat-autodiff", "::mlir::ModuleOp"> {
  let summary = "Builds the backward: @forward becomes @train_step";
  let description = [{
    Expects `func.func @forward` with one block that returns a 0-d float
    tensor (the loss), then possibly new values of state arguments
    ({graph.role = "state", graph.name, graph.updates = <the argument's
    index : i64>}: batch normalization's running statistics, written by
    the ops whose table entry has `updatesState`). Every argument carries
    `graph.name` (a string) and `graph.role` = "input" | "param" | "state";
    params and state are float tensors. State gets no gradient.

    Replaces it with `func.func @train_step`, which has the same arguments
    (and argument attributes) and returns the loss followed by the gradient
    of every param argument, in argument order, then the new state values
    as @forward returned them:

    ```mlir
    func.func @train_step(%x: tensor<8x4xf32> {graph.name = "x", graph.role = "input"},
                          %w: tensor<4x2xf32> {graph.name = "w", graph.role = "param"})
        -> (tensor<f32> {graph.name = "loss", graph.role = "loss"},
            tensor<4x2xf32> {graph.name = "grad:w", graph.param = 1 : i64,
                             graph.role = "grad"})
    ```

    The forward ops stay first and unchanged; the backward ops follow them
    and carry the location of the forward op they differentiate. Inputs get
    no gradient; a param that does not reach the loss gets a
    `graph.constant 0.0` gradient. Backward ops whose results nothing needs
    (such as the gradient of an input) are not kept. The pass fails with a
    located diagnostic when @forward is missing or malformed, or when an op
    on the path from a param to the loss has no gradient rule.
  }];
  let dependentDialects = ["::remat::graph::GraphDialect",
                           "::mlir::func::FuncDialect"];
}

def OptimizerPass : Pass<"remat-optimizer", "::mlir::ModuleOp"> {
  let summary = "Turns @train_step's gradients into optimizer updates";
  let description = [{
    Expects the output of `-remat-autodiff` and the module attribute
    `graph.optimizer` = {kind = "sgd" | "adamw", lr, momentum, weight_decay,
    beta1, beta2, eps} (floats; missing fields take the defaults of
    docs/model-format.md; a field the kind does not have is an error).

    For every param argument `p` (in argument order) the pass appends its
    optimizer state as new arguments: sgd `momentum:<p>`; adamw
    `adam_m:<p>` then `adam_v:<p>`. Each has the param's type and the
    attributes {graph.name, graph.role = "optimizer",
    graph.init = {kind = "zeros"}, graph.param = <p's arg index : i64>}.
    With the module attribute `graph.optimizer_shards` = N > 1
    (`--shard-optimizer` with `--ranks N`, ZeRO-1) each state argument is
    instead one rank's share, `tensor<ceil(numel/N) x f32>`, and the
    stateful updates carry `shards = N` (sgd_plain_update has no state and
    stays whole).

    It inserts one `graph.sgd_update` (operands: param, grad, momentum),
    `graph.sgd_plain_update` (param, grad; SGD with momentum 0, which keeps
    no state) or `graph.adamw_update` (param, grad, m, v) per param, with f32
    hyperparameter attributes, right after the op that defines the final
    gradient; if a backward op created later still reads the old param
    value, the update goes after the last such reader instead, so that the
    update can run in place: after the update, no op reads the param's old
    value.

    The function then returns (loss, new value of every param in argument
    order, new value of every state argument in argument order). Each new
    value carries {graph.role = "param" | "optimizer", graph.name = the
    argument's name, graph.updates = <the argument's index : i64>}: the
    runtime keeps it in that argument's buffer. The new state values of
    the input (graph.role = "state") follow, unchanged. Gradients are not
    returned; each is operand #1 (`grad`) of its update op. The pass fails
    with a diagnostic when @train_step or graph.optimizer is missing or
    malformed.
  }];
  let dependentDialects = ["::remat::graph::GraphDialect",
                           "::mlir::func::FuncDialect"];
}

def SchedulePass : Pass<"remat-schedule", "::mlir::ModuleOp"> {
  let summary = "Reorders @train_step into a memory-aware order";
  let description = [{
    Expects the output of `-remat-optimizer`. Reorders the ops of
    `func.func @train_step` (a topological order that keeps every data
    dependency and runs each in-place update after every other reader of
    the argument it overwrites): among the ready ops it runs the one that
    frees the most bytes net of what it allocates, ties broken by program
    order; ops without operands move just before their first
    reader. So a weight gradient that frees an activation runs before the
    input gradient that would overlap it, and each optimizer update runs as
    soon as its gradient is final. The algorithm is memory::memoryAwareOrder
    (passes/memory/StepGraph.h). Greedy; not optimal.
  }];
}

def TestPrintMemoryPass : Pass<"remat-test-print-memory", "::mlir::ModuleOp"> {
  let summary = "Prints @train_step's liveness and arena layout (tests)";
  let description = [{
    For lit tests: prints the live bytes while each op of `@train_step`
    runs, in the current order, and each value's buffer: role, bytes,
    offset, lifetime (op positions, inclusive) and the buffer it shares.
  }];
  let options = [
    Option<"alignment", "alignment", "int64_t",
           /*default=*/"::remat::defaults::kAlignment",
           "Byte alignment of every buffer">,
  ];
}

def RematerializePass : Pass<"remat-rematerialize", "::mlir::ModuleOp"> {
  let summary = "Recomputes activations so the step fits a byte budget";
  let description = [{
    Expects the output of `-remat-schedule`. Plans which forward values to
    keep and which to recompute so that the step's arena fits
    `budget-bytes` at the least added modeled cost (passes/planner); without
    a budget, the order of least memory that recomputes nothing. It then
    rewrites `@train_step` in the planned order: recomputations are clones
    of forward ops tagged `remat.recompute`, each op reads the latest copy
    of its operands, and each in-place update runs after every other reader
    of its parameter. The buffer layout is checked against the budget and
    the plan retried with a lower target when fragmentation overflows it.
    Writes the module attribute `remat.plan` = {solver, status,
    budget_bytes, lower_bound_bytes and lower_bound_reason (the planner's
    bound plus the workspace reserve), min_feasible_bytes (-1 unless
    `search-minimum`: the smallest whole-step budget the heuristic or
    per-block schedule meets after layout, to within 0.5%),
    min_feasible_gap ("bound-met", "open" or "not-searched"),
    solve_seconds, optimality_gap (-1
    when not proven; for the order solved in), recompute_overhead, order
    ("given" or the candidate order the schedule came from)}. Fails, naming the minimum
    feasible budget, when no schedule fits. Do not run CSE afterwards.
  }];
  let options = [
    Option<"budgetBytes", "budget-bytes", "int64_t", /*default=*/"0",
           "Memory budget in bytes (arena of the whole step); 0: none, "
           "the least memory without recomputation">,
    Option<"workspaceReserve", "workspace-reserve", "int64_t",
           /*default=*/"0",
           "Bytes of the budget kept for the backend's workspace: the arena "
           "is planned under budget-bytes minus this">,
    Option<"solver", "solver", "std::string",
           /*default=*/"::remat::defaults::kSolver",
           "auto, exact, dp, heuristic, store-all, per-block or sqrt">,
    Option<"timeLimit", "time-limit", "double",
           /*default=*/"::remat::defaults::kTimeLimitSeconds",
           "Time limit of the exact MILP, seconds (auto runs it on graphs "
           "of up to 120 nodes)">,
    Option<"alignment", "alignment", "int64_t",
           /*default=*/"::remat::defaults::kAlignment",
           "Byte alignment of every buffer">,
    Option<"progress", "progress", "bool", /*default=*/"false",
           "Print solver progress on stderr">,
    Option<"reorder", "reorder", "bool", /*default=*/"true",
           "Let the planner move ops too: also solve in the memory-aware "
           "candidate orders (passes/planner/Reorder.h), keep the cheapest">,
    Option<"searchMinimum", "search-minimum", "bool", /*default=*/"false",
           "Also search the minimum feasible budget (a bisection that plans "
           "the step a dozen times) for the plan's min_feasible_bytes">,
  ];
}

def AssignBuffersPass : Pass<"remat-assign-buffers", "::mlir::ModuleOp"> {
  let summary = "Lays @train_step out in one arena as a `plan.arena`";
  let description = [{
    Expects `@train_step` in its final order (after `-remat-schedule` and,
    optionally, `-remat-rematerialize`). Computes liveness (an elementwise
    result may take the bytes of an operand that dies at it; an in-place
    update keeps its argument's bytes) and assigns aligned offsets
    greedily, largest buffer first, each at the lowest offset free over its
    lifetime (memory::assignOffsets). Replaces `@train_step` with one
    `plan.arena` holding a `plan.buffer` per tensor, the `plan.step`s in
    order and a `plan.free` after each transient buffer's last reader. The
    arena's `remat.live_lower_bound_bytes` is the largest sum of live
    bytes: the arena can exceed it only through fragmentation.
  }];
  let dependentDialects = ["::remat::plan::PlanDialect"];
  let options = [
    Option<"alignment", "alignment", "int64_t",
           /*default=*/"::remat::defaults::kAlignment",
           "Byte alignment of every buffer">,
  ];
}

#endif // REMAT_PASSES_PASSES
