//===- ModelFile.cpp - Read a model file of any supported format ----------===//
#include "compiler/ModelFile.h"

#include "compiler/Precision.h"

#ifdef REMAT_HAVE_ONNX
#include "compiler/OnnxImporter.h"
#endif

#include "runtime/plan/InputFile.h"

#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

namespace remat::model {

bool isOnnxPath(const std::string &path) {
  return path.size() > 5 && path.compare(path.size() - 5, 5, ".onnx") == 0;
}

bool haveOnnxSupport() {
#ifdef REMAT_HAVE_ONNX
  return true;
#else
  return false;
#endif
}

static std::string readText(const std::string &path) {
  std::stringstream buffer;
  if (path == "-") {
    buffer << std::cin.rdbuf();
  } else {
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec))
      throw ModelError("'" + path + "' is a directory, not a model file");
    if (std::optional<std::string> why = runtime::inputProblem(path))
      throw ModelError("cannot open '" + path + "': " + *why);
    std::ifstream in(path, std::ios::binary);
    if (!in)
      throw ModelError("cannot open '" + path + "'");
    buffer << in.rdbuf();
  }
  return buffer.str();
}

namespace {

/// `--precision fp64`: every f32 value of `graph` becomes f64 (the weights
/// file keeps F32; the runtime widens what it loads into f64 buffers).
/// `--precision bf16`: casts and bf16 values by autocast's rules
/// (Precision.h); params, inputs and the weights file stay F32.
ModelFile withPrecision(ModelFile file, const ModelOptions &options) {
  if (options.precision == "bf16")
    file.graph = withBf16Compute(std::move(file.graph));
  if (options.precision == "fp64")
    for (Value &v : file.graph.values)
      if (v.type.dtype == "f32")
        v.type.dtype = "f64";
  return file;
}

/// `--microbatches K > 1`: a model whose batch normalization would see each
/// micro-batch's statistics (ops of the ChannelNormalize rule) is refused
/// unless the user asked for exactly that.
ModelFile checkedSplit(ModelFile file, const ModelOptions &options) {
  if (options.microbatches > 1 && !options.perSliceNorm)
    for (const Op &op : file.graph.ops)
      if (auto kind = ops::parseOpKind(op.kind);
          kind &&
          ops::opInfo(*kind).shapeRule == ops::ShapeRule::ChannelNormalize)
        throw OptionError(
            file.graph.sourceName + ": " + op.where() +
            " normalizes over the "
            "batch: with --microbatches " +
            std::to_string(options.microbatches) +
            " it would use each micro-batch's statistics, which changes the "
            "result; give --microbatch-norm per-slice to accept that (as "
            "PyTorch does under manual gradient accumulation), or train "
            "unsplit");
  return file;
}

} // namespace

ModelFile readModelFile(const std::string &path, const ModelOptions &options) {
  // ONNX by its name or, under another name, by its first byte.
  if (isOnnxPath(path) || (path != "-" && runtime::looksLikeOnnx(path))) {
#ifdef REMAT_HAVE_ONNX
    OnnxModel onnx = importOnnxFile(path, options);
    return checkedSplit(
        withPrecision(ModelFile{std::move(onnx.graph), std::move(onnx.weights)},
                      options),
        options);
#else
    throw ModelError(path + ": this build of remat has no ONNX support "
                            "(build it where the ONNX library is installed: "
                            "tools/setup.sh installs libonnx-dev; "
                            "docs/onnx.md)");
#endif
  }
  if (options.training.any())
    throw OptionError(
        (path == "-" ? std::string("<stdin>") : path) +
        ": --input-shape, --loss, --optimizer, --lr and --frozen are for ONNX "
        "models; "
        "a JSON model declares its input shapes, loss and optimizer in the "
        "file (docs/model-format.md)");
  std::string source = path == "-" ? "<stdin>" : path;
  return checkedSplit(
      withPrecision(ModelFile{loadModel(readText(path), source, options), {}},
                    options),
      options);
}

std::string weightsPathForPlan(const std::string &planPath) {
  const std::string suffix = ".plan";
  std::string stem = planPath;
  if (stem.size() > suffix.size() &&
      stem.compare(stem.size() - suffix.size(), suffix.size(), suffix) == 0)
    stem.resize(stem.size() - suffix.size());
  return stem + ".weights.safetensors";
}

} // namespace remat::model
