#pragma once
// Stream: an owned CUDA stream.

#include <utility>

#include <cuda_runtime_api.h>

#include "memopt/backend/cuda/status.hpp"

namespace memopt::cuda_backend {

/// A non-blocking CUDA stream (it does not synchronise with the legacy default stream),
/// destroyed with its owner. Every operation of an executor goes into its one stream, so
/// stream order is the only ordering the backend needs.
///
/// ```cpp
/// mo::cuda_backend::Stream s;
/// kernel<<<grid, block, 0, s.get()>>>(...);
/// s.synchronize("after kernel");
/// ```
class Stream {
 public:
  Stream() {
    check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreateWithFlags",
          "Stream");
  }
  Stream(Stream&& o) noexcept : stream_(std::exchange(o.stream_, nullptr)) {}
  Stream& operator=(Stream&& o) noexcept {
    if (this != &o) {
      release();
      stream_ = std::exchange(o.stream_, nullptr);
    }
    return *this;
  }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  ~Stream() { release(); }

  cudaStream_t get() const { return stream_; }

  /// Waits for everything queued so far.
  void synchronize(std::string_view where = "Stream::synchronize") const {
    check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize", where);
  }

 private:
  void release() noexcept {
    if (stream_) (void)cudaStreamDestroy(stream_);
    stream_ = nullptr;
  }
  cudaStream_t stream_ = nullptr;
};

}  // namespace memopt::cuda_backend
