//===- GraphDialect.td - the graph dialect -----------------*- tablegen -*-===//
//
// The `graph` dialect: tensor ops of a training step on statically shaped
// ranked tensors. docs/ops.md is the contract for every op.
//
//===----------------------------------------------------------------------===//

#ifndef REMAT_IR_GRAPHDIALECT
#define REMAT_IR_GRAPHDIALECT

include "mlir/IR/OpBase.td"

def Graph_Dialect : Dialect {
  let name = "graph";
  let cppNamespace = "::remat::graph";
  let summary = "Tensor ops of a training step, on static shapes.";
  let description = [{
    The forward model, its loss, the backward built by autodiff and the
    optimizer update, as pure ops on statically shaped ranked tensors.
    Float tensors are f32, f16 or bf16; index tensors (embedding indices,
    cross-entropy labels) are i32 or i64. Every op verifies its shapes and
    implements `CostOpInterface`; forward ops also implement
    `GradientOpInterface`. docs/ops.md defines the semantics.
  }];
}

#endif // REMAT_IR_GRAPHDIALECT
