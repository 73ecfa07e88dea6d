//===- Safetensors.cpp - Read and write .safetensors weight files --------===//
#include "runtime/plan/Safetensors.h"

#include "ops/BFloat16.h"
#include "runtime/plan/InputFile.h"
#include "runtime/plan/OutputFile.h"

#include <cstring>
#include <fstream>
#include <iterator>

namespace remat::runtime {

namespace {
[[noreturn]] void failAt(const std::string &path, const std::string &msg) {
  throw PlanError(path + ": " + msg);
}
} // namespace

using nlohmann::json;

namespace {

uint64_t elementSize(const std::string &dtype) {
  if (dtype == "F64" || dtype == "I64" || dtype == "U64")
    return 8;
  if (dtype == "F32" || dtype == "I32" || dtype == "U32")
    return 4;
  if (dtype == "F16" || dtype == "BF16" || dtype == "I16" || dtype == "U16")
    return 2;
  if (dtype == "I8" || dtype == "U8" || dtype == "BOOL")
    return 1;
  return 0;
}

} // namespace

SafetensorsFile SafetensorsFile::read(const std::string &path) {
  if (std::optional<std::string> why = inputProblem(path))
    failAt(path, "cannot open safetensors file: " + *why);
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw PlanError(path + ": cannot open safetensors file");
  std::vector<char> contents((std::istreambuf_iterator<char>(in)),
                             std::istreambuf_iterator<char>());
  return parse(contents, path);
}

SafetensorsFile SafetensorsFile::parse(const std::vector<char> &contents,
                                       const std::string &path) {
  if (contents.size() < 8)
    failAt(path, "truncated safetensors file (" +
                     std::to_string(contents.size()) +
                     " bytes, less than the 8-byte header length)");
  uint64_t headerLen = 0;
  for (int i = 7; i >= 0; --i)
    headerLen = (headerLen << 8) | uint8_t(contents[i]);
  if (headerLen > contents.size() - 8)
    failAt(path, "truncated safetensors file: header length " +
                     std::to_string(headerLen) + " exceeds the " +
                     std::to_string(contents.size() - 8) + " bytes after it");
  return fromHeader(contents.data() + 8, headerLen,
                    contents.data() + 8 + headerLen,
                    contents.size() - 8 - headerLen, path);
}

SafetensorsFile SafetensorsFile::open(const std::string &path) {
  if (std::optional<std::string> why = inputProblem(path))
    failAt(path, "cannot open safetensors file: " + *why);
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in)
    throw PlanError(path + ": cannot open safetensors file");
  uint64_t fileSize = uint64_t(in.tellg());
  in.seekg(0);
  if (fileSize < 8)
    failAt(path, "truncated safetensors file (" + std::to_string(fileSize) +
                     " bytes, less than the 8-byte header length)");
  unsigned char lenBytes[8];
  in.read(reinterpret_cast<char *>(lenBytes), 8);
  uint64_t headerLen = 0;
  for (int i = 7; i >= 0; --i)
    headerLen = (headerLen << 8) | lenBytes[i];
  if (!in || headerLen > fileSize - 8)
    failAt(path, "truncated safetensors file: header length " +
                     std::to_string(headerLen) + " exceeds the " +
                     std::to_string(fileSize - 8) + " bytes after it");
  std::vector<char> header(headerLen);
  in.read(header.data(), int64_t(headerLen));
  if (!in)
    failAt(path, "truncated safetensors file: cannot read its header");
  SafetensorsFile file = fromHeader(header.data(), headerLen, nullptr,
                                    fileSize - 8 - headerLen, path);
  file.lazy = true;
  for (auto &[name, offset] : file.fileOffsets)
    offset += 8 + headerLen;
  return file;
}

void SafetensorsFile::readData(
    const std::string &name, uint64_t chunk,
    const std::function<void(uint64_t, const char *, uint64_t)> &fn) const {
  const NamedTensor &t = table.at(name);
  if (!lazy) {
    fn(0, t.bytes.data(), t.bytes.size());
    return;
  }
  uint64_t size =
      uint64_t(*checkedNumElements(t.shape)) * elementSize(t.dtype);
  std::ifstream in(filePath, std::ios::binary);
  in.seekg(int64_t(fileOffsets.at(name)));
  std::vector<char> piece(size_t(std::min(size, std::max<uint64_t>(chunk, 1))));
  for (uint64_t done = 0; done < size;) {
    uint64_t n = std::min<uint64_t>(piece.size(), size - done);
    in.read(piece.data(), int64_t(n));
    if (!in)
      failAt(filePath, "cannot read the " + std::to_string(size) +
                           " data bytes of tensor '" + name +
                           "' (the file changed after its header was read?)");
    fn(done, piece.data(), n);
    done += n;
  }
}

