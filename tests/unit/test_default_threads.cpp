// oneDNN's default thread count (issue 41, section 3): the cores other work leaves free, not
// one thread per core whose spinning collapses under load; what the program or
// OMP_NUM_THREADS chose left alone; summary() says which.
#include <doctest/doctest.h>

#include <cstdlib>
#include <string>
#include <thread>

#include <memopt/backend/cpu/dnnl/default_threads.hpp>
#include <memopt/backend/cpu/dnnl/threads.hpp>
#include <memopt/memopt.hpp>

#if defined(MEMOPT_OPENMP_RUNTIME)
#include <omp.h>
#endif

namespace mo = memopt;
namespace onednn = mo::cpu_backend::onednn;

namespace {

onednn::CpuLoad machine(int online, int allowed, double load_1min, double runnable_now,
                        double quota = 0) {
  return {.online_cpus = online,
          .allowed_cpus = allowed,
          .quota_cpus = quota,
          .load_1min = load_1min,
          .runnable_now = runnable_now};
}

bool has(const std::string& s, const std::string& what) {
  return s.find(what) != std::string::npos;
}

}  // namespace

TEST_CASE("free_cores: the allowed cores less those other work keeps busy, at least 1") {
  CHECK(onednn::free_cores(machine(2, 2, 0.0, 0)) == 2);    // idle
  CHECK(onednn::free_cores(machine(2, 2, 0.3, 0.2)) == 2);  // a little work: not a core
  CHECK(onednn::free_cores(machine(2, 2, 1.0, 1)) == 1);    // `yes > /dev/null` on one core
  CHECK(onednn::free_cores(machine(2, 2, 5.0, 6)) == 1);    // overloaded: still 1
  CHECK(onednn::free_cores(machine(16, 16, 3.2, 3)) == 13);
}

TEST_CASE("free_cores counts other work only when it is both recent and present now") {
  // A build that just finished: the 1-minute load is still high, nothing runs now.
  CHECK(onednn::free_cores(machine(2, 2, 1.8, 0)) == 2);
  // A burst just starting: runnable now, not yet in the load average.
  CHECK(onednn::free_cores(machine(2, 2, 0.1, 2)) == 2);
}

TEST_CASE("free_cores: the affinity mask and a cgroup quota cap the count") {
  CHECK(onednn::free_cores(machine(8, 2, 0, 0)) == 2);       // taskset -c 0,1
  CHECK(onednn::free_cores(machine(8, 8, 0, 0, 2.0)) == 2);  // cpu.max "200000 100000"
  CHECK(onednn::free_cores(machine(8, 8, 0, 0, 1.5)) == 2);  // a part core rounds up
  // Load on the whole machine falls on this process's cores only in proportion: 3 of 16
  // cores busy leaves both of 2 allowed cores free, 16 of 16 busy takes one of them.
  CHECK(onednn::free_cores(machine(16, 2, 3, 3)) == 2);
  CHECK(onednn::free_cores(machine(16, 2, 16, 16)) == 1);
}

TEST_CASE("the readers parse /proc/loadavg and cgroup v2's cpu.max") {
  double load = 0;
  int runnable = 0;
  REQUIRE(onednn::detail::parse_loadavg("1.52 0.98 0.40 3/145 12345\n", load, runnable));
  CHECK(load == doctest::Approx(1.52));
  CHECK(runnable == 3);
  CHECK_FALSE(onednn::detail::parse_loadavg("", load, runnable));
  CHECK(onednn::detail::parse_cgroup_cpu_max("200000 100000\n") == doctest::Approx(2.0));
  CHECK(onednn::detail::parse_cgroup_cpu_max("150000 100000") == doctest::Approx(1.5));
  CHECK(onednn::detail::parse_cgroup_cpu_max("max 100000\n") == 0);
  CHECK(onednn::detail::parse_cgroup_cpu_max("") == 0);
}

