// RandomCrop, Keras's random crop: the window each batch becomes in fit (cases worked by hand),
// Keras's centred crop outside fit (with its resize, against a float64 reference of the
// half-pixel bilinear resize), the draws (the same for the same step's stream, uniform over
// every offset), the input gradient as the crop's transpose and through the whole CPU step
// against central differences, mixed_bfloat16, and a model trained from 8-bit pixels.
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

namespace mo = memopt;
using mo::testing::relative_error;

namespace {

// --- the layer's algebra, at compile time ---------------------------------------------------

using Crop43 = mo::RandomCrop<4, 3>;
static_assert(mo::Layer<Crop43>);
static_assert(Crop43::output_shape(mo::image_shape(7, 6, 2)) == mo::image_shape(4, 3, 2));
static_assert(Crop43::name == "random_crop" && Crop43::class_name == "RandomCrop");
static_assert(mo::weight_decl_count_v<Crop43> == 0 && mo::saved_decl_count_v<Crop43> == 0);
// Keras draws only where the input is larger on both axes.
static_assert(Crop43::random_in_training(5, 4) && !Crop43::random_in_training(4, 9) &&
              !Crop43::random_in_training(9, 3));
// Keras's centred crop, worked by hand from get_random_transformation:
//  8 x 16 to 8 x 8: crop_height = min(8, 16 * 8 / 8) = 8, crop_width = min(16, 8 * 8 / 8) = 8,
//  h_start = 0, w_start = (16 - 8) / 2 = 4.
static_assert(mo::RandomCrop<8, 8>::centred_window(8, 16) ==
              mo::RandomCrop<8, 8>::Window{0, 4, 8, 8});
//  6 x 10 to 2 x 4: crop_height = min(6, 10 * 2 / 4 = 5) = 5, crop_width = min(10, 6 * 4 / 2
//  = 12) = 10: a 5 x 10 window at (0, 0), resized to 2 x 4.
static_assert(mo::RandomCrop<2, 4>::centred_window(6, 10) ==
              mo::RandomCrop<2, 4>::Window{0, 0, 5, 10});
//  9 x 9 to 3 x 2: crop_height = min(9, 9 * 3 / 2 = 13) = 9, crop_width = min(9, 9 * 2 / 3)
//  = 6, w_start = (9 - 6) / 2 = 1.
static_assert(mo::RandomCrop<3, 2>::centred_window(9, 9) ==
              mo::RandomCrop<3, 2>::Window{0, 1, 9, 6});
//  7 x 5 to 7 x 2: the height is the crop's, so the window is the crop, centred: (5 - 2) / 2.
static_assert(mo::RandomCrop<7, 2>::centred_window(7, 5) ==
              mo::RandomCrop<7, 2>::Window{0, 1, 7, 2});
// Placed first, nothing is kept for backward.
using FirstSpec = mo::ModelSpec<mo::Sequential<mo::RandomCrop<4, 4>, mo::Flatten, mo::Dense<2>>,
                                mo::Input<6, 6, 3>, mo::float32>;
static_assert(FirstSpec::shapes[1] == mo::image_shape(4, 4, 3));

// A kernel at node 1, above a Conv2D, so that its input gradient is part of the step.
template <class L, std::size_t H, std::size_t W, std::size_t C, class Policy = mo::float32>
using HostSpec = mo::ModelSpec<mo::Sequential<mo::Conv2D<C, 1>, L, mo::Flatten, mo::Dense<2>>,
                               mo::Input<H, W, C>, Policy>;
template <class L, std::size_t H, std::size_t W, std::size_t C, class Policy = mo::float32>
using KernelOf = mo::cpu_backend::LayerKernel<L, HostSpec<L, H, W, C, Policy>, 1>;

template <class K, class T>
std::vector<T> forward(K& k, const std::vector<T>& x, std::size_t rows, std::size_t out_values,
                       std::uint64_t seed, bool training) {
  std::vector<T> y(rows * out_values);
  mo::cpu_backend::ForwardIo<T, T> io;
  io.rows = rows;
  io.x = x.data();
  io.y = y.data();
  io.training = training;
  io.seed = seed;
  k.prepare(rows);
  k.forward(io);
  return y;
}
template <class K, class T>
std::vector<T> input_grad(K& k, const std::vector<T>& dy, std::size_t rows, std::size_t in_values,
                          std::uint64_t seed) {
  std::vector<T> dx(rows * in_values, T(7.0f));  // not zero: the kernel must clear it
  mo::cpu_backend::BackwardIo<T> io;
  io.rows = rows;
  io.dy = dy.data();
  io.dx = dx.data();
  io.seed = seed;
  k.input_grad(io);
  return dx;
}

std::vector<float> random_values(std::size_t n, std::uint64_t seed, float lo, float hi) {
  mo::Rng rng(seed);
  std::vector<float> v(n);
  for (float& x : v) x = rng.uniform(lo, hi);
  return v;
}

double dot(const std::vector<float>& a, const std::vector<float>& b) {
  double s = 0;
  for (std::size_t i = 0; i < a.size(); ++i) s += double(a[i]) * double(b[i]);
  return s;
}

// Keras's resize in float64: bilinear with half-pixel centres, no antialiasing (TensorFlow's
// tf.image.resize, JAX's jax.image.resize for a shrink), of an h x w x c image to oh x ow.
std::vector<double> resize_reference(const std::vector<double>& x, std::size_t h, std::size_t w,
                                     std::size_t c, std::size_t oh, std::size_t ow) {
  const auto tap = [](std::size_t o, std::size_t n, std::size_t m, long& lo, long& hi) {
    const double p = (double(o) + 0.5) * double(n) / double(m) - 0.5;
    const double f = std::floor(p);
    lo = std::max(long(f), 0L);
    hi = std::min(long(f) + 1, long(n) - 1);
    return p - f;
  };
  std::vector<double> y(oh * ow * c);
  for (std::size_t oy = 0; oy < oh; ++oy)
    for (std::size_t ox = 0; ox < ow; ++ox) {
      long y0 = 0, y1 = 0, x0 = 0, x1 = 0;
      const double fy = tap(oy, h, oh, y0, y1), fx = tap(ox, w, ow, x0, x1);
      for (std::size_t ch = 0; ch < c; ++ch) {
        const auto at = [&](long yy, long xx) {
          return x[(std::size_t(yy) * w + std::size_t(xx)) * c + ch];
        };
        const double top = at(y0, x0) * (1 - fx) + at(y0, x1) * fx;
        const double bottom = at(y1, x0) * (1 - fx) + at(y1, x1) * fx;
        y[(oy * ow + ox) * c + ch] = top * (1 - fy) + bottom * fy;
      }
    }
  return y;
}

}  // namespace

