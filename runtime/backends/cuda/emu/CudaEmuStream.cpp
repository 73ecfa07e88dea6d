//===- CudaEmuStream.cpp - Streams, events and graphs on the CUDA emulator ===//
//
// One stream order: work runs when enqueued, or is recorded while its
// stream captures and runs at each cudaGraphLaunch. Synchronizing a
// capturing stream invalidates the capture, as on the device.
//
//===----------------------------------------------------------------------===//
#include "CudaEmuInternal.h"

#include <functional>
#include <mutex>
#include <utility>
#include <vector>

namespace cudaemu {

struct GraphExec {
  std::vector<std::function<void()>> work;
  int64_t deviceBytes = 0; ///< counted while it exists (Device::graphs)
};
struct Event {
  bool recordedInCapture = false;
};

namespace {

Stream *resolve(cudaStream_t stream) {
  return stream ? stream : &device().legacy;
}

} // namespace

cudaError_t enqueue(cudaStream_t stream, std::function<void()> work) {
  Device &d = device();
  std::lock_guard<std::recursive_mutex> lock(d.mutex);
  Stream *s = resolve(stream);
  if (s->capturing) {
    if (s->invalidated)
      return fail(cudaErrorStreamCaptureInvalidated);
    s->graph->work.push_back(std::move(work));
    return cudaSuccess;
  }
  work();
  return cudaSuccess;
}

bool isCapturing(cudaStream_t stream) { return resolve(stream)->capturing; }

cudaError_t refuseIfCapturing(Stream *s) {
  if (!s->capturing)
    return cudaSuccess;
  s->invalidated = true;
  return fail(cudaErrorStreamCaptureUnsupported);
}

} // namespace cudaemu

using namespace cudaemu;

namespace {

/// cudaStreamCreate / cudaEventCreate.
template <typename Handle> cudaError_t createHandle(Handle **handle) {
  if (!handle)
    return fail(cudaErrorInvalidValue);
  *handle = new Handle();
  return cudaSuccess;
}

/// cudaStreamDestroy / cudaEventDestroy.
template <typename Handle> cudaError_t destroyHandle(Handle *handle) {
  if (!handle)
    return fail(cudaErrorInvalidResourceHandle);
  delete handle;
  return cudaSuccess;
}

} // namespace

cudaError_t cudaStreamCreate(cudaStream_t *stream) {
  return cudaStreamCreateWithFlags(stream, 0);
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *stream, unsigned) {
  return createHandle(stream);
}

cudaError_t cudaStreamDestroy(cudaStream_t stream) {
  return destroyHandle(stream);
}

cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
  Device &d = device();
  std::lock_guard<std::recursive_mutex> lock(d.mutex);
  return refuseIfCapturing(resolve(stream));
}

cudaError_t cudaStreamBeginCapture(cudaStream_t stream,
                                   cudaStreamCaptureMode) {
  Device &d = device();
  std::lock_guard<std::recursive_mutex> lock(d.mutex);
  // The legacy stream cannot capture.
  if (!stream)
    return fail(cudaErrorStreamCaptureUnsupported);
  if (stream->capturing)
    return fail(cudaErrorIllegalState);
  stream->capturing = true;
  stream->invalidated = false;
  stream->graph = new Graph();
  return cudaSuccess;
}

cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t *graph) {
  Device &d = device();
  std::lock_guard<std::recursive_mutex> lock(d.mutex);
  if (!graph)
    return fail(cudaErrorInvalidValue);
  *graph = nullptr;
  if (!stream || !stream->capturing)
    return fail(cudaErrorIllegalState);
  stream->capturing = false;
  Graph *recorded = stream->graph;
  stream->graph = nullptr;
  if (stream->invalidated) {
    stream->invalidated = false;
    delete recorded;
    return fail(cudaErrorStreamCaptureInvalidated);
  }
  *graph = recorded;
  return cudaSuccess;
}

cudaError_t cudaEventCreate(cudaEvent_t *event) {
  return cudaEventCreateWithFlags(event, 0);
}

cudaError_t cudaEventCreateWithFlags(cudaEvent_t *event, unsigned) {
  return createHandle(event);
}

cudaError_t cudaEventDestroy(cudaEvent_t event) {
  return destroyHandle(event);
}

cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
  Device &d = device();
  std::lock_guard<std::recursive_mutex> lock(d.mutex);
  if (!event)
    return fail(cudaErrorInvalidResourceHandle);
  Stream *s = resolve(stream);
  if (s->capturing && s->invalidated)
    return fail(cudaErrorStreamCaptureInvalidated);
  event->recordedInCapture = s->capturing;
  return cudaSuccess;
}

cudaError_t cudaEventSynchronize(cudaEvent_t event) {
  if (!event)
    return fail(cudaErrorInvalidResourceHandle);
  // An event recorded into a capture is a graph node, not a host event.
  if (event->recordedInCapture)
    return fail(cudaErrorStreamCaptureUnsupported);
  return cudaSuccess;
}

cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event,
                                unsigned) {
  Device &d = device();
  std::lock_guard<std::recursive_mutex> lock(d.mutex);
  if (!event)
    return fail(cudaErrorInvalidResourceHandle);
  Stream *s = resolve(stream);
  if (s->capturing && s->invalidated)
    return fail(cudaErrorStreamCaptureInvalidated);
  return cudaSuccess;
}

cudaError_t cudaGraphInstantiate(cudaGraphExec_t *exec, cudaGraph_t graph,
                                 unsigned long long) {
  if (!exec || !graph)
    return fail(cudaErrorInvalidValue);
  int64_t bytes = int64_t(graph->work.size() * device().graphNodeBytes);
  *exec = new GraphExec{graph->work, bytes};
  countRuntimeBytes(&Device::graphs, bytes);
  return cudaSuccess;
}

cudaError_t cudaGraphDestroy(cudaGraph_t graph) {
  if (!graph)
    return fail(cudaErrorInvalidValue);
  delete graph;
  return cudaSuccess;
}

cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec) {
  if (!exec)
    return fail(cudaErrorInvalidValue);
  countRuntimeBytes(&Device::graphs, -exec->deviceBytes);
  delete exec;
  return cudaSuccess;
}

cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t stream) {
  if (!exec)
    return fail(cudaErrorInvalidValue);
  std::vector<std::function<void()>> work = exec->work;
  return enqueue(stream, [work]() {
    for (const std::function<void()> &w : work)
      w();
  });
}
