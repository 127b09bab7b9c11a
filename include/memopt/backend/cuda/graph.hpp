#pragma once
// GraphExec: a captured, instantiated CUDA graph, replayed as one launch.

#include <string_view>
#include <utility>

#include <cuda_runtime_api.h>

#include "memopt/backend/cuda/status.hpp"

namespace memopt::cuda_backend {

/// An executable CUDA graph. `capture` records what a function queues on a stream (kernels,
/// cuBLASLt matmuls, copies) without running it; `launch` replays all of it with one call,
/// which is what makes a small training step cheap: one launch instead of one per kernel.
///
/// ```cpp
/// auto g = mo::cuda_backend::GraphExec::capture(stream, [&] { step(stream); }, "step");
/// for (int i = 0; i < 100; ++i) g.launch(stream);
/// ```
class GraphExec {
 public:
  GraphExec() = default;
  GraphExec(GraphExec&& o) noexcept : exec_(std::exchange(o.exec_, nullptr)) {}
  GraphExec& operator=(GraphExec&& o) noexcept {
    if (this != &o) {
      release();
      exec_ = std::exchange(o.exec_, nullptr);
    }
    return *this;
  }
  GraphExec(const GraphExec&) = delete;
  GraphExec& operator=(const GraphExec&) = delete;
  ~GraphExec() { release(); }

  /// Captures what `enqueue()` queues on `stream`. Thread-local capture mode: other host
  /// threads (a prefetching data pipeline) may keep calling CUDA meanwhile.
  template <class F>
  static GraphExec capture(cudaStream_t stream, F&& enqueue, std::string_view where) {
    check(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal),
          "cudaStreamBeginCapture", where);
    cudaGraph_t graph = nullptr;
    try {
      enqueue();
    } catch (...) {
      // End the capture whatever happened, or the stream stays unusable.
      if (cudaStreamEndCapture(stream, &graph) == cudaSuccess && graph) cudaGraphDestroy(graph);
      (void)cudaGetLastError();
      throw;
    }
    check(cudaStreamEndCapture(stream, &graph), "cudaStreamEndCapture", where);
    GraphExec g;
    const cudaError_t status = cudaGraphInstantiate(&g.exec_, graph, 0);
    cudaGraphDestroy(graph);
    check(status, "cudaGraphInstantiate", where);
    return g;
  }

  void launch(cudaStream_t stream, std::string_view where = "GraphExec::launch") const {
    check(cudaGraphLaunch(exec_, stream), "cudaGraphLaunch", where);
  }
  explicit operator bool() const { return exec_ != nullptr; }

 private:
  void release() noexcept {
    if (exec_) (void)cudaGraphExecDestroy(exec_);
    exec_ = nullptr;
  }
  cudaGraphExec_t exec_ = nullptr;
};

}  // namespace memopt::cuda_backend
