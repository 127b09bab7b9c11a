#pragma once
// onednn::set_threads: how many threads oneDNN's kernels use when the calling thread runs them;
// memopt's default (default_threads.hpp) where nothing else chose.

#include <oneapi/dnnl/dnnl.h>

#include <algorithm>
#include <cstdlib>
#include <string>

#include <fmt/format.h>

#include "memopt/backend/cpu/dnnl/default_threads.hpp"

#if defined(MEMOPT_OPENMP_RUNTIME)
#include <omp.h>
#endif

namespace memopt::cpu_backend::onednn {

/// Who chose the calling thread's oneDNN thread count.
enum class ThreadsChosenBy {
  not_yet,      ///< nothing has run or asked on this thread
  memopt,       ///< default_threads(): the cores other work leaves free
  environment,  ///< OMP_NUM_THREADS, which memopt leaves alone
  program,      ///< set_threads, or omp_set_num_threads before memopt's first kernel
  unknown,      ///< oneDNN not on OpenMP, or memopt built without OpenMP's runtime
};

namespace detail {
inline ThreadsChosenBy& chosen_by() {
  thread_local ThreadsChosenBy by = ThreadsChosenBy::not_yet;
  return by;
}

// Whom to leave the count to: the program when the thread's count is not the start-up one
// any more (OMP_NUM_THREADS's first number when set, else one per allowed core); else
// OMP_NUM_THREADS when set, else memopt.
inline ThreadsChosenBy decide_chooser(const char* omp_num_threads, int current, int startup_cpus) {
  if (omp_num_threads != nullptr && *omp_num_threads != '\0') {
    const int from_env = std::atoi(omp_num_threads);
    return from_env < 1 || current == from_env ? ThreadsChosenBy::environment
                                               : ThreadsChosenBy::program;
  }
  return current == startup_cpus ? ThreadsChosenBy::memopt : ThreadsChosenBy::program;
}
}  // namespace detail

/// Gives the calling thread memopt's default thread count (default_threads()) unless
/// OMP_NUM_THREADS, set_threads or omp_set_num_threads chose one; once per thread. memopt
/// calls it before it creates a oneDNN kernel, since oneDNN divides each kernel's work among
/// the threads there are when it creates the kernel.
inline void ensure_default_threads() {
  ThreadsChosenBy& by = detail::chosen_by();
  if (by != ThreadsChosenBy::not_yet) return;
#if defined(MEMOPT_OPENMP_RUNTIME)
  if (::dnnl_version()->cpu_runtime == DNNL_RUNTIME_OMP) {
    by = detail::decide_chooser(std::getenv("OMP_NUM_THREADS"), ::omp_get_max_threads(),
                                default_threads().load.allowed_cpus);
    if (by == ThreadsChosenBy::memopt) ::omp_set_num_threads(default_threads().threads);
    return;
  }
#endif
  by = ThreadsChosenBy::unknown;
}

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
  detail::chosen_by() = ThreadsChosenBy::program;
  return true;
#else
  (void)threads;
  return false;
#endif
}

/// How many threads oneDNN's kernels use when the calling thread runs them (0: unknown, when
/// set_threads cannot set it either), memopt's default given first where nothing chose.
inline int threads() {
  ensure_default_threads();
#if defined(MEMOPT_OPENMP_RUNTIME)
  if (::dnnl_version()->cpu_runtime == DNNL_RUNTIME_OMP) return ::omp_get_max_threads();
#endif
  return 0;
}

/// The calling thread's oneDNN threads and who chose them, as summary() prints it:
/// "CPU threads: 1 of 2 cores (memopt's choice: other work keeps 1.2 cores busy;
/// OMP_NUM_THREADS=N to choose)", and, past one thread, the OpenMP wait policy.
inline std::string threads_summary() {
  const int n = threads();
  const DefaultThreads& d = default_threads();
  std::string s = "CPU threads: ";
  switch (detail::chosen_by()) {
    case ThreadsChosenBy::memopt: {
      const double others = std::min(d.load.load_1min, d.load.runnable_now);
      s += fmt::format(
          "{} of {} cores (memopt's choice: other work keeps {:.1f} cores busy; "
          "OMP_NUM_THREADS=N to choose)",
          n, usable_cpus(d.load), others);
      break;
    }
    case ThreadsChosenBy::environment:
      s += fmt::format("{} (OMP_NUM_THREADS)", n);
      break;
    case ThreadsChosenBy::program:
      s += fmt::format("{} (set by the program)", n);
      break;
    default:
      return s + "unknown (oneDNN not on OpenMP's runtime)";
  }
  // GNU OpenMP reads the wait policy when it loads: what the environment says is what it does.
  const char* policy = std::getenv("OMP_WAIT_POLICY");
  if (policy != nullptr && *policy != '\0')
    s += fmt::format("; OpenMP wait policy {} (OMP_WAIT_POLICY)", policy);
  else if (n > 1)
    s += "; OpenMP threads spin while waiting (OMP_WAIT_POLICY=passive to stop it)";
  return s;
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
      : team_(threads()), by_(detail::chosen_by()), alone_(when && team_ > 1 && set_threads(1)) {}
  ~OneThreadScope() {
    if (!alone_) return;
    set_threads(team_);
    detail::chosen_by() = by_;  // as before, for summary()
  }
  OneThreadScope(const OneThreadScope&) = delete;
  OneThreadScope& operator=(const OneThreadScope&) = delete;

 private:
  int team_;
  ThreadsChosenBy by_;
  bool alone_;
};

}  // namespace memopt::cpu_backend::onednn
