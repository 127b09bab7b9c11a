// The guide's model against the CPU backend under each policy, and the device-resident batch
// path against the host path. (Shapes and activations: test_parity_shapes.cu.)
#include <doctest/doctest.h>

#include <cstdint>
#include <vector>

#include <memopt/backend/cuda.hpp>
#include <memopt/memopt.hpp>

#include "cuda_test_support.hpp"
#include "parity.hpp"

namespace mo = memopt;
using namespace memopt_test;

namespace {
using Mlp = mo::Sequential<mo::Dense<128, mo::ReLU>, mo::Dense<10, mo::Softmax>>;
}  // namespace

TEST_CASE("784-128-10 matches the CPU backend under float32, with Adam") {
  compare_with_cpu<Mlp, mo::Input<784>, mo::float32>(mo::Adam{}, 64, {64, 64, 33}, 1);
}
TEST_CASE("784-128-10 matches the CPU backend under mixed_float16") {
  compare_with_cpu<Mlp, mo::Input<784>, mo::mixed_float16>(mo::Adam{}, 64, {64, 17}, 2);
}
TEST_CASE("784-128-10 matches the CPU backend under mixed_bfloat16") {
  compare_with_cpu<Mlp, mo::Input<784>, mo::mixed_bfloat16>(mo::Adam{}, 64, {64, 17}, 3);
}
TEST_CASE("a batch already on the device trains like the same batch from the host") {
  using Spec = mo::ModelSpec<Mlp, mo::Input<784>, mo::float32>;
  const std::size_t rows = 48, n = Spec::parameter_count;
  const auto w = random_parameters<Spec>(11);
  const auto x = random_inputs(rows, Spec::inputs, 12);
  const auto y = random_labels(rows, Spec::outputs, 13);
  float* dx = nullptr;
  std::int32_t* dy = nullptr;
  REQUIRE(cudaMalloc(&dx, x.size() * sizeof(float)) == cudaSuccess);
  REQUIRE(cudaMalloc(&dy, y.size() * sizeof(std::int32_t)) == cudaSuccess);
  REQUIRE(cudaMemcpy(dx, x.data(), x.size() * sizeof(float), cudaMemcpyHostToDevice) ==
          cudaSuccess);
  REQUIRE(cudaMemcpy(dy, y.data(), y.size() * sizeof(std::int32_t), cudaMemcpyHostToDevice) ==
          cudaSuccess);

  mo::cuda_backend::Executor<Spec> a, b;
  a.set_parameters(w);
  b.set_parameters(w);
  a.prepare(rows, 2 * n);
  b.prepare(rows, 2 * n);
  std::int64_t ia = 0, ib = 0;
  mo::NoLossScale sa, sb;
  for (int step = 0; step < 3; ++step) {
    a.train_step(x.data(), y.data(), rows, mo::Adam{}, ia, sa);
    b.train_step_device(dx, dy, rows, mo::Adam{}, ib, sb);
  }
  std::vector<float> pa(n), pb(n);
  a.get_parameters(pa);
  b.get_parameters(pb);
  // The same kernels on the same values; cuBLASLt may reduce split products with atomics, so
  // not necessarily the same bits.
  CHECK(relative_error(pb, pa) < 1e-6);
  const mo::StepTotals ta = a.take_totals(), tb = b.take_totals();
  CHECK(tb.loss_sum == doctest::Approx(ta.loss_sum).epsilon(1e-6));
  CHECK(ta.samples == tb.samples);
  cudaFree(dx);
  cudaFree(dy);
}
