//===- ModelFile.h - Read a model file of any supported format --*- C++ -*-===//
//
// The one entry point the CLI reads models through: a JSON model
// (docs/model-format.md) or, where the build has the ONNX library, an ONNX
// file (docs/onnx.md, by its `.onnx` extension). MLIR-free.
//
//===----------------------------------------------------------------------===//
#ifndef REMAT_COMPILER_MODELFILE_H
#define REMAT_COMPILER_MODELFILE_H

#include "compiler/ModelGraph.h"
#include "runtime/plan/Safetensors.h"

#include <map>
#include <string>

namespace remat::model {

/// A model and the initial values of its parameters, where the file has
/// them (ONNX initializers); empty for JSON models, whose params start from
/// their `init`.
struct ModelFile {
  ModelGraph graph;
  std::map<std::string, runtime::NamedTensor> weights;
};

/// Whether `path` names an ONNX file (it ends in `.onnx`).
bool isOnnxPath(const std::string &path);
/// Whether this build reads ONNX files.
bool haveOnnxSupport();

/// Reads the model at `path` (`-`: JSON text on stdin). Throws ModelError
/// on a bad model, OptionError on an option the model cannot honour (an
/// ONNX-only option on a JSON model, --set on an ONNX model).
ModelFile readModelFile(const std::string &path, const ModelOptions &options);

/// Where a plan's weights file goes: next to the plan, `P.plan` ->
/// `P.weights.safetensors` (any other name gets `.weights.safetensors`
/// appended).
std::string weightsPathForPlan(const std::string &planPath);

} // namespace remat::model

#endif // REMAT_COMPILER_MODELFILE_H
