//===- Importer.h - Model graph to the `graph` dialect ----------*- C++ -*-===//
//
// Lowers a validated ModelGraph into a module holding one `func.func
// @forward` over graph-dialect ops, then verifies it. Inputs and parameters
// are function arguments tagged with `graph.name`, `graph.role` and their
// data/init objects; the model's name, seed and optimizer are module
// attributes. Each op's location names its place in the model file: a NameLoc
// of its JSON pointer and name around the FileLineColLoc of its definition.
//
//===----------------------------------------------------------------------===//
#ifndef REMAT_COMPILER_IMPORTER_H
#define REMAT_COMPILER_IMPORTER_H

#include "compiler/ModelGraph.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"

namespace remat::compiler {

/// Loads the dialects the compiler uses into `context`.
void loadCompilerDialects(mlir::MLIRContext &context);

/// A location the importer made, as messages show it: an op's is
/// "FILE:LINE:COLUMN: /ops/3 'h'" (its place in the model file), the
/// module's "FILE"; "" for other kinds of location.
std::string describeLocation(mlir::Location loc);

/// Builds and verifies the module. Throws model::ModelError with the
/// diagnostics (each prefixed by its place in the model file) on failure.
mlir::OwningOpRef<mlir::ModuleOp>
importModel(const model::ModelGraph &graph, mlir::MLIRContext &context);

} // namespace remat::compiler

#endif // REMAT_COMPILER_IMPORTER_H
