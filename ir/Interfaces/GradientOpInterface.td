//===- GradientOpInterface.td - VJP builder of a graph op --*- tablegen -*-===//
//
// The vector-Jacobian product that the autodiff pass asks every forward op
// for. Ops without a rule yet keep the default, which fails with a
// diagnostic instead of producing a wrong backward.
//
//===----------------------------------------------------------------------===//

#ifndef REMAT_IR_INTERFACES_GRADIENTOPINTERFACE
#define REMAT_IR_INTERFACES_GRADIENTOPINTERFACE

include "mlir/IR/OpBase.td"

def Graph_GradientOpInterface : OpInterface<"GradientOpInterface"> {
  let cppNamespace = "::remat::graph";
  let description = [{
    Builds the backward of one forward op: given one gradient per result
    (a null Value when a result has no gradient), appends one gradient per
    operand to `operandGrads`, in operand order, using the gradient ops of
    docs/ops.md. An operand that needs no gradient (indices, labels) gets a
    null Value. New ops are created at the builder's insertion point.
  }];

  let methods = [
    InterfaceMethod<
      /*desc=*/[{
        Appends one gradient per operand to `operandGrads`; fails with a
        diagnostic on the op when the op has no gradient rule.
      }],
      /*retTy=*/"::mlir::LogicalResult", /*methodName=*/"buildGradient",
      /*args=*/(ins "::mlir::OpBuilder &":$b,
                    "::llvm::ArrayRef<::mlir::Value>":$resultGrads,
                    "::llvm::SmallVectorImpl<::mlir::Value> &":$operandGrads),
      /*methodBody=*/"",
      /*defaultImplementation=*/[{
        return $_op->emitOpError("gradient not implemented");
      }]>,
  ];
}

#endif // REMAT_IR_INTERFACES_GRADIENTOPINTERFACE
