// RandomFlip and RandomContrast, Keras's augmentation layers: what each image becomes in fit
// (against the flips themselves and a float64 reference of Keras's formula), how often each
// draw comes, the identity outside fit, input gradients as the forward's transpose and by
// central differences, and whole models trained from 8-bit pixels. Random, non-zero data.
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include <memopt/backend/cpu.hpp>
#include <memopt/data/image_batch.hpp>
#include <memopt/data/image_dataset.hpp>
#include <memopt/memopt.hpp>

#include "reference_mlp.hpp"
#include "step_loss.hpp"
#include "temp_dir.hpp"

namespace mo = memopt;
using mo::testing::relative_error;

namespace {

static_assert(mo::Layer<mo::RandomFlip<>> && mo::Layer<mo::RandomContrast<std::ratio<1, 5>>>);
static_assert(std::is_same_v<mo::RandomFlip<>::mode, mo::HorizontalAndVertical>);  // Keras's
static_assert(mo::RandomFlip<mo::Vertical>::output_shape(mo::image_shape(5, 4, 3)) ==
              mo::image_shape(5, 4, 3));
static_assert(mo::RandomFlip<>::name == "random_flip" &&
              mo::RandomContrast<std::ratio<1, 5>>::class_name == "RandomContrast");
static_assert(mo::weight_decl_count_v<mo::RandomFlip<>> == 0 &&
              mo::weight_decl_count_v<mo::RandomContrast<std::ratio<1, 5>>> == 0);
// Keras's factor=0.2 is [0.8, 1.2]; factor=(0.1, 0.3) is [0.9, 1.3]; value_range=(0, 255) by
// default; the options in either order.
using Symmetric = mo::RandomContrast<std::ratio<1, 5>>;
static_assert(Symmetric::lower == 0.2 && Symmetric::upper == 0.2 && Symmetric::low == 0 &&
              Symmetric::high == 255);
using Skewed = mo::RandomContrast<std::ratio<1, 10>, mo::ValueRange<0, 1>, std::ratio<3, 10>>;
static_assert(Skewed::lower == 0.1 && Skewed::upper == 0.3 && Skewed::high == 1);
static_assert(std::is_same_v<typename Skewed::Upper,
                             typename mo::RandomContrast<std::ratio<1, 10>, std::ratio<3, 10>,
                                                         mo::ValueRange<0, 1>>::Upper>);

// As the first layer nothing below needs a gradient: no backward, so no bits are kept.
using FirstSpec = mo::ModelSpec<
    mo::Sequential<mo::RandomContrast<std::ratio<1, 2>>, mo::Flatten, mo::Dense<2, mo::Softmax>>,
    mo::Input<4, 4, 3>, mo::float32>;
static_assert(!mo::plan::training_plan<FirstSpec>(8).contains(mo::plan::BufferRole::saved, 0));
// Below it a Conv2D learns: the bits are kept from forward to the input gradient.
using MiddleSpec =
    mo::ModelSpec<mo::Sequential<mo::Conv2D<2, 3, mo::Same>, mo::RandomContrast<std::ratio<1, 2>>,
                                 mo::Flatten, mo::Dense<2, mo::Softmax>>,
                  mo::Input<4, 4, 3>, mo::float32>;
static_assert(mo::plan::training_plan<MiddleSpec>(8).contains(mo::plan::BufferRole::saved, 1));
static_assert(mo::plan::training_plan<MiddleSpec>(8).arena_bytes ==
              mo::plan::training_plan<MiddleSpec>(8).lower_bound_bytes());

constexpr std::size_t kH = 5, kW = 4, kC = 3, kValues = kH * kW * kC;
using In = mo::Input<kH, kW, kC>;

template <class Layer>
using SpecOf =
    mo::ModelSpec<mo::Sequential<Layer, mo::Flatten, mo::Dense<2, mo::Softmax>>, In, mo::float32>;

std::vector<float> random_images(std::size_t rows, std::uint64_t seed, float lo, float hi) {
  mo::Rng rng(seed);
  std::vector<float> x(rows * kValues);
  for (float& v : x) v = rng.uniform(lo, hi);
  return x;
}

// One image flipped along its width and/or height.
std::vector<float> flipped(const float* x, bool horizontal, bool vertical) {
  std::vector<float> y(kValues);
  for (std::size_t h = 0; h < kH; ++h)
    for (std::size_t w = 0; w < kW; ++w)
      for (std::size_t c = 0; c < kC; ++c)
        y[(h * kW + w) * kC + c] =
            x[((vertical ? kH - 1 - h : h) * kW + (horizontal ? kW - 1 - w : w)) * kC + c];
  return y;
}

// Runs a kernel's forward over `rows` images; `saved` receives what backward reads.
template <class Kernel>
std::vector<float> forward(Kernel& k, const std::vector<float>& x, std::size_t rows,
                           std::uint64_t seed, bool training, std::vector<std::byte>* saved = {}) {
  std::vector<float> y(x.size());
  mo::cpu_backend::ForwardIo<float, float> io;
  io.rows = rows;
  io.x = x.data();
  io.y = y.data();
  io.training = training;
  io.seed = seed;
  if (saved) io.saved[0] = saved->data();
  k.prepare(rows);
  k.forward(io);
  return y;
}
template <class Kernel>
std::vector<float> input_grad(Kernel& k, const std::vector<float>& dy, std::size_t rows,
                              std::uint64_t seed, std::vector<std::byte>* saved = {}) {
  std::vector<float> dx(dy.size());
  mo::cpu_backend::BackwardIo<float> io;
  io.rows = rows;
  io.dy = dy.data();
  io.dx = dx.data();
  io.seed = seed;
  if (saved) io.saved[0] = saved->data();
  k.input_grad(io);
  return dx;
}

double dot(const std::vector<float>& a, const std::vector<float>& b) {
  double s = 0;
  for (std::size_t i = 0; i < a.size(); ++i) s += double(a[i]) * double(b[i]);
  return s;
}

// Which of the four flips image r became (bit 0 horizontal, bit 1 vertical); -1 for none.
int flip_of(const float* x, const float* y) {
  for (int f = 0; f < 4; ++f)
    if (flipped(x, f & 1, f & 2) == std::vector<float>(y, y + kValues)) return f;
  return -1;
}

template <class Mode>
std::array<std::size_t, 4> flip_counts(std::size_t rows, std::uint64_t seed) {
  using L = mo::RandomFlip<Mode>;
  mo::cpu_backend::LayerKernel<L, SpecOf<L>, 0> kernel;
  const std::vector<float> x = random_images(rows, 3, 0.0f, 255.0f);
  const std::vector<float> y = forward(kernel, x, rows, seed, true);
  std::array<std::size_t, 4> counts{};
  for (std::size_t r = 0; r < rows; ++r) {
    const int f = flip_of(&x[r * kValues], &y[r * kValues]);
    REQUIRE(f >= 0);
    ++counts[static_cast<std::size_t>(f)];
  }
  return counts;
}

// Keras's contrast in float64: per channel mean, (x - mean) * c + mean, clipped.
std::vector<double> contrast_reference(const std::vector<double>& x, double c, double lo,
                                       double hi) {
  std::array<double, kC> mean{};
  for (std::size_t j = 0; j < kValues; ++j) mean[j % kC] += x[j] / double(kH * kW);
  std::vector<double> y(kValues);
  for (std::size_t j = 0; j < kValues; ++j)
    y[j] = std::clamp((x[j] - mean[j % kC]) * c + mean[j % kC], lo, hi);
  return y;
}

}  // namespace

