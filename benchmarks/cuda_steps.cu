// Microbenchmarks of the CUDA backend: a training step (one CUDA graph) of 784-128-10 at
// batch 32, 256, 4096 and 65536, and of 4096-4096-4096-10 at batch 8192 (GEMM-bound), next to
// the same cuBLASLt products alone (the step's graph without memopt's own kernels).
//
//   bench_cuda_steps [--benchmark_filter=REGEX] [--benchmark_out=FILE.json
//                     --benchmark_out_format=json]
//
// Timing: CUDA events recorded between consecutive steps queued back to back (the stream
// never drains), so each interval is one step's cost in steady state, host enqueue included
// when the host is the slower side. Each benchmark iteration queues 50 steps after 20 steps of
// warm-up (which also capture the graph) and reports their median as manual time; the
// counters give the median, 10th and 90th percentiles in microseconds and the device memory
// the executor holds (arena, parameters, optimizer state, 16-bit copy, workspace) plus the
// resident batch.
//
// Sources: `resident` trains on a batch already in device memory (as PyTorch's benchmark
// does); `host` trains from host memory through the executor's pinned staging, the path
// Model::fit takes.
//
// Without a GPU every benchmark reports an error and the program exits 0.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include <benchmark/benchmark.h>

#include <memopt/backend/cuda.hpp>
#include <memopt/memopt.hpp>

namespace mo = memopt;
namespace cb = mo::cuda_backend;

