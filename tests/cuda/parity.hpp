#pragma once
// compare_with_cpu: one executor of each backend on the same random weights and batches,
// compared after each training step (gradients, loss, correct count, iteration count, loss
// scale, parameters), then through the optimizer state, predict and evaluate at a batch size
// no training step used.

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <vector>

#include <memopt/backend/cuda.hpp>
#include <memopt/memopt.hpp>

#include "cuda_test_support.hpp"

namespace memopt_test {

/// Relative error of each layer's bias gradient on its own: a bias gradient is a small part
/// of all gradients, so a wrong one (cuBLASLt's float32 bias gradient from 16-bit outputs, a
/// combination cublasLt.h does not document) could hide in the relative error of the whole.
template <class Spec>
void check_bias_gradients(std::span<const float> gpu, std::span<const float> cpu, double tol,
                          const std::vector<std::string>& paths) {
  for (std::size_t i = 0; i < Spec::depth; ++i) {
    INFO("bias gradient of layer ", i, " (", paths[i], ")");
    const std::size_t at = Spec::bias_offset(i), units = Spec::dims[i + 1];
    CHECK(relative_error(gpu.subspan(at, units), cpu.subspan(at, units)) < tol);
  }
}

/// What compare_with_cpu varies besides the model and the batches.
struct ParityOptions {
  bool fallback = false;      // every fused epilogue as a plain product and memopt's kernels
  bool exact_biases = false;  // biases the compute type holds exactly (see
                              // round_biases_to_compute_type)
};

template <class Net, class In, class Policy, class Opt>
void compare_with_cpu(Opt opt, std::size_t capacity, std::initializer_list<std::size_t> batches,
                      std::uint64_t seed, ParityOptions options = {}) {
  const bool fallback = options.fallback;
  using Spec = mo::ModelSpec<Net, In, Policy>;
  using Scale = loss_scale_for<Policy>;
  constexpr double tol = tolerance<Policy>;
  const std::size_t n = Spec::parameter_count;
  INFO("policy ", Policy::name, ", ", Spec::depth, " layers, ", n, " parameters");

  mo::cpu_backend::Executor<Spec> cpu;
  mo::cuda_backend::Executor<Spec> gpu;
  gpu.force_epilogue_fallback(fallback);
  std::vector<float> w = random_parameters<Spec>(seed);
  if (options.exact_biases) round_biases_to_compute_type<Spec>(w);
  cpu.set_parameters(w);
  gpu.set_parameters(w);
  {
    std::vector<float> back(n);
    gpu.get_parameters(back);
    CHECK(back == w);  // the padded device layout is invisible
  }
  cpu.prepare(capacity, opt.slots() * n);
  gpu.prepare(capacity, opt.slots() * n);
  std::vector<std::string> paths;
  for (std::size_t i = 0; i < Spec::depth; ++i) paths.push_back(gpu.layer_path(i));
  for (std::size_t i = 0; i < Spec::depth; ++i) {
    MESSAGE(Policy::name << " layer " << i << ": " << paths[i]);
    if (fallback) CHECK(paths[i].starts_with("fallback"));  // every forward has an epilogue
  }
  std::int64_t it_cpu = 0, it_gpu = 0;
  Scale scale_cpu{}, scale_gpu{};

  std::uint64_t s = seed;
  for (const std::size_t rows : batches) {
    INFO("batch of ", rows, " rows");
    const auto x = random_inputs(rows, Spec::inputs, ++s);
    const auto y = random_labels(rows, Spec::outputs, ++s);
    mo::train::training_step(cpu, x.data(), y.data(), rows, opt, it_cpu, scale_cpu);
    gpu.train_step(x.data(), y.data(), rows, opt, it_gpu, scale_gpu);

    std::vector<float> g_cpu(n), g_gpu(n);
    cpu.get_gradients(g_cpu);
    gpu.get_gradients(g_gpu);
    CHECK(relative_error(g_gpu, g_cpu) < tol);
    // Per layer, a few values each: 16-bit policies get some room over the whole's tolerance.
    check_bias_gradients<Spec>(g_gpu, g_cpu, tol < 1e-4 ? tol : 3 * tol, paths);

    const mo::StepTotals t_cpu = cpu.take_totals(), t_gpu = gpu.take_totals();
    CHECK(t_gpu.samples == t_cpu.samples);
    CHECK(t_gpu.skipped_steps == t_cpu.skipped_steps);
    CHECK(std::abs(t_gpu.loss_sum - t_cpu.loss_sum) <= tol * std::abs(t_cpu.loss_sum));
    CHECK(std::abs(t_gpu.correct - t_cpu.correct) <= (tol < 1e-4 ? 0.0 : 0.05 * rows));

    gpu.synchronize(it_gpu, scale_gpu);
    CHECK(it_gpu == it_cpu);
    CHECK(scale_gpu.value() == scale_cpu.value());

    std::vector<float> p_cpu(n), p_gpu(n);
    cpu.get_parameters(p_cpu);
    gpu.get_parameters(p_gpu);
    CHECK(relative_error(p_gpu, p_cpu) < tol);
  }

  std::vector<float> o_cpu(cpu.optimizer_state_size()), o_gpu(gpu.optimizer_state_size());
  REQUIRE(o_cpu.size() == o_gpu.size());
  cpu.get_optimizer_state(o_cpu);
  gpu.get_optimizer_state(o_gpu);
  if (!o_cpu.empty()) CHECK(relative_error(o_gpu, o_cpu) < 10 * tol);

  // Inference at a batch size no training step used.
  const std::size_t rows = capacity + 3;
  const auto x = random_inputs(rows, Spec::inputs, ++s);
  const auto y = random_labels(rows, Spec::outputs, ++s);
  std::vector<float> out_cpu(rows * Spec::outputs), out_gpu(rows * Spec::outputs);
  cpu.predict(x.data(), rows, out_cpu.data());
  gpu.predict(x.data(), rows, out_gpu.data());
  CHECK(relative_error(out_gpu, out_cpu) < tol);
  cpu.evaluate_batch(x.data(), y.data(), rows);
  gpu.evaluate_batch(x.data(), y.data(), rows);
  const mo::StepTotals e_cpu = cpu.take_totals(), e_gpu = gpu.take_totals();
  CHECK(e_gpu.samples == e_cpu.samples);
  CHECK(std::abs(e_gpu.loss_sum - e_cpu.loss_sum) <= tol * std::abs(e_cpu.loss_sum));
}

}  // namespace memopt_test
