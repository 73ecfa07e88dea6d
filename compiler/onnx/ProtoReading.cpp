//===- ProtoReading.cpp - Step 1 of the ONNX import: parse and check ------===//
//
// Parses the protobuf and checks the opset and the strings, runs the ONNX
// checker, fixes dynamic input dims from --input-shape and runs ONNX shape
// inference (whose shapes cross-check the importer's); libonnx runs in a
// child process, so that its crash on a malformed file is an error.
//
//===----------------------------------------------------------------------===//

#include "compiler/onnx/OnnxReader.h"

#include "ops/Suggest.h"
#include "runtime/plan/InputFile.h"

#include <onnx/checker.h>
#include <onnx/shape_inference/implementation.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <sys/wait.h>
#include <fcntl.h>
#include <unistd.h>

namespace remat::model::onnx_reader {

namespace {

/// Whether `s` is valid UTF-8 (protobuf does not check the strings of a
/// proto2 file; names reach JSON, the plan and the weights file's header).
bool isValidUtf8(const std::string &s) {
  // RFC 3629: no overlong forms, surrogates or code points past U+10FFFF.
  size_t i = 0;
  auto in = [&](size_t k, unsigned lo, unsigned hi) {
    if (k >= s.size())
      return false;
    unsigned c = static_cast<unsigned char>(s[k]);
    return c >= lo && c <= hi;
  };
  while (i < s.size()) {
    unsigned c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      i += 1;
    } else if (c >= 0xC2 && c <= 0xDF && in(i + 1, 0x80, 0xBF)) {
      i += 2;
    } else if (c >= 0xE0 && c <= 0xEF &&
               in(i + 1, c == 0xE0 ? 0xA0 : 0x80, c == 0xED ? 0x9F : 0xBF) &&
               in(i + 2, 0x80, 0xBF)) {
      i += 3;
    } else if (c >= 0xF0 && c <= 0xF4 &&
               in(i + 1, c == 0xF0 ? 0x90 : 0x80, c == 0xF4 ? 0x8F : 0xBF) &&
               in(i + 2, 0x80, 0xBF) && in(i + 3, 0x80, 0xBF)) {
      i += 4;
    } else {
      return false;
    }
  }
  return true;
}

} // namespace

void OnnxReader::parse() {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    fail("is a directory, not an ONNX model");
  if (std::optional<std::string> why = runtime::inputProblem(path))
    fail("cannot open the file: " + *why);
  std::ifstream in(path, std::ios::binary);
  if (!in)
    fail("cannot open the file");
  std::string bytes{std::istreambuf_iterator<char>(in),
                    std::istreambuf_iterator<char>()};
  if (bytes.empty())
    fail("the file is empty, not an ONNX model");
  if (!proto.ParseFromString(bytes))
    fail("not a valid ONNX model: the protobuf does not parse (a truncated "
         "or corrupt file, or not ONNX)");
  if (!proto.has_graph() || proto.ir_version() == 0)
    fail("not a valid ONNX model: it has no " +
         std::string(proto.has_graph() ? "ir_version" : "graph") +
         " (a truncated or corrupt file, or not ONNX)");
  for (const onnx::OperatorSetIdProto &set : proto.opset_import())
    if (set.domain().empty() || set.domain() == "ai.onnx")
      opset = int(set.version());
  if (opset == 0)
    fail("the model imports no opset of the default ONNX domain");
  checkStrings();
  if (opset < kMinOnnxOpset || opset > kMaxOnnxOpset)
    fail("opset " + std::to_string(opset) +
         " is not supported: this remat reads opsets " +
         std::to_string(kMinOnnxOpset) + " to " +
         std::to_string(kMaxOnnxOpset) +
         " (export with torch.onnx.export(..., opset_version=17))");
}

/// Every name in the graph is valid UTF-8 (a flipped byte in a name would
/// otherwise surface as a JSON library error far from the file).
void OnnxReader::checkStrings() {
  auto check = [&](const std::string &text, const std::string &what) {
    if (!isValidUtf8(text))
      fail(what + " is not valid UTF-8 (a corrupt file)");
  };
  const onnx::GraphProto &g = proto.graph();
  check(g.name(), "the graph's name");
  for (int i = 0; i < g.node_size(); ++i) {
    const onnx::NodeProto &n = g.node(i);
    std::string where = "the name or an input or output of node " +
                        std::to_string(i);
    check(n.name(), where);
    check(n.op_type(), where);
    check(n.domain(), where);
    for (const std::string &name : n.input())
      check(name, where);
    for (const std::string &name : n.output())
      check(name, where);
    for (const onnx::AttributeProto &a : n.attribute()) {
      check(a.name(), "an attribute name of node " + std::to_string(i));
      check(a.s(), "a string attribute of node " + std::to_string(i));
    }
  }
  for (const auto *list : {&g.input(), &g.output(), &g.value_info()})
    for (const onnx::ValueInfoProto &v : *list) {
      check(v.name(), "the name of a graph input, output or value_info");
      for (const auto &dim : v.type().tensor_type().shape().dim())
        check(dim.dim_param(), "a dimension name of '" + v.name() + "'");
    }
  for (const onnx::TensorProto &t : g.initializer()) {
    check(t.name(), "the name of an initializer");
    for (const auto &entry : t.external_data())
      check(entry.value(), "the external data of initializer '" + t.name() +
                               "'");
  }
}