namespace {

using Small = mo::Sequential<mo::Dense<128, mo::ReLU>, mo::Dense<10, mo::Softmax>>;
using Large = mo::Sequential<mo::Dense<4096, mo::ReLU>, mo::Dense<4096, mo::ReLU>,
                             mo::Dense<10, mo::Softmax>>;

enum class Source { resident, host };
enum class Work { step, matmuls };

constexpr int kWarmup = 20;
constexpr int kSteps = 50;

struct Percentiles {
  double median_us = 0, p10_us = 0, p90_us = 0;
};

// Queues `steps` calls of `step` back to back with an event between each two; the intervals'
// percentiles.
template <class F>
Percentiles time_steps(cudaStream_t stream, int steps, F&& step) {
  std::vector<cb::Event> events;
  events.reserve(static_cast<std::size_t>(steps) + 1);
  for (int k = 0; k <= steps; ++k) events.emplace_back(true);
  events[0].record(stream);
  for (int k = 0; k < steps; ++k) {
    step();
    events[static_cast<std::size_t>(k) + 1].record(stream);
  }
  events.back().synchronize();
  std::vector<double> us;
  for (int k = 0; k < steps; ++k)
    us.push_back(1e3 * events[static_cast<std::size_t>(k) + 1].elapsed_ms_since(
                           events[static_cast<std::size_t>(k)]));
  std::sort(us.begin(), us.end());
  const auto at = [&](double q) { return us[static_cast<std::size_t>(q * (us.size() - 1) + 0.5)]; };
  return {at(0.5), at(0.1), at(0.9)};
}

template <class Spec>
std::vector<float> random_parameters() {
  std::vector<float> w(Spec::parameter_count, 0.0f);
  mo::Rng rng(7);
  for (std::size_t i = 0; i < Spec::depth; ++i) {
    const float limit = std::sqrt(6.0f / static_cast<float>(Spec::dims[i] + Spec::dims[i + 1]));
    for (std::size_t j = 0; j < Spec::kernel_size(i); ++j)
      w[Spec::kernel_offset(i) + j] = rng.uniform(-limit, limit);
  }
  return w;
}

template <class Net, std::size_t Inputs, class Policy>
void bench(benchmark::State& state, Source source, Work work) {
  using Spec = mo::ModelSpec<Net, mo::Input<Inputs>, Policy>;
  using Scale = std::conditional_t<Policy::loss_scaling, mo::DynamicLossScale, mo::NoLossScale>;
  if (!cb::gpu_available()) {
    state.SkipWithError("no GPU (cudaGetDeviceCount failed or found none)");
    for (auto _ : state) {
    }
    return;
  }
  const std::size_t rows = static_cast<std::size_t>(state.range(0));
  try {
    cb::Executor<Spec> ex;
    ex.set_parameters(random_parameters<Spec>());
    const mo::Adam adam{};
    ex.prepare(rows, adam.slots() * Spec::parameter_count);

    std::vector<float> x(rows * Spec::inputs);
    std::vector<std::int32_t> y(rows);
    mo::Rng rng(11);
    for (float& v : x) v = rng.uniform(0.0f, 1.0f);
    for (auto& v : y) v = static_cast<std::int32_t>(rng.below(Spec::outputs));
    cb::DeviceBuffer dx(x.size() * sizeof(float), "benchmark batch");
    cb::DeviceBuffer dy(y.size() * sizeof(std::int32_t), "benchmark labels");
    cb::check(cudaMemcpy(dx.data(), x.data(), dx.size(), cudaMemcpyHostToDevice), "cudaMemcpy");
    cb::check(cudaMemcpy(dy.data(), y.data(), dy.size(), cudaMemcpyHostToDevice), "cudaMemcpy");

    std::int64_t iterations = 0;
    Scale scale{};
    const auto step = [&] {
      if (work == Work::matmuls)
        ex.run_matmuls_only(rows);
      else if (source == Source::resident)
        ex.train_step_device(dx.as<float>(), dy.as<std::int32_t>(), rows, adam, iterations, scale);
      else
        ex.train_step(x.data(), y.data(), rows, adam, iterations, scale);
    };
    if (work == Work::matmuls) {  // the arena holds a real step's values, as in training
      ex.train_step_device(dx.as<float>(), dy.as<std::int32_t>(), rows, adam, iterations, scale);
    }
    for (int k = 0; k < kWarmup; ++k) step();
    ex.wait();

    Percentiles p;
    for (auto _ : state) {
      p = time_steps(ex.stream(), kSteps, step);
      state.SetIterationTime(p.median_us * 1e-6);
    }
    (void)ex.take_totals();
    state.counters["median_us"] = p.median_us;
    state.counters["p10_us"] = p.p10_us;
    state.counters["p90_us"] = p.p90_us;
    state.counters["arena_bytes"] = static_cast<double>(ex.arena_bytes());
    state.counters["device_bytes"] = static_cast<double>(
        ex.device_bytes() + (source == Source::resident ? dx.size() + dy.size() : 0));
    state.counters["samples_per_second"] =
        benchmark::Counter(static_cast<double>(rows) * 1e6 / std::max(p.median_us, 1e-3));
  } catch (const mo::error& e) {
    state.SkipWithError(e.what());
  }
}

template <class Net, std::size_t Inputs, class Policy>
void add(const std::string& name, Source source, Work work, std::vector<std::int64_t> batches) {
  auto* b = benchmark::RegisterBenchmark(
      name.c_str(), [=](benchmark::State& s) { bench<Net, Inputs, Policy>(s, source, work); });
  for (std::int64_t batch : batches) b->Arg(batch);
  b->ArgName("batch")->UseManualTime()->Iterations(4)->Unit(benchmark::kMicrosecond);
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::int64_t> small_batches = {32, 256, 4096, 65536};
  add<Small, 784, mo::float32>("step/784-128-10/float32/resident", Source::resident, Work::step,
                               small_batches);
  add<Small, 784, mo::mixed_float16>("step/784-128-10/mixed_float16/resident", Source::resident,
                                     Work::step, small_batches);
  add<Small, 784, mo::mixed_float16>("step/784-128-10/mixed_float16/host", Source::host, Work::step,
                                     small_batches);
  add<Small, 784, mo::mixed_float16>("matmuls/784-128-10/mixed_float16", Source::resident,
                                     Work::matmuls, small_batches);
  add<Large, 4096, mo::mixed_float16>("step/4096-4096-4096-10/mixed_float16/resident",
                                      Source::resident, Work::step, {8192});
  add<Large, 4096, mo::mixed_float16>("matmuls/4096-4096-4096-10/mixed_float16", Source::resident,
                                      Work::matmuls, {8192});
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
