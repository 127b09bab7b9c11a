#pragma once
// ScopedFlushDenormals: subnormal floats flushed to zero while a step runs, as TensorFlow's
// executors and torch.set_flush_denormal do.
//
// Adam's second moment decays towards zero for parameters whose gradient is always zero
// (a Fashion-MNIST corner pixel's weights), reaching subnormal values, and x86 handles
// those in microcode: an epoch ran about twice as long with them. Values below 1e-38 carry
// no information for training, so flushing them changes no result that matters.

#if defined(__SSE__) || defined(__x86_64__)
#include <xmmintrin.h>
#define MEMOPT_HAS_MXCSR 1
#endif

namespace memopt::cpu_backend {

/// Sets flush-to-zero and denormals-are-zero on this thread; restores the old mode after.
///
/// ```cpp
/// { mo::cpu_backend::ScopedFlushDenormals guard; step(); }  // the caller's mode is back here
/// ```
class ScopedFlushDenormals {
 public:
#if defined(MEMOPT_HAS_MXCSR)
  ScopedFlushDenormals() : saved_(_mm_getcsr()) {
    _mm_setcsr(saved_ | kFtz | kDaz);
  }
  ~ScopedFlushDenormals() {
    _mm_setcsr(saved_);
  }
#else
  ScopedFlushDenormals() = default;
#endif
  ScopedFlushDenormals(const ScopedFlushDenormals&) = delete;
  ScopedFlushDenormals& operator=(const ScopedFlushDenormals&) = delete;

 private:
#if defined(MEMOPT_HAS_MXCSR)
  static constexpr unsigned kFtz = 0x8000;  // flush results to zero
  static constexpr unsigned kDaz = 0x0040;  // treat subnormal inputs as zero
  unsigned saved_;
#endif
};

}  // namespace memopt::cpu_backend