TEST_CASE("RandomFlip: each image one of its mode's flips, each about equally often") {
  constexpr std::size_t rows = 800;
  // Binomial(800, 1/4): sd 12.2; (800, 1/2): sd 14.1. Bounds at 5 sd.
  const auto both = flip_counts<mo::HorizontalAndVertical>(rows, 11);
  for (std::size_t f = 0; f < 4; ++f) {
    CAPTURE(f);
    CHECK(both[f] > 200 - 61);
    CHECK(both[f] < 200 + 61);
  }
  const auto horizontal = flip_counts<mo::Horizontal>(rows, 11);
  CHECK(horizontal[2] + horizontal[3] == 0);
  CHECK(horizontal[1] > 400 - 71);
  CHECK(horizontal[1] < 400 + 71);
  const auto vertical = flip_counts<mo::Vertical>(rows, 11);
  CHECK(vertical[1] + vertical[3] == 0);
  CHECK(vertical[2] > 400 - 71);
  CHECK(vertical[2] < 400 + 71);
}

TEST_CASE(
    "RandomFlip: the same seed draws the same flips, another seed others; a copy outside "
    "fit") {
  using L = mo::RandomFlip<>;
  mo::cpu_backend::LayerKernel<L, SpecOf<L>, 0> kernel;
  constexpr std::size_t rows = 64;
  const std::vector<float> x = random_images(rows, 5, -1.0f, 1.0f);
  const std::vector<float> a = forward(kernel, x, rows, 77, true);
  CHECK(forward(kernel, x, rows, 77, true) == a);
  CHECK(forward(kernel, x, rows, 78, true) != a);
  CHECK(a != x);
  CHECK(forward(kernel, x, rows, 77, false) == x);
  // Images of one call draw apart: not all the same flip.
  std::set<int> seen;
  for (std::size_t r = 0; r < rows; ++r) seen.insert(flip_of(&x[r * kValues], &a[r * kValues]));
  CHECK(seen.size() == 4);
}

