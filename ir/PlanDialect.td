//===- PlanDialect.td - the plan dialect -------------------*- tablegen -*-===//
//
// The `plan` dialect: the scheduled training step over buffers at fixed
// offsets in one arena. The plan file (docs/plan-format.md) is this dialect
// serialized; docs/ops.md defines the kernels its steps name.
//
//===----------------------------------------------------------------------===//

#ifndef REMAT_IR_PLANDIALECT
#define REMAT_IR_PLANDIALECT

include "mlir/IR/OpBase.td"

def Plan_Dialect : Dialect {
  let name = "plan";
  let cppNamespace = "::remat::plan";
  let summary = "The scheduled training step over arena buffers.";
  let description = [{
    One `plan.arena` holds the buffer table (`plan.buffer`, symbols with an
    offset and a size in the arena) and, in execution order, the kernel
    steps (`plan.step`, naming a `graph` op and its operand and result
    buffers) and the ends of lifetimes (`plan.free`). Steps refer to buffers
    by symbol. The verifiers check what the runtime's loader checks on a
    plan file that depends only on the table: sizes, alignment, bounds,
    roles, and the in-place rules of the optimizer updates.
  }];
  // Steps name graph ops; their verifier looks the names up.
  let dependentDialects = ["::remat::graph::GraphDialect"];
}

#endif // REMAT_IR_PLANDIALECT
