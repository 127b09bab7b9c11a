// Failures raise memopt::error saying what was expected and what was found: CUDA and cuBLASLt
// statuses by name, labels out of range, an arena that does not fit the device.
#include <doctest/doctest.h>

#include <cstdint>
#include <vector>

#include <memopt/backend/cuda.hpp>
#include <memopt/memopt.hpp>

#include "cuda_test_support.hpp"

namespace mo = memopt;
using namespace memopt_test;

TEST_CASE("a failed status names the call, the status and where it happened") {
  CHECK_THROWS_WITH_AS(mo::cuda_backend::check(cudaErrorMemoryAllocation, "cudaMalloc", "dense_1"),
                       doctest::Contains("cudaMalloc failed: cudaErrorMemoryAllocation"),
                       mo::error);
  CHECK_THROWS_WITH_AS(
      mo::cuda_backend::check(CUBLAS_STATUS_NOT_SUPPORTED, "cublasLtMatmul", "dense_1 dX"),
      doctest::Contains("CUBLAS_STATUS_NOT_SUPPORTED"), mo::error);
  CHECK_NOTHROW(mo::cuda_backend::check(cudaSuccess, "cudaFree"));
}

TEST_CASE("an arena larger than the device says how many bytes it needed and how many were free") {
  using Net = mo::Sequential<mo::Dense<4096, mo::ReLU>, mo::Dense<10, mo::Softmax>>;
  using Spec = mo::ModelSpec<Net, mo::Input<4096>, mo::float32>;
  mo::cuda_backend::Executor<Spec> gpu;
  CHECK_THROWS_WITH_AS(gpu.prepare(std::size_t{1} << 24, 2 * Spec::parameter_count),
                       doctest::Contains("bytes free"), mo::error);
}

TEST_CASE("labels outside [0, outputs) are refused") {
  using Net = mo::Sequential<mo::Dense<8, mo::ReLU>, mo::Dense<4, mo::Softmax>>;
  using Spec = mo::ModelSpec<Net, mo::Input<6>, mo::float32>;
  mo::cuda_backend::Executor<Spec> gpu;
  gpu.set_parameters(random_parameters<Spec>(31));
  gpu.prepare(4, 2 * Spec::parameter_count);
  const auto x = random_inputs(4, 6, 32);
  const std::vector<std::int32_t> y = {0, 1, 7, 2};
  std::int64_t it = 0;
  mo::NoLossScale s;
  CHECK_THROWS_WITH_AS(gpu.train_step(x.data(), y.data(), 4, mo::Adam{}, it, s),
                       doctest::Contains("label 7 at row 2 is outside [0, 4)"), mo::error);

  // On the device path the loss kernel counts them and take_totals reports them.
  float* dx = nullptr;
  std::int32_t* dy = nullptr;
  REQUIRE(cudaMalloc(&dx, x.size() * sizeof(float)) == cudaSuccess);
  REQUIRE(cudaMalloc(&dy, y.size() * sizeof(std::int32_t)) == cudaSuccess);
  REQUIRE(cudaMemcpy(dx, x.data(), x.size() * sizeof(float), cudaMemcpyHostToDevice) ==
          cudaSuccess);
  REQUIRE(cudaMemcpy(dy, y.data(), y.size() * sizeof(std::int32_t), cudaMemcpyHostToDevice) ==
          cudaSuccess);
  gpu.train_step_device(dx, dy, 4, mo::Adam{}, it, s);
  CHECK_THROWS_WITH_AS(gpu.take_totals(), doctest::Contains("1 labels were outside [0, 4)"),
                       mo::error);
  cudaFree(dx);
  cudaFree(dy);
}

TEST_CASE("a batch larger than the prepared capacity is refused") {
  using Net = mo::Sequential<mo::Dense<8, mo::ReLU>, mo::Dense<4, mo::Softmax>>;
  using Spec = mo::ModelSpec<Net, mo::Input<6>, mo::float32>;
  mo::cuda_backend::Executor<Spec> gpu;
  gpu.prepare(4, 0);
  const auto x = random_inputs(5, 6, 33);
  const std::vector<std::int32_t> y(5, 1);
  std::int64_t it = 0;
  mo::NoLossScale s;
  CHECK_THROWS_WITH_AS(gpu.train_step(x.data(), y.data(), 5, mo::SGD{}, it, s),
                       doctest::Contains("does not fit the arena planned for 4"), mo::error);
}

TEST_CASE("an optimizer needing more state than prepare() allocated is refused") {
  using Net = mo::Sequential<mo::Dense<8, mo::ReLU>, mo::Dense<4, mo::Softmax>>;
  using Spec = mo::ModelSpec<Net, mo::Input<6>, mo::float32>;
  mo::cuda_backend::Executor<Spec> gpu;
  gpu.set_parameters(random_parameters<Spec>(34));
  gpu.prepare(4, mo::SGD{{.momentum = 0.9}}.slots() * Spec::parameter_count);
  const auto x = random_inputs(4, 6, 35);
  const std::vector<std::int32_t> y = {0, 1, 3, 2};
  std::int64_t it = 0;
  mo::NoLossScale s;
  CHECK_THROWS_WITH_AS(gpu.train_step(x.data(), y.data(), 4, mo::Adam{}, it, s),
                       doctest::Contains("needs 2 slots of state per parameter, prepare() "
                                         "allocated 1"),
                       mo::error);
}

