//===- GraphOpBase.td - base classes of the graph ops ------*- tablegen -*-===//
//
// The tensor and attribute types, the cost traits and the op base classes
// (Graph_Op with the fields the MLIR-free op table is generated from, and
// Graph_ForwardOp) that the op families of GraphOps.td derive from.
//
//===----------------------------------------------------------------------===//

#ifndef REMAT_IR_GRAPHOPBASE
#define REMAT_IR_GRAPHOPBASE

include "ir/GraphDialect.td"
include "ir/Interfaces/CostOpInterface.td"
include "ir/Interfaces/GradientOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

// Ranked tensors only; static shapes and element types are checked by the
// verifier every op shares (GraphOps.cpp), which words the error.
def Graph_Tensor : RankedTensorOf<[AnyType]>;

// An f32 attribute whose getter returns `float` and whose builders take
// `float` (F32Attr's APFloat is easy to build with the wrong semantics).
class Graph_F32Attr : FloatAttrBase<F32, "32-bit float attribute"> {
  let returnType = [{ float }];
  let convertFromStorage = [{ static_cast<float>($_self.getValueAsDouble()) }];
}
def Graph_F32 : Graph_F32Attr;
class Graph_F32Default<string value> : DefaultValuedAttr<Graph_F32, value>;
def Graph_FalseBool : DefaultValuedAttr<BoolAttr, "false">;
def Graph_TrueBool : DefaultValuedAttr<BoolAttr, "true">;

// The elementwise cost model: one FLOP per result element.
defvar ElementwiseCost = Graph_CostOpInterface;
// Ops with their own FLOP count: the record's `flops`, the body of
// getFlops() (with GraphOps.cpp's cost helpers: elements, times, plus).
defvar OwnFlops = DeclareOpInterfaceMethods<Graph_CostOpInterface, ["getFlops"]>;

class Graph_Op<string mnemonic, list<Trait> traits = []>
    : Op<Graph_Dialect, mnemonic, !listconcat([Pure], traits)> {
  // One verifier for every op: its type rule (shapeRule below).
  let hasVerifier = 1;
  // With OwnFlops: the op's FLOP count, the body of getFlops(), beside a
  // comment that says how it is counted.
  code flops = "";
  let extraClassDefinition = [{
    ::mlir::LogicalResult $cppClass::verify() {
      return ::remat::graph::verifyByTypeRule(getOperation());
    }
  }] # !if(!empty(flops), "",
           "int64_t $cppClass::getFlops() {\n" # flops # "\n}\n");

  // What the MLIR-free parts of remat (runtime, model reader, shape rules)
  // know of the op, generated into ops/generated/OpTable.inc by
  // ops/gen_op_table.py together with the name, operands, results and
  // attributes (with their defaults) above. docs/adding-an-op.md.
  //
  // The backends' entry point: each backend defines one kernel function
  // per family (cpu/kernels/, cuda/kernels/), which may serve several ops.
  string kernelFamily = ?;
  // The rule of ops/ShapeRules.h that checks the operand types and infers
  // the result types, for the verifier, the model reader and the loader.
  string shapeRule = ?;
  // Whether a result may occupy exactly the bytes of an operand of its
  // type: the kernel reads element i of every operand before it writes
  // element i of the result.
  bit inPlace = 0;
  // Whether model files may use the op.
  bit inModelFormat = 0;
  // Whether the result type is an input of the op rather than inferred
  // (the model format gives it as the `shape` attribute).
  bit resultTypeGiven = 0;
  // Whether the op is an optimizer update: operand 0 is a param, operand 1
  // its gradient, operands 2.. its optimizer state; result 0 is the new
  // param and result k >= 1 the new state k-1, each in its operand's bytes.
  // Only these ops write params and optimizer state.
  bit updatesParam = 0;
  // Whether the op updates persistent state that is not trained (the
  // running statistics of batch normalization): operand 0 is the state,
  // result 0 its new value in the operand's bytes. Only these ops and the
  // optimizer updates write persistent buffers.
  bit updatesState = 0;
  // The op's compute type under --precision bf16 (compiler/Precision.h,
  // docs/precision.md): "Promote" (bf16 when every float operand is bf16,
  // else float32), "Bf16" (autocast's lower-precision ops: GEMMs and
  // convolutions), "Float32" (autocast's float32 ops: softmax, losses,
  // sums; float32 operands), "Float32Compute" (normalization: float32
  // arithmetic on its operands as they are, a bf16 x giving a bf16
  // result, its parameters float32), or "BiasAdd" (bf16 for a parameter
  // added to a Bf16 op's result, as nn.Linear's bias; else as Promote).
  string autocast = "Promote";
  // Whether the cpu backend's kernels read and write bf16 elements
  // themselves: moves and conversions, and cross_entropy and its gradient,
  // which read bf16 logits a row at a time and compute in float32 (so
  // --precision bf16 gives them bf16 logits without a float32 copy). Other
  // ops with bf16 tensors compute on float copies of them.
  bit bf16Native = 0;
  // Whether the op's reduction is a mean (the mean reduction and losses)
  // rather than a sum: a split step (--microbatches) scales each slice's
  // gradients by its share of the batch when the loss averages over it.
  bit averages = 0;
}

// A forward op: differentiable by the autodiff pass. Its VJP is in
// GraphGradients.cpp.
class Graph_ForwardOp<string mnemonic, list<Trait> traits = []>
    : Graph_Op<mnemonic, !listconcat(
          [DeclareOpInterfaceMethods<Graph_GradientOpInterface,
                                     ["buildGradient"]>], traits)> {
  let inModelFormat = 1;
}

#endif // REMAT_IR_GRAPHOPBASE
