// DepthwiseConv2D, Keras's per-channel convolution through oneDNN's grouped convolution:
// Keras's shapes, weight names and fans; the forward pass against a float64 loop over Keras's
// formula (same/valid padding, strides, depth multipliers, fused ReLU); gradients through the
// whole CPU step against central differences; 16-bit policies; checkpoints. Random, non-zero
// data throughout.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include <memopt/backend/cpu.hpp>
#include <memopt/memopt.hpp>

#include "reference_mlp.hpp"
#include "step_loss.hpp"
#include "temp_dir.hpp"

namespace mo = memopt;
using mo::testing::relative_error;

namespace {

using Plain = mo::DepthwiseConv2D<3>;
static_assert(mo::Layer<Plain>);
static_assert(Plain::output_shape(mo::image_shape(7, 6, 4)) == mo::image_shape(5, 4, 4));
static_assert(Plain::depth_multiplier == 1 && Plain::padding == mo::Padding::valid);
static_assert(Plain::name == "depthwise_conv2d" && Plain::class_name == "DepthwiseConv2D");
// Keras's options in any order.
using Wide = mo::DepthwiseConv2D<mo::KernelSize<3, 2>, mo::ReLU, mo::DepthMultiplier<3>,
                                 mo::Strides<2>, mo::Same>;
static_assert(std::is_same_v<Wide::activation, mo::ReLU> && Wide::depth_multiplier == 3 &&
              Wide::strides.h == 2 && Wide::padding == mo::Padding::same);
static_assert(Wide::output_shape(mo::image_shape(7, 6, 4)) == mo::image_shape(4, 3, 12));
static_assert(
    mo::DepthwiseConv2D<3, mo::Same, mo::DepthMultiplier<2>>::output_shape(mo::image_shape(7, 6,
                                                                                           4)) ==
    mo::DepthwiseConv2D<3, mo::DepthMultiplier<2>, mo::Same>::output_shape(mo::image_shape(7, 6,
                                                                                           4)));
// Keras's weights: depthwise_kernel [kh, kw, C, m], bias [C x m]; Glorot over kh kw C in and
// kh kw m out.
constexpr auto kDecls = Wide::weights(mo::image_shape(7, 6, 4));
static_assert(kDecls[0].name == "depthwise_kernel" && kDecls[0].rank == 4 &&
              kDecls[0].shape[0] == 3 && kDecls[0].shape[1] == 2 && kDecls[0].shape[2] == 4 &&
              kDecls[0].shape[3] == 3);
static_assert(kDecls[0].fan_in == 6 * 4 && kDecls[0].fan_out == 6 * 3);
static_assert(kDecls[1].name == "bias" && kDecls[1].size() == 12);

using Net = mo::Sequential<
    mo::Conv2D<3, 3, mo::Same, mo::Tanh>,
    mo::DepthwiseConv2D<3, mo::Strides<2>, mo::Same, mo::DepthMultiplier<2>, mo::Tanh>, mo::Flatten,
    mo::Dense<3, mo::Softmax>>;
using NetIn = mo::Input<7, 6, 2>;
using NetSpec = mo::ModelSpec<Net, NetIn, mo::float32>;
static_assert(NetSpec::parameter_count ==
              (3 * 3 * 2 * 3 + 3) + (3 * 3 * 3 * 2 + 6) + (4 * 3 * 6 * 3 + 3));
static_assert(mo::plan::training_plan<NetSpec>(8).arena_bytes ==
              mo::plan::training_plan<NetSpec>(8).lower_bound_bytes());

// Keras's padding along one axis: output length and the zeros before.
struct Axis {
  std::size_t out, before;
};
Axis keras_axis(std::size_t n, std::size_t k, std::size_t s, bool same) {
  if (!same) return {(n - k) / s + 1, 0};
  const std::size_t out = (n + s - 1) / s;
  const std::size_t needed = (out - 1) * s + k;
  return {out, needed > n ? (needed - n) / 2 : 0};
}

// y[n, i, j, c m + q] = f(b[c m + q] + sum_{di, dj} x[n, i s - pad + di, j s - pad + dj, c]
// k[di, dj, c, q]) in float64.
std::vector<double> depthwise_reference(const std::vector<float>& x, const std::vector<float>& k,
                                        const std::vector<float>& b, std::size_t rows,
                                        std::size_t h, std::size_t w, std::size_t c, std::size_t kh,
                                        std::size_t kw, std::size_t m, std::size_t stride,
                                        bool same, bool relu) {
  const Axis ay = keras_axis(h, kh, stride, same), ax = keras_axis(w, kw, stride, same);
  std::vector<double> y(rows * ay.out * ax.out * c * m);
  for (std::size_t n = 0; n < rows; ++n)
    for (std::size_t i = 0; i < ay.out; ++i)
      for (std::size_t j = 0; j < ax.out; ++j)
        for (std::size_t ch = 0; ch < c; ++ch)
          for (std::size_t q = 0; q < m; ++q) {
            double z = b[ch * m + q];
            for (std::size_t di = 0; di < kh; ++di)
              for (std::size_t dj = 0; dj < kw; ++dj) {
                const auto yy = static_cast<std::ptrdiff_t>(i * stride + di) -
                                static_cast<std::ptrdiff_t>(ay.before);
                const auto xx = static_cast<std::ptrdiff_t>(j * stride + dj) -
                                static_cast<std::ptrdiff_t>(ax.before);
                if (yy < 0 || xx < 0 || yy >= std::ptrdiff_t(h) || xx >= std::ptrdiff_t(w))
                  continue;
                z += double(x[((n * h + std::size_t(yy)) * w + std::size_t(xx)) * c + ch]) *
                     double(k[((di * kw + dj) * c + ch) * m + q]);
              }
            y[((n * ay.out + i) * ax.out + j) * c * m + ch * m + q] = relu ? std::max(z, 0.0) : z;
          }
  return y;
}

// Runs node 0 of `Spec` (a DepthwiseConv2D `L`) forward on random data and compares it with
// the float64 loop.
template <class L, std::size_t H, std::size_t W, std::size_t C>
double forward_error(std::size_t rows) {
  using Spec =
      mo::ModelSpec<mo::Sequential<L, mo::Flatten, mo::Dense<2>>, mo::Input<H, W, C>, mo::float32>;
  constexpr mo::Shape out = Spec::nodes[0].out;
  mo::cpu_backend::LayerKernel<L, Spec, 0> kernel;
  mo::Rng rng(rows * 7 + C);
  std::vector<float> x(rows * H * W * C),
      params(L::weights(Spec::nodes[0].in)[0].size() + out.channels());
  for (float& v : x) v = rng.uniform(-1.0f, 1.0f);
  for (float& v : params) v = rng.uniform(-0.5f, 0.5f);
  const std::size_t ks = params.size() - out.channels();
  std::vector<float> y(rows * out.size());
  kernel.prepare(rows);
  std::vector<std::byte> scratch(kernel.scratch_bytes(rows) + 64);
  mo::cpu_backend::ForwardIo<float, float> io;
  io.rows = rows;
  io.x = x.data();
  io.y = y.data();
  io.params = params.data();
  io.weights = params.data();
  io.scratch = reinterpret_cast<float*>(scratch.data());
  kernel.forward(io);
  const std::vector<float> k(params.begin(), params.begin() + std::ptrdiff_t(ks));
  const std::vector<float> b(params.begin() + std::ptrdiff_t(ks), params.end());
  const std::vector<double> want = depthwise_reference(
      x, k, b, rows, H, W, C, L::kernel.h, L::kernel.w, L::depth_multiplier, L::strides.h,
      L::padding == mo::Padding::same, std::is_same_v<typename L::activation, mo::ReLU>);
  REQUIRE(want.size() == y.size());
  return relative_error(y, want);
}

}  // namespace