TEST_CASE("RandomCrop in fit: the drawn window of every image, worked by hand on a 3 x 4 image") {
  // One channel, pixels 1..12 row by row; the six 2 x 2 windows written out.
  using L = mo::RandomCrop<2, 2>;
  using K = KernelOf<L, 3, 4, 1>;
  K kernel;
  const std::array<std::array<float, 4>, 6> windows{
      {{1, 2, 5, 6}, {2, 3, 6, 7}, {3, 4, 7, 8}, {5, 6, 9, 10}, {6, 7, 10, 11}, {7, 8, 11, 12}}};
  constexpr std::size_t rows = 3;
  std::vector<float> x;
  for (std::size_t r = 0; r < rows; ++r)
    for (int v = 1; v <= 12; ++v) x.push_back(float(v) + 100.0f * float(r));
  std::set<std::size_t> seen;
  for (std::uint64_t seed = 1; seed <= 40; ++seed) {
    const std::vector<float> y = forward(kernel, x, rows, 4, seed, true);
    const L::Window w = K::draw(seed);
    REQUIRE(w.height == 2);
    REQUIRE(w.width == 2);
    REQUIRE(w.top <= 1);
    REQUIRE(w.left <= 2);
    const std::size_t k = w.top * 3 + w.left;
    seen.insert(k);
    // Keras crops the whole batch at one place: every image the same window.
    for (std::size_t r = 0; r < rows; ++r)
      for (std::size_t j = 0; j < 4; ++j) {
        CAPTURE(seed);
        CAPTURE(r);
        CHECK(y[r * 4 + j] == windows[k][j] + 100.0f * float(r));
      }
  }
  CHECK(seen.size() == 6);  // every window comes up in 40 steps
}

