// SeparableConv2D, Keras's depthwise-separable convolution: Keras's shapes and weights; the
// same loss, predictions and gradients as a DepthwiseConv2D without bias followed by a 1x1
// Conv2D with the same weights; every gradient against central differences; 16-bit policies;
// checkpoints. Random, non-zero data throughout.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <span>
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

using Sep = mo::SeparableConv2D<5, 3, mo::Strides<2>, mo::ReLU, mo::Same, mo::DepthMultiplier<2>>;
static_assert(mo::Layer<Sep>);
static_assert(Sep::output_shape(mo::image_shape(7, 6, 3)) == mo::image_shape(4, 3, 5));
static_assert(Sep::middle_shape(mo::image_shape(7, 6, 3)) == mo::image_shape(4, 3, 6));
static_assert(std::is_same_v<Sep::activation, mo::ReLU> && Sep::depth_multiplier == 2);
static_assert(Sep::name == "separable_conv2d" && Sep::class_name == "SeparableConv2D");
constexpr auto kDecls = Sep::weights(mo::image_shape(7, 6, 3));
static_assert(kDecls[0].name == "depthwise_kernel" && kDecls[0].size() == 3 * 3 * 3 * 2);
static_assert(kDecls[1].name == "pointwise_kernel" && kDecls[1].shape[0] == 1 &&
              kDecls[1].shape[1] == 1 && kDecls[1].shape[2] == 6 && kDecls[1].shape[3] == 5);
static_assert(kDecls[1].fan_in == 6 && kDecls[1].fan_out == 5);
static_assert(kDecls[2].name == "bias" && kDecls[2].size() == 5);
// The depthwise output is kept for the pointwise kernel's gradient, one per sample.
static_assert(Sep::saved(mo::image_shape(7, 6, 3))[0].per_sample == 4 * 3 * 6);

using In = mo::Input<9, 8, 3>;
template <class Act>
using SeparableNet =
    mo::Sequential<mo::Conv2D<3, 3, mo::Same, mo::Tanh>,
                   mo::SeparableConv2D<4, 3, mo::Strides<2>, mo::Same, mo::DepthMultiplier<2>, Act>,
                   mo::Flatten, mo::Dense<3, mo::Softmax>>;
template <class Act>
using TwoLayerNet =
    mo::Sequential<mo::Conv2D<3, 3, mo::Same, mo::Tanh>,
                   mo::DepthwiseConv2D<3, mo::Strides<2>, mo::Same, mo::DepthMultiplier<2>>,
                   mo::Conv2D<4, 1, Act>, mo::Flatten, mo::Dense<3, mo::Softmax>>;
constexpr std::size_t kConv = 3 * 3 * 3 * 3 + 3, kDepthwise = 3 * 3 * 3 * 2, kMid = 6;
constexpr std::size_t kPointwise = kMid * 4, kBias = 4;

// A loss of `rows` random samples of `Spec`'s inputs and 3 classes.
template <class Spec>
mo::testing::StepLoss<Spec> random_loss(std::size_t rows, std::uint64_t seed) {
  mo::Rng rng(seed);
  std::vector<float> x(rows * Spec::inputs);
  std::vector<std::int32_t> y(rows);
  for (float& v : x) v = rng.uniform(-1.5f, 1.5f);
  for (auto& v : y) v = static_cast<std::int32_t>(rng.below(3));
  return mo::testing::StepLoss<Spec>(std::move(x), std::move(y));
}

// The two-layer net's parameters from the separable one's: the depthwise bias is zero.
std::vector<float> as_two_layers(const std::vector<float>& w) {
  std::vector<float> t;
  t.insert(t.end(), w.begin(), w.begin() + std::ptrdiff_t(kConv + kDepthwise));
  t.insert(t.end(), kMid, 0.0f);
  t.insert(t.end(), w.begin() + std::ptrdiff_t(kConv + kDepthwise), w.end());
  return t;
}
// ... and the two-layer net's gradients without the depthwise bias's.
std::vector<float> without_depthwise_bias(const std::vector<float>& g) {
  std::vector<float> t(g.begin(), g.begin() + std::ptrdiff_t(kConv + kDepthwise));
  t.insert(t.end(), g.begin() + std::ptrdiff_t(kConv + kDepthwise + kMid), g.end());
  return t;
}

template <class Act>
void check_same_as_two_layers() {
  using S = mo::ModelSpec<SeparableNet<Act>, In, mo::float32>;
  using D = mo::ModelSpec<TwoLayerNet<Act>, In, mo::float32>;
  static_assert(S::parameter_count + kMid == D::parameter_count);
  static_assert(S::parameter_count ==
                kConv + kDepthwise + kPointwise + kBias + (5 * 4 * 4 * 3 + 3));
  mo::Model<SeparableNet<Act>, In, mo::float32> model{3};
  std::vector<float> w = model.get_parameters();
  mo::Rng rng(9);
  for (float& v : w) v += rng.uniform(-0.1f, 0.1f);
  std::vector<float> gs, gd;
  const double ls = random_loss<S>(6, 21)(w, &gs);
  const double ld = random_loss<D>(6, 21)(as_two_layers(w), &gd);
  INFO(Act::name);
  CHECK(ls > 0.0);
  CHECK(ls == doctest::Approx(ld).epsilon(1e-6));
  CHECK(relative_error(gs, without_depthwise_bias(gd)) < 1e-5);
}

}  // namespace

