// Microbenchmarks of the oneDNN CPU operations (backend/cpu/dnnl/): the two convolutions of
// Keras's "Simple MNIST convnet", 28x28x1 -> 26x26x32 and 13x13x32 -> 11x11x64 (3x3, valid,
// fused ReLU), at batch 32 and 128, forward, backward-data and backward-weights, float32
// against bfloat16 (native bf16 kernels where the CPU has AVX-512 BF16, else converted to
// float32 in the scratchpad: the benchmark's label says which; the `_via_f32` cases convert
// by choice, Conv2dTuning::arithmetic). The second argument is the
// rows each primitive call takes (Conv2dTuning::rows_per_pass; 0: automatic).
//
//   bench_dnnl_ops [--benchmark_filter=REGEX] [--benchmark_min_time=SECONDS]
//
// Each pass runs in the plain NHWC/HWIO layout (oneDNN's GEMM kernels), in oneDNN's blocked
// layout (its direct JIT kernels, with the reorders from and to memopt's NHWC buffers in the
// timed loop), with NHWC activations and blocked weights (its brgemm kernels on AVX-512), and in
// slices of 4 to all rows of the batch: the measurements behind Conv2dTuning's `automatic`, which
// the `_auto` cases run. items_per_second counts samples; the label names the kernels and the rows
// per call.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include <memopt/backend/cpu/dnnl/context.hpp>
#include <memopt/backend/cpu/dnnl/conv2d.hpp>
#include <memopt/core/dtype.hpp>
#include <memopt/core/random.hpp>

