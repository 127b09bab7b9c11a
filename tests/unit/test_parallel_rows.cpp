// memopt's own CPU kernels split over a batch's samples (backend/cpu/parallel_rows.hpp): every
// row once, on more than one thread where OpenMP is compiled in, and the same bits whatever the
// thread count.

#include <doctest/doctest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <set>
#include <vector>

#if defined(_OPENMP)
#include <omp.h>
#endif

#include <memopt/backend/cpu/dnnl/threads.hpp>
#include <memopt/backend/cpu/max_pool2d.hpp>
#include <memopt/backend/cpu/node_io.hpp>
#include <memopt/backend/cpu/parallel_rows.hpp>
#include <memopt/core/random.hpp>

namespace {

namespace cpu = memopt::cpu_backend;

#if defined(_OPENMP)
constexpr bool kOpenMp = true;
#else
constexpr bool kOpenMp = false;
#endif

// The calling thread's oneDNN (and so OpenMP) thread count while the scope lives.
class ThreadsScope {
 public:
  explicit ThreadsScope(int n) : before_(cpu::onednn::threads()) {
    REQUIRE(cpu::onednn::set_threads(n));
  }
  ~ThreadsScope() { cpu::onednn::set_threads(before_); }
  ThreadsScope(const ThreadsScope&) = delete;
  ThreadsScope& operator=(const ThreadsScope&) = delete;

 private:
  int before_;
};

std::vector<float> normal_values(std::size_t n, std::uint64_t seed) {
  memopt::Rng rng{seed};
  std::vector<float> v(n);
  for (float& x : v) x = rng.uniform(-2.0f, 2.0f);
  return v;
}

template <class T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}

}  // namespace

TEST_CASE("parallel_rows covers every row once, in ranges that do not overlap") {
  for (const std::size_t rows : {0u, 1u, 2u, 3u, 7u, 64u, 1000u})
    for (const std::size_t per_row : {std::size_t{1}, cpu::kParallelGrain}) {
      CAPTURE(rows);
      CAPTURE(per_row);
      std::vector<int> seen(rows, 0);
      cpu::parallel_rows(rows, per_row, [&](std::size_t begin, std::size_t end) {
        REQUIRE(begin <= end);
        for (std::size_t r = begin; r < end; ++r) ++seen[r];
      });
      for (std::size_t r = 0; r < rows; ++r) CHECK(seen[r] == 1);
    }
}

TEST_CASE("parallel_rows runs on the calling thread's team where OpenMP is compiled in" *
          doctest::skip(!kOpenMp)) {
#if defined(_OPENMP)
  const ThreadsScope two(2);
  std::vector<int> thread_of(64, -1);
  cpu::parallel_rows(64, cpu::kParallelGrain, [&](std::size_t begin, std::size_t end) {
    for (std::size_t r = begin; r < end; ++r) thread_of[r] = omp_get_thread_num();
  });
  CHECK(std::set<int>(thread_of.begin(), thread_of.end()) == std::set<int>{0, 1});
  // Too little work, or one row: the calling thread alone.
  std::vector<int> small(4, -1);
  cpu::parallel_rows(4, 16, [&](std::size_t begin, std::size_t end) {
    for (std::size_t r = begin; r < end; ++r) small[r] = omp_get_thread_num();
  });
  CHECK(small == std::vector<int>(4, 0));
#endif
}

TEST_CASE("max pooling and the activation epilogues give the same bits on one and two threads" *
          doctest::skip(!kOpenMp)) {
  constexpr std::size_t rows = 32;
  // The tutorial's first pool: 3x3 windows, stride 2, same padding, over 32x32x32.
  constexpr cpu::MaxPool2dShape overlapping{32, 32, 32, 3, 3, 2, 2, memopt::Padding::same};
  constexpr cpu::MaxPool2dShape tiling{16, 16, 24, 2, 2, 2, 2, memopt::Padding::valid};
  constexpr std::size_t in = 32 * 32 * 32, out = 16 * 16 * 32;
  constexpr std::size_t tiled_in = 16 * 16 * 24, tiled_out = 8 * 8 * 24;
  const auto x = normal_values(rows * in, 11), dy = normal_values(rows * out, 12);
  const auto tx = normal_values(rows * tiled_in, 13), tdy = normal_values(rows * tiled_out, 14);

  struct Results {
    std::vector<float> y, dx, ty, tdx, z, da;
    std::vector<std::uint8_t> argmax, targmax, mask;
  };
  auto run = [&] {
    Results r{std::vector<float>(rows * out),
              std::vector<float>(rows * in),
              std::vector<float>(rows * tiled_out),
              std::vector<float>(rows * tiled_in),
              x,
              dy,
              std::vector<std::uint8_t>(rows * out),
              std::vector<std::uint8_t>(rows * tiled_out),
              std::vector<std::uint8_t>(rows * memopt::plan::relu_mask_ld(in) / 8)};
    cpu::max_pool2d_forward(overlapping, rows, x.data(), r.y.data(), r.argmax.data());
    cpu::max_pool2d_backward(overlapping, rows, dy.data(), r.argmax.data(), r.dx.data());
    cpu::tiled_max_pool2d_forward<tiling, true>(rows, tx.data(), r.ty.data(), r.targmax.data());
    cpu::tiled_max_pool2d_backward<tiling>(rows, tdy.data(), r.targmax.data(), r.tdx.data());
    // A convolution's epilogue: bias, ReLU and its mask over [rows, 32x32 pixels, 32 channels],
    // then that mask applied to a gradient as the node above's input gradient applies it.
    const auto bias = normal_values(32, 15);
    cpu::ForwardIo<float, float> io{.rows = rows, .y = r.z.data(), .relu_mask = r.mask.data()};
    cpu::bias_activation_epilogue<memopt::ActivationKind::relu>(r.z.data(), bias.data(), rows, 32,
                                                                in, io);
    cpu::ActivationGrad<float> below{
        .kind = memopt::ActivationKind::relu, .width = in, .relu_mask = r.mask.data()};
    below.derivative = cpu::ActivationGrad<float>::derivative_of<memopt::ActivationKind::relu>();
    r.da.resize(rows * in);
    std::copy(x.begin(), x.end(), r.da.begin());
    below.apply(r.da.data(), rows);
    return r;
  };
  Results one, two;
  {
    const ThreadsScope alone(1);
    one = run();
  }
  {
    const ThreadsScope pair(2);
    two = run();
  }
  CHECK(same_bits(one.y, two.y));
  CHECK(same_bits(one.argmax, two.argmax));
  CHECK(same_bits(one.dx, two.dx));
  CHECK(same_bits(one.ty, two.ty));
  CHECK(same_bits(one.targmax, two.targmax));
  CHECK(same_bits(one.tdx, two.tdx));
  CHECK(same_bits(one.z, two.z));
  CHECK(same_bits(one.mask, two.mask));
  CHECK(same_bits(one.da, two.da));
  // Not vacuous: pooling kept values, ReLU zeroed some and kept others.
  CHECK(one.y[0] != 0.0f);
  CHECK(std::count(one.z.begin(), one.z.end(), 0.0f) > static_cast<std::ptrdiff_t>(rows * in / 4));
  CHECK(std::count(one.da.begin(), one.da.end(), 0.0f) < static_cast<std::ptrdiff_t>(rows * in));
}
