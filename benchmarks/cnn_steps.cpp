// The CPU backend on Keras's MNIST convnet: one training step at batch 32 and 128 under each
// policy, and where its time goes, step by step of the plan's schedule.
//
//   bench_cnn_steps [--benchmark_filter=REGEX] [--benchmark_min_time=SECONDS]
//   bench_cnn_steps --profile [batch [float32|mixed_bfloat16|mixed_float16]]
//                                         # median time of each scheduled step, then exit
//
// The profile also gives each Conv2D and Dense pass's arithmetic rate beside this core's peak,
// measured here on chains of independent AVX-512 FMAs (float32) and bfloat16 dot products:
// the ceiling that no kernel of any library passes, and so how far a shorter step can go.
//
// The model is examples/02_fashion_mnist_cnn's. A step drives the executor directly (no data
// pipeline, no callbacks). Inputs uniform in [0, 1), labels uniform over the ten classes.
// oneDNN's threads follow OMP_NUM_THREADS; compare runs at the same setting.

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <ratio>
#include <string>
#include <type_traits>
#include <vector>

#if defined(__AVX512F__) && defined(__GNUC__)
#include <immintrin.h>
#endif

#include <benchmark/benchmark.h>

#include <memopt/memopt.hpp>

namespace mo = memopt;