TEST_CASE("RandomFlip: the input gradient is the forward's transpose, redrawn from the seed") {
  using L = mo::RandomFlip<>;
  mo::cpu_backend::LayerKernel<L, SpecOf<L>, 0> kernel;
  constexpr std::size_t rows = 16;
  const std::vector<float> x = random_images(rows, 6, -1.0f, 1.0f);
  const std::vector<float> g = random_images(rows, 7, -1.0f, 1.0f);
  const std::vector<float> fx = forward(kernel, x, rows, 99, true);
  const std::vector<float> gt = input_grad(kernel, g, rows, 99);
  // <F x, g> = <x, F^T g>, exactly: both sums add the same products.
  CHECK(dot(fx, g) == doctest::Approx(dot(x, gt)).epsilon(1e-12));
  CHECK(gt != g);
}

TEST_CASE("RandomContrast: Keras's formula against float64, factors in [1 - lower, 1 + upper)") {
  using L = mo::RandomContrast<std::ratio<1, 5>, std::ratio<1, 2>>;  // [0.8, 1.5)
  using K = mo::cpu_backend::LayerKernel<L, SpecOf<L>, 0>;
  K kernel;
  constexpr std::size_t rows = 300;
  const std::vector<float> x = random_images(rows, 8, 0.0f, 255.0f);
  const std::vector<float> y = forward(kernel, x, rows, 1234, true);
  std::vector<double> got, want;
  double lowest = 2, highest = 0;
  std::size_t clipped = 0;
  for (std::size_t r = 0; r < rows; ++r) {
    const double c = K::draw(1234, r);
    REQUIRE(c >= 0.8 - 1e-7);
    REQUIRE(c < 1.5);
    lowest = std::min(lowest, c);
    highest = std::max(highest, c);
    const std::vector<double> xr(x.begin() + r * kValues, x.begin() + (r + 1) * kValues);
    const std::vector<double> ref = contrast_reference(xr, c, 0.0, 255.0);
    for (std::size_t j = 0; j < kValues; ++j) {
      got.push_back(y[r * kValues + j]);
      want.push_back(ref[j]);
      clipped += ref[j] == 0.0 || ref[j] == 255.0;
    }
  }
  const double error = relative_error(got, want);
  MESSAGE("contrast vs float64: relative error " << error << ", " << clipped << " of " << got.size()
                                                 << " values clipped");
  CHECK(error < 1e-6);
  CHECK(clipped > 0);  // the clip was exercised
  CHECK(lowest < 0.82);
  CHECK(highest > 1.48);
  CHECK(forward(kernel, x, rows, 1234, false) == x);
  CHECK(forward(kernel, x, rows, 1235, true) != y);
}