namespace {

namespace dn = memopt::cpu_backend::onednn;

struct Free {
  void operator()(void* p) const { std::free(p); }
};
using Bytes = std::unique_ptr<void, Free>;
Bytes aligned_bytes(std::size_t n) {
  return Bytes(std::aligned_alloc(64, (n / 64 + 1) * 64));
}

dn::Conv2dShape mnist_conv(int which, std::int64_t batch) {
  dn::Conv2dShape s;
  s.batch = batch;
  s.height = s.width = which == 1 ? 28 : 13;
  s.in_channels = which == 1 ? 1 : 32;
  s.filters = which == 1 ? 32 : 64;
  s.kernel_h = s.kernel_w = 3;
  s.relu = true;
  return s;
}

template <class T>
std::vector<T> random_values(std::size_t n, std::uint64_t seed) {
  memopt::Rng rng{seed};
  std::vector<T> v(n);
  for (T& x : v) x = T(rng.uniform(-1.0f, 1.0f));
  return v;
}

enum class Pass { forward, backward_data, backward_weights };

template <class T>
void BM_Conv(benchmark::State& state, int which, Pass pass, dn::Layout layout,
             dn::Arithmetic arithmetic) {
  const dn::Conv2dShape s = mnist_conv(which, state.range(0));
  dn::Conv2d<T> conv(s, dn::Conv2dTuning{layout, layout, layout, state.range(1), arithmetic});
  const auto x = random_values<T>(s.input_elements(), 1);
  const auto w = random_values<T>(s.kernel_elements(), 2);
  const auto b = random_values<float>(static_cast<std::size_t>(s.filters), 3);
  auto y = random_values<T>(s.output_elements(), 4);
  std::vector<T> dx(s.input_elements());
  std::vector<float> dw(s.kernel_elements()), db(static_cast<std::size_t>(s.filters));
  Bytes scratch = aligned_bytes(conv.scratchpad_bytes());
  for (auto _ : state) {
    switch (pass) {
      case Pass::forward:
        conv.forward(x.data(), w.data(), b.data(), y.data(), scratch.get());
        break;
      case Pass::backward_data:
        conv.backward_data(y.data(), w.data(), dx.data(), scratch.get());
        break;
      case Pass::backward_weights:
        conv.backward_weights(x.data(), y.data(), dw.data(), db.data(), scratch.get());
        break;
    }
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * s.batch);
  state.SetLabel(std::string(conv.native() ? "native " : "via f32 ") + conv.implementation() +
                 ", " + std::to_string(conv.tuning().rows_per_pass) + " rows a call");
}

void BM_ConvF32(benchmark::State& state, int which, Pass pass, dn::Layout layout) {
  BM_Conv<float>(state, which, pass, layout, dn::Arithmetic::automatic);
}
// bfloat16 on oneDNN's bf16 kernels (where the CPU has them).
void BM_ConvBf16(benchmark::State& state, int which, Pass pass, dn::Layout layout) {
  BM_Conv<memopt::bfloat16>(state, which, pass, layout, dn::Arithmetic::element);
}
// bfloat16 widened to float32 in the scratchpad around the float32 kernels.
void BM_ConvBf16ViaF32(benchmark::State& state, int which, Pass pass, dn::Layout layout) {
  BM_Conv<memopt::bfloat16>(state, which, pass, layout, dn::Arithmetic::float32);
}
// bfloat16 under Conv2dTuning's automatic choices (layouts, rows and arithmetic).
void BM_ConvBf16Auto(benchmark::State& state, int which, Pass pass, dn::Layout layout) {
  BM_Conv<memopt::bfloat16>(state, which, pass, layout, dn::Arithmetic::automatic);
}

// {batch, rows per call}: slices of 4 to 32 rows, and the whole batch.
void batches(benchmark::internal::Benchmark* b) {
  for (std::int64_t batch : {32, 128}) {
    for (std::int64_t rows : {4, 8, 16, 32})
      if (rows < batch) b->Args({batch, rows});
    b->Args({batch, batch});
  }
  b->Unit(benchmark::kMicrosecond)->MinTime(0.2);
}
// {batch, 0}: Conv2dTuning's automatic choice of layouts and rows.
void automatic(benchmark::internal::Benchmark* b) {
  b->Args({32, 0})->Args({128, 0})->Unit(benchmark::kMicrosecond)->MinTime(0.2);
}

BENCHMARK_CAPTURE(BM_ConvF32, conv1_fwd_f32_plain, 1, Pass::forward, dn::Layout::plain)
    ->Apply(batches);
BENCHMARK_CAPTURE(BM_ConvF32, conv1_fwd_f32_blocked, 1, Pass::forward, dn::Layout::blocked)
    ->Apply(batches);
BENCHMARK_CAPTURE(BM_ConvF32, conv1_fwd_f32_blocked_weights, 1, Pass::forward,
                  dn::Layout::blocked_weights)
    ->Apply(batches);
BENCHMARK_CAPTURE(BM_ConvBf16, conv1_fwd_bf16_plain, 1, Pass::forward, dn::Layout::plain)
    ->Apply(batches);
BENCHMARK_CAPTURE(BM_ConvBf16, conv1_fwd_bf16_blocked, 1, Pass::forward, dn::Layout::blocked)
    ->Apply(batches);
BENCHMARK_CAPTURE(BM_ConvBf16, conv1_fwd_bf16_blocked_weights, 1, Pass::forward,
                  dn::Layout::blocked_weights)
    ->Apply(batches);
BENCHMARK_CAPTURE(BM_ConvF32, conv1_bwd_data_f32_plain, 1, Pass::backward_data, dn::Layout::plain)
    ->Apply(batches);
BENCHMARK_CAPTURE(BM_ConvF32, conv1_bwd_data_f32_blocked, 1, Pass::backward_data,
                  dn::Layout::blocked)
    ->Apply(batches);
BENCHMARK_CAPTURE(BM_ConvF32, conv1_bwd_data_f32_blocked_weights, 1, Pass::backward_data,
                  dn::Layout::blocked_weights)
    ->Apply(batches);
BENCHMARK_CAPTURE(BM_ConvBf16, conv1_bwd_data_bf16_plain, 1, Pass::backward_data, dn::Layout::plain)
    ->Apply(batches);
BENCHMARK_CAPTURE(BM_ConvBf16, conv1_bwd_data_bf16_blocked, 1, Pass::backward_data,
                  dn::Layout::blocked)
    ->Apply(batches);
BENCHMARK_CAPTURE(BM_ConvBf16, conv1_bwd_data_bf16_blocked_weights, 1, Pass::backward_data,
                  dn::Layout::blocked_weights)
    ->Apply(batches);
BENCHMARK_CAPTURE(BM_ConvF32, conv1_bwd_weights_f32_plain, 1, Pass::backward_weights,
                  dn::Layout::plain)
    ->Apply(batches);
BENCHMARK_CAPTURE(BM_ConvF32, conv1_bwd_weights_f32_blocked, 1, Pass::backward_weights,
                  dn::Layout::blocked)
    ->Apply(batches);
BENCHMARK_CAPTURE(BM_ConvF32, conv1_bwd_weights_f32_blocked_weights, 1, Pass::backward_weights,
                  dn::Layout::blocked_weights)
    ->Apply(batches);
BENCHMARK_CAPTURE(BM_ConvBf16, conv1_bwd_weights_bf16_plain, 1, Pass::backward_weights,
                  dn::Layout::plain)
    ->Apply(batches);
BENCHMARK_CAPTURE(BM_ConvBf16, conv1_bwd_weights_bf16_blocked, 1, Pass::backward_weights,
                  dn::Layout::blocked)
    ->Apply(batches);
BENCHMARK_CAPTURE(BM_ConvBf16, conv1_bwd_weights_bf16_blocked_weights, 1, Pass::backward_weights,
                  dn::Layout::blocked_weights)
    ->Apply(batches);
BENCHMARK_CAPTURE(BM_ConvF32, conv2_fwd_f32_plain, 2, Pass::forward, dn::Layout::plain)
    ->Apply(batches);
BENCHMARK_CAPTURE(BM_ConvF32, conv2_fwd_f32_blocked, 2, Pass::forward, dn::Layout::blocked)
    ->Apply(batches);
BENCHMARK_CAPTURE(BM_ConvF32, conv2_fwd_f32_blocked_weights, 2, Pass::forward,
                  dn::Layout::blocked_weights)
    ->Apply(batches);
BENCHMARK_CAPTURE(BM_ConvBf16, conv2_fwd_bf16_plain, 2, Pass::forward, dn::Layout::plain)
    ->Apply(batches);
BENCHMARK_CAPTURE(BM_ConvBf16, conv2_fwd_bf16_blocked, 2, Pass::forward, dn::Layout::blocked)
    ->Apply(batches);
BENCHMARK_CAPTURE(BM_ConvBf16, conv2_fwd_bf16_blocked_weights, 2, Pass::forward,
                  dn::Layout::blocked_weights)
    ->Apply(batches);
BENCHMARK_CAPTURE(BM_ConvF32, conv2_bwd_data_f32_plain, 2, Pass::backward_data, dn::Layout::plain)
    ->Apply(batches);
BENCHMARK_CAPTURE(BM_ConvF32, conv2_bwd_data_f32_blocked, 2, Pass::backward_data,
                  dn::Layout::blocked)
    ->Apply(batches);
BENCHMARK_CAPTURE(BM_ConvF32, conv2_bwd_data_f32_blocked_weights, 2, Pass::backward_data,
                  dn::Layout::blocked_weights)
    ->Apply(batches);
BENCHMARK_CAPTURE(BM_ConvBf16, conv2_bwd_data_bf16_plain, 2, Pass::backward_data, dn::Layout::plain)
    ->Apply(batches);
BENCHMARK_CAPTURE(BM_ConvBf16, conv2_bwd_data_bf16_blocked, 2, Pass::backward_data,
                  dn::Layout::blocked)
    ->Apply(batches);
BENCHMARK_CAPTURE(BM_ConvBf16, conv2_bwd_data_bf16_blocked_weights, 2, Pass::backward_data,
                  dn::Layout::blocked_weights)
    ->Apply(batches);
BENCHMARK_CAPTURE(BM_ConvF32, conv2_bwd_weights_f32_plain, 2, Pass::backward_weights,
                  dn::Layout::plain)
    ->Apply(batches);
BENCHMARK_CAPTURE(BM_ConvF32, conv2_bwd_weights_f32_blocked, 2, Pass::backward_weights,
                  dn::Layout::blocked)
    ->Apply(batches);
BENCHMARK_CAPTURE(BM_ConvF32, conv2_bwd_weights_f32_blocked_weights, 2, Pass::backward_weights,
                  dn::Layout::blocked_weights)
    ->Apply(batches);
BENCHMARK_CAPTURE(BM_ConvBf16, conv2_bwd_weights_bf16_plain, 2, Pass::backward_weights,
                  dn::Layout::plain)
    ->Apply(batches);
BENCHMARK_CAPTURE(BM_ConvBf16, conv2_bwd_weights_bf16_blocked, 2, Pass::backward_weights,
                  dn::Layout::blocked)
    ->Apply(batches);
BENCHMARK_CAPTURE(BM_ConvBf16, conv2_bwd_weights_bf16_blocked_weights, 2, Pass::backward_weights,
                  dn::Layout::blocked_weights)
    ->Apply(batches);

}  // namespace