TEST_CASE("RandomCrop outside fit: Keras's centred crop, resized where larger than the crop") {
  SUBCASE("8 x 16 to 8 x 8: columns 4 to 11, no resize; fit crops there too (8 is not > 8)") {
    using L = mo::RandomCrop<8, 8>;
    KernelOf<L, 8, 16, 2> kernel;
    const std::vector<float> x = random_values(2 * 8 * 16 * 2, 3, 0.0f, 255.0f);
    const std::vector<float> y = forward(kernel, x, 2, 8 * 8 * 2, 1, false);
    for (std::size_t r = 0; r < 2; ++r)
      for (std::size_t h = 0; h < 8; ++h)
        for (std::size_t w = 0; w < 8; ++w)
          for (std::size_t c = 0; c < 2; ++c)
            REQUIRE(y[((r * 8 + h) * 8 + w) * 2 + c] == x[((r * 8 + h) * 16 + w + 4) * 2 + c]);
    for (std::uint64_t seed = 0; seed < 8; ++seed)
      CHECK(forward(kernel, x, 2, 8 * 8 * 2, seed, true) == y);
  }
  SUBCASE("4 x 4 to 2 x 2: the whole image halved, each output the mean of a 2 x 2 block") {
    using L = mo::RandomCrop<2, 2>;
    KernelOf<L, 4, 4, 1> kernel;
    std::vector<float> x(16);
    for (std::size_t j = 0; j < 16; ++j) x[j] = float(j);
    CHECK(forward(kernel, x, 1, 4, 0, false) == std::vector<float>{2.5f, 4.5f, 10.5f, 12.5f});
  }
  SUBCASE("6 x 10 to 2 x 4 and 9 x 9 to 3 x 2: against a float64 resize of the window") {
    const auto check = [](auto kernel, std::size_t h, std::size_t w, std::size_t oh, std::size_t ow,
                          auto window) {
      constexpr std::size_t c = 3, rows = 4;
      const std::vector<float> x = random_values(rows * h * w * c, 5, 0.0f, 255.0f);
      const std::vector<float> y = forward(kernel, x, rows, oh * ow * c, 0, false);
      std::vector<double> want;
      for (std::size_t r = 0; r < rows; ++r) {
        std::vector<double> cut;
        for (std::size_t yy = 0; yy < window.height; ++yy)
          for (std::size_t xx = 0; xx < window.width; ++xx)
            for (std::size_t ch = 0; ch < c; ++ch)
              cut.push_back(x[((r * h + window.top + yy) * w + window.left + xx) * c + ch]);
        const std::vector<double> ref =
            resize_reference(cut, window.height, window.width, c, oh, ow);
        want.insert(want.end(), ref.begin(), ref.end());
      }
      const double error = relative_error(y, want);
      MESSAGE(h << " x " << w << " to " << oh << " x " << ow << ": relative error " << error);
      CHECK(error < 1e-6);
    };
    check(KernelOf<mo::RandomCrop<2, 4>, 6, 10, 3>{}, 6, 10, 2, 4,
          mo::RandomCrop<2, 4>::centred_window(6, 10));
    check(KernelOf<mo::RandomCrop<3, 2>, 9, 9, 3>{}, 9, 9, 3, 2,
          mo::RandomCrop<3, 2>::centred_window(9, 9));
  }
}

