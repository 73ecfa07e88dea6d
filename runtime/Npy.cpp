//===- Npy.cpp - Read and write NumPy .npy arrays ------------------------===//
#include "runtime/Npy.h"
#include "runtime/OutputFile.h"

#include <cctype>
#include <fstream>
#include <iterator>

namespace remat::runtime {

namespace {
[[noreturn]] void failAt(const std::string &path, const std::string &msg) {
  throw PlanError(path + ": " + msg);
}
} // namespace

namespace {

/// Finds `'key':` in the header dict and returns the text after the colon.
std::string valueOf(const std::string &header, const std::string &key,
                    const std::string &path) {
  for (const char *quote : {"'", "\""}) {
    std::string pattern = quote + key + quote;
    auto pos = header.find(pattern);
    if (pos == std::string::npos)
      continue;
    pos = header.find(':', pos + pattern.size());
    if (pos == std::string::npos)
      break;
    ++pos;
    while (pos < header.size() && std::isspace(uint8_t(header[pos])))
      ++pos;
    return header.substr(pos);
  }
  throw PlanError(path + ": .npy header has no '" + key + "'");
}

} // namespace

std::string npyDescr(DType dtype) {
  switch (dtype) {
  case DType::F32:
    return "<f4";
  case DType::I32:
    return "<i4";
  case DType::I64:
    return "<i8";
  default:
    throw PlanError(std::string("dtype ") + dtypeName(dtype) +
                    " has no .npy support");
  }
}

NpyArray readNpy(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw PlanError(path + ": cannot open .npy file");
  std::vector<char> contents((std::istreambuf_iterator<char>(in)),
                             std::istreambuf_iterator<char>());
  return parseNpy(contents, path);
}

NpyArray parseNpy(const std::vector<char> &c, const std::string &path) {
  const char magic[] = "\x93NUMPY";
  if (c.size() < 10 || std::string(c.data(), 6) != std::string(magic, 6))
    failAt(path, "not a .npy file (bad magic)");
  int major = uint8_t(c[6]);
  size_t headerLen, headerStart;
  if (major == 1) {
    headerLen = uint8_t(c[8]) | (size_t(uint8_t(c[9])) << 8);
    headerStart = 10;
  } else if (major == 2 || major == 3) {
    if (c.size() < 12)
      failAt(path, "truncated .npy header");
    headerLen = uint8_t(c[8]) | (size_t(uint8_t(c[9])) << 8) |
                (size_t(uint8_t(c[10])) << 16) | (size_t(uint8_t(c[11])) << 24);
    headerStart = 12;
  } else {
    failAt(path, "unsupported .npy version " + std::to_string(major) +
                     " (this reader supports 1, 2 and 3)");
  }
  if (headerLen > c.size() - headerStart)
    failAt(path, "truncated .npy header");
  std::string header(c.data() + headerStart, headerLen);

  NpyArray array;
  std::string descr = valueOf(header, "descr", path);
  if (descr.size() < 2 || (descr[0] != '\'' && descr[0] != '"'))
    failAt(path, ".npy descr is not a string");
  descr = descr.substr(1, descr.find(descr[0], 1) - 1);
  if (descr == "<f4")
    array.dtype = DType::F32;
  else if (descr == "<i4")
    array.dtype = DType::I32;
  else if (descr == "<i8")
    array.dtype = DType::I64;
  else
    failAt(path, "unsupported .npy dtype '" + descr +
                     "' (expected '<f4', '<i4' or '<i8')");

  std::string fortran = valueOf(header, "fortran_order", path);
  if (fortran.rfind("True", 0) == 0)
    failAt(path, ".npy array is in Fortran order; save it in C order "
                 "(numpy.ascontiguousarray)");
  if (fortran.rfind("False", 0) != 0)
    failAt(path, ".npy fortran_order is neither True nor False");

  std::string shapeText = valueOf(header, "shape", path);
  if (shapeText.empty() || shapeText[0] != '(')
    failAt(path, ".npy shape is not a tuple");
  auto close = shapeText.find(')');
  if (close == std::string::npos)
    failAt(path, ".npy shape tuple is not closed");
  std::string dims = shapeText.substr(1, close - 1);
  size_t pos = 0;
  while (pos < dims.size()) {
    while (pos < dims.size() &&
           (std::isspace(uint8_t(dims[pos])) || dims[pos] == ','))
      ++pos;
    if (pos >= dims.size())
      break;
    size_t end = pos;
    while (end < dims.size() && std::isdigit(uint8_t(dims[end])))
      ++end;
    if (end == pos)
      failAt(path, ".npy shape has a non-integer dimension");
    array.shape.push_back(std::stoll(dims.substr(pos, end - pos)));
    pos = end;
  }
  auto bytes = checkedByteSize(array.shape, array.dtype);
  size_t dataStart = headerStart + headerLen;
  if (!bytes || *bytes != c.size() - dataStart)
    failAt(path, ".npy data is " + std::to_string(c.size() - dataStart) +
                     " bytes but shape " + formatShape(array.shape) + " of " +
                     descr + " needs " +
                     (bytes ? std::to_string(*bytes) : "too many"));
  array.bytes.assign(c.begin() + int64_t(dataStart), c.end());
  return array;
}

void writeNpy(const std::string &path, const NpyArray &array) {
  std::string shape = "(";
  for (size_t i = 0; i < array.shape.size(); ++i)
    shape += std::to_string(array.shape[i]) + ", ";
  if (array.shape.size() > 1)
    shape.resize(shape.size() - 2);
  else if (array.shape.size() == 1)
    shape.resize(shape.size() - 1);
  shape += ")";
  std::string header = "{'descr': '" + npyDescr(array.dtype) +
                       "', 'fortran_order': False, 'shape': " + shape + ", }";
  // Pad so the data starts at a multiple of 64, ending in a newline.
  while ((10 + header.size() + 1) % 64 != 0)
    header.push_back(' ');
  header.push_back('\n');
  OutputFile file(path);
  std::ostream &out = file.stream();
  out.write("\x93NUMPY\x01\x00", 8);
  char len[2] = {char(header.size() & 0xff), char(header.size() >> 8)};
  out.write(len, 2);
  out.write(header.data(), int64_t(header.size()));
  out.write(array.bytes.data(), int64_t(array.bytes.size()));
  file.commit();
}

} // namespace remat::runtime
