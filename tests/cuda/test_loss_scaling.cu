// Dynamic loss scaling on the device: an injected inf makes the step skip its update and
// halve the scale, exactly as the CPU backend does, without the host waiting for the step.
#include <doctest/doctest.h>

#include <cstdint>
#include <vector>

#include <memopt/backend/cuda.hpp>
#include <memopt/memopt.hpp>

#include "cuda_test_support.hpp"

namespace mo = memopt;
using namespace memopt_test;

namespace {
using Mlp = mo::Sequential<mo::Dense<128, mo::ReLU>, mo::Dense<10, mo::Softmax>>;
using Spec = mo::ModelSpec<Mlp, mo::Input<784>, mo::mixed_float16>;
}  // namespace

TEST_CASE("an inf in the batch skips the update and halves the loss scale, as on the CPU") {
  const std::size_t rows = 32, n = Spec::parameter_count;
  const auto w = random_parameters<Spec>(21);
  mo::cpu_backend::Executor<Spec> cpu;
  mo::cuda_backend::Executor<Spec> gpu;
  cpu.set_parameters(w);
  gpu.set_parameters(w);
  cpu.prepare(rows, 2 * n);
  gpu.prepare(rows, 2 * n);
  std::int64_t it_cpu = 0, it_gpu = 0;
  mo::DynamicLossScale s_cpu, s_gpu;

  auto x = random_inputs(rows, Spec::inputs, 22);
  const auto y = random_labels(rows, Spec::outputs, 23);
  x[5] = 1e30f;  // beyond half's range: inf in the input, NaN in the gradients
  mo::train::training_step(cpu, x.data(), y.data(), rows, mo::Adam{}, it_cpu, s_cpu);
  gpu.train_step(x.data(), y.data(), rows, mo::Adam{}, it_gpu, s_gpu);
  const mo::StepTotals t_cpu = cpu.take_totals(), t_gpu = gpu.take_totals();
  CHECK(t_cpu.skipped_steps == 1);
  CHECK(t_gpu.skipped_steps == 1);
  gpu.synchronize(it_gpu, s_gpu);
  CHECK(it_gpu == 0);
  CHECK(it_cpu == 0);
  CHECK(s_gpu.scale == 16384.0f);
  CHECK(s_cpu.scale == 16384.0f);
  CHECK(s_gpu.good_steps == 0);
  std::vector<float> p(n);
  gpu.get_parameters(p);
  CHECK(p == w);  // untouched

  // The next, finite step applies its update at the halved scale.
  x[5] = 0.5f;
  mo::train::training_step(cpu, x.data(), y.data(), rows, mo::Adam{}, it_cpu, s_cpu);
  gpu.train_step(x.data(), y.data(), rows, mo::Adam{}, it_gpu, s_gpu);
  CHECK(gpu.take_totals().skipped_steps == 0);
  gpu.synchronize(it_gpu, s_gpu);
  CHECK(it_gpu == 1);
  CHECK(s_gpu.scale == 16384.0f);
  CHECK(s_gpu.good_steps == 1);
  std::vector<float> p_cpu(n);
  cpu.get_parameters(p_cpu);
  gpu.get_parameters(p);
  CHECK(relative_error(p, p_cpu) < tolerance<mo::mixed_float16>);
}

TEST_CASE("the scale grows after growth_interval finite steps, and a set scale is uploaded") {
  const std::size_t rows = 16, n = Spec::parameter_count;
  mo::cuda_backend::Executor<Spec> gpu;
  gpu.set_parameters(random_parameters<Spec>(24));
  gpu.prepare(rows, mo::SGD{}.slots() * n);  // as Model::compile prepares: no state for SGD
  const auto x = random_inputs(rows, Spec::inputs, 25);
  const auto y = random_labels(rows, Spec::outputs, 26);
  std::int64_t it = 100;
  mo::DynamicLossScale s{.scale = 1024.0f, .good_steps = 0, .growth_interval = 3};
  for (int k = 0; k < 7; ++k) gpu.train_step(x.data(), y.data(), rows, mo::SGD{}, it, s);
  CHECK(it == 107);  // what the caller sees right away: every step assumed applied
  gpu.synchronize(it, s);
  CHECK(it == 107);
  CHECK(s.scale == 4096.0f);  // doubled after steps 3 and 6
  CHECK(s.good_steps == 1);
  CHECK(gpu.take_totals().skipped_steps == 0);
}