TEST_CASE("RandomCrop draws: the same for the same step's stream, uniform over every offset") {
  // 12 x 10 to 4 x 3: tops 0..8, lefts 0..7, 72 windows.
  using L = mo::RandomCrop<4, 3>;
  using K = KernelOf<L, 12, 10, 1>;
  constexpr std::size_t tops = 9, lefts = 8, steps = 7200;
  std::array<std::size_t, tops * lefts> joint{};
  std::array<std::size_t, tops> by_top{};
  std::array<std::size_t, lefts> by_left{};
  mo::Rng step_seeds(2026);
  for (std::size_t s = 0; s < steps; ++s) {
    const std::uint64_t seed = step_seeds.next();
    const L::Window w = K::draw(seed);
    REQUIRE(w == K::draw(seed));
    REQUIRE(w.top < tops);
    REQUIRE(w.left < lefts);
    ++joint[w.top * lefts + w.left];
    ++by_top[w.top];
    ++by_left[w.left];
  }
  // Binomial(7200, 1/9): sd 26.7; (7200, 1/8): sd 28.1. Bounds at 5 sd.
  for (std::size_t t = 0; t < tops; ++t) {
    CAPTURE(t);
    CHECK(by_top[t] > 800 - 134);
    CHECK(by_top[t] < 800 + 134);
  }
  for (std::size_t l = 0; l < lefts; ++l) {
    CAPTURE(l);
    CHECK(by_left[l] > 900 - 141);
    CHECK(by_left[l] < 900 + 141);
  }
  // Pearson's chi-square over the 72 windows (top and left independent): 71 degrees of
  // freedom, mean 71, sd 11.9; bound at 5 sd.
  double chi2 = 0;
  for (std::size_t n : joint) chi2 += (double(n) - 100.0) * (double(n) - 100.0) / 100.0;
  MESSAGE("chi-square of the 72 windows over 7200 steps: " << chi2);
  CHECK(chi2 < 71 + 5 * 11.9);

  // Another step, another window (mostly): 64 steps see many of the 72.
  std::set<std::pair<std::size_t, std::size_t>> seen;
  for (std::uint64_t seed = 100; seed < 164; ++seed) {
    const L::Window w = K::draw(seed);
    seen.insert({w.top, w.left});
  }
  CHECK(seen.size() > 30);
}

TEST_CASE("RandomCrop's input gradient: dy in the redrawn window, zero around it; the transpose") {
  using L = mo::RandomCrop<4, 3>;
  using K = KernelOf<L, 7, 6, 2>;
  K kernel;
  constexpr std::size_t rows = 5, in_values = 7 * 6 * 2, out_values = 4 * 3 * 2;
  const std::vector<float> x = random_values(rows * in_values, 8, -1.0f, 1.0f);
  const std::vector<float> g = random_values(rows * out_values, 9, -1.0f, 1.0f);
  for (std::uint64_t seed : {11u, 12u, 13u}) {
    const std::vector<float> cx = forward(kernel, x, rows, out_values, seed, true);
    const std::vector<float> ct = input_grad(kernel, g, rows, in_values, seed);
    // <C x, g> = <x, C^T g>: both sums add the same products.
    CHECK(dot(cx, g) == doctest::Approx(dot(x, ct)).epsilon(1e-12));
    const L::Window w = K::draw(seed);
    std::size_t zeros = 0;
    for (std::size_t r = 0; r < rows; ++r)
      for (std::size_t h = 0; h < 7; ++h)
        for (std::size_t v = 0; v < 6; ++v)
          for (std::size_t c = 0; c < 2; ++c) {
            const float d = ct[((r * 7 + h) * 6 + v) * 2 + c];
            const bool inside = h >= w.top && h < w.top + 4 && v >= w.left && v < w.left + 3;
            if (inside)
              REQUIRE(d == g[((r * 4 + h - w.top) * 3 + v - w.left) * 2 + c]);
            else
              zeros += d == 0.0f;
          }
    CHECK(zeros == rows * (in_values - out_values));
  }
}

