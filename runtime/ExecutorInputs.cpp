//===- ExecutorInputs.cpp - A step's inputs, one micro-batch at a time ---===//
//
// The executor's inputs: checking --data arrays and files against the
// plan's input buffers, and filling every input for one micro-batch of a
// training step from them or from the synthetic source (runtime/
// Synthetic.h), a padding sample included (PlanFormat.h, microbatchSlice).
//
//===----------------------------------------------------------------------===//
#include "runtime/Executor.h"

#include "runtime/Synthetic.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <set>
#include <utility>
#include <vector>

namespace remat::runtime {

std::pair<size_t, Executor::UserData>
Executor::checkUserData(const std::string &name, DType dtype,
                        const Shape &shape) const {
  auto index = findBuffer(name);
  if (!index)
    throw PlanError("--data " + name + ": the plan has no buffer '" + name +
                    "'");
  const BufferDesc &b = loaded.plan.buffers[*index];
  if (b.role != BufferRole::Input)
    throw PlanError("--data " + name + ": buffer '" + name + "' is a " +
                    roleName(b.role) + " buffer, not an input");
  if (b.data && b.data->kind == DataSpec::Kind::SampleMask)
    throw PlanError("--data " + name + ": input '" + name +
                    "' is the micro-batches' sample mask, which remat fills");
  if (dtype != b.dtype)
    throw PlanError("--data " + name + ": array has dtype " + dtypeName(dtype) +
                    " but input '" + name + "' is " + dtypeName(b.dtype));
  UserData data;
  data.stride = b.bytes;
  const int64_t k = loaded.plan.microbatches;
  const int64_t numRanks = ranks ? ranks->size() : 1;
  if (k * numRanks > 1 && !b.shape.empty()) {
    // The file holds global batches (the rank's samples times the ranks,
    // rows / batch rows a sample where dim 0 holds the samples): this rank
    // reads its rows of each, a micro-batch at a time.
    const Plan &p = loaded.plan;
    int64_t rows = b.shape[0], perSample = rowsPerSample(p, b),
            rankRows = perSample ? perSample * p.samplesPerStep() : rows * k,
            global = rankRows * numRanks;
    bool whole =
        shape.size() == b.shape.size() && !shape.empty() &&
        std::equal(b.shape.begin() + 1, b.shape.end(), shape.begin() + 1) &&
        shape[0] > 0 && shape[0] % global == 0;
    Shape globalShape = b.shape;
    globalShape[0] = global;
    std::string parts = numRanks > 1 ? std::to_string(numRanks) + " ranks" : "";
    if (k > 1)
      parts +=
          (parts.empty() ? "" : " of ") + std::to_string(k) + " micro-batches";
    if (!whole)
      throw PlanError("--data " + name + ": array has shape " +
                      formatShape(shape) + " but " + parts +
                      " need global batches of input '" + name + "': shape " +
                      formatShape(globalShape) + " (" +
                      (p.samplesPerStep() < p.batch * k ? "at most " : "") +
                      std::to_string(rows) + " samples per " +
                      (k > 1 ? "micro-batch" : "rank") +
                      "), or several of them stacked on dim 0");
    uint64_t rowBytes = b.bytes / uint64_t(rows);
    data.batches = uint64_t(shape[0] / global);
    data.stride = rowBytes * uint64_t(global);
    data.first = rowBytes * uint64_t(rankRows * (ranks ? ranks->rank() : 0));
    data.sampleStride = rowBytes * uint64_t(perSample);
    data.sliceStride = b.bytes;
    return {*index, std::move(data)};
  }
  bool sameShape = shape == b.shape;
  bool batches =
      !b.shape.empty() && shape.size() == b.shape.size() &&
      std::equal(b.shape.begin() + 1, b.shape.end(), shape.begin() + 1) &&
      shape[0] % b.shape[0] == 0 && shape[0] > 0;
  if (!sameShape && !batches)
    throw PlanError("--data " + name + ": array has shape " +
                    formatShape(shape) + " but input '" + name +
                    "' has shape " + formatShape(b.shape) +
                    " (or k batches of it stacked on dim 0)");
  if (!sameShape)
    data.batches = uint64_t(shape[0] / b.shape[0]);
  return {*index, std::move(data)};
}

/// Whether `name` is an f64 input (--precision fp64) given f32 data,
/// which it takes widened.
bool Executor::widensInput(const std::string &name, DType dtype) const {
  std::optional<size_t> index = findBuffer(name);
  return index && dtype == DType::F32 &&
         loaded.plan.buffers[*index].dtype == DType::F64;
}

void Executor::setInputData(const std::string &name, NpyArray array) {
  if (widensInput(name, array.dtype)) {
    array.bytes = floatsAs(DType::F64, std::move(array.bytes));
    array.dtype = DType::F64;
  }
  auto [index, data] = checkUserData(name, array.dtype, array.shape);
  data.array = std::move(array);
  userData[index] = std::move(data);
  prefetchedStep = -1; // filled from the old source
}

void Executor::setInputData(const std::string &name, NpyFile file) {
  // Read whole and widened: the f64 mode is for tests.
  if (widensInput(name, file.dtype()))
    return setInputData(name, readNpy(file.path()));
  auto [index, data] = checkUserData(name, file.dtype(), file.shape());
  data.file = std::move(file);
  userData[index] = std::move(data);
  prefetchedStep = -1;
}

void Executor::copyInput(size_t index, const void *src, uint64_t bytes,
                         uint64_t offset, int64_t step) {
  void *dst = static_cast<char *>(bufferAddress(index)) + offset;
  if (!backend.copyInputAsync(dst, src, bytes, step))
    backend.copyIn(dst, src, bytes);
}

SyntheticRequest Executor::syntheticRequest(const BufferDesc &b, uint64_t n,
                                            int64_t step) const {
  SyntheticRequest r;
  r.kind = b.data->kind == DataSpec::Kind::Randn
               ? SyntheticRequest::Kind::Randn
               : SyntheticRequest::Kind::Randint;
  r.int64Elements = b.dtype == DType::I64;
  r.numElements = n;
  r.seed = runSeed;
  r.streamId = bufferStreamId(b.name);
  r.step = uint32_t(step);
  r.mean = b.data->mean;
  r.std = b.data->std;
  r.low = b.data->low;
  r.high = b.data->high;
  return r;
}

void Executor::fillInputs(int64_t step, int64_t microbatch) {
  const Plan &p = loaded.plan;
  const MicrobatchSlice part = microbatchSlice(p, microbatch);
  // Host copies are kept only of inputs some labels_of or teacher reads.
  std::set<size_t> needed;
  for (const BufferDesc &b : p.buffers)
    if (b.role == BufferRole::Input && b.data && b.data->readsInput())
      needed.insert(size_t(b.data->of));
  std::map<size_t, std::vector<char>> host;
  // Pass 0: everything but labels_of and teacher; pass 1: those, whose
  // source input is now known.
  for (int pass = 0; pass < 2; ++pass)
    for (size_t i = 0; i < p.buffers.size(); ++i) {
      const BufferDesc &b = p.buffers[i];
      if (b.role != BufferRole::Input)
        continue;
      bool isLabels = b.data && b.data->readsInput() && !userData.count(i);
      if (isLabels != (pass == 1))
        continue;
      if (auto it = userData.find(i); it != userData.end()) {
        const UserData &d = it->second;
        uint64_t batchAt = d.first + uint64_t(step) % d.batches * d.stride;
        // The micro-batch's rows; a padding sample repeats its first.
        std::vector<std::pair<uint64_t, uint64_t>> pieces; // (from, bytes)
        if (d.sampleStride == 0) {
          pieces.push_back(
              {batchAt + uint64_t(microbatch) * d.sliceStride, b.bytes});
        } else {
          uint64_t from = batchAt + uint64_t(part.first) * d.sampleStride;
          pieces.push_back({from, uint64_t(part.samples) * d.sampleStride});
          if (part.padding)
            pieces.push_back({from, d.sampleStride});
        }
        std::vector<char> bytes; // the host's copy, where one is needed
        if (needed.count(i))
          bytes.resize(size_t(b.bytes));
        uint64_t to = 0;
        for (auto [from, size] : pieces) {
          if (!d.file) {
            // Straight from the array in memory.
            const char *src = d.array.bytes.data() + from;
            copyInput(i, src, size, to, step);
            if (!bytes.empty())
              std::memcpy(bytes.data() + to, src, size);
          } else if (!bytes.empty()) {
            // A labels_of or teacher input reads this batch on the host.
            d.file->readData(from, size, size,
                             [&](uint64_t done, const char *src, uint64_t n) {
                               std::memcpy(bytes.data() + to + done, src, n);
                             });
            copyInput(i, bytes.data() + to, size, to, step);
          } else {
            // From the file into the buffer through 1 MiB: the run's peak
            // RSS counts whatever the host holds beside the arena.
            constexpr uint64_t kChunk = uint64_t(1) << 20;
            d.file->readData(from, size, kChunk,
                             [&](uint64_t done, const char *src, uint64_t n) {
                               copyInput(i, src, n, to + done, step);
                             });
          }
          to += size;
        }
        if (!bytes.empty())
          host.emplace(i, std::move(bytes));
        continue;
      }
      if (!b.data)
        throw ExecutionError(loaded.bufferPlace(i) +
                             ": input has no data generator; pass --data " +
                             b.name + "=FILE.npy");
      uint64_t n = *checkedNumElements(b.shape);
      // A data-parallel rank's micro-batch of the global batch's tensor
      // (its samples' elements where dim 0 holds them); a padding sample
      // repeats the micro-batch's first.
      const int64_t rank = ranks ? ranks->rank() : 0;
      const uint64_t perSample =
          rowsPerSample(p, b) ? n / uint64_t(p.batch) : 0;
      uint64_t offset =
          perSample
              ? perSample * uint64_t(rank * p.samplesPerStep() + part.first)
              : n * uint64_t(rank * p.microbatches + microbatch);
      const uint64_t live = n - perSample * uint64_t(part.padding);
      if (!needed.count(i) && (b.data->kind == DataSpec::Kind::Randn ||
                               b.data->kind == DataSpec::Kind::Randint)) {
        // (Past 2^34 elements the host path reports the stream's limit.)
        if (offset == 0 && (n + 3) / 4 <= uint64_t(UINT32_MAX) + 1 &&
            backend.generateInput(bufferAddress(i),
                                  syntheticRequest(b, n, step)))
          continue;
        // Large inputs are generated and copied in pieces, so the host
        // never holds a second copy of the whole tensor.
        uint64_t elementBytes = dtypeSize(b.dtype);
        constexpr uint64_t kChunk = uint64_t(1) << 18; // a multiple of 4
        for (uint64_t begin = 0; begin < n;) {
          // (Past `live`: the padding, drawn as the first sample.)
          uint64_t end = std::min(begin + kChunk, begin < live ? live : n);
          uint64_t at = begin < live ? offset + begin : offset + begin - live;
          std::vector<char> piece =
              syntheticInputRange(p, i, runSeed, step, at, end - begin);
          copyInput(i, piece.data(), piece.size(), begin * elementBytes, step);
          begin = end;
        }
        continue;
      }
      const std::vector<char> *source =
          isLabels ? &host.at(size_t(b.data->of)) : nullptr;
      std::vector<char> bytes =
          syntheticInput(p, i, runSeed, step, source, offset);
      if (live < n) { // the padding sample repeats the first
        uint64_t elementBytes = dtypeSize(b.dtype);
        if (b.data->kind == DataSpec::Kind::SampleMask)
          std::memset(bytes.data() + live * elementBytes, 0,
                      size_t((n - live) * elementBytes));
        else
          std::memcpy(bytes.data() + live * elementBytes, bytes.data(),
                      size_t(perSample * elementBytes));
      }
      copyInput(i, bytes.data(), bytes.size(), 0, step);
      if (needed.count(i))
        host.emplace(i, std::move(bytes));
    }
}

} // namespace remat::runtime
