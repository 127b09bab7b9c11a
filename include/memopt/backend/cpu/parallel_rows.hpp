#pragma once
// parallel_rows: memopt's own CPU kernels (pooling, augmentation, activation epilogues and
// derivatives) split over the samples of a batch, on the threads oneDNN's kernels use.
//
// Why: oneDNN runs on OpenMP's team of the calling thread; a kernel of memopt's own that ran on
// the calling thread alone left the team's other threads spinning in libgomp while it ran (the
// tutorial's image model at 64x64, two cores: 30% of the samples in libgomp's wait loop).
//
// Each row (sample) is computed by one thread exactly as one thread alone computes it, and no
// row reads another's results: what a kernel writes does not depend on the thread count.

#include <cstddef>

#if defined(_OPENMP)
#include <omp.h>
#endif

namespace memopt::cpu_backend {

/// Values below which a kernel stays on the calling thread: waking the team costs more than
/// the work (a few microseconds while its threads still spin).
inline constexpr std::size_t kParallelGrain = std::size_t{1} << 14;

/// Calls `fn(begin, end)` over contiguous ranges that cover the rows [0, rows) once, each on
/// one thread of the calling thread's OpenMP team (`omp_get_max_threads()`, the count
/// onednn::set_threads sets), where memopt was compiled with OpenMP (`_OPENMP`: GCC, linking
/// memopt::dnnl) and the work, `rows * values_per_row`, is worth it; else `fn(0, rows)` here.
/// `fn` must not throw: an exception cannot leave an OpenMP region.
///
/// ```cpp
/// std::vector<float> v(64 * 1024, -1.0f);
/// mo::cpu_backend::parallel_rows(64, 1024, [&](std::size_t begin, std::size_t end) {
///   for (std::size_t j = begin * 1024; j < end * 1024; ++j) v[j] = v[j] > 0.0f ? v[j] : 0.0f;
/// });
/// ```
template <class Fn>
void parallel_rows(std::size_t rows, std::size_t values_per_row, Fn&& fn) {
#if defined(_OPENMP)
  if (rows > 1 && rows * values_per_row >= kParallelGrain && !::omp_in_parallel()) {
    const int most = ::omp_get_max_threads();
    const int team = static_cast<std::size_t>(most) < rows ? most : static_cast<int>(rows);
    if (team > 1) {
#pragma omp parallel num_threads(team)
      {
        // Static ranges: thread t takes the same rows at every call, so the data it wrote
        // in forward is in its cache in backward.
        const auto t = static_cast<std::size_t>(::omp_get_thread_num());
        const auto n = static_cast<std::size_t>(::omp_get_num_threads());
        fn(rows * t / n, rows * (t + 1) / n);
      }
      return;
    }
  }
#else
  (void)values_per_row;
#endif
  fn(std::size_t{0}, rows);
}

}  // namespace memopt::cpu_backend
