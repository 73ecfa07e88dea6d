//===- Safetensors.h - Read and write .safetensors weight files ----------===//
//
// Format (https://huggingface.co/docs/safetensors): 8-byte little-endian
// header length N, N bytes of JSON {"name": {"dtype": "F32", "shape": [..],
// "data_offsets": [begin, end]}, "__metadata__": {..}}, then the data; the
// offsets are relative to the end of the header. The writer pads the header
// with spaces to a multiple of 8 and sorts tensors by name.
//
//===----------------------------------------------------------------------===//
#ifndef REMAT_RUNTIME_SAFETENSORS_H
#define REMAT_RUNTIME_SAFETENSORS_H

#include "runtime/plan/PlanFormat.h"

#include <functional>
#include <map>
#include <ostream>
#include <string>
#include <vector>

namespace remat::runtime {

/// A tensor read from or written to a safetensors file. dtype is the file's
/// spelling ("F32", "I32", "I64", "F16", "BF16", ...).
struct NamedTensor {
  std::string dtype = "F32";
  Shape shape;
  std::vector<char> bytes;
};

class SafetensorsFile {
public:
  /// Reads and checks the whole file: header length within the file, valid
  /// JSON, every entry with a known dtype, non-negative shape and
  /// data_offsets inside the data whose size matches the shape. Throws
  /// PlanError naming the path.
  static SafetensorsFile read(const std::string &path);
  /// Same, from bytes in memory (`path` is used in messages).
  static SafetensorsFile parse(const std::vector<char> &contents,
                               const std::string &path);
  /// Reads and checks the header only (the checks of read, against the
  /// file's size); each tensor's bytes stay in the file, empty in
  /// tensors(), until readData() reads them. Loading weights this way holds
  /// one tensor in memory at a time instead of the file and a copy of it.
  static SafetensorsFile open(const std::string &path);

  /// Hands tensor `name`'s data bytes (it must exist) to fn(offset, bytes,
  /// n) in order: from the table in one piece for a file read or parsed,
  /// else read from the file in pieces of at most `chunk` bytes through
  /// one buffer of that size, so loading weights from an opened file holds
  /// at most `chunk` bytes beside their destination. A file that no
  /// longer holds them is a PlanError.
  void readData(const std::string &name, uint64_t chunk,
                const std::function<void(uint64_t offset, const char *bytes,
                                         uint64_t n)> &fn) const;

  bool contains(const std::string &name) const;
  /// The named F32 tensor; a missing tensor, another dtype or a shape other
  /// than `shape` is a PlanError ("w.safetensors: tensor 'w1' has shape
  /// [3,4] but the plan expects [4,3]").
  const NamedTensor &getF32(const std::string &name, const Shape &shape) const;
  /// The named tensor for a float buffer of `dtype`: F32 or BF16 (which
  /// the reader widens exactly; an f64 buffer also takes F64); the same
  /// errors otherwise.
  const NamedTensor &getFloat(const std::string &name, const Shape &shape,
                              DType dtype) const;

  const std::map<std::string, NamedTensor> &tensors() const { return table; }
  const std::string &path() const { return filePath; }

private:
  /// The checks and table of `header` (headerLen bytes) over dataSize data
  /// bytes at `data`, or, with data null, the offsets to read them from.
  static SafetensorsFile fromHeader(const char *header, uint64_t headerLen,
                                    const char *data, uint64_t dataSize,
                                    const std::string &path);

  std::string filePath;
  std::map<std::string, NamedTensor> table;
  /// open(): each tensor's data offset from the start of the file.
  std::map<std::string, uint64_t> fileOffsets;
  bool lazy = false;
};

/// The safetensors spelling of a plan dtype ("F32", "F64", "I64", ...).
std::string safetensorsDtype(DType dtype);

/// `t` with its F32 or F64 values rounded to BF16 (to nearest, ties to
/// even: an F64 value is rounded to float first); other dtypes as they are.
NamedTensor asBf16(const NamedTensor &t);

/// Writes tensors (sorted by name) to `path`; throws PlanError on I/O error.
void writeSafetensors(const std::string &path,
                      const std::map<std::string, NamedTensor> &tensors);
/// The same, to a stream (an OutputSet's file; its commit reports errors).
void writeSafetensors(std::ostream &out,
                      const std::map<std::string, NamedTensor> &tensors);

} // namespace remat::runtime

#endif // REMAT_RUNTIME_SAFETENSORS_H
