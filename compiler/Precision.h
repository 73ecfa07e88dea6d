//===- Precision.h - bf16 compute under autocast's rules --------*- C++ -*-===//
//
// `--precision bf16` (docs/precision.md): the flattened model rewritten so
// that its GEMMs compute in bf16 as under torch.autocast: each op gets the
// compute type its record's `autocast` rule gives (ops::Autocast), every
// float operand of another type reaches it through a conversion op (one
// per value and type, shared by its readers, which the planner keeps or
// recomputes like any value), and its result has the op's type. The
// autodiff pass makes the backward of each conversion the conversion back,
// so gradients flowing between bf16 ops are bf16, and parameters, their
// gradients and the optimizer stay float32. MLIR-free.
//
//===----------------------------------------------------------------------===//
#ifndef REMAT_COMPILER_PRECISION_H
#define REMAT_COMPILER_PRECISION_H

#include "compiler/ModelGraph.h"

namespace remat::model {

/// `graph` with conversions inserted and value types set by the rules;
/// float32 values stay float32 where no rule makes them bf16. Throws
/// ModelError if a rewritten op's type rule rejects it.
ModelGraph withBf16Compute(ModelGraph graph);

} // namespace remat::model

#endif // REMAT_COMPILER_PRECISION_H
