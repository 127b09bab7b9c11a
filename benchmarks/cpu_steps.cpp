// Microbenchmarks of the CPU backend: one training step and one inference step of three
// models at three batch sizes under each policy. (The data pipeline's batch throughput is
// measured by bench_data_pipeline, benchmarks/data_pipeline.cpp.)
//
//   bench_cpu_steps [--benchmark_filter=REGEX] [--benchmark_min_time=SECONDS] ...
//
// Models: 784-128-10 (the guide's), 784-512-512-10 (larger products), and the narrow MLP
// 64x8 (eight Dense<64, ReLU> layers, then Dense<10, Softmax>, on 64 inputs), at batch 32,
// 256 and 4096, under float32, mixed_float16 and mixed_bfloat16. A step drives the model's
// executor directly (prepare once, then train_step or predict), so what is timed is the
// backend alone: no data pipeline, no callbacks, no progress line. Inputs are random, uniform
// in [0, 1), labels uniform over the classes. items_per_second counts samples.
//
// The default minimum time per benchmark is 0.05 s so that the whole run stays short on a
// 2-core machine; pass --benchmark_min_time to measure longer.

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include <memopt/memopt.hpp>

namespace mo = memopt;

namespace {

using Small = mo::Sequential<mo::Dense<128, mo::ReLU>, mo::Dense<10, mo::Softmax>>;
using Wide =
    mo::Sequential<mo::Dense<512, mo::ReLU>, mo::Dense<512, mo::ReLU>, mo::Dense<10, mo::Softmax>>;
using Narrow =
    mo::Sequential<mo::Dense<64, mo::ReLU>, mo::Dense<64, mo::ReLU>, mo::Dense<64, mo::ReLU>,
                   mo::Dense<64, mo::ReLU>, mo::Dense<64, mo::ReLU>, mo::Dense<64, mo::ReLU>,
                   mo::Dense<64, mo::ReLU>, mo::Dense<64, mo::ReLU>, mo::Dense<10, mo::Softmax>>;

constexpr std::int64_t kBatches[] = {32, 256, 4096};

// Random features in [0, 1) (never all zero) and labels in [0, classes).
struct RandomBatch {
  std::vector<float> x;
  std::vector<std::int32_t> y;
  RandomBatch(std::size_t rows, std::size_t width, std::size_t classes, unsigned seed)
      : x(rows * width), y(rows) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> u(0.0f, 1.0f);
    for (float& v : x) v = u(rng);
    std::uniform_int_distribution<std::int32_t> label(0, static_cast<std::int32_t>(classes) - 1);
    for (std::int32_t& v : y) v = label(rng);
  }
};

template <class Net, std::size_t Inputs, class Policy>
using CpuModel = mo::Model<Net, mo::Input<Inputs>, Policy, mo::cpu>;

template <class Net, std::size_t Inputs, class Policy>
void train_step(benchmark::State& state) {
  using M = CpuModel<Net, Inputs, Policy>;
  const auto rows = static_cast<std::size_t>(state.range(0));
  // On the heap: a model owns only buffers, but keep the benchmark's frame small anyway.
  auto model = std::make_unique<M>(/*seed=*/42);
  const mo::Adam adam{{.learning_rate = 1e-3}};
  model->compile(adam, mo::SparseCategoricalCrossentropy{}, mo::metrics::Accuracy{});
  auto& executor = model->executor();
  executor.prepare(rows, adam.slots() * M::parameter_count);
  const RandomBatch batch(rows, Inputs, M::spec::outputs, /*seed=*/7);
  std::int64_t iterations = 0;
  typename M::loss_scale_type scale{};
  for (auto _ : state) {
    memopt::train::training_step(executor, batch.x.data(), batch.y.data(), rows, adam, iterations,
                                 scale);
    benchmark::ClobberMemory();
  }
  (void)executor.take_totals();
  state.SetItemsProcessed(state.iterations() * state.range(0));
  state.counters["arena_KiB"] = static_cast<double>(executor.arena_bytes()) / 1024.0;
}

template <class Net, std::size_t Inputs, class Policy>
void inference_step(benchmark::State& state) {
  using M = CpuModel<Net, Inputs, Policy>;
  const auto rows = static_cast<std::size_t>(state.range(0));
  auto model = std::make_unique<M>(/*seed=*/42);
  auto& executor = model->executor();
  const RandomBatch batch(rows, Inputs, M::spec::outputs, /*seed=*/7);
  std::vector<float> out(rows * M::spec::outputs);
  executor.predict(batch.x.data(), rows, out.data());  // plans and allocates once
  for (auto _ : state) {
    executor.predict(batch.x.data(), rows, out.data());
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
}

template <class Net, std::size_t Inputs, class Policy>
void register_model(const std::string& model, const std::string& policy) {
  for (const std::int64_t rows : kBatches) {
    benchmark::RegisterBenchmark(("train_step/" + model + "/" + policy).c_str(),
                                 train_step<Net, Inputs, Policy>)
        ->Arg(rows)
        ->Unit(benchmark::kMicrosecond);
    benchmark::RegisterBenchmark(("inference_step/" + model + "/" + policy).c_str(),
                                 inference_step<Net, Inputs, Policy>)
        ->Arg(rows)
        ->Unit(benchmark::kMicrosecond);
  }
}

template <class Policy>
void register_policy(const std::string& policy) {
  register_model<Small, 784, Policy>("784-128-10", policy);
  register_model<Wide, 784, Policy>("784-512-512-10", policy);
  register_model<Narrow, 64, Policy>("64x8", policy);
}

}  // namespace

int main(int argc, char** argv) {
  register_policy<mo::float32>("float32");
  register_policy<mo::mixed_float16>("mixed_float16");
  register_policy<mo::mixed_bfloat16>("mixed_bfloat16");

  // A short default run: Google Benchmark's own default is 0.5 s per benchmark, which makes
  // 54 benchmarks take minutes on a shared 2-core machine.
  std::vector<char*> args(argv, argv + argc);
  bool has_min_time = false;
  for (int i = 1; i < argc; ++i)
    has_min_time = has_min_time || std::strncmp(argv[i], "--benchmark_min_time", 20) == 0;
  static char short_run[] = "--benchmark_min_time=0.05";
  if (!has_min_time) args.insert(args.begin() + 1, short_run);
  int count = static_cast<int>(args.size());
  benchmark::Initialize(&count, args.data());
  if (benchmark::ReportUnrecognizedArguments(count, args.data())) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
