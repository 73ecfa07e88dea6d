//===- GraphOps.td - ops of the graph dialect --------------*- tablegen -*-===//
//
// Every op of docs/ops.md: forward, gradient and optimizer ops, each
// defined once (docs/adding-an-op.md), in the file of its family:
//   GraphComputeOps.td  matmul, elementwise arithmetic and activations, the
//                       constant fill, embedding, the losses, dropout,
//                       attention, convolution and pooling, with gradients;
//   GraphNormOps.td     layer and batch normalization, running statistics;
//   GraphLayoutOps.td   reshapes, broadcasts, reductions, slices, joins and
//                       resizing, with gradients; the optimizer updates.
// Each op is Pure (optimizer ops return new values instead of writing in
// place), is verified by its type rule (ops/ShapeRules.h) with messages
// that name the operands, and implements the cost model; forward ops
// implement the gradient interface. The base classes are GraphOpBase.td's.
//
//===----------------------------------------------------------------------===//

#ifndef REMAT_IR_GRAPHOPS
#define REMAT_IR_GRAPHOPS

include "ir/GraphOpBase.td"
include "ir/GraphComputeOps.td"
include "ir/GraphNormOps.td"
include "ir/GraphLayoutOps.td"

#endif // REMAT_IR_GRAPHOPS
