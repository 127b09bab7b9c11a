#pragma once
// Event: an owned CUDA event, for ordering the host against the stream and for timing.

#include <utility>

#include <cuda_runtime_api.h>

#include "memopt/backend/cuda/status.hpp"

namespace memopt::cuda_backend {

/// A CUDA event. Plain events (the default) only order; timing events also measure.
///
/// ```cpp
/// mo::cuda_backend::Event start{true}, stop{true};
/// start.record(stream);  /* work */  stop.record(stream);
/// float ms = stop.elapsed_ms_since(start);
/// ```
class Event {
 public:
  Event() : Event(false) {}
  explicit Event(bool timing) {
    const unsigned flags = timing ? cudaEventDefault : cudaEventDisableTiming;
    check(cudaEventCreateWithFlags(&event_, flags), "cudaEventCreateWithFlags", "Event");
  }
  Event(Event&& o) noexcept : event_(std::exchange(o.event_, nullptr)) {}
  Event& operator=(Event&& o) noexcept {
    if (this != &o) {
      release();
      event_ = std::exchange(o.event_, nullptr);
    }
    return *this;
  }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  ~Event() { release(); }

  cudaEvent_t get() const { return event_; }

  void record(cudaStream_t stream) const {
    check(cudaEventRecord(event_, stream), "cudaEventRecord", "Event::record");
  }
  /// Blocks the host until the work before the last record() is done; returns at once for
  /// an event never recorded.
  void synchronize() const {
    check(cudaEventSynchronize(event_), "cudaEventSynchronize", "Event::synchronize");
  }
  /// Milliseconds from `start` to this event (both timing events, both completed).
  float elapsed_ms_since(const Event& start) const {
    float ms = 0;
    check(cudaEventElapsedTime(&ms, start.event_, event_), "cudaEventElapsedTime",
          "Event::elapsed_ms_since");
    return ms;
  }

 private:
  void release() noexcept {
    if (event_) (void)cudaEventDestroy(event_);
    event_ = nullptr;
  }
  cudaEvent_t event_ = nullptr;
};

}  // namespace memopt::cuda_backend
