//===- FilesTest.cpp - safetensors and .npy readers and writers ----------===//
#include "TestUtil.h"

#include "runtime/Npy.h"
#include "runtime/plan/Safetensors.h"

#include <catch2/catch.hpp>

#include <cstring>
#include <fstream>
#include <iterator>

using namespace remat::runtime;
using namespace remat::runtime::test;

namespace {

std::vector<char> floatBytes(std::vector<float> values) {
  std::vector<char> bytes(values.size() * 4);
  std::memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;
}

std::vector<char> readAll(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<char>((std::istreambuf_iterator<char>(in)),
                           std::istreambuf_iterator<char>());
}

/// A hand-built safetensors file: header text padded, then data.
std::vector<char> safetensorsBytes(const std::string &header,
                                   const std::vector<char> &data) {
  std::vector<char> out(8 + header.size() + data.size());
  uint64_t len = header.size();
  for (int i = 0; i < 8; ++i)
    out[i] = char((len >> (8 * i)) & 0xff);
  std::memcpy(out.data() + 8, header.data(), header.size());
  std::memcpy(out.data() + 8 + header.size(), data.data(), data.size());
  return out;
}

} // namespace

TEST_CASE("safetensors round-trips named f32 tensors", "[runtime]") {
  std::string path = tempPath("roundtrip.safetensors");
  std::map<std::string, NamedTensor> tensors;
  tensors["w1"] = {"F32", {2, 3}, floatBytes({1, 2, 3, 4, 5, 6})};
  tensors["b"] = {"F32", {2}, floatBytes({-1, 0.5})};
  writeSafetensors(path, tensors);
  std::vector<char> raw = readAll(path);
  uint64_t headerLen = 0;
  std::memcpy(&headerLen, raw.data(), 8);
  CHECK(headerLen % 8 == 0);
  SafetensorsFile file = SafetensorsFile::read(path);
  CHECK(file.getF32("w1", {2, 3}).bytes == tensors["w1"].bytes);
  CHECK(file.getF32("b", {2}).bytes == tensors["b"].bytes);
}

TEST_CASE("safetensors rejects a missing or mis-shaped tensor", "[runtime]") {
  std::string path = tempPath("shapes.safetensors");
  writeSafetensors(path,
                   {{"w1", {"F32", {3, 4}, floatBytes(std::vector<float>(12))}},
                    {"ids", {"I32", {2}, floatBytes({0, 0})}}});
  SafetensorsFile file = SafetensorsFile::read(path);
  CHECK_THROWS_WITH(file.getF32("w2", {3, 4}), path + ": missing tensor 'w2'");
  CHECK_THROWS_WITH(file.getF32("w1", {4, 3}),
                    path + ": tensor 'w1' has shape [3,4] but the plan "
                           "expects [4,3]");
  CHECK_THROWS_WITH(file.getF32("ids", {2}),
                    Catch::Contains("has dtype I32 but the plan expects F32"));
}

TEST_CASE("safetensors rejects truncated files", "[runtime]") {
  std::string path = tempPath("full.safetensors");
  writeSafetensors(path, {{"w", {"F32", {4}, floatBytes({1, 2, 3, 4})}}});
  std::vector<char> full = readAll(path);
  // Cut inside the data, inside the header, and inside the length.
  for (size_t keep : {full.size() - 4, size_t(20), size_t(5)}) {
    INFO("kept " << keep << " of " << full.size() << " bytes");
    std::vector<char> cut(full.begin(), full.begin() + int64_t(keep));
    CHECK_THROWS_WITH(SafetensorsFile::parse(cut, "cut.safetensors"),
                      Catch::StartsWith("cut.safetensors: truncated"));
  }
  // A header whose offsets disagree with its shape.
  std::string header =
      R"({"w":{"dtype":"F32","shape":[3],"data_offsets":[0,16]}})";
  CHECK_THROWS_WITH(
      SafetensorsFile::parse(safetensorsBytes(header, std::vector<char>(16)),
                             "bad.safetensors"),
      Catch::Contains("shape [3] of F32 does not match its 16 data bytes"));
  CHECK_THROWS_AS(SafetensorsFile::read(tempPath("absent.safetensors")),
                  PlanError);
}

