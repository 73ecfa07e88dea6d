//===- Npy.h - Read and write NumPy .npy arrays --------------------------===//
//
// Format 1.0 (2-byte header length), 2.0 and 3.0 (4-byte length). Only
// little-endian '<f4', '<i4', '<i8' in C order are accepted; anything else
// is a PlanError naming the file.
//
//===----------------------------------------------------------------------===//
#ifndef REMAT_RUNTIME_NPY_H
#define REMAT_RUNTIME_NPY_H

#include "runtime/PlanFormat.h"

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
/// Writes a version 1.0 file.
void writeNpy(const std::string &path, const NpyArray &array);

/// The numpy descr of a dtype ("<f4"); throws for f16/bf16.
std::string npyDescr(DType dtype);

} // namespace remat::runtime

#endif // REMAT_RUNTIME_NPY_H