/// Runs `work` in a child process and returns what it wrote: libonnx's
/// checker and shape inference functions can crash on a malformed model
/// (an input without a type, a rank they assume; onnx/onnx#6180, #6185),
/// and such a crash must be an error about the file, not a crash of remat
/// (the child's stderr is discarded).
/// `work` returns its result, or throws for an error (whose message is
/// returned with `failed` set).
std::string OnnxReader::isolated(const std::string &what,
                                 const std::function<std::string()> &work,
                                 bool &failed) {
  int fds[2];
  if (pipe(fds) != 0)
    fail("cannot create a pipe for " + what);
  std::fflush(nullptr);
  pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    fail("cannot fork for " + what);
  }
  if (pid == 0) {
    close(fds[0]);
    // The library's own output when it crashes (a sanitizer's report of
    // its fault in an instrumented build) is not remat's: the parent
    // reports the crash as an error about the file.
    int devnull = open("/dev/null", O_WRONLY);
    if (devnull >= 0) {
      dup2(devnull, STDERR_FILENO);
      close(devnull);
    }
    std::string result;
    try {
      result = "O" + work();
    } catch (const std::exception &e) {
      result = std::string("E") + e.what();
    } catch (...) {
      result = "Eunknown exception";
    }
    const char *p = result.data();
    size_t left = result.size();
    while (left > 0) {
      ssize_t n = ::write(fds[1], p, left);
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0)
        _exit(3);
      p += n;
      left -= size_t(n);
    }
    _exit(0);
  }
  close(fds[1]);
  std::string result;
  char buffer[65536];
  for (;;) {
    ssize_t n = ::read(fds[0], buffer, sizeof buffer);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      break;
    result.append(buffer, size_t(n));
  }
  close(fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFSIGNALED(status))
    fail(what + " crashed on the model (" + strsignal(WTERMSIG(status)) +
         "): the file is malformed (check it with onnx.checker."
         "check_model(..., full_check=True))");
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || result.empty())
    fail(what + " failed on the model (exit status " +
         std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1) + ")");
  failed = result[0] == 'E';
  std::string text = result.substr(1);
  if (failed) {
    // One line: libonnx lists an error per node, most of them consequences
    // of the first.
    while (!text.empty() && (text.back() == '\n' || text.back() == ' '))
      text.pop_back();
    size_t newline = text.find('\n');
    if (newline != std::string::npos) {
      size_t more = size_t(std::count(text.begin() + long(newline),
                                      text.end(), '\n'));
      text = text.substr(0, newline) + " (and " + std::to_string(more) +
             " more line" + (more == 1 ? "" : "s") + ")";
    }
  }
  return text;
}

