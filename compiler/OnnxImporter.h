//===- OnnxImporter.h - ONNX files as models --------------------*- C++ -*-===//
//
// Reads an ONNX model (exported from PyTorch, docs/onnx.md) with the ONNX
// library and turns it into the same ModelGraph the JSON reader produces,
// plus the initializers' values: everything downstream (autodiff, planner,
// plan emitter, runtime) is shared. MLIR-free; built only where the ONNX
// library is found (REMAT_ENABLE_ONNX).
//
//===----------------------------------------------------------------------===//
#ifndef REMAT_COMPILER_ONNXIMPORTER_H
#define REMAT_COMPILER_ONNXIMPORTER_H

#include "compiler/ModelGraph.h"
#include "runtime/plan/Safetensors.h"

#include <map>
#include <string>

namespace remat::model {

/// The opsets of the default ONNX domain the importer accepts.
constexpr int kMinOnnxOpset = 13;
constexpr int kMaxOnnxOpset = 17;

/// An imported ONNX model: the flattened training step and the value of
/// every parameter (its initializer) and of every input without a generator
/// (constant data, fed every step: docs/onnx.md), named as the graph names
/// it.
struct OnnxModel {
  ModelGraph graph;
  std::map<std::string, runtime::NamedTensor> weights;
};

/// Reads the ONNX file at `path` (initializers stored in external data
/// files are read from the model's directory), checks it with the ONNX
/// checker and shape inference, folds its shape computations and maps its
/// nodes onto graph ops. The training step gets an input `labels`, a loss
/// and an optimizer as `options` says (ModelOptions::onnx). Throws
/// ModelError ("FILE: node '/fc1/Gemm' (Gemm, opset 13): ...") on any
/// problem, OptionError on a bad --input-shape.
OnnxModel importOnnxFile(const std::string &path, const ModelOptions &options);

/// Every ONNX op type the importer maps (compute and folded shape ops).
const std::vector<std::string> &supportedOnnxOps();

} // namespace remat::model

#endif // REMAT_COMPILER_ONNXIMPORTER_H