namespace {

using Convnet = mo::Sequential<mo::Conv2D<32, 3, mo::ReLU>, mo::MaxPooling2D<2>,
                               mo::Conv2D<64, 3, mo::ReLU>, mo::MaxPooling2D<2>, mo::Flatten,
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

/// One core's peak in GFLOP/s: float32 FMAs (2 FLOP a lane) and, where the CPU has them,
/// bfloat16 dot products (4 FLOP a float32 lane), 16 independent chains of each so that
/// latency does not count. 0 where this build has no AVX-512 (or no AVX-512 BF16).
struct Peak {
  double float32 = 0;
  double bfloat16 = 0;
};
#if defined(__AVX512F__) && defined(__GNUC__)
/// GFLOP/s of `Op` (acc = op(acc, a, b)) on 16 chains, best of 3 timings. The empty asm
/// keeps `a` opaque, so that no round can be folded into the next.
template <class A, class Op>
double chains_gflops(A a, A b, Op op, double flop_per_instruction) {
  constexpr long rounds = 4'000'000;
  __m512 acc[16];
  for (__m512& c : acc) c = _mm512_setzero_ps();
  double best = 0;
  for (int trial = 0; trial < 3; ++trial) {
    const auto t0 = std::chrono::steady_clock::now();
    for (long r = 0; r < rounds; ++r) {
#pragma GCC unroll 16
      for (int i = 0; i < 16; ++i) acc[i] = op(acc[i], a, b);
      asm volatile("" : "+v"(a));
    }
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    best = std::max(best, rounds * 16 * flop_per_instruction / s / 1e9);
  }
  alignas(64) float lanes[16];
  float sink = 0;
  for (const __m512& c : acc) {
    _mm512_store_ps(lanes, c);
    for (float v : lanes) sink += v;
  }
  benchmark::DoNotOptimize(sink);
  return best;
}
#endif
Peak measure_peak() {
  Peak p;
#if defined(__AVX512F__) && defined(__GNUC__)
  p.float32 = chains_gflops(
      _mm512_set1_ps(1e-9f), _mm512_set1_ps(1.0f),
      [](__m512 c, __m512 x, __m512 y) { return _mm512_fmadd_ps(x, y, c); }, 16 * 2);
#if defined(__AVX512BF16__)
  // bfloat16 1e-9 (0x3089) times 1 (0x3f80), so that the sums stay small.
  p.bfloat16 = chains_gflops(
      (__m512bh)_mm512_set1_epi16(0x3089), (__m512bh)_mm512_set1_epi16(0x3f80),
      [](__m512 c, __m512bh x, __m512bh y) { return _mm512_dpbf16_ps(c, x, y); }, 16 * 4);
#endif
#endif
  return p;
}

/// Multiply-adds of one sample's pass through node `N` (forward, or either gradient): a
/// Conv2D's or Dense's kernel, once per output position; 0 for the layers that do no products.
template <class S, std::size_t N>
constexpr double pass_macs() {
  using L = typename S::template node_layer<N>;
  constexpr mo::NodeInfo node = S::nodes[N];
  if constexpr (L::class_name == "Conv2D")
    return double(node.out.size()) * double(L::kernel.h * L::kernel.w * node.in.channels());
  else if constexpr (L::class_name == "Dense")
    return double(node.in.size()) * double(node.out.size());
  else
    return 0;
}

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
  // Each node's multiply-adds a sample, and the peak its products run against: oneDNN's
  // bfloat16 convolutions use the dot-product instructions; Dense and every float16
  // convolution compute in float32.
  std::array<double, S::depth> macs{};
  mo::static_for<S::depth>([&](auto n) { macs[n] = pass_macs<S, n>(); });
  const Peak peak = measure_peak();  // after the steps, so that it cannot slow their clock
  // Which convolutions run oneDNN's bfloat16 kernels, as the layer's kernel creates them.
  using T = typename Policy::compute_type;
  std::array<bool, S::depth> bf16_kernels{};
  mo::static_for<S::depth>([&](auto n) {
    using L = typename S::template node_layer<n>;
    if constexpr (std::is_same_v<T, mo::bfloat16> && L::class_name == "Conv2D")
      bf16_kernels[n] =
          mo::cpu_backend::onednn::Conv2d<T>(mo::cpu_backend::LayerKernel<L, S, n>::shape(rows))
              .native();
  });
  const auto peak_of = [&](std::size_t node) {
    return bf16_kernels[node] ? peak.bfloat16 : peak.float32;
  };
  std::printf(
      "median of %d steps at batch %zu under %s, on one core whose peak is %.0f GFLOP/s"
      " (float32 FMA) and %.0f GFLOP/s (bfloat16 dot products)\n",
      rounds, rows, std::string(Policy::name).c_str(), peak.float32, peak.bfloat16);
  if constexpr (!std::is_same_v<T, float>) {
    const auto& probe = mo::cpu_backend::onednn::arithmetic_probe<T>();
    std::printf(
        "16-bit convolutions (3 passes of 16 x 13x13x32 -> 64): %.3f ms in oneDNN's %s "
        "kernels, %.3f ms through float32: %s\n",
        probe.sixteen_bit_ms, probe.native ? "16-bit" : "(absent)", probe.float32_ms,
        probe.sixteen_bit_pays() ? "16-bit kernels kept" : "computed in float32");
  }
  std::printf("  %-12s %-18s %8s %9s %8s\n", "step", "node", "ms", "GFLOP/s", "of peak");
  double total = median(ms[steps]), product_ms = 0, flop = 0, floor_ms = 0;
  std::printf("  %-12s %-18s %8.3f\n", "begin_step", "input", total);
  for (int k = 0; k < steps; ++k) {
    const mo::plan::Step s = schedule[k];
    const auto node = static_cast<std::size_t>(s.layer < 0 ? 0 : s.layer);
    const std::string who = s.layer < 0 ? "all" : S::node_name(node);
    const double m = median(ms[static_cast<std::size_t>(k)]);
    total += m;
    const bool product =
        s.layer >= 0 && macs[node] > 0 &&
        (s.kind == mo::plan::StepKind::forward || s.kind == mo::plan::StepKind::recompute ||
         s.kind == mo::plan::StepKind::weight_grad || s.kind == mo::plan::StepKind::input_grad);
    std::printf("  %-12s %-18s %8.3f", std::string(mo::plan::step_kind_name(s.kind)).c_str(),
                who.c_str(), m);
    if (product) {
      const double f = 2 * macs[node] * double(rows);
      const double rate = f / (m * 1e-3) / 1e9;
      product_ms += m;
      flop += f;
      if (peak_of(node) > 0) floor_ms += f / (peak_of(node) * 1e9) * 1e3;
      std::printf(" %9.1f", rate);
      if (peak_of(node) > 0) std::printf(" %7.0f%%", 100 * rate / peak_of(node));
    }
    std::printf("\n");
  }
  std::printf("  %-31s %8.3f\n", "total", total);
  std::printf(
      "products (Conv2D and Dense passes): %.3f ms of the step's %.3f, %.1f MFLOP at %.1f"
      " GFLOP/s; at this core's peak they would take %.3f ms\n",
      product_ms, total, flop / 1e6, flop / (product_ms * 1e-3) / 1e9, floor_ms);
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