TEST_CASE("RandomContrast: the input gradient against central differences of float64") {
  using L = mo::RandomContrast<std::ratio<1, 2>, mo::ValueRange<-1, 1>>;
  using K = mo::cpu_backend::LayerKernel<L, SpecOf<L>, 0>;
  K kernel;
  constexpr std::size_t rows = 6;
  constexpr std::uint64_t seed = 321;
  const std::vector<float> x = random_images(rows, 12, -1.2f, 1.2f);
  const std::vector<float> g = random_images(rows, 13, -1.0f, 1.0f);
  std::vector<std::byte> bits(rows * L::saved(In::shape)[0].per_sample);
  (void)forward(kernel, x, rows, seed, true, &bits);
  const std::vector<float> dx = input_grad(kernel, g, rows, seed, &bits);

  // d/dx_j of sum_i g_i y_i(x), image by image, where no value sits at a clip's edge.
  std::vector<double> got, want;
  std::size_t skipped = 0;
  for (std::size_t r = 0; r < rows; ++r) {
    const double c = K::draw(seed, r);
    std::vector<double> xr(x.begin() + r * kValues, x.begin() + (r + 1) * kValues);
    const auto objective = [&] {
      const std::vector<double> y = contrast_reference(xr, c, -1.0, 1.0);
      double s = 0;
      for (std::size_t i = 0; i < kValues; ++i) s += g[r * kValues + i] * y[i];
      return s;
    };
    for (std::size_t j = 0; j < kValues; ++j) {
      const double keep = xr[j], h = 1e-6;
      xr[j] = keep + h;
      const double up = objective();
      xr[j] = keep - h;
      const double down = objective();
      xr[j] = keep + 10 * h;
      const double far_up = objective();
      xr[j] = keep - 10 * h;
      const double far_down = objective();
      xr[j] = keep;
      const double fine = (up - down) / (2 * h), coarse = (far_up - far_down) / (20 * h);
      if (std::abs(fine - coarse) > 1e-6 + 1e-3 * std::abs(fine)) {
        ++skipped;  // a value crosses a clip edge within the step
        continue;
      }
      got.push_back(dx[r * kValues + j]);
      want.push_back(fine);
    }
  }
  const double error = relative_error(got, want);
  MESSAGE("contrast input gradient: relative error " << error << " (" << skipped
                                                     << " values at a clip edge skipped)");
  CHECK(got.size() > rows * kValues * 8 / 10);
  CHECK(error < 1e-5);
}

TEST_CASE(
    "RandomFlip and RandomContrast between learning layers: gradients by central "
    "differences") {
  using Net = mo::Sequential<mo::Conv2D<3, 3, mo::Same, mo::Tanh>, mo::RandomFlip<>,
                             mo::RandomContrast<std::ratio<1, 2>, mo::ValueRange<-1, 1>>,
                             mo::Conv2D<4, 3, mo::Tanh>, mo::Flatten, mo::Dense<3, mo::Softmax>>;
  using Spec = mo::ModelSpec<Net, mo::Input<6, 5, 2>, mo::float32>;
  mo::Model<Net, mo::Input<6, 5, 2>, mo::float32> model{3};
  std::vector<float> w = model.get_parameters();
  mo::Rng rng(17);
  for (float& v : w) v += rng.uniform(-0.1f, 0.1f);
  std::vector<float> x(5 * Spec::inputs);
  std::vector<std::int32_t> y(5);
  for (float& v : x) v = rng.uniform(-1.5f, 1.5f);
  for (auto& v : y) v = static_cast<std::int32_t>(rng.below(3));
  mo::testing::StepLoss<Spec> loss(std::move(x), std::move(y), 5);

  std::vector<float> analytic;
  CHECK(std::isfinite(loss(w, &analytic)));
  // The first convolution's weights reach the loss only through both augmentation layers'
  // input gradients. A step across a clip edge is no derivative: two step sizes that disagree
  // reveal it.
  std::vector<double> got, want;
  const std::size_t first_conv = 3 * 3 * 2 * 3 + 3;
  for (std::size_t j = 0; j < first_conv; ++j) {
    const double coarse = loss.central_difference(w, j, 1e-2f),
                 fine = loss.central_difference(w, j, 5e-3f);
    if (std::abs(coarse - fine) > 1e-3 + 0.05 * std::abs(fine)) continue;
    got.push_back(analytic[j]);
    want.push_back(fine);
  }
  const double error = relative_error(got, want);
  MESSAGE(got.size() << " of " << first_conv << " first-layer gradients smooth: relative error "
                     << error);
  CHECK(got.size() > first_conv * 7 / 10);
  CHECK(error < 1e-2);
}

