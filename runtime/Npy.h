//===- Npy.h - Read and write NumPy .npy arrays --------------------------===//
//
// Format 1.0 (2-byte header length), 2.0 and 3.0 (4-byte length). Only
// little-endian '<f4', '<i4', '<i8' in C order are accepted; anything else
// is a PlanError naming the file.
//
//===----------------------------------------------------------------------===//
#ifndef REMAT_RUNTIME_NPY_H
#define REMAT_RUNTIME_NPY_H

#include "runtime/plan/PlanFormat.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace remat::runtime {

struct NpyArray {
  DType dtype = DType::F32; ///< f32 ('<f4'), i32 ('<i4') or i64 ('<i8')
  Shape shape;
  std::vector<char> bytes; ///< C order, little-endian
};

NpyArray readNpy(const std::string &path);
/// Same, from bytes in memory (`path` is used in messages).
NpyArray parseNpy(const std::vector<char> &contents, const std::string &path);
/// A .npy file whose header has been read and checked (the checks of
/// readNpy, against the file's size) while its data stays in the file:
/// readData reads a range of it in bounded pieces, so an input fed from it
/// needs no host copy of the whole array.
class NpyFile {
public:
  static NpyFile open(const std::string &path);

  DType dtype() const { return type; }
  const Shape &shape() const { return dims; }
  uint64_t dataBytes() const { return size; }
  const std::string &path() const { return filePath; }

  /// Hands data bytes [offset, offset + n) to fn(done, bytes, count) in
  /// order (`done` counted from `offset`), read through one buffer of at
  /// most `chunk` bytes. A file that no longer holds them is a PlanError.
  void readData(uint64_t offset, uint64_t n, uint64_t chunk,
                const std::function<void(uint64_t done, const char *bytes,
                                         uint64_t count)> &fn) const;

private:
  std::string filePath;
  DType type = DType::F32;
  Shape dims;
  uint64_t dataStart = 0, size = 0;
};

/// Writes a version 1.0 file.
void writeNpy(const std::string &path, const NpyArray &array);

/// The numpy descr of a dtype ("<f4"); throws for f16/bf16.
std::string npyDescr(DType dtype);

} // namespace remat::runtime

#endif // REMAT_RUNTIME_NPY_H