TEST_CASE("DepthwiseConv2D forward: Keras's formula in float64, padding, strides, multipliers") {
  CHECK(forward_error<mo::DepthwiseConv2D<3>, 7, 6, 4>(3) < 1e-6);
  CHECK(forward_error<mo::DepthwiseConv2D<3, mo::Same, mo::DepthMultiplier<2>>, 7, 6, 3>(4) < 1e-6);
  CHECK(forward_error<mo::DepthwiseConv2D<mo::KernelSize<3, 2>, mo::Strides<2>, mo::Same,
                                          mo::DepthMultiplier<3>, mo::ReLU>,
                      9, 8, 5>(5) < 1e-6);
  CHECK(forward_error<mo::DepthwiseConv2D<5, mo::Strides<2, 2>>, 11, 10, 8>(2) < 1e-6);
  // Batches that oneDNN runs in several slices, the tail included.
  CHECK(forward_error<mo::DepthwiseConv2D<3, mo::Same, mo::ReLU>, 16, 16, 16>(37) < 1e-6);
}

TEST_CASE("DepthwiseConv2D between a Conv2D and a Dense: every gradient by central differences") {
  mo::Model<Net, NetIn, mo::float32> model{3};
  std::vector<float> w = model.get_parameters();
  mo::Rng rng(17);
  for (float& v : w) v += rng.uniform(-0.1f, 0.1f);
  std::vector<float> x(5 * NetSpec::inputs);
  std::vector<std::int32_t> y(5);
  for (float& v : x) v = rng.uniform(-1.5f, 1.5f);
  for (auto& v : y) v = static_cast<std::int32_t>(rng.below(3));
  mo::testing::StepLoss<NetSpec> loss(std::move(x), std::move(y));

  std::vector<float> analytic;
  CHECK(std::isfinite(loss(w, &analytic)));
  std::vector<double> numeric(w.size());
  for (std::size_t j = 0; j < w.size(); ++j) numeric[j] = loss.central_difference(w, j, 5e-3f);
  // The depthwise kernel and bias, and the first Conv2D's weights, whose gradient passes
  // through the depthwise input gradient.
  const std::size_t conv = 3 * 3 * 2 * 3 + 3, depthwise = 3 * 3 * 3 * 2 + 6;
  const auto slice = [](const auto& v, std::size_t from, std::size_t to) {
    return std::vector<double>(v.begin() + std::ptrdiff_t(from), v.begin() + std::ptrdiff_t(to));
  };
  const double through = relative_error(slice(analytic, 0, conv), slice(numeric, 0, conv));
  const double own = relative_error(slice(analytic, conv, conv + depthwise),
                                    slice(numeric, conv, conv + depthwise));
  const double all = relative_error(analytic, numeric);
  MESSAGE("relative errors: below it " << through << ", its own " << own << ", all " << all);
  CHECK(through < 1e-2);
  CHECK(own < 1e-2);
  CHECK(all < 1e-2);
}

