//===- CudaGraph.cpp - CUDA-graph capture and replay of training steps ---===//
//
// CudaBackend::State's graph members (CudaBackendInternal.h; the scheme is
// described in CudaBackend.h): which training steps run eagerly, which is
// captured, and how a replay falls back to eager calls.
//
//===----------------------------------------------------------------------===//
#include "runtime/backends/cuda/CudaBackendInternal.h"

#include "runtime/backends/cuda/CudaCheck.h"

#include <cstdio>
#include <exception>
#include <stdexcept>
#include <string>
#include <vector>

namespace remat::runtime {

using cuda::dispatch;
using cuda::GraphMode;
using cuda::StepSignature;

namespace {

/// Capture attempts interrupted by host access before graphs are given up.
constexpr int kMaxCaptureAttempts = 3;

} // namespace

void CudaBackend::State::destroyGraph() {
  if (graphExec) {
    account(&CudaMemoryReport::moduleBytes);
    cudaGraphExecDestroy(graphExec);
    account(&CudaMemoryReport::graphBytes);
  }
  graphExec = nullptr;
  captured.clear();
}

void CudaBackend::State::finishCapture(bool keep) {
  mode = GraphMode::Eager;
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  const char *failed = "cudaStreamEndCapture";
  cudaError_t err = cudaStreamEndCapture(stream, &graph);
  // The capture's launches (modules) before, the graph's memory after.
  account(&CudaMemoryReport::moduleBytes);
  if (err == cudaSuccess) {
    failed = "cudaGraphInstantiate";
    err = cudaGraphInstantiate(&exec, graph, 0);
  }
  if (graph)
    cudaGraphDestroy(graph);
  if (err == cudaSuccess) {
    failed = "cudaGraphLaunch";
    err = cudaGraphLaunch(exec, stream);
  }
  account(&CudaMemoryReport::graphBytes);
  if (err != cudaSuccess) {
    if (exec)
      cudaGraphExecDestroy(exec);
    account(&CudaMemoryReport::graphBytes);
    runCapturedEagerly(std::string(failed) + ": " + cudaGetErrorString(err));
    return;
  }
  capturedCalls.clear();
  if (keep) {
    graphExec = exec;
    ++numCaptured;
  } else {
    // An in-flight graph is freed when it completes.
    cudaGraphExecDestroy(exec);
    account(&CudaMemoryReport::graphBytes);
    captured.clear();
  }
}

void CudaBackend::State::runCapturedEagerly(const std::string &why) {
  std::fprintf(stderr,
               "remat: cuda: graph capture failed (%s); running every "
               "training step eagerly\n",
               why.c_str());
  (void)cudaGetLastError(); // not a stale error for the next launch check
  graphsEnabled = false;
  captured.clear();
  std::vector<KernelCall> calls;
  calls.swap(capturedCalls);
  for (const KernelCall &call : calls)
    dispatch(call, ctx);
}

void CudaBackend::State::flushPending() {
  mode = GraphMode::Eager;
  std::vector<KernelCall> calls;
  calls.swap(pending);
  for (const KernelCall &call : calls)
    dispatch(call, ctx);
}

void CudaBackend::State::hostAccess() {
  if (!inStep)
    return;
  hostTouched = true;
  if (mode == GraphMode::Capturing)
    finishCapture(false);
  else if (mode == GraphMode::Replaying)
    flushPending();
}

void CudaBackend::State::abortCapture() {
  if (mode != GraphMode::Capturing)
    return;
  cudaGraph_t graph = nullptr;
  cudaStreamEndCapture(stream, &graph);
  if (graph)
    cudaGraphDestroy(graph);
  (void)cudaGetLastError(); // an invalidated capture's error is not sticky
  mode = GraphMode::Eager;
  captured.clear();
  capturedCalls.clear();
  graphsEnabled = false;
}

void CudaBackend::State::runStep(const KernelCall &call) {
  State &s = *this;
  if (!s.ctx.status)
    throw std::logic_error("cuda backend: runStep before prepare");
  if (!s.inStep)
    s.setTrainingStep(call.trainingStep);
  s.lastCallStep = call.trainingStep;
  if (s.mode == GraphMode::Replaying) {
    size_t position = s.pending.size();
    if (position < s.captured.size() &&
        s.captured[position] == StepSignature::of(call)) {
      s.pending.push_back(call);
      return;
    }
    // Not the captured sequence: run what was queued, drop the graph.
    s.flushPending();
    s.destroyGraph();
    s.graphsEnabled = false;
  }
  if (s.mode != GraphMode::Capturing) {
    dispatch(call, s.ctx);
    return;
  }
  try {
    dispatch(call, s.ctx);
  } catch (const std::exception &e) {
    // Possibly the capture's own failure (an operation a capture does not
    // support): nothing of this step has run yet, so run it all eagerly,
    // this call included, which throws again if the error is real.
    cudaGraph_t graph = nullptr;
    cudaStreamEndCapture(s.stream, &graph);
    if (graph)
      cudaGraphDestroy(graph);
    s.mode = GraphMode::Eager;
    s.runCapturedEagerly(e.what());
    dispatch(call, s.ctx);
    return;
  } catch (...) {
    s.abortCapture();
    throw;
  }
  s.captured.push_back(StepSignature::of(call));
  s.capturedCalls.push_back(call);
}

void CudaBackend::State::beginTrainingStep(int64_t trainingStep) {
  State &s = *this;
  // Leftovers of a step that threw before endTrainingStep: its capture
  // (never to be completed) or its queued calls (the step failed).
  s.abortCapture();
  s.pending.clear();
  s.inStep = true;
  s.anyStepBegun = true;
  s.currentStep = trainingStep;
  s.hostTouched = false;
  s.mode = GraphMode::Eager;
  s.setTrainingStep(trainingStep);
  if (!s.graphsEnabled)
    return;
  if (s.graphExec) {
    s.mode = GraphMode::Replaying;
    s.pending.clear();
  } else if (trainingStep >= 1 && s.previousStepClean &&
             s.captureAttempts < kMaxCaptureAttempts) {
    ++s.captureAttempts;
    s.captured.clear();
    s.capturedCalls.clear();
    REMAT_CUDA_CHECK(
        cudaStreamBeginCapture(s.stream, cudaStreamCaptureModeRelaxed));
    s.mode = GraphMode::Capturing;
  }
}

void CudaBackend::State::endTrainingStep() {
  State &s = *this;
  if (s.mode == GraphMode::Capturing) {
    s.finishCapture(true);
  } else if (s.mode == GraphMode::Replaying) {
    // A shorter step than the one captured, or a failed launch: the queued
    // calls have not run, so they run eagerly and graphs stay off.
    bool complete = s.pending.size() == s.captured.size();
    s.account(&CudaMemoryReport::moduleBytes);
    cudaError_t err =
        complete ? cudaGraphLaunch(s.graphExec, s.stream) : cudaSuccess;
    s.account(&CudaMemoryReport::graphBytes);
    if (complete && err == cudaSuccess) {
      s.pending.clear();
      ++s.numReplays;
    } else {
      if (err != cudaSuccess) {
        std::fprintf(stderr,
                     "remat: cuda: cudaGraphLaunch failed (%s); running "
                     "every training step eagerly\n",
                     cudaGetErrorString(err));
        (void)cudaGetLastError();
      }
      s.flushPending();
      s.destroyGraph();
      s.graphsEnabled = false;
    }
  }
  s.mode = GraphMode::Eager;
  s.previousStepClean = !s.hostTouched;
  s.inStep = false;
}

} // namespace remat::runtime
