//===- CostOpInterface.td - FLOPs and bytes of a graph op --*- tablegen -*-===//
//
// The cost model the rematerialization planner reads: every graph op reports
// its FLOPs and the bytes it reads and writes, computed from static types.
//
//===----------------------------------------------------------------------===//

#ifndef REMAT_IR_INTERFACES_COSTOPINTERFACE
#define REMAT_IR_INTERFACES_COSTOPINTERFACE

include "mlir/IR/OpBase.td"

def Graph_CostOpInterface : OpInterface<"CostOpInterface"> {
  let cppNamespace = "::remat::graph";
  let description = [{
    Static cost of one op, from its operand and result types only.

    All counts are 64-bit and saturate at INT64_MAX instead of overflowing.
    Bytes use the element size of the element type (f32 4, f16/bf16 2,
    i32 4, i64 8). The defaults are: bytes read = the sum of the operand
    sizes, bytes written = the sum of the result sizes, FLOPs = one per
    element of the first result (elementwise ops). Ops whose work is not one
    operation per output element override `getFlops` and state their count
    in their description.
  }];

  let methods = [
    InterfaceMethod<
      /*desc=*/"Floating-point operations of one execution of the op.",
      /*retTy=*/"int64_t", /*methodName=*/"getFlops", /*args=*/(ins),
      /*methodBody=*/"",
      /*defaultImplementation=*/[{
        return ::remat::graph::firstResultElements($_op);
      }]>,
    InterfaceMethod<
      /*desc=*/"Bytes read: the sum of the operand sizes.",
      /*retTy=*/"int64_t", /*methodName=*/"getBytesRead", /*args=*/(ins),
      /*methodBody=*/"",
      /*defaultImplementation=*/[{
        return ::remat::graph::operandBytes($_op);
      }]>,
    InterfaceMethod<
      /*desc=*/"Bytes written: the sum of the result sizes.",
      /*retTy=*/"int64_t", /*methodName=*/"getBytesWritten", /*args=*/(ins),
      /*methodBody=*/"",
      /*defaultImplementation=*/[{
        return ::remat::graph::resultBytes($_op);
      }]>,
  ];
}

#endif // REMAT_IR_INTERFACES_COSTOPINTERFACE