TEST_CASE("plain SGD on an executor prepared for Adam updates like the CPU and leaves the state") {
  // As the CPU executor does: the optimizer uses the slots it needs, the rest stay as they are.
  using Net = mo::Sequential<mo::Dense<8, mo::ReLU>, mo::Dense<4, mo::Softmax>>;
  using Spec = mo::ModelSpec<Net, mo::Input<6>, mo::float32>;
  const std::size_t n = Spec::parameter_count;
  const auto w = random_parameters<Spec>(36);
  mo::cpu_backend::Executor<Spec> cpu;
  mo::cuda_backend::Executor<Spec> gpu;
  cpu.set_parameters(w);
  gpu.set_parameters(w);
  cpu.prepare(4, 2 * n);
  gpu.prepare(4, 2 * n);
  const auto x = random_inputs(4, 6, 37);
  const std::vector<std::int32_t> y = {0, 1, 3, 2};
  std::int64_t it_cpu = 0, it_gpu = 0;
  mo::NoLossScale s_cpu, s_gpu;
  mo::train::training_step(cpu, x.data(), y.data(), 4, mo::SGD{}, it_cpu, s_cpu);
  gpu.train_step(x.data(), y.data(), 4, mo::SGD{}, it_gpu, s_gpu);
  std::vector<float> p_cpu(n), p_gpu(n), state(2 * n);
  cpu.get_parameters(p_cpu);
  gpu.get_parameters(p_gpu);
  CHECK(p_gpu != w);
  CHECK(relative_error(p_gpu, p_cpu) < 1e-5);
  gpu.get_optimizer_state(state);
  CHECK(state == std::vector<float>(2 * n, 0.0f));
}

TEST_CASE("the loss kernel's static shared memory is what launch_limits.hpp budgets") {
  namespace k = mo::cuda_backend::kernels;
  cudaFuncAttributes f32{}, f16{};
  REQUIRE(cudaFuncGetAttributes(&f32, k::softmax_cross_entropy<float>) == cudaSuccess);
  REQUIRE(cudaFuncGetAttributes(&f16, k::softmax_cross_entropy<mo::half>) == cudaSuccess);
  MESSAGE("static shared bytes: " << f32.sharedSizeBytes << " (float), " << f16.sharedSizeBytes
                                  << " (half); budget " << k::loss_static_shared_bytes);
  CHECK(f32.sharedSizeBytes <= k::loss_static_shared_bytes);
  CHECK(f16.sharedSizeBytes <= k::loss_static_shared_bytes);
  CHECK(f32.maxDynamicSharedSizeBytes >=
        static_cast<int>(k::loss_shared_bytes(k::LossMode::train, k::deterministic_classes)));
}

TEST_CASE("the fused update refuses schedules, clipping and weight decay, which run on the CPU") {
  using Net = mo::Sequential<mo::Dense<8, mo::ReLU>, mo::Dense<4, mo::Softmax>>;
  using Gpu = mo::cuda_backend::Executor<mo::ModelSpec<Net, mo::Input<6>, mo::float32>>;
  static_assert(mo::train::Executor<Gpu> && !Gpu::reduces_gradients);
  CHECK_NOTHROW(Gpu::check_optimizer(mo::Adam{{.learning_rate = 1e-2}}));
  CHECK_NOTHROW(Gpu::check_optimizer(mo::SGD{{.momentum = 0.9}}));
  CHECK_THROWS_WITH_AS(Gpu::check_optimizer(mo::Adam{{.clipnorm = 1.0}}),
                       doctest::Contains("runs on the mo::cpu backend only"), mo::error);
  CHECK_THROWS_WITH_AS(Gpu::check_optimizer(mo::SGD{{.weight_decay = 0.01}}),
                       doctest::Contains("runs on the mo::cpu backend only"), mo::error);
  CHECK_THROWS_WITH_AS(
      Gpu::check_optimizer(
          mo::Adam{{.learning_rate =
                        mo::ExponentialDecay{{.initial_learning_rate = 0.1, .decay_steps = 10}}}}),
      doctest::Contains("runs on the mo::cpu backend only"), mo::error);
  mo::Model<Net, mo::Input<6>, mo::float32, mo::cuda> model{1};
  CHECK_THROWS_WITH_AS(
      model.compile(mo::Adam{{.global_clipnorm = 1.0}}, mo::SparseCategoricalCrossentropy{}),
      doctest::Contains("adam with a learning-rate schedule, clipping or weight "
                        "decay"),
      mo::error);
}

TEST_CASE("gradient accumulation is refused at compile, naming the CPU backend") {
  using Net = mo::Sequential<mo::Dense<8, mo::ReLU>, mo::Dense<4, mo::Softmax>>;
  mo::Model<Net, mo::Input<6>, mo::float32, mo::cuda> model{1};
  mo::SGD::Options o{.learning_rate = 0.1};
  o.gradient_accumulation_steps = 2;
  CHECK_THROWS_WITH_AS(model.compile(mo::SGD(o), mo::SparseCategoricalCrossentropy{}),
                       "Model::compile: gradient_accumulation_steps = 2 runs on the mo::cpu "
                       "backend only; the cuda backend applies every batch's update inside its "
                       "step",
                       mo::error);
  CHECK_NOTHROW(model.compile(mo::SGD{}, mo::SparseCategoricalCrossentropy{}));
}
