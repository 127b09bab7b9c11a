#pragma once
// onednn::default_threads: how many threads oneDNN's kernels get when the program does not
// say, from the cores that other work leaves free.
//
// Why not OpenMP's own default (one thread per allowed core): GNU OpenMP's threads spin while
// they wait for each other, and a kernel finishes only when its slowest thread does. With
// other work on the machine, a thread that loses its core holds up the team while the others
// spin on theirs. Measured on 2 cores with other builds running (load 5 to 8), example 02's
// convnet, 3,000 images, one epoch, median of 3: 29.9 s on OpenMP's 2 threads (10.5 s of CPU),
// 3.3 s on 2 threads with OMP_WAIT_POLICY=passive, 3.1 s on 1 thread (0.9 s of CPU).
// OMP_WAIT_POLICY=passive would stop the spinning, but GNU OpenMP reads it when it is
// loaded, before any of the program's code runs (a setenv in a static initializer or in main
// changes nothing, measured), so memopt cannot set it: it chooses the thread count instead.

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>

namespace memopt::cpu_backend::onednn {

/// What default_threads decides from: the machine's cores and the work already on them.
struct CpuLoad {
  int online_cpus = 1;      ///< cores the machine has online
  int allowed_cpus = 1;     ///< cores this process may run on (its affinity mask)
  double quota_cpus = 0;    ///< cgroup CPU quota in cores (0: none)
  double load_1min = 0;     ///< the 1-minute load average (/proc/loadavg), whole machine
  double runnable_now = 0;  ///< other tasks running or ready now, whole machine (mean of samples)
};

/// The cores this process may use (its affinity, capped by a cgroup quota, rounded up).
inline int usable_cpus(const CpuLoad& l) {
  int cap = std::max(1, l.allowed_cpus);
  if (l.quota_cpus > 0) cap = std::min(cap, std::max(1, static_cast<int>(std::ceil(l.quota_cpus))));
  return cap;
}

/// The threads to use: the usable cores less those other work keeps busy, at least 1. Other
/// work counts only when it is both recent (the 1-minute load) and present now (the tasks
/// runnable now), so neither a finished build nor a moment's burst takes a core away; it is
/// spread over the machine's cores, so only the share falling on this process's cores counts.
inline int free_cores(const CpuLoad& l) {
  const int usable = usable_cpus(l);
  const double others = std::max(0.0, std::min(l.load_1min, l.runnable_now));
  const double share = static_cast<double>(usable) / std::max(usable, l.online_cpus);
  const int busy = static_cast<int>(std::floor(others * share + 0.5));
  return std::clamp(usable - busy, 1, usable);
}

namespace detail {

// cgroup v2's cpu.max: "max 100000" (no quota) or "QUOTA PERIOD" in microseconds; the cores
// that quota buys, or 0.
inline double parse_cgroup_cpu_max(std::string_view text) {
  std::istringstream in{std::string(text)};
  std::string quota;
  double period = 0;
  if (!(in >> quota >> period) || quota == "max" || period <= 0) return 0;
  double q = 0;
  if (std::from_chars(quota.data(), quota.data() + quota.size(), q).ec != std::errc{}) return 0;
  return q > 0 ? q / period : 0;
}

// /proc/loadavg: "0.52 0.31 0.20 3/145 12345": the 1-minute load and the tasks runnable now
// (the reader among them). False when the text is not that.
inline bool parse_loadavg(std::string_view text, double& load_1min, int& runnable) {
  std::istringstream in{std::string(text)};
  double five = 0, fifteen = 0;
  std::string tasks;
  if (!(in >> load_1min >> five >> fifteen >> tasks)) return false;
  const std::size_t slash = tasks.find('/');
  if (slash == std::string::npos) return false;
  return std::from_chars(tasks.data(), tasks.data() + slash, runnable).ec == std::errc{};
}

inline std::string read_text(const char* path) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace detail

/// This machine's CpuLoad now. Samples the runnable tasks 5 times over 8 ms (one reading is
/// too noisy); the reader is not counted.
inline CpuLoad read_cpu_load() {
  CpuLoad l;
  l.online_cpus = static_cast<int>(std::max(1L, ::sysconf(_SC_NPROCESSORS_ONLN)));
  cpu_set_t mask;
  CPU_ZERO(&mask);
  l.allowed_cpus =
      ::sched_getaffinity(0, sizeof(mask), &mask) == 0 ? CPU_COUNT(&mask) : l.online_cpus;
  l.quota_cpus = detail::parse_cgroup_cpu_max(detail::read_text("/sys/fs/cgroup/cpu.max"));
  double runnable_sum = 0;
  int samples = 0;
  for (int i = 0; i < 5; ++i) {
    if (i != 0) std::this_thread::sleep_for(std::chrono::milliseconds(2));
    double load = 0;
    int runnable = 0;
    if (!detail::parse_loadavg(detail::read_text("/proc/loadavg"), load, runnable)) break;
    l.load_1min = load;
    runnable_sum += std::max(0, runnable - 1);
    ++samples;
  }
  // Without /proc/loadavg nothing is known of other work: then all the usable cores.
  l.runnable_now = samples != 0 ? runnable_sum / samples : 0;
  return l;
}

/// memopt's thread count for oneDNN, decided once per process from read_cpu_load() when
/// first asked for (before the program's own training loads the machine).
struct DefaultThreads {
  int threads = 1;
  CpuLoad load;
};
inline const DefaultThreads& default_threads() {
  static const DefaultThreads chosen = [] {
    const CpuLoad l = read_cpu_load();
    return DefaultThreads{free_cores(l), l};
  }();
  return chosen;
}

}  // namespace memopt::cpu_backend::onednn