namespace {

constexpr std::size_t kSide = 8;
// Images whose class decides which half of the image is bright, on noise (a flip keeps the
// class along the other axis): learnable, never all zero.
mo::data::ImageDataset pixel_images(std::size_t count, std::uint64_t seed) {
  mo::Rng rng(seed);
  std::vector<std::uint8_t> pixels(count * kSide * kSide);
  std::vector<std::int32_t> labels(count);
  for (std::size_t n = 0; n < count; ++n) {
    const auto label = static_cast<std::int32_t>(n % 2);
    labels[n] = label;
    for (std::size_t y = 0; y < kSide; ++y)
      for (std::size_t x = 0; x < kSide; ++x) {
        const bool lit = (label == 0) == (y < kSide / 2) || (label == 0) == (y >= kSide - 2);
        const float v = rng.uniform(lit ? 60.0f : 0.0f, lit ? 255.0f : 150.0f);
        pixels[(n * kSide + y) * kSide + x] = static_cast<std::uint8_t>(v);
      }
  }
  return mo::data::ImageDataset(std::move(pixels), std::move(labels), kSide, kSide, 1);
}

}  // namespace

TEST_CASE(
    "Augmentation first on 8-bit pixels: fit learns, reproducibly; evaluate and predict "
    "see no augmentation; summary, checkpoints, ONNX-free of them") {
  using Augmented =
      mo::Sequential<mo::RandomFlip<mo::Horizontal>, mo::RandomContrast<std::ratio<3, 10>>,
                     mo::Rescaling<std::ratio<1, 255>>, mo::Conv2D<4, 3, mo::Same, mo::ReLU>,
                     mo::MaxPooling2D<2>, mo::Flatten, mo::Dense<2, mo::Softmax>>;
  using Plain =
      mo::Sequential<mo::Rescaling<std::ratio<1, 255>>, mo::Conv2D<4, 3, mo::Same, mo::ReLU>,
                     mo::MaxPooling2D<2>, mo::Flatten, mo::Dense<2, mo::Softmax>>;
  using InPx = mo::Input<kSide, kSide, 1>;
  using M = mo::Model<Augmented, InPx, mo::float32>;
  const auto images = pixel_images(96, 4);
  const auto train = [&](M& m) {
    m.compile(mo::Adam{{.learning_rate = 1e-2}}, mo::SparseCategoricalCrossentropy{},
              mo::metrics::Accuracy{});
    return m.fit(images | mo::data::batch(32), {.epochs = 6, .verbose = 0});
  };
  M a{3}, b{3};
  const auto ha = train(a);
  const auto hb = train(b);
  CHECK(ha.history.at("loss").back() < ha.history.at("loss").front());
  CHECK(ha.history.at("loss") == hb.history.at("loss"));  // the same seed, the same draws
  CHECK(a.get_weights() == b.get_weights());

  // Outside fit both layers are the identity: the same weights without them predict the same.
  mo::Model<Plain, InPx, mo::float32> plain{9};
  plain.set_parameters(a.get_parameters());
  const std::vector<float> pa = a.predict(images | mo::data::batch(50));
  CHECK(pa == plain.predict(images | mo::data::batch(50)));
  plain.compile(mo::Adam{}, mo::SparseCategoricalCrossentropy{}, mo::metrics::Accuracy{});
  CHECK(a.evaluate(images | mo::data::batch(32)).loss ==
        plain.evaluate(images | mo::data::batch(32)).loss);

  const std::string s = a.summary_string();
  CHECK(s.find("random_flip (RandomFlip)") != std::string::npos);
  CHECK(s.find("random_contrast (RandomContrast)") != std::string::npos);

  mo::testing::TempDir dir;
  a.save(dir / "full.safetensors");
  M resumed{7};
  resumed.compile(mo::Adam{{.learning_rate = 1e-2}}, mo::SparseCategoricalCrossentropy{});
  resumed.load(dir / "full.safetensors");
  CHECK(resumed.predict(images | mo::data::batch(50)) == pa);
}