TEST_CASE("read_cpu_load reads this machine") {
  const onednn::CpuLoad l = onednn::read_cpu_load();
  CHECK(l.online_cpus >= 1);
  CHECK(l.allowed_cpus >= 1);
  CHECK(l.allowed_cpus <= l.online_cpus);
  CHECK(l.load_1min >= 0);
  CHECK(l.runnable_now >= 0);
  const int chosen = onednn::default_threads().threads;
  CHECK(chosen >= 1);
  CHECK(chosen <= l.allowed_cpus);
}

TEST_CASE("whom the count is left to: OMP_NUM_THREADS, then a count the program set") {
  using onednn::ThreadsChosenBy;
  CHECK(onednn::detail::decide_chooser("3", 3, 2) == ThreadsChosenBy::environment);
  CHECK(onednn::detail::decide_chooser("4,2", 4, 2) == ThreadsChosenBy::environment);
  CHECK(onednn::detail::decide_chooser("3", 1, 2) == ThreadsChosenBy::program);
  CHECK(onednn::detail::decide_chooser("", 2, 2) == ThreadsChosenBy::memopt);
  CHECK(onednn::detail::decide_chooser(nullptr, 2, 2) == ThreadsChosenBy::memopt);
  CHECK(onednn::detail::decide_chooser(nullptr, 5, 2) == ThreadsChosenBy::program);
}

#if defined(MEMOPT_OPENMP_RUNTIME)
namespace {
const bool omp_env_set = [] {
  const char* v = std::getenv("OMP_NUM_THREADS");
  return v != nullptr && *v != '\0';
}();
}  // namespace

TEST_CASE("a fresh thread's oneDNN kernels get default_threads(), not a thread per core" *
          doctest::skip(omp_env_set)) {  // OMP_NUM_THREADS set: memopt leaves it be
  int before = 0, after = 0;
  std::string line;
  std::thread([&] {
    before = ::omp_get_max_threads();  // OpenMP's own: one per allowed core
    using M = mo::Model<mo::Sequential<mo::Dense<4, mo::Softmax>>, mo::Input<3>>;
    M model{1};
    (void)model.predict(std::vector<float>{1, 2, 3});  // creates oneDNN kernels
    after = ::omp_get_max_threads();
    line = model.summary_string();
  }).join();
  CHECK(before == onednn::default_threads().load.allowed_cpus);
  CHECK(after == onednn::default_threads().threads);
  CHECK(has(line, "CPU threads: " + std::to_string(after) + " of "));
  CHECK(has(line, "OMP_NUM_THREADS=N to choose"));
}

TEST_CASE("a count the program chose is kept, and summary says it was the program's") {
  int via_omp = 0, via_set_threads = 0;
  std::string line;
  std::thread([&] {
    ::omp_set_num_threads(3);
    using M = mo::Model<mo::Sequential<mo::Dense<4, mo::Softmax>>, mo::Input<3>>;
    M model{1};
    (void)model.predict(std::vector<float>{1, 2, 3});
    via_omp = onednn::threads();
    line = model.summary_string();
  }).join();
  std::thread([&] {
    // OpenMP's start-up count itself, but chosen: set_threads says so.
    REQUIRE(onednn::set_threads(::omp_get_max_threads()));
    const int chosen = ::omp_get_max_threads();
    (void)onednn::threads();
    via_set_threads = ::omp_get_max_threads() == chosen ? chosen : -1;
  }).join();
  CHECK(via_omp == 3);
  if (!omp_env_set || std::atoi(std::getenv("OMP_NUM_THREADS")) != 3)
    CHECK(has(line, "CPU threads: 3 (set by the program)"));
  CHECK(via_set_threads >= 1);
}
#endif

TEST_CASE("summary() of a CPU model has the CPU threads line") {
  using M = mo::Model<mo::Sequential<mo::Dense<4, mo::Softmax>>, mo::Input<3>>;
  const std::string s = M{1}.summary_string();
  CHECK(has(s, "\nCPU threads: "));
}
