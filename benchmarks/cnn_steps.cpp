// The CPU backend on Keras's MNIST convnet: one training step at batch 32 and 128 under each
// policy, and where its time goes, step by step of the plan's schedule.
//
//   bench_cnn_steps [--benchmark_filter=REGEX] [--benchmark_min_time=SECONDS]
//   bench_cnn_steps --profile [batch [float32|mixed_bfloat16|mixed_float16]]
//                                         # median time of each scheduled step, then exit
//
// The model is examples/02_fashion_mnist_cnn's. A step drives the executor directly (no data
// pipeline, no callbacks). Inputs uniform in [0, 1), labels uniform over the ten classes.
// oneDNN's threads follow OMP_NUM_THREADS; compare runs at the same setting.

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <ratio>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include <memopt/memopt.hpp>

namespace mo = memopt;

namespace {

using Convnet =
    mo::Sequential<mo::Conv2D<32, 3, 1, mo::valid, mo::ReLU>, mo::MaxPooling2D<2>,
                   mo::Conv2D<64, 3, 1, mo::valid, mo::ReLU>, mo::MaxPooling2D<2>, mo::Flatten,
                   mo::Dropout<std::ratio<1, 2>>, mo::Dense<10, mo::Softmax>>;
template <class Policy>
using Spec = mo::ModelSpec<Convnet, mo::Input<28, 28, 1>, Policy>;

struct RandomBatch {
  std::vector<float> x;
  std::vector<std::int32_t> y;
  explicit RandomBatch(std::size_t rows) : x(rows * 784), y(rows) {
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> u(0.0f, 1.0f);
    for (float& v : x) v = u(rng);
    for (std::int32_t& v : y) v = static_cast<std::int32_t>(rng() % 10);
  }
};

template <class Policy>
void BM_TrainingStep(benchmark::State& state) {
  const auto rows = static_cast<std::size_t>(state.range(0));
  mo::Model<Convnet, mo::Input<28, 28, 1>, Policy> model{1};
  auto& e = model.executor();
  const mo::Adam adam{};
  e.prepare(rows, 2 * mo::Model<Convnet, mo::Input<28, 28, 1>, Policy>::parameter_count);
  const RandomBatch b(rows);
  std::int64_t iterations = 0;
  typename decltype(model)::loss_scale_type scale{};
  for (auto _ : state)
    mo::train::training_step(e, b.x.data(), b.y.data(), rows, adam, iterations, scale);
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(rows));
}
BENCHMARK_TEMPLATE(BM_TrainingStep, mo::float32)->Arg(32)->Arg(128)->Unit(benchmark::kMillisecond);
BENCHMARK_TEMPLATE(BM_TrainingStep, mo::mixed_bfloat16)
    ->Arg(32)
    ->Arg(128)
    ->Unit(benchmark::kMillisecond);
// oneDNN 2.6.3 creates no float16 convolution (even with AVX-512 FP16): they run in float32 on
// widened copies.
BENCHMARK_TEMPLATE(BM_TrainingStep, mo::mixed_float16)
    ->Arg(32)
    ->Arg(128)
    ->Unit(benchmark::kMillisecond);

// Times each step of the schedule by walking it the way train::training_step does.
template <class Policy>
int profile(std::size_t rows) {
  using S = Spec<Policy>;
  mo::cpu_backend::Executor<S> e;
  std::vector<float> w(S::parameter_count, 0.01f);
  mo::Rng rng(3);
  for (float& v : w) v = rng.uniform(-0.05f, 0.05f);
  e.set_parameters(w);
  e.prepare(rows, 2 * S::parameter_count);
  const RandomBatch b(rows);
  static constexpr auto schedule = mo::plan::training_schedule<S>();
  constexpr int steps = schedule.count;
  constexpr int rounds = 30;
  std::vector<std::vector<double>> ms(steps + 1);
  std::int64_t iterations = 0;
  mo::NoLossScale scale;
  const mo::Adam adam{};
  for (int round = 0; round < rounds; ++round) {
    [[maybe_unused]] const auto scope = e.step_scope();
    auto t0 = std::chrono::steady_clock::now();
    e.begin_step(b.x.data(), b.y.data(), rows, iterations);
    auto lap = [&](int k) {
      const auto t = std::chrono::steady_clock::now();
      ms[static_cast<std::size_t>(k)].push_back(
          std::chrono::duration<double, std::milli>(t - t0).count());
      t0 = t;
    };
    lap(steps);
    mo::static_for<static_cast<std::size_t>(steps)>([&](auto k) {
      constexpr mo::plan::Step step = schedule[static_cast<int>(k)];
      constexpr auto node = static_cast<std::size_t>(step.layer < 0 ? 0 : step.layer);
      if constexpr (step.kind == mo::plan::StepKind::forward)
        e.template forward<node>();
      else if constexpr (step.kind == mo::plan::StepKind::loss)
        e.loss(1.0f);
      else if constexpr (step.kind == mo::plan::StepKind::recompute)
        e.template recompute<node>();
      else if constexpr (step.kind == mo::plan::StepKind::weight_grad)
        e.template weight_grad<node>();
      else if constexpr (step.kind == mo::plan::StepKind::input_grad)
        e.template input_grad<node>();
      else
        e.finish_step(adam, iterations, scale);
      lap(static_cast<int>(k));
    });
  }
  const auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  double total = 0;
  std::printf("median of %d steps at batch %zu under %s (ms)\n", rounds, rows,
              std::string(Policy::name).c_str());
  std::printf("  %-12s %-18s %8.3f\n", "begin_step", "input", median(ms[steps]));
  total += median(ms[steps]);
  for (int k = 0; k < steps; ++k) {
    const mo::plan::Step s = schedule[k];
    const std::string who = s.layer < 0 ? "all" : S::node_name(static_cast<std::size_t>(s.layer));
    const double m = median(ms[static_cast<std::size_t>(k)]);
    total += m;
    std::printf("  %-12s %-18s %8.3f\n", std::string(mo::plan::step_kind_name(s.kind)).c_str(),
                who.c_str(), m);
  }
  std::printf("  %-31s %8.3f\n", "total", total);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 2 && std::strcmp(argv[1], "--profile") == 0) {
    const std::size_t rows = argc >= 3 ? static_cast<std::size_t>(std::atol(argv[2])) : 128;
    const std::string policy = argc >= 4 ? argv[3] : "float32";
    if (policy == "mixed_bfloat16") return profile<mo::mixed_bfloat16>(rows);
    if (policy == "mixed_float16") return profile<mo::mixed_float16>(rows);
    if (policy != "float32") {
      std::fprintf(stderr,
                   "bench_cnn_steps: --profile takes float32, mixed_bfloat16 or mixed_float16\n");
      return 2;
    }
    return profile<mo::float32>(rows);
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