BENCHMARK_CAPTURE(BM_ConvBf16ViaF32, conv1_fwd_bf16_via_f32_blocked_weights, 1, Pass::forward,
                  dn::Layout::blocked_weights)
    ->Apply(batches);
BENCHMARK_CAPTURE(BM_ConvBf16ViaF32, conv1_bwd_weights_bf16_via_f32_blocked_weights, 1,
                  Pass::backward_weights, dn::Layout::blocked_weights)
    ->Apply(batches);
BENCHMARK_CAPTURE(BM_ConvBf16ViaF32, conv2_fwd_bf16_via_f32_blocked_weights, 2, Pass::forward,
                  dn::Layout::blocked_weights)
    ->Apply(batches);
BENCHMARK_CAPTURE(BM_ConvBf16ViaF32, conv2_bwd_weights_bf16_via_f32_blocked_weights, 2,
                  Pass::backward_weights, dn::Layout::blocked_weights)
    ->Apply(batches);
BENCHMARK_CAPTURE(BM_ConvBf16Auto, conv1_fwd_bf16_auto, 1, Pass::forward, dn::Layout::automatic)
    ->Apply(automatic);
BENCHMARK_CAPTURE(BM_ConvBf16Auto, conv1_bwd_weights_bf16_auto, 1, Pass::backward_weights,
                  dn::Layout::automatic)
    ->Apply(automatic);