TEST_CASE("DepthwiseConv2D under mixed_bfloat16 and mixed_float16: within 16-bit rounding") {
  const auto run = [](auto policy) {
    using P = decltype(policy);
    mo::Model<Net, NetIn, P> model{11};
    mo::Rng rng(5);
    std::vector<float> x(16 * NetSpec::inputs);
    for (float& v : x) v = rng.uniform(-1.0f, 1.0f);
    return model.predict(x);
  };
  const std::vector<float> f32 = run(mo::float32{});
  CHECK(relative_error(run(mo::mixed_bfloat16{}), f32) < 2e-2);
  CHECK(relative_error(run(mo::mixed_float16{}), f32) < 2e-3);
}

TEST_CASE("DepthwiseConv2D: fit learns, checkpoints under Keras's names, summary rows") {
  using M = mo::Model<Net, NetIn, mo::float32>;
  mo::Rng rng(23);
  std::vector<float> x(64 * NetSpec::inputs);
  std::vector<std::int32_t> y(64);
  for (std::size_t n = 0; n < 64; ++n) {
    y[n] = static_cast<std::int32_t>(n % 3);
    for (std::size_t i = 0; i < NetSpec::inputs; ++i)
      x[n * NetSpec::inputs + i] =
          rng.uniform(-1.0f, 1.0f) + (i % 3 == std::size_t(y[n]) ? 1.0f : 0.0f);
  }
  M model{5};
  model.compile(mo::Adam{{.learning_rate = 1e-2}}, mo::SparseCategoricalCrossentropy{});
  const auto h = model.fit(mo::data::from(x, y, NetSpec::inputs) | mo::data::batch(16),
                           {.epochs = 5, .verbose = 0});
  CHECK(h.history.at("loss").back() < 0.8 * h.history.at("loss").front());

  const std::string s = model.summary_string();
  CHECK(s.find("depthwise_conv2d (DepthwiseConv2D)") != std::string::npos);
  mo::testing::TempDir dir;
  model.save_weights(dir / "w.safetensors");
  const auto file = mo::io::SafetensorsFile::read(dir / "w.safetensors");
  CHECK(file.find("depthwise_conv2d/depthwise_kernel") != nullptr);
  CHECK(file.find("depthwise_conv2d/bias") != nullptr);
  M restored{6};
  restored.load_weights(dir / "w.safetensors");
  CHECK(restored.predict(x) == model.predict(x));
}