TEST_CASE("SeparableConv2D computes a bias-free DepthwiseConv2D then a 1x1 Conv2D") {
  check_same_as_two_layers<mo::ReLU>();
  check_same_as_two_layers<mo::Tanh>();
  check_same_as_two_layers<mo::Linear>();
}

TEST_CASE("SeparableConv2D between a Conv2D and a Dense: every gradient by central differences") {
  using Spec = mo::ModelSpec<SeparableNet<mo::Tanh>, In, mo::float32>;
  mo::Model<SeparableNet<mo::Tanh>, In, mo::float32> model{4};
  std::vector<float> w = model.get_parameters();
  mo::Rng rng(17);
  for (float& v : w) v += rng.uniform(-0.1f, 0.1f);
  auto loss = random_loss<Spec>(5, 29);
  std::vector<float> analytic;
  CHECK(std::isfinite(loss(w, &analytic)));
  std::vector<double> numeric(w.size());
  for (std::size_t j = 0; j < w.size(); ++j) numeric[j] = loss.central_difference(w, j, 5e-3f);
  const auto part = [](const auto& v, std::size_t from, std::size_t n) {
    return std::vector<double>(v.begin() + std::ptrdiff_t(from),
                               v.begin() + std::ptrdiff_t(from + n));
  };
  const double below = relative_error(part(analytic, 0, kConv), part(numeric, 0, kConv));
  const double depthwise =
      relative_error(part(analytic, kConv, kDepthwise), part(numeric, kConv, kDepthwise));
  const double pointwise = relative_error(part(analytic, kConv + kDepthwise, kPointwise + kBias),
                                          part(numeric, kConv + kDepthwise, kPointwise + kBias));
  MESSAGE("relative errors: below " << below << ", depthwise " << depthwise << ", pointwise "
                                    << pointwise);
  CHECK(below < 1e-2);
  CHECK(depthwise < 1e-2);
  CHECK(pointwise < 1e-2);
}

TEST_CASE("SeparableConv2D under mixed_bfloat16 and mixed_float16: within 16-bit rounding") {
  const auto run = [](auto policy) {
    using P = decltype(policy);
    mo::Model<SeparableNet<mo::GELU>, In, P> model{11};
    mo::Rng rng(5);
    std::vector<float> x(16 * In::shape.size());
    for (float& v : x) v = rng.uniform(-1.0f, 1.0f);
    return model.predict(x);
  };
  const std::vector<float> f32 = run(mo::float32{});
  CHECK(relative_error(run(mo::mixed_bfloat16{}), f32) < 2e-2);
  CHECK(relative_error(run(mo::mixed_float16{}), f32) < 2e-3);
}

TEST_CASE("SeparableConv2D: fit learns, checkpoints under Keras's names, summary rows") {
  using M = mo::Model<SeparableNet<mo::ReLU>, In, mo::float32>;
  constexpr std::size_t n = M::spec::inputs;
  mo::Rng rng(23);
  std::vector<float> x(64 * n);
  std::vector<std::int32_t> y(64);
  for (std::size_t r = 0; r < 64; ++r) {
    y[r] = static_cast<std::int32_t>(r % 3);
    for (std::size_t i = 0; i < n; ++i)
      x[r * n + i] = rng.uniform(-1.0f, 1.0f) + (i % 3 == std::size_t(y[r]) ? 1.0f : 0.0f);
  }
  M model{5};
  model.compile(mo::Adam{{.learning_rate = 1e-2}}, mo::SparseCategoricalCrossentropy{});
  const auto h =
      model.fit(mo::data::from(x, y, n) | mo::data::batch(16), {.epochs = 5, .verbose = 0});
  CHECK(h.history.at("loss").back() < 0.8 * h.history.at("loss").front());
  CHECK(model.summary_string().find("separable_conv2d (SeparableConv2D)") != std::string::npos);
  mo::testing::TempDir dir;
  model.save_weights(dir / "w.safetensors");
  const auto file = mo::io::SafetensorsFile::read(dir / "w.safetensors");
  CHECK(file.find("separable_conv2d/depthwise_kernel") != nullptr);
  CHECK(file.find("separable_conv2d/pointwise_kernel") != nullptr);
  CHECK(file.find("separable_conv2d/bias") != nullptr);
  M restored{6};
  restored.load_weights(dir / "w.safetensors");
  CHECK(restored.predict(x) == model.predict(x));
}
