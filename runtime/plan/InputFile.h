//===- InputFile.h - Why an input file cannot be read ----------*- C++ -*-===//
//
// Every file a remat tool reads (models, plans, weights, data) is checked
// with inputProblem() before it is opened, so the error names the system's
// reason ("No such file or directory", "Permission denied") or a folder
// given as a file, never what a read of nothing looks like ("truncated
// JSON").
//
//===----------------------------------------------------------------------===//
#ifndef REMAT_RUNTIME_INPUTFILE_H
#define REMAT_RUNTIME_INPUTFILE_H

#include <optional>
#include <string>

namespace remat::runtime {

/// Why `path` cannot be read as a file ("it is a directory", or the
/// system's reason); nullopt when it can.
std::optional<std::string> inputProblem(const std::string &path);

/// Whether the file at `path` starts as an ONNX model does (a protobuf
/// ModelProto: its first field, ir_version, tag byte 0x08), not as JSON.
bool looksLikeOnnx(const std::string &path);

} // namespace remat::runtime

#endif // REMAT_RUNTIME_INPUTFILE_H