BENCHMARK_CAPTURE(BM_ConvBf16Auto, conv2_fwd_bf16_auto, 2, Pass::forward, dn::Layout::automatic)
    ->Apply(automatic);
BENCHMARK_CAPTURE(BM_ConvBf16Auto, conv2_bwd_data_bf16_auto, 2, Pass::backward_data,
                  dn::Layout::automatic)
    ->Apply(automatic);
BENCHMARK_CAPTURE(BM_ConvBf16Auto, conv2_bwd_weights_bf16_auto, 2, Pass::backward_weights,
                  dn::Layout::automatic)
    ->Apply(automatic);
BENCHMARK_CAPTURE(BM_ConvF32, conv1_fwd_f32_auto, 1, Pass::forward, dn::Layout::automatic)
    ->Apply(automatic);
BENCHMARK_CAPTURE(BM_ConvF32, conv1_bwd_data_f32_auto, 1, Pass::backward_data,
                  dn::Layout::automatic)
    ->Apply(automatic);
BENCHMARK_CAPTURE(BM_ConvF32, conv1_bwd_weights_f32_auto, 1, Pass::backward_weights,
                  dn::Layout::automatic)
    ->Apply(automatic);
BENCHMARK_CAPTURE(BM_ConvF32, conv2_fwd_f32_auto, 2, Pass::forward, dn::Layout::automatic)
    ->Apply(automatic);
BENCHMARK_CAPTURE(BM_ConvF32, conv2_bwd_data_f32_auto, 2, Pass::backward_data,
                  dn::Layout::automatic)
    ->Apply(automatic);
BENCHMARK_CAPTURE(BM_ConvF32, conv2_bwd_weights_f32_auto, 2, Pass::backward_weights,
                  dn::Layout::automatic)
    ->Apply(automatic);

BENCHMARK_MAIN();