TEST_CASE("safetensors open reads the header and each tensor on demand",
          "[runtime]") {
  std::string path = tempPath("lazy.safetensors");
  std::map<std::string, NamedTensor> tensors;
  tensors["w1"] = {"F32", {2, 3}, floatBytes({1, 2, 3, 4, 5, 6})};
  tensors["b"] = {"F32", {2}, floatBytes({-1, 0.5})};
  writeSafetensors(path, tensors);
  SafetensorsFile file = SafetensorsFile::open(path);
  // The table holds shapes, not data.
  CHECK(file.getF32("w1", {2, 3}).bytes.empty());
  CHECK_THROWS_WITH(file.getF32("w1", {3, 2}),
                    Catch::Contains("has shape [2,3]"));
  // Read in pieces of at most 8 bytes, in order.
  auto pieces = [](const SafetensorsFile &f, const std::string &name,
                   uint64_t chunk) {
    std::vector<char> out;
    std::vector<uint64_t> sizes;
    f.readData(name, chunk, [&](uint64_t offset, const char *bytes,
                                uint64_t n) {
      CHECK(offset == out.size());
      out.insert(out.end(), bytes, bytes + n);
      sizes.push_back(n);
    });
    return std::make_pair(out, sizes);
  };
  auto [w1, w1Sizes] = pieces(file, "w1", 8);
  CHECK(w1 == tensors["w1"].bytes);
  CHECK(w1Sizes == std::vector<uint64_t>{8, 8, 8});
  CHECK(pieces(file, "b", 1 << 20).first == tensors["b"].bytes);
  // A file read whole hands over its bytes in one piece.
  SafetensorsFile whole = SafetensorsFile::read(path);
  CHECK(pieces(whole, "w1", 8).second == std::vector<uint64_t>{24});

  // open applies read's checks against the file's size.
  std::vector<char> full = readAll(path);
  for (size_t keep : {full.size() - 4, size_t(20), size_t(5)}) {
    INFO("kept " << keep << " of " << full.size() << " bytes");
    std::string cut = tempPath("lazy-cut.safetensors");
    std::ofstream(cut, std::ios::binary)
        .write(full.data(), int64_t(keep));
    CHECK_THROWS_WITH(SafetensorsFile::open(cut),
                      Catch::StartsWith(cut + ": truncated"));
  }
  // Data cut after the header was read.
  SafetensorsFile opened = SafetensorsFile::open(path);
  std::ofstream(path, std::ios::binary).write(full.data(), 16);
  CHECK_THROWS_WITH(pieces(opened, "w1", 8),
                    Catch::Contains("cannot read the 24 data bytes of tensor "
                                    "'w1'"));
  CHECK_THROWS_AS(SafetensorsFile::open(tempPath("absent.safetensors")),
                  PlanError);
}

TEST_CASE("npy round-trips f32, i32 and i64 arrays", "[runtime]") {
  std::string path = tempPath("a.npy");
  NpyArray a{DType::F32, {2, 3}, floatBytes({1, 2, 3, 4, 5, 6})};
  writeNpy(path, a);
  NpyArray back = readNpy(path);
  CHECK(back.dtype == DType::F32);
  CHECK(back.shape == Shape{2, 3});
  CHECK(back.bytes == a.bytes);
  NpyArray ids{DType::I64, {3}, std::vector<char>(24, 1)};
  writeNpy(path, ids);
  CHECK(readNpy(path).shape == Shape{3});
  CHECK(readNpy(path).dtype == DType::I64);
  NpyArray scalar{DType::I32, {}, std::vector<char>(4, 0)};
  writeNpy(path, scalar);
  CHECK(readNpy(path).shape.empty());
}

namespace {

std::vector<char> npyBytes(const std::string &header, size_t dataBytes,
                           int version = 1) {
  std::string h = header;
  size_t prefix = version == 1 ? 10 : 12;
  while ((prefix + h.size() + 1) % 64 != 0)
    h.push_back(' ');
  h.push_back('\n');
  std::vector<char> out = {'\x93', 'N', 'U', 'M', 'P', 'Y', char(version), 0};
  if (version == 1) {
    out.push_back(char(h.size() & 0xff));
    out.push_back(char(h.size() >> 8));
  } else {
    for (int i = 0; i < 4; ++i)
      out.push_back(char((h.size() >> (8 * i)) & 0xff));
  }
  out.insert(out.end(), h.begin(), h.end());
  out.resize(out.size() + dataBytes, 0);
  return out;
}

} // namespace

TEST_CASE("npy reads version 2 headers", "[runtime]") {
  auto bytes = npyBytes(
      "{'descr': '<i4', 'fortran_order': False, 'shape': (2, 2), }", 16, 2);
  NpyArray a = parseNpy(bytes, "v2.npy");
  CHECK(a.dtype == DType::I32);
  CHECK(a.shape == Shape{2, 2});
}