TEST_CASE("RandomCrop between Conv2D layers: gradients of every weight by central differences") {
  using Net = mo::Sequential<mo::Conv2D<3, 3, mo::Same, mo::Tanh>, mo::RandomCrop<4, 3>,
                             mo::Conv2D<4, 3, mo::Tanh>, mo::Flatten, mo::Dense<3, mo::Softmax>>;
  using M = mo::Model<Net, mo::Input<7, 6, 2>>;
  using Spec = typename M::spec;
  static_assert(Spec::shapes[2] == mo::image_shape(4, 3, 3));
  M model{3};
  std::vector<float> w = model.get_parameters();
  mo::Rng rng(17);
  for (float& v : w) v += rng.uniform(-0.1f, 0.1f);
  std::vector<float> x(4 * Spec::inputs);
  std::vector<std::int32_t> y(4);
  for (float& v : x) v = rng.uniform(-1.5f, 1.5f);
  for (auto& v : y) v = static_cast<std::int32_t>(rng.below(3));
  mo::testing::StepLoss<Spec> loss(std::move(x), std::move(y), 5);

  std::vector<float> analytic;
  CHECK(std::isfinite(loss(w, &analytic)));
  // The crop is linear: no kinks, every weight checked. The first convolution's reach the
  // loss only through the crop's input gradient.
  constexpr std::size_t first = 3 * 3 * 2 * 3 + 3;
  std::vector<double> got_first, want_first, got, want;
  for (std::size_t j = 0; j < w.size(); ++j) {
    const double d = loss.central_difference(w, j, 1e-2f);
    (j < first ? got_first : got).push_back(analytic[j]);
    (j < first ? want_first : want).push_back(d);
  }
  const double error_first = relative_error(got_first, want_first);
  const double error_rest = relative_error(got, want);
  MESSAGE("gradients through RandomCrop: first convolution relative error "
          << error_first << ", the layers above " << error_rest);
  CHECK(error_first < 2e-3);
  CHECK(error_rest < 2e-3);
  double norm = 0;
  for (double v : want_first) norm += v * v;
  CHECK(norm > 1e-8);  // the check is not of zeros
}

namespace {

// The 16-bit policies: the same windows as float32 (a copy, exact), the resize within the
// type's precision, the input gradient exact.
template <class Policy, class T>
void check_narrow() {
  using L = mo::RandomCrop<3, 2>;
  constexpr std::size_t rows = 3, in_values = 9 * 9 * 2, out_values = 3 * 2 * 2;
  static_assert(std::is_same_v<typename HostSpec<L, 9, 9, 2, Policy>::compute_type, T>);
  KernelOf<L, 9, 9, 2, Policy> narrow;
  KernelOf<L, 9, 9, 2> wide;
  std::vector<float> x = random_values(rows * in_values, 21, 0.0f, 255.0f);
  for (float& v : x) v = float(T(v));  // exact in both
  const std::vector<T> xn(x.begin(), x.end());
  for (bool training : {true, false}) {
    const std::vector<T> yn = forward(narrow, xn, rows, out_values, 44, training);
    const std::vector<float> y = forward(wide, x, rows, out_values, 44, training);
    const std::vector<float> yf(yn.begin(), yn.end());
    if (training)
      CHECK(yf == y);
    else
      CHECK(relative_error(yf, y) < 1e-2);  // bfloat16's 8 bits, half's 11
  }
  std::vector<float> g = random_values(rows * out_values, 22, -1.0f, 1.0f);
  for (float& v : g) v = float(T(v));
  const std::vector<T> gn(g.begin(), g.end());
  const std::vector<T> dxn = input_grad(narrow, gn, rows, in_values, 44);
  CHECK(std::vector<float>(dxn.begin(), dxn.end()) == input_grad(wide, g, rows, in_values, 44));
}

}  // namespace

TEST_CASE("RandomCrop under mixed_bfloat16 and mixed_float16: the same windows, the resize") {
  check_narrow<mo::mixed_bfloat16, mo::bfloat16>();
  check_narrow<mo::mixed_float16, mo::half>();
}