SafetensorsFile SafetensorsFile::fromHeader(const char *headerBytes,
                                            uint64_t headerLen,
                                            const char *data,
                                            uint64_t dataSize,
                                            const std::string &path) {
  json header;
  try {
    header = json::parse(headerBytes, headerBytes + headerLen);
  } catch (const json::parse_error &e) {
    failAt(path, std::string("malformed safetensors header JSON: ") + e.what());
  }
  if (!header.is_object())
    failAt(path, "safetensors header is not a JSON object");
  SafetensorsFile file;
  file.filePath = path;
  for (auto it = header.begin(); it != header.end(); ++it) {
    if (it.key() == "__metadata__")
      continue;
    std::string where = "tensor '" + it.key() + "': ";
    const json &e = it.value();
    if (!e.is_object() || !e.contains("dtype") || !e["dtype"].is_string() ||
        !e.contains("shape") || !e["shape"].is_array() ||
        !e.contains("data_offsets") || !e["data_offsets"].is_array() ||
        e["data_offsets"].size() != 2)
      failAt(path,
             where + "entry needs dtype, shape and data_offsets [begin, end]");
    NamedTensor t;
    t.dtype = e["dtype"].get<std::string>();
    uint64_t size = elementSize(t.dtype);
    if (size == 0)
      failAt(path, where + "unknown dtype '" + t.dtype + "'");
    for (const json &d : e["shape"]) {
      if (!d.is_number_unsigned())
        failAt(path, where + "shape must hold non-negative integers");
      t.shape.push_back(d.get<int64_t>());
    }
    const json &offs = e["data_offsets"];
    if (!offs[0].is_number_unsigned() || !offs[1].is_number_unsigned())
      failAt(path, where + "data_offsets must be non-negative integers");
    uint64_t begin = offs[0].get<uint64_t>(), end = offs[1].get<uint64_t>();
    if (begin > end || end > dataSize)
      failAt(path, "truncated or corrupt safetensors file: " + where +
                       "data_offsets [" + std::to_string(begin) + ", " +
                       std::to_string(end) + ") outside the " +
                       std::to_string(dataSize) + " data bytes");
    auto n = checkedNumElements(t.shape);
    if (!n || *n > UINT64_MAX / size || *n * size != end - begin)
      failAt(path, where + "shape " + formatShape(t.shape) + " of " + t.dtype +
                       " does not match its " + std::to_string(end - begin) +
                       " data bytes");
    if (data)
      t.bytes.assign(data + begin, data + end);
    else
      file.fileOffsets[it.key()] = begin;
    file.table.emplace(it.key(), std::move(t));
  }
  return file;
}

bool SafetensorsFile::contains(const std::string &name) const {
  return table.count(name) != 0;
}

const NamedTensor &SafetensorsFile::getF32(const std::string &name,
                                           const Shape &shape) const {
  return getFloat(name, shape, DType::F32);
}

const NamedTensor &SafetensorsFile::getFloat(const std::string &name,
                                             const Shape &shape,
                                             DType dtype) const {
  auto it = table.find(name);
  if (it == table.end())
    throw PlanError(filePath + ": missing tensor '" + name + "'");
  const std::string &have = it->second.dtype;
  if (have != "F32" && have != "BF16" &&
      !(dtype == DType::F64 && have == "F64"))
    throw PlanError(filePath + ": tensor '" + name + "' has dtype " + have +
                    " but the plan expects " +
                    (dtype == DType::F64 ? "F32, BF16 or F64" : "F32 or BF16"));
  if (it->second.shape != shape)
    throw PlanError(filePath + ": tensor '" + name + "' has shape " +
                    formatShape(it->second.shape) + " but the plan expects " +
                    formatShape(shape));
  return it->second;
}

NamedTensor asBf16(const NamedTensor &t) {
  if (t.dtype != "F32" && t.dtype != "F64")
    return t;
  bool f64 = t.dtype == "F64";
  size_t n = t.bytes.size() / (f64 ? 8 : 4);
  NamedTensor out{"BF16", t.shape, std::vector<char>(n * 2)};
  for (size_t i = 0; i < n; ++i) {
    float v;
    if (f64) {
      double d;
      std::memcpy(&d, t.bytes.data() + 8 * i, 8);
      v = float(d);
    } else {
      std::memcpy(&v, t.bytes.data() + 4 * i, 4);
    }
    uint16_t h = ops::floatToBf16(v);
    std::memcpy(out.bytes.data() + 2 * i, &h, 2);
  }
  return out;
}

std::string safetensorsDtype(DType dtype) {
  switch (dtype) {
  case DType::F32:
    return "F32";
  case DType::F64:
    return "F64";
  case DType::F16:
    return "F16";
  case DType::BF16:
    return "BF16";
  case DType::I32:
    return "I32";
  case DType::I64:
    return "I64";
  }
  return "F32";
}

void writeSafetensors(std::ostream &out,
                      const std::map<std::string, NamedTensor> &tensors) {
  json header = json::object();
  uint64_t offset = 0;
  for (const auto &[name, t] : tensors) {
    header[name] = {{"dtype", t.dtype},
                    {"shape", t.shape},
                    {"data_offsets", {offset, offset + t.bytes.size()}}};
    offset += t.bytes.size();
  }
  header["__metadata__"] = {{"format", "pt"}};
  std::string text = header.dump();
  while (text.size() % 8 != 0)
    text.push_back(' ');
  uint64_t len = text.size();
  char lenBytes[8];
  for (int i = 0; i < 8; ++i)
    lenBytes[i] = char((len >> (8 * i)) & 0xff);
  out.write(lenBytes, 8);
  out.write(text.data(), int64_t(text.size()));
  for (const auto &entry : tensors)
    out.write(entry.second.bytes.data(), int64_t(entry.second.bytes.size()));
}

void writeSafetensors(const std::string &path,
                      const std::map<std::string, NamedTensor> &tensors) {
  OutputFile file(path);
  writeSafetensors(file.stream(), tensors);
  file.commit();
}

} // namespace remat::runtime
