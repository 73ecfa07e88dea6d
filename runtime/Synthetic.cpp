//===- Synthetic.cpp - Seeded parameter init and synthetic input data ----===//
#include "runtime/Synthetic.h"

#include "runtime/SyntheticDraw.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>

namespace remat::runtime {

namespace {

class Stream {
public:
  Stream(uint64_t seed, uint32_t id, uint32_t step, uint32_t domain)
      : seed(seed), id(id), step(step), domain(domain) {}

  PhiloxBlock block(uint64_t b) const {
    if (b > UINT32_MAX)
      throw PlanError("synthetic data: tensor too large for the Philox "
                      "stream (more than 2^34 elements)");
    return syntheticBlock(seed, id, step, domain, uint32_t(b));
  }
  uint32_t word(uint64_t i) const { return block(i / 4).word[i % 4]; }

  /// Fills elements [first, first + n) (`first` a multiple of 4) from a
  /// generator taking the 4 words of each block: emit(i, block) for the
  /// block of element first + i.
  template <typename Emit>
  void forBlocks(uint64_t first, uint64_t n, Emit emit) const {
    for (uint64_t i = 0; i < n; i += 4)
      emit(i, block((first + i) / 4));
  }

  uint64_t seed;
  uint32_t id, step, domain;
};

/// Elements [first, first + n) of the stream's normals into `out`.
void fillNormal(const Stream &s, uint64_t first, uint64_t n, double mean,
                double std, float *out) {
  s.forBlocks(first, n, [&](uint64_t base, PhiloxBlock blk) {
    float v[4];
    normalBlock(blk, mean, std, v);
    for (uint64_t k = 0; k < 4 && base + k < n; ++k)
      out[base + k] = v[k];
  });
}

template <typename Int>
void storeInts(const std::vector<int64_t> &values, std::vector<char> &out) {
  out.resize(values.size() * sizeof(Int));
  for (size_t i = 0; i < values.size(); ++i) {
    Int v = Int(values[i]);
    std::memcpy(out.data() + i * sizeof(Int), &v, sizeof(Int));
  }
}

std::vector<int64_t> loadInts(DType dtype, const std::vector<char> &bytes) {
  size_t size = dtypeSize(dtype);
  std::vector<int64_t> out(bytes.size() / size);
  for (size_t i = 0; i < out.size(); ++i) {
    if (dtype == DType::I32) {
      int32_t v;
      std::memcpy(&v, bytes.data() + i * 4, 4);
      out[i] = v;
    } else {
      std::memcpy(&out[i], bytes.data() + i * 8, 8);
    }
  }
  return out;
}

} // namespace

uint32_t bufferStreamId(const std::string &name) {
  uint32_t h = 2166136261u;
  for (unsigned char ch : name) {
    h ^= ch;
    h *= 16777619u;
  }
  return h;
}

int64_t nextToken(const DataSpec &spec, int64_t token) {
  int64_t v = spec.vocab;
  return int64_t(
      (uint64_t(spec.a % v) * uint64_t(token) + uint64_t(spec.c % v)) %
      uint64_t(v));
}

std::vector<char> initialValue(const BufferDesc &b, uint64_t seed,
                               uint64_t first, uint64_t count) {
  if (first % 4 != 0)
    throw std::logic_error("initialValue: a range starts at a multiple of 4");
  std::vector<char> bytes(count * sizeof(float));
  float *out = reinterpret_cast<float *>(bytes.data());
  const InitSpec &init = *b.init;
  Stream s(seed, bufferStreamId(b.name), 0, kInitDomain);
  switch (init.kind) {
  case InitSpec::Kind::Zeros:
    std::fill(out, out + count, 0.0f);
    break;
  case InitSpec::Kind::Ones:
    std::fill(out, out + count, 1.0f);
    break;
  case InitSpec::Kind::Normal:
    fillNormal(s, first, count, init.mean, init.std, out);
    break;
  case InitSpec::Kind::Uniform:
    s.forBlocks(first, count, [&](uint64_t base, PhiloxBlock blk) {
      for (uint64_t k = 0; k < 4 && base + k < count; ++k)
        out[base + k] =
            float(init.low + (init.high - init.low) *
                                 double(philoxWordToUnit(blk.word[k])));
    });
    break;
  }
  return floatsAs(b.dtype, std::move(bytes));
}

std::vector<char> syntheticInput(const Plan &plan, size_t index, uint64_t seed,
                                 int64_t step,
                                 const std::vector<char> *sourceBytes,
                                 uint64_t elementOffset) {
  const BufferDesc &b = plan.buffers[index];
  const DataSpec &d = *b.data;
  uint64_t n = *checkedNumElements(b.shape);
  if (elementOffset != 0 && (d.kind == DataSpec::Kind::Randn ||
                             d.kind == DataSpec::Kind::Randint))
    return syntheticInputRange(plan, index, seed, step, elementOffset, n);
  Stream s(seed, bufferStreamId(b.name), uint32_t(step), kDataDomain);
  std::vector<char> bytes;
  if (d.kind == DataSpec::Kind::SampleMask) {
    // Every sample real; the executor zeroes a micro-batch's padding.
    bytes.resize(n * sizeof(float));
    float *ones = reinterpret_cast<float *>(bytes.data());
    std::fill(ones, ones + n, 1.0f);
    return floatsAs(b.dtype, std::move(bytes));
  }
  if (d.kind == DataSpec::Kind::Randn) {
    bytes.resize(n * sizeof(float));
    fillNormal(s, 0, n, d.mean, d.std, reinterpret_cast<float *>(bytes.data()));
    return floatsAs(b.dtype, std::move(bytes));
  }
  std::vector<int64_t> values(n);
  if (d.kind == DataSpec::Kind::Teacher) {
    const BufferDesc &src = plan.buffers[d.of];
    if (src.dtype != DType::F32 && src.dtype != DType::F64)
      throw PlanError("'" + b.name +
                      "': data 'teacher' reads f32 or f64 inputs only");
    bool integer = isIndexDType(b.dtype);
    uint64_t features = uint64_t(src.shape.back());
    uint64_t outputs = integer ? uint64_t(d.classes) : uint64_t(b.shape.back());
    uint64_t rows = *checkedNumElements(src.shape) / features;
    // The teacher's weights: a fixed draw per (seed, buffer name).
    std::vector<float> weights(features * outputs);
    fillNormal(Stream(seed, bufferStreamId(b.name), 0, kTeacherDomain), 0,
               weights.size(), 0.0, 1.0, weights.data());
    // The source's row values (f32, or f64 under --precision fp64).
    auto x = [&](uint64_t i) {
      if (src.dtype == DType::F32) {
        float f;
        std::memcpy(&f, sourceBytes->data() + i * sizeof(f), sizeof(f));
        return double(f);
      }
      double v;
      std::memcpy(&v, sourceBytes->data() + i * sizeof(v), sizeof(v));
      return v;
    };
    std::vector<double> z(outputs);
    if (!integer)
      bytes.resize(n * sizeof(float));
    float *targets = reinterpret_cast<float *>(bytes.data());
    double scale = 1.0 / std::sqrt(double(features));
    for (uint64_t row = 0; row < rows; ++row) {
      std::fill(z.begin(), z.end(), 0.0);
      for (uint64_t f = 0; f < features; ++f)
        for (uint64_t k = 0; k < outputs; ++k)
          z[k] += x(row * features + f) *
                  double(weights[f * outputs + k]);
      if (!integer) {
        for (uint64_t k = 0; k < outputs; ++k)
          targets[row * outputs + k] = float(z[k] * scale);
        continue;
      }
      values[row] = int64_t(std::max_element(z.begin(), z.end()) - z.begin());
    }
    if (!integer)
      return floatsAs(b.dtype, std::move(bytes));
  }
  switch (d.kind) {
  case DataSpec::Kind::Randint:
    for (uint64_t i = 0; i < n; ++i)
      values[i] = drawInt(s.word(i), d.low, d.high);
    break;
  case DataSpec::Kind::Sequence: {
    uint64_t time = uint64_t(b.shape.back());
    uint64_t firstRow = elementOffset / time;
    for (uint64_t row = 0; row * time < n; ++row) {
      int64_t token = drawInt(s.word(firstRow + row), 0, d.vocab);
      for (uint64_t t = 0; t < time; ++t) {
        values[row * time + t] = token;
        token = nextToken(d, token);
      }
    }
    break;
  }
  case DataSpec::Kind::LabelsOf: {
    const BufferDesc &src = plan.buffers[d.of];
    std::vector<int64_t> tokens = loadInts(src.dtype, *sourceBytes);
    const DataSpec &rule = *src.data;
    uint64_t time = uint64_t(b.shape.back());
    for (uint64_t row = 0; row * time < n; ++row)
      for (uint64_t t = 0; t < time; ++t) {
        uint64_t target = t + uint64_t(d.shift);
        if (target < time) {
          values[row * time + t] = tokens[row * time + target];
          continue;
        }
        // Past the end: continue the rule from the last token.
        int64_t token = tokens[row * time + time - 1];
        for (uint64_t k = time - 1; k < target; ++k)
          token = nextToken(rule, token);
        values[row * time + t] = token;
      }
    break;
  }
  case DataSpec::Kind::Randn:
  case DataSpec::Kind::Teacher:
  case DataSpec::Kind::SampleMask:
    break;
  }
  if (b.dtype == DType::I32)
    storeInts<int32_t>(values, bytes);
  else
    storeInts<int64_t>(values, bytes);
  return bytes;
}

std::vector<char> syntheticInputRange(const Plan &plan, size_t index,
                                      uint64_t seed, int64_t step,
                                      uint64_t begin, uint64_t count) {
  const BufferDesc &b = plan.buffers[index];
  const DataSpec &d = *b.data;
  Stream s(seed, bufferStreamId(b.name), uint32_t(step), kDataDomain);
  std::vector<char> bytes;
  if (d.kind == DataSpec::Kind::Randn) {
    // Normals come 4 to a block: start at the block holding `begin`.
    uint64_t head = begin % 4;
    bytes.resize(count * sizeof(float));
    float *out = reinterpret_cast<float *>(bytes.data());
    for (uint64_t i = 0; i < count + head; i += 4) {
      float v[4];
      normalBlock(s.block((begin - head + i) / 4), d.mean, d.std, v);
      for (uint64_t k = 0; k < 4; ++k)
        if (i + k >= head && i + k - head < count)
          out[i + k - head] = v[k];
    }
    return floatsAs(b.dtype, std::move(bytes));
  }
  if (d.kind != DataSpec::Kind::Randint)
    throw PlanError("syntheticInputRange: only randn and randint inputs");
  std::vector<int64_t> values(count);
  for (uint64_t i = 0; i < count; ++i)
    values[i] = drawInt(s.word(begin + i), d.low, d.high);
  if (b.dtype == DType::I32)
    storeInts<int32_t>(values, bytes);
  else
    storeInts<int64_t>(values, bytes);
  return bytes;
}

} // namespace remat::runtime
