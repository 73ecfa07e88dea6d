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
#include <map>
#include <set>
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

/// A split whose last micro-batches are one sample short, and so padded
/// (ModelGraph::microbatches): each reduction (ShapeRule::Reduce) over the
/// batch that the loss needs reads its input times a `sample_mask` input
/// (1 for the micro-batch's samples, 0 for its padding), so that the padding
/// adds nothing to the loss and gets no gradient. (cross_entropy and mse
/// leave it out themselves: runtime/Backend.h, KernelCall::liveRows.)
void maskPadding(ModelGraph &g) {
  if (!g.unevenMicrobatches())
    return;
  std::vector<char> needed = valuesReachingLoss(g);
  std::set<std::string> names;
  for (const Value &v : g.values)
    names.insert(v.name);
  auto unique = [&](const std::string &base) {
    std::string name = base;
    for (int n = 1; names.count(name); ++n)
      name = base + "." + std::to_string(n);
    names.insert(name);
    return name;
  };
  std::map<std::pair<std::string, size_t>, int> masks; // (dtype, rank)
  std::vector<Op> ops;
  for (Op op : g.ops) {
    const ValueType x =
        op.operands.empty() ? ValueType{} : g.values[op.operands[0]].type;
    bool overBatch = false;
    std::optional<ops::OpKind> kind = ops::parseOpKind(op.kind);
    if (kind && ops::opInfo(*kind).shapeRule == ops::ShapeRule::Reduce &&
        needed[size_t(op.result)] && !x.shape.empty() &&
        x.shape[0] == g.batch && op.attrs.contains("axes"))
      for (const auto &axis : op.attrs["axes"])
        overBatch =
            overBatch || (axis.is_number_integer() &&
                          (axis.get<int64_t>() == 0 ||
                           axis.get<int64_t>() == -int64_t(x.shape.size())));
    if (!overBatch) {
      ops.push_back(std::move(op));
      continue;
    }
    auto [it, fresh] = masks.try_emplace({x.dtype, x.shape.size()}, 0);
    if (fresh) {
      Value mask;
      mask.name = unique("sample_mask");
      mask.kind = ValueKind::Input;
      mask.type.dtype = x.dtype;
      mask.type.shape.assign(x.shape.size(), 1);
      mask.type.shape[0] = g.batch;
      mask.data = {{"kind", "sample_mask"}};
      mask.pointer = op.pointer;
      it->second = int(g.values.size());
      g.values.push_back(std::move(mask));
    }
    Op masked;
    masked.name = op.name + ".sample_mask";
    masked.kind = "mul";
    masked.pointer = op.pointer;
    masked.line = op.line;
    masked.column = op.column;
    masked.block = op.block;
    masked.operands = {op.operands[0], it->second};
    Value product;
    product.name = unique(masked.name);
    product.type = x;
    masked.result = int(g.values.size());
    g.values.push_back(std::move(product));
    op.operands[0] = masked.result;
    ops.push_back(std::move(masked));
    ops.push_back(std::move(op));
  }
  g.ops = std::move(ops);
}

/// `--microbatches K > 1`: a model whose batch normalization would see each
/// micro-batch's statistics (ops of the ChannelNormalize rule) is refused
/// unless the user asked for exactly that, and always where the slices are
/// uneven (a padded slice's statistics would count its padding).
ModelFile checkedSplit(ModelFile file, const ModelOptions &options) {
  const ModelGraph &g = file.graph;
  const bool uneven = g.unevenMicrobatches();
  if (options.microbatches > 1 && (!options.perSliceNorm || uneven))
    for (const Op &op : file.graph.ops)
      if (auto kind = ops::parseOpKind(op.kind);
          kind &&
          ops::opInfo(*kind).shapeRule == ops::ShapeRule::ChannelNormalize) {
        if (uneven)
          throw OptionError(
              g.sourceName + ": " + op.where() +
              " normalizes over the batch, and --microbatches " +
              std::to_string(options.microbatches) + " splits the batch of " +
              std::to_string(g.stepSamples) +
              " into slices of different sizes (" + std::to_string(g.batch) +
              " and " + std::to_string(g.batch - 1) +
              " samples), whose statistics a padded micro-batch cannot give; "
              "pick a number of micro-batches that divides the batch");
        throw OptionError(
            file.graph.sourceName + ": " + op.where() +
            " normalizes over the "
            "batch: with --microbatches " +
            std::to_string(options.microbatches) +
            " it would use each micro-batch's statistics, which changes the "
            "result; give --microbatch-norm per-slice to accept that (as "
            "PyTorch does under manual gradient accumulation), or train "
            "unsplit");
      }
  maskPadding(file.graph);
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
