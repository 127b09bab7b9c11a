// Microbenchmarks of the oneDNN CPU operations (backend/cpu/dnnl/): the two convolutions of
// Keras's "Simple MNIST convnet", 28x28x1 -> 26x26x32 and 13x13x32 -> 11x11x64 (3x3, valid,
// fused ReLU), at batch 32 and 128, forward, backward-data and backward-weights, float32
// against bfloat16 (native bf16 kernels where the CPU has AVX-512 BF16, else converted to
// float32 in the scratchpad: the benchmark's label says which).
//
//   bench_dnnl_ops [--benchmark_filter=REGEX] [--benchmark_min_time=SECONDS]
//
// `Blocked` rows time the same float32 forward and weight gradient through oneDNN's preferred
// (blocked, format_tag::any) layouts, including the reorders from and to memopt's NHWC
// buffers that such a layout would cost: the comparison behind Conv2d's choice of plain
// NHWC/HWIO descriptors. items_per_second counts samples.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <unordered_map>
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
void BM_Conv(benchmark::State& state, int which, Pass pass) {
  const dn::Conv2dShape s = mnist_conv(which, state.range(0));
  dn::Conv2d<T> conv(s);
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
  state.SetLabel(std::string(conv.native() ? "native " : "via f32 ") + conv.implementation());
}

void BM_ConvF32(benchmark::State& state, int which, Pass pass) {
  BM_Conv<float>(state, which, pass);
}
void BM_ConvBf16(benchmark::State& state, int which, Pass pass) {
  BM_Conv<memopt::bfloat16>(state, which, pass);
}

// The float32 forward and weight gradient through oneDNN's preferred layouts, with the
// reorders between them and NHWC/HWIO buffers inside the timed loop.
void BM_ConvBlocked(benchmark::State& state, int which, Pass pass) {
  using md = dnnl::memory::desc;
  using tag = dnnl::memory::format_tag;
  const auto f32 = dnnl::memory::data_type::f32;
  const dn::Conv2dShape s = mnist_conv(which, state.range(0));
  const auto& ctx = dn::Context::get();
  const md src_user({s.batch, s.in_channels, s.height, s.width}, f32, tag::nhwc);
  const md dst_user({s.batch, s.filters, s.out_height(), s.out_width()}, f32, tag::nhwc);
  const md wei_user({s.filters, s.in_channels, s.kernel_h, s.kernel_w}, f32, tag::hwio);
  const md bias({s.filters}, f32, tag::x);
  const md src_any({s.batch, s.in_channels, s.height, s.width}, f32, tag::any);
  const md dst_any({s.batch, s.filters, s.out_height(), s.out_width()}, f32, tag::any);
  const md wei_any({s.filters, s.in_channels, s.kernel_h, s.kernel_w}, f32, tag::any);
  dnnl::primitive_attr attr;
  dnnl::post_ops ops;
  ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
  attr.set_post_ops(ops);
  const dnnl::convolution_forward::primitive_desc fpd({dnnl::prop_kind::forward_training,
                                                       dnnl::algorithm::convolution_direct,
                                                       src_any,
                                                       wei_any,
                                                       bias,
                                                       dst_any,
                                                       {1, 1},
                                                       {0, 0},
                                                       {0, 0}},
                                                      attr, ctx.engine);
  const dnnl::convolution_backward_weights::primitive_desc wpd({dnnl::algorithm::convolution_direct,
                                                                src_any,
                                                                wei_any,
                                                                bias,
                                                                dst_any,
                                                                {1, 1},
                                                                {0, 0},
                                                                {0, 0}},
                                                               ctx.engine, fpd);

  auto x = random_values<float>(s.input_elements(), 1);
  auto w = random_values<float>(s.kernel_elements(), 2);
  auto b = random_values<float>(static_cast<std::size_t>(s.filters), 3);
  auto y = random_values<float>(s.output_elements(), 4);
  std::vector<float> dw(s.kernel_elements()), db(b.size());
  dnnl::memory x_user(src_user, ctx.engine, x.data()), y_user(dst_user, ctx.engine, y.data());
  dnnl::memory w_user(wei_user, ctx.engine, w.data()), b_mem(bias, ctx.engine, b.data());
  dnnl::memory dw_user(wei_user, ctx.engine, dw.data()), db_mem(bias, ctx.engine, db.data());

  const bool fwd = pass == Pass::forward;
  const md src_md = fwd ? fpd.src_desc() : wpd.src_desc();
  const md dst_md = fwd ? fpd.dst_desc() : wpd.diff_dst_desc();
  const md wei_md = fwd ? fpd.weights_desc() : wpd.diff_weights_desc();
  dnnl::memory x_blk(src_md, ctx.engine), y_blk(dst_md, ctx.engine), w_blk(wei_md, ctx.engine);
  dnnl::reorder x_in(x_user, x_blk), w_in(w_user, w_blk), y_out(y_blk, y_user), y_in(y_user, y_blk),
      dw_out(w_blk, dw_user);
  dnnl::convolution_forward conv_fwd(fpd);
  dnnl::convolution_backward_weights conv_bww(wpd);
  dnnl::stream stream = ctx.stream;
  for (auto _ : state) {
    x_in.execute(stream, x_user, x_blk);
    if (fwd) {
      w_in.execute(stream, w_user, w_blk);
      conv_fwd.execute(stream, {{DNNL_ARG_SRC, x_blk},
                                {DNNL_ARG_WEIGHTS, w_blk},
                                {DNNL_ARG_BIAS, b_mem},
                                {DNNL_ARG_DST, y_blk}});
      y_out.execute(stream, y_blk, y_user);
    } else {
      y_in.execute(stream, y_user, y_blk);
      conv_bww.execute(stream, {{DNNL_ARG_SRC, x_blk},
                                {DNNL_ARG_DIFF_DST, y_blk},
                                {DNNL_ARG_DIFF_WEIGHTS, w_blk},
                                {DNNL_ARG_DIFF_BIAS, db_mem}});
      dw_out.execute(stream, w_blk, dw_user);
    }
    stream.wait();
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * s.batch);
  state.SetLabel(fwd ? fpd.impl_info_str() : wpd.impl_info_str());
}

