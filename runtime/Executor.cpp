//===- Executor.cpp - Run a validated plan, one training step at a time --===//
#include "runtime/Executor.h"

#include "ops/BFloat16.h"
#include "ops/Shards.h"
#include "runtime/Synthetic.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <set>
#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>
#include <new>

namespace remat::runtime {

Executor::Executor(const LoadedPlan &plan, Backend &backend,
                   ExecutorOptions options)
    : loaded(plan), backend(backend),
      runSeed(options.seed.value_or(plan.plan.seed)) {
  const Plan &p = loaded.plan;
  int rankCount = options.ranks ? options.ranks->size() : 1;
  if (p.ranks != rankCount && !(options.oneRankOfMany && rankCount == 1))
    throw PlanError(loaded.source + ": /ranks: the plan is for " +
                    std::to_string(p.ranks) + " rank" +
                    (p.ranks == 1 ? "" : "s") + " (remat compile --ranks " +
                    std::to_string(p.ranks) + ") but this run has " +
                    std::to_string(rankCount) + " (" +
                    (rankCount == 1 ? std::string("no MPI launcher")
                                    : "mpirun -np " +
                                          std::to_string(rankCount)) +
                    "); launch it with mpirun -np " + std::to_string(p.ranks) +
                    " or recompile with --ranks " +
                    std::to_string(rankCount));
  if (rankCount > 1)
    ranks = options.ranks;
  sliceShare = 1.0 / double(p.microbatches);
  for (const ResolvedStep &s : loaded.steps)
    if (s.op == OpKind::GradAccumulate) {
      sliceShare = double(s.attrs.scale);
      break;
    }
  overlapSums = options.overlapGradientSums;
  // Gradient communication (GradientComm.h): the backend's own on device
  // memory (NCCL) or MPI on host memory, which only the cpu backend's
  // arena is.
  bool deviceComm =
      options.comm == CommChoice::Device ||
      (rankCount > 1 && options.comm == CommChoice::Auto &&
       backend.hasDeviceComm());
  if (deviceComm && !backend.hasDeviceComm())
    throw PlanError("--comm nccl: the " + backend.name() +
                    " backend of this build has no NCCL (the cuda backend "
                    "built with NCCL has; docs/distributed.md)");
  if (rankCount > 1 && !deviceComm && backend.name() != "cpu")
    throw PlanError(
        "data-parallel runs on the " + backend.name() + " backend need " +
        (options.comm == CommChoice::Mpi
             ? std::string("--comm nccl: --comm mpi averages host memory "
                           "(the cpu backend only)")
             : std::string("NCCL, which this build has not "
                           "(docs/distributed.md)")));
  backend.checkSupport(loaded);
  workspace = backend.workspaceBytes(loaded);
  // The peak RSS from here on is the run's: what the process held before
  // (remat train's compile, freed by now) does not count.
  resetPeakRss();
  baselineRss = readCurrentRssBytes();
  try {
    arena = backend.allocateArena(p.arenaBytes, p.alignment);
  } catch (const std::bad_alloc &) {
    throw ExecutionError(loaded.source + ": /arena_bytes: cannot allocate " +
                         "the arena of " + std::to_string(p.arenaBytes) +
                         " bytes (out of memory)");
  }
  try {
    backend.prepare(loaded);
    calls = PlanCalls(loaded, static_cast<char *>(arena));
    if (deviceComm)
      comm = backend.createDeviceComm(ranks);
    else if (ranks)
      comm = createMpiGradientComm(*ranks);
    if (comm)
      planGradientSums();
    planShardedUpdates();
    // Initial values in pieces of 1 MiB of floats: no host copy of a
    // whole parameter (GPT-2's token embedding is 154 MB) beside the arena.
    constexpr uint64_t kInitPiece = uint64_t(1) << 18;
    for (size_t i = 0; i < p.buffers.size(); ++i) {
      const BufferDesc &b = p.buffers[i];
      if (!b.init || (options.weights && options.weights->contains(b.name)))
        continue;
      uint64_t n = *checkedNumElements(b.shape), size = dtypeSize(b.dtype);
      char *dst = static_cast<char *>(bufferAddress(i));
      for (uint64_t first = 0; first < n; first += kInitPiece) {
        std::vector<char> piece =
            initialValue(b, runSeed, first, std::min(kInitPiece, n - first));
        backend.copyIn(dst + first * size, piece.data(), piece.size());
      }
    }
    if (options.weights)
      loadWeights(*options.weights);
    backend.synchronize();
    // Filling step t+1's inputs before step t's loss is read is safe when
    // no input shares bytes with the loss buffer.
    prefetch = backend.overlapsInputCopies();
    const BufferDesc &loss = p.buffers[size_t(p.loss)];
    for (const BufferDesc &b : p.buffers)
      if (b.role == BufferRole::Input && b.offset < loss.offset + loss.bytes &&
          loss.offset < b.offset + b.bytes)
        prefetch = false;
  } catch (...) {
    comm.reset(); // done with the arena before it goes
    backend.freeArena(arena);
    throw;
  }
}

Executor::~Executor() {
  backend.synchronize();
  comm.reset();
  backend.freeArena(arena);
}

void Executor::planGradientSums() {
  const Plan &p = loaded.plan;
  sumsAfter.assign(p.steps.size(), {});
  sumsBefore.assign(p.steps.size(), {});
  // A split step averages the accumulated gradients, once, after the last
  // micro-batch's grad_accumulate.
  const BufferRole summed = updateGradientRole(p);
  for (size_t b = 0; b < p.buffers.size(); ++b) {
    if (p.buffers[b].role != summed || loaded.lastWriter[b] < 0)
      continue;
    if (p.buffers[b].dtype != DType::F32)
      throw PlanError(loaded.bufferPlace(b) + ": data-parallel runs average "
                      "f32 gradients only");
    // The sum runs from the step that last writes the gradient to the
    // first that reads it after that (the optimizer's update): the buffer
    // is live in between, so no other step touches its bytes. A gradient
    // nobody reads after its last write needs no sum.
    size_t last = size_t(loaded.lastWriter[b]);
    for (size_t s = last + 1; s < p.steps.size(); ++s) {
      const auto &in = p.steps[s].inputs;
      if (std::find(in.begin(), in.end(), int64_t(b)) == in.end())
        continue;
      sumsAfter[last].push_back(b);
      sumsBefore[s].push_back(b);
      break;
    }
  }
}

bool Executor::waitStarted(std::map<size_t, size_t> &handles, size_t index) {
  auto it = handles.find(index);
  if (it == handles.end())
    return false;
  commWaitSeconds += comm->wait(it->second);
  handles.erase(it);
  return true;
}

void Executor::finishGradientSum(size_t index) {
  // The mean over the ranks (the comm divides the sum by their count): the
  // gradient of the global batch's mean loss.
  waitStarted(sumHandles, index);
}

void Executor::planShardedUpdates() {
  const Plan &p = loaded.plan;
  gathersBefore.assign(p.steps.size(), {});
  for (size_t si = 0; si < p.steps.size(); ++si) {
    const auto &ls = loaded.steps[si];
    if (!isOptimizerOp(ls.op) || ls.attrs.shards <= 1)
      continue;
    // (The loader checked shards == the plan's ranks == this run's.)
    const StepDesc &s = p.steps[si];
    ShardedUpdate u;
    u.param = size_t(s.inputs[0]);
    const BufferDesc &param = p.buffers[u.param];
    if (param.dtype != DType::F32)
      throw PlanError(loaded.stepPlace(si) + ": sharded optimizer updates "
                      "work on f32 params only");
    u.numel = *checkedNumElements(param.shape);
    u.shard = ops::shardElements(u.numel, ls.attrs.shards);
    ops::ShardRange mine =
        ops::shardRange(u.numel, u.shard, uint64_t(ranks ? ranks->rank() : 0));
    u.begin = mine.begin;
    u.count = mine.count;
    Shape range = {int64_t(u.count)};
    auto view = [&](int64_t buffer, uint64_t first) {
      TensorRef r = calls.ref(buffer);
      r.data = static_cast<char *>(r.data) + first * sizeof(float);
      r.shape = range;
      r.numElements = int64_t(u.count);
      return r;
    };
    // param and grad: this rank's range; each state: its slice's first
    // `count` elements (the last rank's slice may be short or empty).
    for (size_t i = 0; i < s.inputs.size(); ++i)
      u.inputs.push_back(view(s.inputs[i], i < 2 ? u.begin : 0));
    for (size_t o = 0; o < s.outputs.size(); ++o)
      u.outputs.push_back(view(s.outputs[o], o < 1 ? u.begin : 0));
    for (size_t i = 2; i < s.inputs.size(); ++i)
      shardedStates[size_t(s.inputs[i])] = si;
    // A later step of the same training step that reads the param (none
    // in the planner's plans: updates follow the param's last reader)
    // waits for the gather; every other gather ends with the step.
    for (size_t later = si + 1; later < p.steps.size(); ++later) {
      const auto &in = p.steps[later].inputs;
      if (std::find(in.begin(), in.end(), int64_t(u.param)) != in.end()) {
        gathersBefore[later].push_back(u.param);
        break;
      }
    }
    shardedUpdates.emplace(si, std::move(u));
  }
}

void Executor::finishParamGather(size_t index) {
  waitStarted(gatherHandles, index);
}

void *Executor::bufferAddress(size_t index) const {
  return static_cast<char *>(arena) + loaded.plan.buffers[index].offset;
}

std::optional<size_t> Executor::findBuffer(const std::string &name) const {
  const auto &buffers = loaded.plan.buffers;
  for (size_t i = 0; i < buffers.size(); ++i)
    if (buffers[i].name == name)
      return i;
  return std::nullopt;
}

std::vector<char> Executor::readBuffer(size_t index) {
  backend.synchronize();
  std::vector<char> bytes(loaded.plan.buffers[index].bytes);
  backend.copyOut(bytes.data(), bufferAddress(index), bytes.size());
  return bytes;
}

void Executor::writeBuffer(size_t index, const std::vector<char> &bytes) {
  const BufferDesc &b = loaded.plan.buffers[index];
  if (bytes.size() != b.bytes)
    throw PlanError(loaded.bufferPlace(index) + ": writing " +
                    std::to_string(bytes.size()) + " bytes into a buffer of " +
                    std::to_string(b.bytes));
  backend.copyIn(bufferAddress(index), bytes.data(), bytes.size());
}

namespace {

/// Hands tensor `name`'s bytes to sink(offset, bytes, n) through pieces of
/// 1 MiB, as values of `to`: the file's F32 or BF16 values widened where
/// `to` is wider (offsets are then the buffer's).
void readConverted(
    const SafetensorsFile &file, const std::string &name, DType to,
    const std::function<void(uint64_t, const char *, uint64_t)> &sink) {
  constexpr uint64_t kChunk = 1 << 20; // a multiple of 4: whole values
  const std::string &from = file.tensors().at(name).dtype;
  if (from == safetensorsDtype(to))
    return file.readData(name, kChunk, sink);
  bool bf16 = from == "BF16";
  uint64_t fromSize = bf16 ? 2 : 4, toSize = dtypeSize(to);
  if (toSize < fromSize)
    throw PlanError(file.path() + ": tensor '" + name + "' is " + from +
                    " but its buffer is " + dtypeName(to) +
                    ", which would round it");
  std::vector<char> f32, wide;
  file.readData(name, kChunk,
                [&](uint64_t offset, const char *bytes, uint64_t n) {
                  const char *floats = bytes;
                  uint64_t floatBytes = n;
                  if (bf16) { // exact: a bf16 is a float's upper half
                    f32.resize(n / 2 * 4);
                    for (uint64_t i = 0; i < n / 2; ++i) {
                      uint16_t h;
                      std::memcpy(&h, bytes + 2 * i, 2);
                      float v = ops::bf16ToFloat(h);
                      std::memcpy(f32.data() + 4 * i, &v, 4);
                    }
                    floats = f32.data();
                    floatBytes = f32.size();
                  }
                  wide.clear();
                  appendFloatsAs(to, floats, floatBytes, wide);
                  sink(offset / fromSize * toSize, wide.data(), wide.size());
                });
}

} // namespace

void Executor::loadWeights(const SafetensorsFile &file) {
  const auto &buffers = loaded.plan.buffers;
  // From an opened file, through a buffer of 1 MiB: the run's peak RSS
  // counts whatever the load holds beside the arena.
  constexpr uint64_t kChunk = 1 << 20;
  for (size_t i = 0; i < buffers.size(); ++i) {
    const BufferDesc &b = buffers[i];
    if (auto sharded = shardedStates.find(i); sharded != shardedStates.end()) {
      // Sharded optimizer state: the file holds it whole (the param's
      // shape, as every checkpoint does); keep this rank's slice.
      if (!file.contains(b.name))
        continue;
      const ShardedUpdate &u = shardedUpdates.at(sharded->second);
      file.getF32(b.name, loaded.plan.buffers[u.param].shape);
      std::vector<char> mine(b.bytes, 0);
      uint64_t lo = u.begin * sizeof(float), hi = lo + u.count * sizeof(float);
      file.readData(b.name, kChunk,
                    [&](uint64_t offset, const char *bytes, uint64_t n) {
                      uint64_t a = std::max(offset, lo);
                      uint64_t e = std::min(offset + n, hi);
                      if (a < e)
                        std::memcpy(mine.data() + (a - lo),
                                    bytes + (a - offset), e - a);
                    });
      writeBuffer(i, mine);
      continue;
    }
    if (b.role == BufferRole::Param ||
        (isPersistent(b.role) && file.contains(b.name))) {
      // An f64 buffer (--precision fp64) takes F32 values widened, any
      // float buffer BF16 ones.
      file.getFloat(b.name, b.shape, b.dtype);
      char *dst = static_cast<char *>(bufferAddress(i));
      readConverted(file, b.name, b.dtype,
                    [&](uint64_t offset, const char *bytes, uint64_t n) {
                      backend.copyIn(dst + offset, bytes, n);
                    });
    }
    // An input without a generator that the file holds: the same values
    // every step (an imported model's constant tensors), unless --data
    // replaces them.
    if (b.role == BufferRole::Input && !b.data && file.contains(b.name) &&
        !userData.count(i)) {
      const NamedTensor &t = file.tensors().at(b.name);
      // (An f64 input, --precision fp64, holds the file's F32 widened.)
      bool widen = b.dtype == DType::F64 && t.dtype == "F32";
      std::string want = widen ? "F32" : safetensorsDtype(b.dtype);
      if (t.dtype != want || t.shape != b.shape)
        throw PlanError(file.path() + ": tensor '" + b.name + "' is " +
                        t.dtype + formatShape(t.shape) +
                        " but input '" + b.name + "' is " + want +
                        formatShape(b.shape));
      UserData data;
      data.array = NpyArray{b.dtype, b.shape, std::vector<char>(size_t(b.bytes))};
      readConverted(file, b.name, b.dtype,
                    [&](uint64_t offset, const char *bytes, uint64_t n) {
                      std::memcpy(data.array.bytes.data() + offset, bytes, n);
                    });
      userData[i] = std::move(data);
    }
  }
  backend.synchronize();
}

std::map<std::string, NamedTensor> Executor::stateTensors() const {
  std::map<std::string, NamedTensor> out;
  const auto &buffers = loaded.plan.buffers;
  backend.synchronize();
  for (size_t i = 0; i < buffers.size(); ++i) {
    const BufferDesc &b = buffers[i];
    // Accumulators hold nothing between steps.
    if (!isPersistent(b.role) || b.role == BufferRole::Accumulator)
      continue;
    if (auto sharded = shardedStates.find(i); sharded != shardedStates.end()) {
      // Gathered whole on rank 0, in the param's shape: a checkpoint of a
      // sharded run is that of an unsharded one.
      const ShardedUpdate &u = shardedUpdates.at(sharded->second);
      const BufferDesc &param = buffers[u.param];
      NamedTensor t{"F32", param.shape, std::vector<char>(param.bytes)};
      // This rank's slice through the host (the arena may be device
      // memory).
      std::vector<float> mine(u.count);
      backend.copyOut(mine.data(), bufferAddress(i), u.count * sizeof(float));
      ranks->gatherToFirst(mine.data(), u.numel, u.shard,
                           reinterpret_cast<float *>(t.bytes.data()));
      out.emplace(b.name, std::move(t));
      continue;
    }
    NamedTensor t{safetensorsDtype(b.dtype), b.shape,
                  std::vector<char>(b.bytes)};
    backend.copyOut(t.bytes.data(), bufferAddress(i), b.bytes);
    out.emplace(b.name, std::move(t));
  }
  return out;
}

void Executor::runPlanSteps(int64_t mb, bool last) {
  const Plan &p = loaded.plan;
  for (size_t si = 0; si < p.steps.size(); ++si) {
    if (!last && p.steps[si].phase == Phase::Optimizer)
      continue;
    if (comm && last) {
      for (size_t b : sumsBefore[si])
        finishGradientSum(b);
      for (size_t b : gathersBefore[si])
        finishParamGather(b);
    }
    KernelCall call = calls.call(si, numStepsRun, mb);
    auto sharded = shardedUpdates.find(si);
    if (sharded != shardedUpdates.end()) {
      call.inputs = sharded->second.inputs.data();
      call.outputs = sharded->second.outputs.data();
    }
    try {
      backend.runStep(call);
    } catch (const PlanError &) {
      throw;
    } catch (const std::runtime_error &e) {
      throw ExecutionError(loaded.stepPlace(si) + ": " + e.what() +
                           " (training step " +
                           std::to_string(numStepsRun + 1) + ")");
    }
    if (comm && last && !sumsAfter[si].empty()) {
      for (size_t b : sumsAfter[si])
        sumHandles[b] = comm->startMean(static_cast<float *>(bufferAddress(b)),
                                        p.buffers[b].bytes / sizeof(float));
      // A callback (--dump-grads) sees the averaged gradients.
      if (onStepExecuted || !overlapSums)
        for (size_t b : sumsAfter[si])
          finishGradientSum(b);
    }
    if (sharded != shardedUpdates.end() && comm) {
      // Every rank has updated its range: gather the whole param (one
      // rank of many timed alone, oneRankOfMany, has no one to gather
      // from).
      const ShardedUpdate &u = sharded->second;
      gatherHandles[u.param] = comm->startGather(
          static_cast<float *>(bufferAddress(u.param)), u.numel, u.shard);
      if (!overlapSums)
        finishParamGather(u.param);
    }
    if (comm && !(sumHandles.empty() && gatherHandles.empty()))
      comm->poll();
    if (onStepExecuted && last)
      onStepExecuted(si);
  }
}

StepResult Executor::runStep(bool prefetchNext) {
  const Plan &p = loaded.plan;
  auto start = std::chrono::steady_clock::now();
  if (prefetchedStep != numStepsRun)
    fillInputs(numStepsRun, 0);
  prefetchedStep = -1;
  backend.beginTrainingStep(numStepsRun);
  commWaitSeconds = 0;
  // A split step (microbatches k > 1) runs the steps once per micro-batch,
  // the optimizer's only in the last, whose accumulated gradients the
  // ranks average.
  const int64_t k = p.microbatches;
  double lossSum = 0;
  for (int64_t mb = 0; mb < k; ++mb) {
    if (mb > 0 && !prefetch)
      fillInputs(numStepsRun, mb);
    runPlanSteps(mb, mb + 1 == k);
    if (prefetch && mb + 1 < k) {
      // The next micro-batch's inputs, queued behind this one's work: their
      // host side overlaps the device computing this micro-batch.
      fillInputs(numStepsRun, mb + 1);
    }
    if (k > 1) {
      // The batch's loss: each micro-batch's weighted by its share (its
      // gradients' grad_accumulate scale: 1/k for a mean loss, 1 for a
      // sum).
      backend.synchronize();
      lossSum += readLoss() * sliceShare;
    }
  }
  if (comm) {
    while (!sumHandles.empty())
      finishGradientSum(sumHandles.begin()->first);
    // The next step's forward pass reads the whole params.
    while (!gatherHandles.empty())
      finishParamGather(gatherHandles.begin()->first);
  }
  backend.endTrainingStep(numStepsRun);
  if (prefetch && prefetchNext) {
    // The next batch, queued behind this step's work: its host side
    // (generation, staging) overlaps the device computing this step.
    fillInputs(numStepsRun + 1, 0);
    prefetchedStep = numStepsRun + 1;
  }
  backend.synchronize();
  StepResult result;
  double loss = k > 1 ? lossSum : readLoss();
  result.rankLoss = loss;
  double globalLoss = loss;
  if (ranks) {
    // Every rank's slice has batch samples: the global mean is the mean of
    // the ranks' means.
    std::vector<double> sum = {loss};
    ranks->sum(sum);
    globalLoss = sum[0] / double(ranks->size());
  }
  auto end = std::chrono::steady_clock::now();
  ++numStepsRun;
  result.step = numStepsRun;
  result.loss = globalLoss;
  result.commWaitMilliseconds = commWaitSeconds * 1000;
  result.milliseconds =
      std::chrono::duration<double, std::milli>(end - start).count();
  double seconds = std::max(result.milliseconds / 1000.0, 1e-9);
  double globalBatch = double(p.samplesPerStep()) * double(p.ranks);
  result.samplesPerSecond = globalBatch / seconds;
  // (In double: batch * tokens_per_sample may overflow int64.)
  result.tokensPerSecond = globalBatch * double(p.tokensPerSample) / seconds;
  result.peakRssBytes = readPeakRssBytes();
  return result;
}

double Executor::readLoss() {
  const BufferDesc &b = loaded.plan.buffers[size_t(loaded.plan.loss)];
  uint32_t bits = 0;
  float loss = 0;
  switch (b.dtype) {
  case DType::F64: {
    double wide = 0;
    backend.copyOut(&wide, bufferAddress(size_t(loaded.plan.loss)), 8);
    return wide;
  }
  case DType::F32:
    backend.copyOut(&loss, bufferAddress(size_t(loaded.plan.loss)), 4);
    return loss;
  case DType::BF16: {
    uint16_t half = 0;
    backend.copyOut(&half, bufferAddress(size_t(loaded.plan.loss)), 2);
    bits = uint32_t(half) << 16;
    std::memcpy(&loss, &bits, 4);
    return loss;
  }
  case DType::F16: {
    uint16_t half = 0;
    backend.copyOut(&half, bufferAddress(size_t(loaded.plan.loss)), 2);
    int exponent = (half >> 10) & 0x1f, mantissa = half & 0x3ff;
    float magnitude = exponent == 0 ? std::ldexp(float(mantissa), -24)
                      : exponent == 31
                          ? (mantissa ? NAN : INFINITY)
                          : std::ldexp(float(mantissa | 0x400), exponent - 25);
    return (half & 0x8000) ? -magnitude : magnitude;
  }
  default:
    return 0;
  }
}

uint64_t readCurrentRssBytes() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("VmRSS:", 0) == 0)
      return uint64_t(std::stoull(line.substr(6))) * 1024;
  return 0;
}

bool resetPeakRss() {
  // Linux >= 4.0: writing 5 to clear_refs resets VmHWM to the current RSS.
  std::ofstream out("/proc/self/clear_refs");
  out << "5";
  out.flush();
  return bool(out);
}

uint64_t readPeakRssBytes() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("VmHWM:", 0) == 0)
      return uint64_t(std::stoull(line.substr(6))) * 1024;
  return 0;
}

} // namespace remat::runtime
