#pragma once
// onednn::set_threads: how many threads oneDNN's kernels use when the calling thread runs them.

#include <oneapi/dnnl/dnnl.h>

#if defined(MEMOPT_OPENMP_RUNTIME)
#include <omp.h>
#endif

namespace memopt::cpu_backend::onednn {

/// Sets how many threads oneDNN's kernels (the CPU backend's convolutions, pooling and
/// normalization) use when the calling thread runs them, and returns whether it could: only
/// when oneDNN runs on OpenMP (Debian's build does) and memopt's CMake package found OpenMP's
/// runtime to link. OpenMP keeps that count per calling thread, so data parallelism over
/// threads (distributed::run_in_threads) gives each rank's thread one, and N ranks keep N
/// cores busy rather than N teams of threads contending for them.
///
/// Call it on the rank's thread before its model prepares its first batch size: oneDNN
/// divides each kernel's work among the threads it has when it creates the kernel.
///
/// ```cpp
/// mo::distributed::run_in_threads(2, [&](mo::distributed::ThreadCommunicator& comm) {
///   mo::cpu_backend::onednn::set_threads(1);
///   // ... this thread's model and fit
/// });
/// ```
inline bool set_threads(int threads) {
#if defined(MEMOPT_OPENMP_RUNTIME)
  if (threads < 1 || ::dnnl_version()->cpu_runtime != DNNL_RUNTIME_OMP) return false;
  ::omp_set_num_threads(threads);
  return true;
#else
  (void)threads;
  return false;
#endif
}

/// How many threads oneDNN's kernels use when the calling thread runs them (0: unknown, when
/// set_threads cannot set it either).
inline int threads() {
#if defined(MEMOPT_OPENMP_RUNTIME)
  if (::dnnl_version()->cpu_runtime == DNNL_RUNTIME_OMP) return ::omp_get_max_threads();
#endif
  return 0;
}

/// oneDNN's kernels on one thread while the scope lives (when `when`, and where set_threads
/// can), then the calling thread's former count again.
///
/// ```cpp
/// { const mo::cpu_backend::onednn::OneThreadScope alone; /* kernels of one thread here */ }
/// ```
class OneThreadScope {
 public:
  explicit OneThreadScope(bool when = true)
      : team_(threads()), alone_(when && team_ > 1 && set_threads(1)) {}
  ~OneThreadScope() {
    if (alone_) set_threads(team_);
  }
  OneThreadScope(const OneThreadScope&) = delete;
  OneThreadScope& operator=(const OneThreadScope&) = delete;

 private:
  int team_;
  bool alone_;
};

}  // namespace memopt::cpu_backend::onednn