void batches(benchmark::internal::Benchmark* b) {
  b->Arg(32)->Arg(128)->Unit(benchmark::kMicrosecond)->MinTime(0.2);
}

BENCHMARK_CAPTURE(BM_ConvF32, conv1_fwd_f32, 1, Pass::forward)->Apply(batches);
BENCHMARK_CAPTURE(BM_ConvBf16, conv1_fwd_bf16, 1, Pass::forward)->Apply(batches);
BENCHMARK_CAPTURE(BM_ConvBlocked, conv1_fwd_f32_blocked, 1, Pass::forward)->Apply(batches);
BENCHMARK_CAPTURE(BM_ConvF32, conv1_bwd_weights_f32, 1, Pass::backward_weights)->Apply(batches);
BENCHMARK_CAPTURE(BM_ConvBf16, conv1_bwd_weights_bf16, 1, Pass::backward_weights)->Apply(batches);
BENCHMARK_CAPTURE(BM_ConvBlocked, conv1_bwd_weights_f32_blocked, 1, Pass::backward_weights)
    ->Apply(batches);
BENCHMARK_CAPTURE(BM_ConvF32, conv1_bwd_data_f32, 1, Pass::backward_data)->Apply(batches);

BENCHMARK_CAPTURE(BM_ConvF32, conv2_fwd_f32, 2, Pass::forward)->Apply(batches);
BENCHMARK_CAPTURE(BM_ConvBf16, conv2_fwd_bf16, 2, Pass::forward)->Apply(batches);
BENCHMARK_CAPTURE(BM_ConvBlocked, conv2_fwd_f32_blocked, 2, Pass::forward)->Apply(batches);
BENCHMARK_CAPTURE(BM_ConvF32, conv2_bwd_data_f32, 2, Pass::backward_data)->Apply(batches);
BENCHMARK_CAPTURE(BM_ConvBf16, conv2_bwd_data_bf16, 2, Pass::backward_data)->Apply(batches);
BENCHMARK_CAPTURE(BM_ConvF32, conv2_bwd_weights_f32, 2, Pass::backward_weights)->Apply(batches);
BENCHMARK_CAPTURE(BM_ConvBf16, conv2_bwd_weights_bf16, 2, Pass::backward_weights)->Apply(batches);
BENCHMARK_CAPTURE(BM_ConvBlocked, conv2_bwd_weights_f32_blocked, 2, Pass::backward_weights)
    ->Apply(batches);

}  // namespace

BENCHMARK_MAIN();