namespace {

constexpr std::size_t kSide = 10;
// 8-bit images whose class says whether the bright band is at the top or the bottom, on
// noise, a band wide enough that every 8 x 8 window sees it: learnable after any crop.
struct BandImages {
  std::vector<std::uint8_t> pixels;
  std::vector<std::int32_t> labels;
  mo::data::ImageDataset dataset() const {
    return mo::data::ImageDataset(pixels, labels, kSide, kSide, 1);
  }
};
BandImages band_images(std::size_t count, std::uint64_t seed) {
  mo::Rng rng(seed);
  BandImages b{std::vector<std::uint8_t>(count * kSide * kSide), std::vector<std::int32_t>(count)};
  for (std::size_t n = 0; n < count; ++n) {
    const auto label = static_cast<std::int32_t>(n % 2);
    b.labels[n] = label;
    for (std::size_t y = 0; y < kSide; ++y)
      for (std::size_t x = 0; x < kSide; ++x) {
        const bool lit = label == 0 ? y < 5 : y >= 5;
        const float v = rng.uniform(lit ? 80.0f : 0.0f, lit ? 255.0f : 140.0f);
        b.pixels[(n * kSide + y) * kSide + x] = static_cast<std::uint8_t>(v);
      }
  }
  return b;
}

using Cropped = mo::Sequential<mo::RandomCrop<8, 8>, mo::Rescaling<std::ratio<1, 255>>,
                               mo::Conv2D<4, 3, mo::Same, mo::ReLU>, mo::MaxPooling2D<2>,
                               mo::Flatten, mo::Dense<2, mo::Softmax>>;

template <class M>
auto train(M& m, const mo::data::ImageDataset& images, int epochs) {
  m.compile(mo::Adam{{.learning_rate = 1e-2}}, mo::SparseCategoricalCrossentropy{},
            mo::metrics::Accuracy{});
  return m.fit(images | mo::data::batch(32), {.epochs = epochs, .verbose = 0});
}

}  // namespace

TEST_CASE(
    "RandomCrop first on 8-bit pixels: fit learns, reproducibly; predict is the centred "
    "crop's; summary names it") {
  using InPx = mo::Input<kSide, kSide, 1>;
  using M = mo::Model<Cropped, InPx, mo::float32>;
  const BandImages band = band_images(128, 4);
  const auto images = band.dataset();
  M a{3}, b{3};
  const auto ha = train(a, images, 8);
  const auto hb = train(b, images, 8);
  const std::vector<double>& losses = ha.history.at("loss");
  MESSAGE("loss " << losses.front() << " -> " << losses.back() << ", accuracy "
                  << ha.history.at("accuracy").back());
  CHECK(losses.back() < 0.7 * losses.front());
  CHECK(ha.history.at("accuracy").back() > 0.9);
  CHECK(ha.history.at("loss") == hb.history.at("loss"));  // the same seed, the same windows
  CHECK(a.get_weights() == b.get_weights());

  // predict: the same for any batching and from floats, and what the same weights without
  // the crop predict of the images through the crop's inference (Keras's centred crop of a
  // square is the whole image, resized to 8 x 8).
  const std::vector<float> p = a.predict(images | mo::data::batch(50));
  CHECK(p == a.predict(images | mo::data::batch(7)));
  const std::vector<float> floats(band.pixels.begin(), band.pixels.end());
  CHECK(p == a.predict(floats));
  KernelOf<mo::RandomCrop<8, 8>, kSide, kSide, 1> crop;
  const std::vector<float> resized = forward(crop, floats, images.size(), 64, 0, false);
  mo::Model<mo::Sequential<mo::Rescaling<std::ratio<1, 255>>, mo::Conv2D<4, 3, mo::Same, mo::ReLU>,
                           mo::MaxPooling2D<2>, mo::Flatten, mo::Dense<2, mo::Softmax>>,
            mo::Input<8, 8, 1>>
      plain{9};
  plain.set_parameters(a.get_parameters());
  CHECK(plain.predict(resized) == p);
  a.compile(mo::Adam{}, mo::SparseCategoricalCrossentropy{}, mo::metrics::Accuracy{});
  CHECK(a.evaluate(images | mo::data::batch(32)).accuracy > 0.9);

  const std::string s = a.summary_string();
  CHECK(s.find("random_crop (RandomCrop)") != std::string::npos);
}

TEST_CASE("RandomCrop trains under mixed_bfloat16 and mixed_float16") {
  const auto images = band_images(64, 5).dataset();
  mo::Model<Cropped, mo::Input<kSide, kSide, 1>, mo::mixed_bfloat16> bf16{2};
  const auto hb = train(bf16, images, 4);
  mo::Model<Cropped, mo::Input<kSide, kSide, 1>, mo::mixed_float16> f16{2};
  const auto hf = train(f16, images, 4);
  for (const auto* h : {&hb, &hf}) {
    const std::vector<double>& losses = h->history.at("loss");
    MESSAGE("16-bit loss " << losses.front() << " -> " << losses.back());
    for (double loss : losses) CHECK(std::isfinite(loss));
    CHECK(losses.back() < losses.front());
  }
}
