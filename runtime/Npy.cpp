//===- Npy.cpp - Read and write NumPy .npy arrays ------------------------===//
#include "runtime/Npy.h"
#include "runtime/plan/InputFile.h"
#include "runtime/plan/OutputFile.h"

#include <algorithm>
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
  case DType::F64:
    return "<f8";
  case DType::I32:
    return "<i4";
  case DType::I64:
    return "<i8";
  default:
    throw PlanError(std::string("dtype ") + dtypeName(dtype) +
                    " has no .npy support");
  }
}

namespace {

/// What a .npy header says: the array's dtype and shape and where its
/// data starts.
struct NpyLayout {
  DType dtype = DType::F32;
  Shape shape;
  uint64_t dataStart = 0, dataBytes = 0;
};

/// The bytes from the start of the file to the end of the header, from its
/// first `have` bytes (at least 12, or the whole file); 0 when those do not
/// tell (bad magic or version: parseLayout says which).
uint64_t headerEnd(const char *c, uint64_t have) {
  if (have < 10 || std::string(c, 6) != std::string("\x93NUMPY", 6))
    return 0;
  int major = uint8_t(c[6]);
  if (major == 1)
    return 10 + (uint8_t(c[8]) | (uint64_t(uint8_t(c[9])) << 8));
  if ((major == 2 || major == 3) && have >= 12)
    return 12 + (uint8_t(c[8]) | (uint64_t(uint8_t(c[9])) << 8) |
                 (uint64_t(uint8_t(c[10])) << 16) |
                 (uint64_t(uint8_t(c[11])) << 24));
  return 0;
}

/// Checks the header in the first `have` bytes `c` of a file of
/// `fileSize` bytes (`have` covers the header wherever the file does).
NpyLayout parseLayout(const char *c, uint64_t have, uint64_t fileSize,
                      const std::string &path) {
  const char magic[] = "\x93NUMPY";
  if (have < 10 || std::string(c, 6) != std::string(magic, 6))
    failAt(path, "not a .npy file (bad magic)");
  int major = uint8_t(c[6]);
  uint64_t headerLen, headerStart;
  if (major == 1) {
    headerLen = uint8_t(c[8]) | (uint64_t(uint8_t(c[9])) << 8);
    headerStart = 10;
  } else if (major == 2 || major == 3) {
    if (have < 12)
      failAt(path, "truncated .npy header");
    headerLen = uint8_t(c[8]) | (uint64_t(uint8_t(c[9])) << 8) |
                (uint64_t(uint8_t(c[10])) << 16) |
                (uint64_t(uint8_t(c[11])) << 24);
    headerStart = 12;
  } else {
    failAt(path, "unsupported .npy version " + std::to_string(major) +
                     " (this reader supports 1, 2 and 3)");
  }
  if (headerLen > fileSize - headerStart || headerLen > have - headerStart)
    failAt(path, "truncated .npy header");
  std::string header(c + headerStart, headerLen);

  NpyLayout layout;
  std::string descr = valueOf(header, "descr", path);
  if (descr.size() < 2 || (descr[0] != '\'' && descr[0] != '"'))
    failAt(path, ".npy descr is not a string");
  descr = descr.substr(1, descr.find(descr[0], 1) - 1);
  if (descr == "<f4")
    layout.dtype = DType::F32;
  else if (descr == "<f8")
    layout.dtype = DType::F64;
  else if (descr == "<i4")
    layout.dtype = DType::I32;
  else if (descr == "<i8")
    layout.dtype = DType::I64;
  else
    failAt(path, "unsupported .npy dtype '" + descr +
                     "' (expected '<f4', '<f8', '<i4' or '<i8')");

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
    layout.shape.push_back(std::stoll(dims.substr(pos, end - pos)));
    pos = end;
  }
  auto bytes = checkedByteSize(layout.shape, layout.dtype);
  layout.dataStart = headerStart + headerLen;
  uint64_t present = fileSize - layout.dataStart;
  if (!bytes || *bytes != present)
    failAt(path, ".npy data is " + std::to_string(present) +
                     " bytes but shape " + formatShape(layout.shape) +
                     " of " + descr + " needs " +
                     (bytes ? std::to_string(*bytes) : "too many"));
  layout.dataBytes = *bytes;
  return layout;
}

} // namespace

NpyArray readNpy(const std::string &path) {
  if (std::optional<std::string> why = inputProblem(path))
    throw PlanError(path + ": cannot open .npy file: " + *why);
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw PlanError(path + ": cannot open .npy file");
  std::vector<char> contents((std::istreambuf_iterator<char>(in)),
                             std::istreambuf_iterator<char>());
  return parseNpy(contents, path);
}

NpyArray parseNpy(const std::vector<char> &c, const std::string &path) {
  NpyLayout layout = parseLayout(c.data(), c.size(), c.size(), path);
  NpyArray array;
  array.dtype = layout.dtype;
  array.shape = layout.shape;
  array.bytes.assign(c.begin() + int64_t(layout.dataStart), c.end());
  return array;
}

NpyFile NpyFile::open(const std::string &path) {
  if (std::optional<std::string> why = inputProblem(path))
    throw PlanError(path + ": cannot open .npy file: " + *why);
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in)
    throw PlanError(path + ": cannot open .npy file");
  uint64_t fileSize = uint64_t(in.tellg());
  // The fixed prefix, then the rest of the header it announces (as far as
  // the file goes: parseLayout reports a header past its end).
  std::vector<char> head(size_t(std::min<uint64_t>(fileSize, 12)));
  in.seekg(0);
  in.read(head.data(), int64_t(head.size()));
  uint64_t end = std::min(headerEnd(head.data(), head.size()), fileSize);
  if (in && end > head.size()) {
    size_t have = head.size();
    head.resize(size_t(end));
    in.read(head.data() + have, int64_t(end - have));
  }
  if (!in)
    throw PlanError(path + ": cannot read the .npy header");
  NpyLayout layout = parseLayout(head.data(), head.size(), fileSize, path);
  NpyFile file;
  file.filePath = path;
  file.type = layout.dtype;
  file.dims = layout.shape;
  file.dataStart = layout.dataStart;
  file.size = layout.dataBytes;
  return file;
}

void NpyFile::readData(
    uint64_t offset, uint64_t n, uint64_t chunk,
    const std::function<void(uint64_t, const char *, uint64_t)> &fn) const {
  if (offset > size || n > size - offset)
    throw PlanError(filePath + ": bytes [" + std::to_string(offset) + ", " +
                    std::to_string(offset + n) + ") are outside the " +
                    std::to_string(size) + " data bytes");
  std::ifstream in(filePath, std::ios::binary);
  in.seekg(int64_t(dataStart + offset));
  std::vector<char> piece(size_t(std::min(n, std::max<uint64_t>(chunk, 1))));
  for (uint64_t done = 0; done < n;) {
    uint64_t count = std::min<uint64_t>(piece.size(), n - done);
    in.read(piece.data(), int64_t(count));
    if (!in)
      throw PlanError(filePath + ": cannot read " + std::to_string(n) +
                      " data bytes at byte " +
                      std::to_string(dataStart + offset) +
                      " (the file changed after its header was read?)");
    fn(done, piece.data(), count);
    done += count;
  }
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