void OnnxReader::checkAndInferShapes() {
  bool failed = false;
  std::string message = isolated(
      "the ONNX checker",
      [&] {
        onnx::checker::check_model(path);
        return std::string();
      },
      failed);
  if (failed)
    fail("the ONNX checker rejects the model: " + message);

  // Inputs with dynamic dims get theirs from --input-shape.
  std::set<std::string> inputNames;
  for (const onnx::TensorProto &t : proto.graph().initializer())
    initializers[t.name()] = &t;
  for (const onnx::ValueInfoProto &input : proto.graph().input())
    if (!initializers.count(input.name()))
      inputNames.insert(input.name());
  for (const auto &[name, dims] : options.training.inputShapes)
    if (!inputNames.count(name))
      throw OptionError(
          graph.sourceName + ": --input-shape " + name + "=" + dimsText(dims) +
          ": the model has no input '" + name + "'" +
          didYouMean(name, std::vector<std::string>(inputNames.begin(),
                                                    inputNames.end())));
  for (onnx::ValueInfoProto &input : *proto.mutable_graph()->mutable_input()) {
    if (initializers.count(input.name()))
      continue;
    if (!input.type().has_tensor_type())
      fail("input '" + input.name() + "' is not a tensor");
    // (Before shape inference, whose error for this is less clear.)
    int elemType = input.type().tensor_type().elem_type();
    if (!readsAsFloat32(elemType) && elemType != onnx::TensorProto::INT64 &&
        elemType != onnx::TensorProto::INT32)
      fail("input '" + input.name() + "' is " + elemTypeName(elemType) +
           "; this remat imports float (float32, float16, bfloat16: read as "
           "float32) and integer (int64, int32) inputs only");
    onnx::TensorShapeProto *shape =
        input.mutable_type()->mutable_tensor_type()->mutable_shape();
    auto given = options.training.inputShapes.find(input.name());
    // --ranks N: dim 0 is the global batch, dynamic in the file (the
    // exporter bakes a fixed batch into every Reshape), given by
    // --input-shape; each rank's step is built for a 1/N share of it.
    const int64_t parts = options.ranks * options.microbatches;
    if (parts > 1 &&
        (shape->dim_size() == 0 ||
         (shape->dim(0).has_dim_value() && shape->dim(0).dim_value() > 0) ||
         given == options.training.inputShapes.end()))
      throw OptionError(
          graph.sourceName + ": " + options.splitFlags() +
          " needs the batch dimension of input '" + input.name() +
          "' dynamic in the file and the global batch given with "
          "--input-shape " +
          input.name() + "=B,...: export with dynamic_axes={'" + input.name() +
          "': {0: 'batch'}} (docs/onnx.md, \"Data-parallel ranks\")");
    if (given == options.training.inputShapes.end()) {
      for (int d = 0; d < shape->dim_size(); ++d)
        if (!shape->dim(d).has_dim_value() || shape->dim(d).dim_value() <= 0) {
          std::string symbol = shape->dim(d).has_dim_param()
                                   ? " ('" + shape->dim(d).dim_param() + "')"
                                   : "";
          std::string example;
          for (int k = 0; k < shape->dim_size(); ++k)
            example += std::string(k ? "," : "") +
                       (shape->dim(k).has_dim_value() &&
                                shape->dim(k).dim_value() > 0
                            ? std::to_string(shape->dim(k).dim_value())
                            : "N");
          fail("input '" + input.name() + "' has a dynamic dimension " +
               std::to_string(d) + symbol +
               ": give its shape with --input-shape " + input.name() + "=" +
               example);
        }
      continue;
    }
    std::vector<int64_t> dims = given->second;
    if (parts > 1) {
      if (!dims.empty() && dims[0] >= 1 && dims[0] < parts)
        throw OptionError(graph.sourceName + ": " + options.splitFlags() +
                          " splits the batch into " + std::to_string(parts) +
                          " slices, more than its " + std::to_string(dims[0]) +
                          " samples (--input-shape " + input.name() + "=" +
                          dimsText(dims) + ")");
      // The ranks' shares are equal; a rank's micro-batches may differ by
      // one sample.
      if (dims.empty() || dims[0] % options.ranks != 0)
        throw OptionError(
            graph.sourceName + ": --ranks " + std::to_string(options.ranks) +
            " does not divide the global batch of "
            "--input-shape " +
            input.name() + "=" + dimsText(dims) + " into equal slices");
      int64_t rankBatch = dims[0] / options.ranks;
      if (graph.stepSamples && graph.stepSamples != rankBatch)
        throw OptionError(graph.sourceName + ": " + options.splitFlags() +
                          ": the inputs' batches differ (--input-shape " +
                          input.name() + "=" + dimsText(dims) + ")");
      graph.stepSamples = rankBatch;
      dims[0] = options.microbatchSamples(rankBatch);
    }
    if (int(dims.size()) != shape->dim_size())
      throw OptionError(graph.sourceName + ": --input-shape " + input.name() +
                        "=" + dimsText(dims) + ": input '" + input.name() +
                        "' has rank " + std::to_string(shape->dim_size()) +
                        ", not " + std::to_string(dims.size()));
    for (int d = 0; d < shape->dim_size(); ++d) {
      if (shape->dim(d).has_dim_value() && shape->dim(d).dim_value() > 0 &&
          shape->dim(d).dim_value() != dims[size_t(d)])
        throw OptionError(graph.sourceName + ": --input-shape " +
                          input.name() + "=" + dimsText(dims) +
                          ": dimension " + std::to_string(d) + " of input '" +
                          input.name() + "' is fixed at " +
                          std::to_string(shape->dim(d).dim_value()));
      shape->mutable_dim(d)->set_dim_value(dims[size_t(d)]);
    }
  }

  // In a child process (isolated()); it sends back the inferred shapes.
  std::string inferred = isolated(
      "ONNX shape inference",
      [&] {
        onnx::ShapeInferenceOptions inference(/*check_type=*/true,
                                              /*strict_mode=*/1,
                                              /*data_prop=*/true);
        onnx::shape_inference::InferShapes(
            proto, onnx::OpSchemaRegistry::Instance(), inference);
        onnx::GraphProto shapes;
        *shapes.mutable_value_info() = proto.graph().value_info();
        return shapes.SerializeAsString();
      },
      failed);
  if (failed)
    fail("ONNX shape inference fails: " + inferred);
  onnx::GraphProto shapes;
  if (!shapes.ParseFromString(inferred))
    fail("ONNX shape inference returned no shapes");
  proto.mutable_graph()->mutable_value_info()->Swap(
      shapes.mutable_value_info());
  for (const onnx::ValueInfoProto &info : proto.graph().value_info()) {
    if (!info.type().has_tensor_type() ||
        !info.type().tensor_type().has_shape())
      continue;
    std::vector<int64_t> dims;
    bool known = true;
    for (const auto &dim : info.type().tensor_type().shape().dim()) {
      known &= dim.has_dim_value();
      dims.push_back(dim.dim_value());
    }
    if (known)
      inferredShapes[info.name()] = dims;
  }
}

} // namespace remat::model::onnx_reader