TEST_CASE("npy rejects a wrong dtype, Fortran order and a size mismatch",
          "[runtime]") {
  CHECK_THROWS_WITH(
      parseNpy(npyBytes("{'descr': '<f2', 'fortran_order': False, "
                        "'shape': (2,), }",
                        4),
               "f2.npy"),
      "f2.npy: unsupported .npy dtype '<f2' (expected '<f4', '<f8', '<i4' or "
      "'<i8')");
  NpyArray wide = parseNpy(npyBytes("{'descr': '<f8', 'fortran_order': False, "
                                    "'shape': (2,), }",
                                    16),
                           "f8.npy");
  CHECK(wide.dtype == DType::F64);
  CHECK(wide.shape == Shape{2});
  CHECK_THROWS_WITH(
      parseNpy(npyBytes("{'descr': '>f4', 'fortran_order': False, "
                        "'shape': (2,), }",
                        8),
               "be.npy"),
      Catch::Contains("unsupported .npy dtype '>f4'"));
  CHECK_THROWS_WITH(parseNpy(npyBytes("{'descr': '<f4', 'fortran_order': True, "
                                      "'shape': (2, 2), }",
                                      16),
                             "f.npy"),
                    Catch::Contains("Fortran order"));
  CHECK_THROWS_WITH(
      parseNpy(npyBytes("{'descr': '<f4', 'fortran_order': False, "
                        "'shape': (2, 2), }",
                        12),
               "short.npy"),
      Catch::Contains("data is 12 bytes but shape [2,2] of <f4 needs 16"));
  CHECK_THROWS_WITH(parseNpy(std::vector<char>(12, 'x'), "junk.npy"),
                    Catch::Contains("not a .npy file"));
}

TEST_CASE("an opened .npy file reads ranges of its data in bounded pieces "
          "and makes the errors readNpy makes",
          "[runtime]") {
  std::string path = tempPath("opened.npy");
  NpyArray a{DType::F32, {3, 2}, floatBytes({1, 2, 3, 4, 5, 6})};
  writeNpy(path, a);
  NpyFile file = NpyFile::open(path);
  CHECK(file.dtype() == DType::F32);
  CHECK(file.shape() == Shape{3, 2});
  CHECK(file.dataBytes() == 24);
  // Bytes [4, 20) through pieces of at most 6 bytes, in order.
  std::vector<char> got;
  std::vector<uint64_t> pieces;
  file.readData(4, 16, 6, [&](uint64_t done, const char *bytes, uint64_t n) {
    CHECK(done == got.size());
    pieces.push_back(n);
    got.insert(got.end(), bytes, bytes + n);
  });
  CHECK(pieces == std::vector<uint64_t>{6, 6, 4});
  CHECK(got == std::vector<char>(a.bytes.begin() + 4, a.bytes.begin() + 20));
  CHECK_THROWS_WITH(file.readData(20, 8, 4, [](uint64_t, const char *,
                                                uint64_t) {}),
                    Catch::Contains("outside the 24 data bytes"));

  // Every file readNpy refuses, NpyFile::open refuses with its message.
  auto both = [&](const std::vector<char> &bytes, const std::string &what) {
    std::string bad = tempPath("bad.npy");
    std::ofstream(bad, std::ios::binary)
        .write(bytes.data(), int64_t(bytes.size()));
    CHECK_THROWS_WITH(readNpy(bad), Catch::Contains(what));
    CHECK_THROWS_WITH(NpyFile::open(bad), Catch::Contains(what));
  };
  both(npyBytes("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }",
                12),
       "data is 12 bytes but shape [2,2] of <f4 needs 16");
  both(npyBytes("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }",
                20),
       "data is 20 bytes but shape [2,2] of <f4 needs 16");
  both(npyBytes("{'descr': '<f2', 'fortran_order': False, 'shape': (2,), }",
                4),
       "unsupported .npy dtype '<f2'");
  std::vector<char> header =
      npyBytes("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }",
               0);
  both(std::vector<char>(header.begin(), header.begin() + 40),
       "truncated .npy header");
  both(std::vector<char>(header.begin(), header.begin() + 9),
       "not a .npy file");
  both(std::vector<char>(12, 'x'), "not a .npy file");
  std::vector<char> v2 =
      npyBytes("{'descr': '<i4', 'fortran_order': False, 'shape': (2,), }", 8,
               2);
  both(std::vector<char>(v2.begin(), v2.begin() + 11), "truncated .npy header");
  CHECK_THROWS_WITH(NpyFile::open(tempPath("absent.npy")),
                    Catch::Contains("cannot open .npy file"));

  // A file cut short after it was opened: a clear error at the read.
  std::vector<char> full = readAll(path);
  std::ofstream(path, std::ios::binary)
      .write(full.data(), int64_t(full.size() - 8));
  CHECK_THROWS_WITH(file.readData(0, 24, 1 << 20,
                                  [](uint64_t, const char *, uint64_t) {}),
                    Catch::Contains(path + ": cannot read 24 data bytes"));
}
