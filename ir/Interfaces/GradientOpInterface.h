//===- GradientOpInterface.h - VJP builder of a graph op --------*- C++ -*-===//
//
// The interface the autodiff pass queries with dyn_cast on each forward op.
//
//===----------------------------------------------------------------------===//

#ifndef REMAT_IR_INTERFACES_GRADIENTOPINTERFACE_H
#define REMAT_IR_INTERFACES_GRADIENTOPINTERFACE_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpDefinition.h"
#include "llvm/ADT/SmallVector.h"

#include "ir/Interfaces/GradientOpInterface.h.inc"

#endif // REMAT_IR_INTERFACES_GRADIENTOPINTERFACE_H
