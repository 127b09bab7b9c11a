// RandomTranslation, RandomZoom and RandomRotation: each layer's kernel against a float64
// sampler written here from Keras's formulas (its transform matrices and fill modes), cases
// worked by hand (whole-pixel shifts under each fill mode, a quarter turn, zoom 0), the
// transpose that the input gradient applies (<S x, g> = <x, S^T g>), gradients through the
// whole CPU step against central differences, the identity in evaluate and predict, and the
// draws: one per image, a new one each step, the same for the same seed and step.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <numbers>
#include <ratio>
#include <string>
#include <type_traits>
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

template <std::intmax_t N, std::intmax_t D = 1>
using R = std::ratio<N, D>;

// --- the vocabulary, at compile time --------------------------------------------------------

using Shift = mo::RandomTranslation<R<1, 10>, mo::Range<R<1, 5>, R<-1, 5>>, mo::NearestNeighbor,
                                    mo::Constant<R<1, 2>>>;
static_assert(mo::Layer<Shift>);
static_assert(Shift::lower[0] == -0.1 && Shift::upper[0] == 0.1);
static_assert(Shift::lower[1] == -0.2 && Shift::upper[1] == 0.2);  // Range's bounds sorted
static_assert(Shift::fill_mode == mo::FillMode::constant && Shift::fill_value == 0.5);
static_assert(Shift::sampling == mo::Sampling::nearest);
static_assert(Shift::output_shape(mo::image_shape(5, 4, 3)) == mo::image_shape(5, 4, 3));
static_assert(mo::weight_decl_count_v<Shift> == 0 && mo::saved_decl_count_v<Shift> == 0);
static_assert(Shift::name == "random_translation" && Shift::class_name == "RandomTranslation");

using Zoom = mo::RandomZoom<R<1, 5>>;  // Keras's defaults: reflect, bilinear
static_assert(mo::Layer<Zoom> && Zoom::draws == 1);
static_assert(Zoom::fill_mode == mo::FillMode::reflect && Zoom::sampling == mo::Sampling::bilinear);
using WideZoom = mo::RandomZoom<R<1, 5>, mo::Range<R<0>, R<1, 2>>, mo::Wrap>;
static_assert(WideZoom::draws == 2 && WideZoom::upper[1] == 0.5);
static_assert(WideZoom::fill_mode == mo::FillMode::wrap);
using ZoomOptionsOnly = mo::RandomZoom<R<1, 5>, mo::Nearest, mo::NearestNeighbor>;
static_assert(ZoomOptionsOnly::draws == 1 && ZoomOptionsOnly::fill_mode == mo::FillMode::nearest);
static_assert(Zoom::name == "random_zoom" && Zoom::class_name == "RandomZoom");

using Turn = mo::RandomRotation<R<-1, 8>>;  // a single negative factor is [-|f|, |f|]
static_assert(mo::Layer<Turn> && Turn::lower[0] == -0.125 && Turn::upper[0] == 0.125);
static_assert(Turn::name == "random_rotation" && Turn::class_name == "RandomRotation");

// --- a float64 reference, straight from Keras -----------------------------------------------

enum class Fill { reflect, wrap, constant, nearest };

struct Image {
  std::size_t h, w, c;
  std::vector<double> v;
  double at(std::size_t y, std::size_t x, std::size_t ch) const { return v[(y * w + x) * c + ch]; }
};

// Keras's fill modes, index by index: reflect `d c b a | a b c d | d c b a`, wrap
// `a b c d | a b c d`, nearest `a a | a b c d | d d`; constant reads `k` (returns false).
bool extend(long i, long n, Fill fill, long& out) {
  switch (fill) {
    case Fill::constant:
      out = i;
      return i >= 0 && i < n;
    case Fill::nearest:
      out = std::min(std::max(i, 0L), n - 1);
      return true;
    case Fill::wrap:
      out = ((i % n) + n) % n;
      return true;
    case Fill::reflect:
      while (i < 0 || i >= n) i = i < 0 ? -i - 1 : 2 * n - 1 - i;
      out = i;
      return true;
  }
  return false;
}

double pixel(const Image& im, long y, long x, std::size_t ch, Fill fill, double k) {
  long yy = 0, xx = 0;
  if (!extend(y, long(im.h), fill, yy) || !extend(x, long(im.w), fill, xx)) return k;
  return im.at(std::size_t(yy), std::size_t(xx), ch);
}

// Keras's 8-number transform (the projective pair 0): output (x, y) reads the input at
// ((a0 x + a1 y + a2), (b0 x + b1 y + b2)), bilinear between the four pixels around it or the
// nearest (halves to even: std::nearbyint in the default rounding mode, as jnp.round).
Image reference_transform(const Image& in, const std::array<double, 6>& t, Fill fill, double k,
                          bool nearest) {
  Image out{in.h, in.w, in.c, std::vector<double>(in.v.size())};
  for (std::size_t y = 0; y < in.h; ++y)
    for (std::size_t x = 0; x < in.w; ++x) {
      const double sx = t[0] * double(x) + t[1] * double(y) + t[2];
      const double sy = t[3] * double(x) + t[4] * double(y) + t[5];
      for (std::size_t ch = 0; ch < in.c; ++ch) {
        double v;
        if (nearest) {
          v = pixel(in, long(std::nearbyint(sy)), long(std::nearbyint(sx)), ch, fill, k);
        } else {
          const double fx = std::floor(sx), fy = std::floor(sy);
          const double ax = sx - fx, ay = sy - fy;
          const long x0 = long(fx), y0 = long(fy);
          v = (1 - ay) * ((1 - ax) * pixel(in, y0, x0, ch, fill, k) +
                          ax * pixel(in, y0, x0 + 1, ch, fill, k)) +
              ay * ((1 - ax) * pixel(in, y0 + 1, x0, ch, fill, k) +
                    ax * pixel(in, y0 + 1, x0 + 1, ch, fill, k));
        }
        out.v[(y * in.w + x) * in.c + ch] = v;
      }
    }
  return out;
}

// RandomTranslation._get_translation_matrix: [1, 0, -dx, 0, 1, -dy], dx = width * draw.
std::array<double, 6> keras_translation(double height_draw, double width_draw, std::size_t h,
                                        std::size_t w) {
  return {1, 0, -width_draw * double(w), 0, 1, -height_draw * double(h)};
}
// RandomZoom._get_zoom_matrix with zoom = 1 + draw: [zx, 0, (w - 1) / 2 (1 - zx), 0, zy, ...].
std::array<double, 6> keras_zoom(double height_draw, double width_draw, std::size_t h,
                                 std::size_t w) {
  const double zx = 1 + width_draw, zy = 1 + height_draw;
  return {zx, 0, (double(w) - 1) / 2 * (1 - zx), 0, zy, (double(h) - 1) / 2 * (1 - zy)};
}
// RandomRotation.get_random_transformation: angle = draw * 2 pi about the image's centre.
std::array<double, 6> keras_rotation(double draw, std::size_t h, std::size_t w) {
  const double a = draw * 2.0 * std::numbers::pi;
  const double c = std::cos(a), s = std::sin(a);
  const double x_offset = ((double(w) - 1) - (c * (double(w) - 1) - s * (double(h) - 1))) / 2.0;
  const double y_offset = ((double(h) - 1) - (s * (double(w) - 1) + c * (double(h) - 1))) / 2.0;
  return {c, -s, x_offset, s, c, y_offset};
}

template <class L>
std::array<double, 6> keras_matrix(const std::array<double, L::draws>& f, std::size_t h,
                                   std::size_t w) {
  if constexpr (L::class_name == "RandomTranslation")
    return keras_translation(f[0], f[1], h, w);
  else if constexpr (L::class_name == "RandomZoom")
    return keras_zoom(f[0], f[L::draws - 1], h, w);  // no width factor: the height's draw
  else
    return keras_rotation(f[0], h, w);
}

Fill fill_of(mo::FillMode m) {
  switch (m) {
    case mo::FillMode::wrap:
      return Fill::wrap;
    case mo::FillMode::constant:
      return Fill::constant;
    case mo::FillMode::nearest:
      return Fill::nearest;
    default:
      return Fill::reflect;
  }
}

// --- the layer's kernel, run alone ----------------------------------------------------------

// A model in which the layer sits above a convolution (so it has an input gradient) and below
// a Dense layer; its kernel is node 1.
template <class L, std::size_t H, std::size_t W, std::size_t C, class Policy = mo::float32>
using HostSpec = mo::ModelSpec<mo::Sequential<mo::Conv2D<C, 1>, L, mo::Flatten, mo::Dense<2>>,
                               mo::Input<H, W, C>, Policy>;

template <class L, std::size_t H, std::size_t W, std::size_t C>
struct Kernel {
  using Spec = HostSpec<L, H, W, C>;
  static constexpr std::size_t values = H * W * C;
  mo::cpu_backend::LayerKernel<L, Spec, 1> kernel;
  std::vector<float> scratch;

  explicit Kernel(std::size_t rows) {
    kernel.prepare(rows);
    scratch.resize(kernel.scratch_bytes(rows) / sizeof(float) + 1);
  }
  std::vector<float> forward(const std::vector<float>& x, std::uint64_t seed,
                             bool training = true) {
    std::vector<float> y(x.size(), -7.0f);
    mo::cpu_backend::ForwardIo<float, float> io;
    io.rows = x.size() / values;
    io.x = x.data();
    io.y = y.data();
    io.training = training;
    io.seed = seed;
    io.scratch = scratch.data();
    kernel.forward(io);
    return y;
  }
  std::vector<float> input_grad(const std::vector<float>& dy, std::uint64_t seed) {
    std::vector<float> dx(dy.size(), 99.0f);  // input_grad writes every value
    mo::cpu_backend::BackwardIo<float> io;
    io.rows = dy.size() / values;
    io.dy = dy.data();
    io.dx = dx.data();
    io.seed = seed;
    io.scratch = scratch.data();
    kernel.input_grad(io);
    return dx;
  }
};

std::vector<float> varied_images(std::size_t rows, std::size_t h, std::size_t w, std::size_t c,
                                 std::uint64_t seed) {
  mo::Rng rng(seed);
  std::vector<float> x(rows * h * w * c);
  for (std::size_t i = 0; i < x.size(); ++i)  // a gradient across the image plus noise
    x[i] = 0.5f + 0.1f * float(i % (w * c)) + rng.uniform(-0.4f, 0.4f);
  return x;
}

// The kernel's output for `rows` varied images against the float64 reference applied with the
// same draws (the layer's stream: node 1, image after image).
template <class L, std::size_t H, std::size_t W, std::size_t C>
void check_against_reference() {
  constexpr std::size_t rows = 4, values = H * W * C;
  Kernel<L, H, W, C> k(rows);
  const std::vector<float> x = varied_images(rows, H, W, C, 31);
  const std::uint64_t seed = 0x1234abcdull;
  const std::vector<float> y = k.forward(x, seed);

  std::vector<double> want(x.size());
  for (std::size_t r = 0; r < rows; ++r) {
    mo::Rng stream = mo::image_stream(seed, 1, r);
    const auto f = mo::draw_factors<L>(stream);
    for (std::size_t d = 0; d < L::draws; ++d) {
      REQUIRE(f[d] >= L::lower[d]);
      REQUIRE((f[d] < L::upper[d] || L::lower[d] == L::upper[d]));
    }
    Image in{H, W, C,
             std::vector<double>(x.begin() + long(r * values), x.begin() + long((r + 1) * values))};
    const Image out = reference_transform(in, keras_matrix<L>(f, H, W), fill_of(L::fill_mode),
                                          L::fill_value, L::sampling == mo::Sampling::nearest);
    std::copy(out.v.begin(), out.v.end(), want.begin() + long(r * values));
  }
  const double error = relative_error(y, want);
  MESSAGE(L::class_name << ": relative error " << error << " against the float64 reference");
  CHECK(error < 1e-6);
  CHECK(relative_error(y, x) > 1e-2);  // it moved the images
}

// <S x, g> = <x, S^T g> for the linear part of the resampling (S 0 is the constant fill's).
template <class L, std::size_t H, std::size_t W, std::size_t C>
void check_adjoint() {
  constexpr std::size_t rows = 3;
  Kernel<L, H, W, C> k(rows);
  mo::Rng rng(77);
  std::vector<float> x(rows * H * W * C), g(x.size()), zero(x.size(), 0.0f);
  for (float& v : x) v = rng.uniform(-1.0f, 1.0f);
  for (float& v : g) v = rng.uniform(-1.0f, 1.0f);
  const std::uint64_t seed = 4242;
  const std::vector<float> sx = k.forward(x, seed), s0 = k.forward(zero, seed);
  const std::vector<float> stg = k.input_grad(g, seed);
  double lhs = 0, rhs = 0, scale = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    lhs += (double(sx[i]) - double(s0[i])) * double(g[i]);
    rhs += double(x[i]) * double(stg[i]);
    scale += std::abs(double(x[i]) * double(stg[i]));
  }
  MESSAGE(L::class_name << ": <Sx, g> = " << lhs << ", <x, S^T g> = " << rhs);
  CHECK(std::abs(lhs - rhs) < 1e-5 * scale);
  // Another step draws other transforms, whose transpose differs.
  CHECK(k.input_grad(g, seed + 1) != stg);
}

}  // namespace

TEST_CASE("augmentation layers: each against a float64 sampler from Keras's formulas") {
  using Q = mo::Range<R<-3, 10>, R<2, 5>>;
  SUBCASE("RandomTranslation") {
    check_against_reference<mo::RandomTranslation<R<3, 10>, Q>, 7, 9, 3>();
    check_against_reference<mo::RandomTranslation<R<3, 10>, Q, mo::Wrap>, 7, 9, 3>();
    check_against_reference<mo::RandomTranslation<Q, R<3, 10>, mo::Constant<R<3, 2>>>, 9, 6, 2>();
    check_against_reference<mo::RandomTranslation<Q, Q, mo::NearestNeighbor, mo::Nearest>, 7, 9,
                            3>();
    check_against_reference<mo::RandomTranslation<Q, Q, mo::Reflect, mo::NearestNeighbor>, 8, 8,
                            1>();
  }
  SUBCASE("RandomZoom") {
    check_against_reference<mo::RandomZoom<mo::Range<R<-1, 2>, R<1, 2>>>, 7, 9, 3>();
    check_against_reference<mo::RandomZoom<R<1, 2>, mo::Range<R<1, 5>, R<3, 5>>, mo::Constant<>>, 9,
                            6, 2>();
    check_against_reference<mo::RandomZoom<R<2, 5>, R<1, 3>, mo::Wrap, mo::NearestNeighbor>, 7, 9,
                            3>();
    check_against_reference<mo::RandomZoom<R<2, 5>, mo::Nearest>, 8, 5, 1>();
  }
  SUBCASE("RandomRotation") {
    check_against_reference<mo::RandomRotation<R<1, 2>>, 7, 9, 3>();
    check_against_reference<mo::RandomRotation<R<1, 3>, mo::Constant<R<-1>>>, 9, 6, 2>();
    check_against_reference<mo::RandomRotation<R<1, 3>, mo::Wrap, mo::NearestNeighbor>, 7, 9, 3>();
    check_against_reference<mo::RandomRotation<mo::Range<R<1, 10>, R<1, 5>>, mo::Nearest>, 8, 8,
                            1>();
  }
}

TEST_CASE("augmentation layers: cases worked by hand") {
  SUBCASE("a shift by whole pixels is the image shifted, the gap filled by the fill mode") {
    // One row a b c d (a = 1, ..., d = 4), two pixels to the right (width factor 1/2 of 4):
    // output x reads input x - 2.
    const std::vector<float> row{1, 2, 3, 4};
    using Right = mo::Range<R<1, 2>, R<1, 2>>;
    using Still = mo::Range<R<0>, R<0>>;
    const auto shifted = [&](auto layer) {
      using L = decltype(layer);
      Kernel<L, 1, 4, 1> k(1);
      return k.forward(row, 99);
    };
    CHECK(shifted(mo::RandomTranslation<Still, Right>{}) == std::vector<float>{2, 1, 1, 2});
    CHECK(shifted(mo::RandomTranslation<Still, Right, mo::Wrap>{}) ==
          std::vector<float>{3, 4, 1, 2});
    CHECK(shifted(mo::RandomTranslation<Still, Right, mo::Nearest>{}) ==
          std::vector<float>{1, 1, 1, 2});
    CHECK(shifted(mo::RandomTranslation<Still, Right, mo::Constant<R<-5>>>{}) ==
          std::vector<float>{-5, -5, 1, 2});
    CHECK(shifted(mo::RandomTranslation<Still, Right, mo::Constant<>, mo::NearestNeighbor>{}) ==
          std::vector<float>{0, 0, 1, 2});
    // Two pixels to the left: output x reads x + 2: c d | d c.
    using Left = mo::Range<R<-1, 2>, R<-1, 2>>;
    CHECK(shifted(mo::RandomTranslation<Still, Left>{}) == std::vector<float>{3, 4, 4, 3});
    // The whole width to the right, a factor of 1 (Keras's largest): x - 4 = -4 ... -1 read
    // d c b a under reflect, and the row itself under wrap.
    using FarOk = mo::Range<R<1>, R<1>>;
    CHECK(shifted(mo::RandomTranslation<Still, FarOk>{}) == std::vector<float>{4, 3, 2, 1});
    CHECK(shifted(mo::RandomTranslation<Still, FarOk, mo::Wrap>{}) == row);
  }
  SUBCASE("a vertical shift moves whole rows, every channel alike") {
    using Down = mo::Range<R<1, 4>, R<1, 4>>;  // 1 pixel of 4
    using Still = mo::Range<R<0>, R<0>>;
    Kernel<mo::RandomTranslation<Down, Still, mo::Constant<R<9>>>, 4, 3, 2> k(2);
    const std::vector<float> x = varied_images(2, 4, 3, 2, 5);
    const std::vector<float> y = k.forward(x, 1);
    for (std::size_t r = 0; r < 2; ++r)
      for (std::size_t i = 0; i < 24; ++i)
        CHECK(y[r * 24 + i] == (i < 6 ? 9.0f : x[r * 24 + i - 6]));
  }
  SUBCASE("a quarter turn of a square image is its transpose, flipped") {
    constexpr std::size_t n = 5, c = 2;
    using Quarter = mo::RandomRotation<mo::Range<R<1, 4>, R<1, 4>>, mo::Constant<R<100>>>;
    Kernel<Quarter, n, n, c> k(1);
    const std::vector<float> x = varied_images(1, n, n, c, 8);
    const std::vector<float> y = k.forward(x, 3);
    std::vector<float> want(x.size());
    for (std::size_t oy = 0; oy < n; ++oy)
      for (std::size_t ox = 0; ox < n; ++ox)
        for (std::size_t ch = 0; ch < c; ++ch)
          want[(oy * n + ox) * c + ch] = x[(ox * n + (n - 1 - oy)) * c + ch];
    CHECK(relative_error(y, want) < 1e-6);  // cos(pi / 2) is 6e-17, not 0
    // Nearest-neighbour sampling lands on the same pixels exactly.
    Kernel<mo::RandomRotation<mo::Range<R<1, 4>, R<1, 4>>, mo::NearestNeighbor>, n, n, c> nk(1);
    CHECK(nk.forward(x, 3) == want);
  }
  SUBCASE("zoom 0 is the identity, bit for bit") {
    const std::vector<float> x = varied_images(3, 6, 7, 3, 12);
    Kernel<mo::RandomZoom<R<0>, mo::Constant<R<1, 2>>>, 6, 7, 3> k(3);
    CHECK(k.forward(x, 17) == x);
    Kernel<mo::RandomZoom<R<0>, R<0>, mo::NearestNeighbor>, 6, 7, 3> nk(3);
    CHECK(nk.forward(x, 17) == x);
  }
  SUBCASE("zoom 1 (out, by 2) reads every other pixel about the centre") {
    // zx = 2 on a row of 5: x_in = 2 x - 2: -2, 0, 2, 4, 6 -> reflect: b, a, c, e, d.
    using Out = mo::Range<R<1>, R<1>>;
    using One = mo::Range<R<0>, R<0>>;
    Kernel<mo::RandomZoom<One, Out>, 1, 5, 1> k(1);
    CHECK(k.forward({1, 2, 3, 4, 5}, 0) == std::vector<float>{2, 1, 3, 5, 4});
  }
}

TEST_CASE("augmentation layers: the input gradient is the transpose of the resampling") {
  using Q = mo::Range<R<-2, 5>, R<1, 3>>;
  check_adjoint<mo::RandomTranslation<Q, Q>, 7, 9, 3>();
  check_adjoint<mo::RandomTranslation<Q, Q, mo::Wrap, mo::NearestNeighbor>, 7, 9, 3>();
  check_adjoint<mo::RandomTranslation<Q, Q, mo::Constant<R<2>>>, 6, 5, 2>();
  check_adjoint<mo::RandomZoom<mo::Range<R<-1, 2>, R<1, 2>>, mo::Nearest>, 7, 9, 3>();
  check_adjoint<mo::RandomZoom<R<1, 2>, R<1, 4>, mo::Constant<R<1>>, mo::NearestNeighbor>, 8, 6,
                2>();
  check_adjoint<mo::RandomRotation<R<1, 2>>, 7, 9, 3>();
  check_adjoint<mo::RandomRotation<R<1, 2>, mo::Wrap>, 9, 9, 1>();
}

TEST_CASE("augmentation layers under bfloat16: the resampling and its transpose in float") {
  // The kernel reads and writes bfloat16 but weights and sums in float, and adds the input
  // gradient up in a float buffer before it rounds once: both within bfloat16's rounding of
  // the float32 kernel's results.
  using L = mo::RandomRotation<R<1, 2>, mo::Constant<R<1, 2>>>;
  constexpr std::size_t rows = 3, h = 7, w = 9, c = 3, values = h * w * c;
  using Spec = HostSpec<L, h, w, c, mo::mixed_bfloat16>;
  static_assert(std::is_same_v<Spec::compute_type, mo::bfloat16>);
  mo::cpu_backend::LayerKernel<L, Spec, 1> narrow;
  narrow.prepare(rows);
  REQUIRE(narrow.scratch_bytes(rows) == rows * values * sizeof(float));
  std::vector<float> scratch(rows * values);
  Kernel<L, h, w, c> wide(rows);

  mo::Rng rng(19);
  std::vector<float> x(rows * values), g(rows * values);
  for (float& v : x) v = float(mo::bfloat16(rng.uniform(-1.0f, 1.0f)));  // exact in both
  for (float& v : g) v = float(mo::bfloat16(rng.uniform(-1.0f, 1.0f)));
  std::vector<mo::bfloat16> xb(x.begin(), x.end()), gb(g.begin(), g.end()), yb(x.size()),
      dxb(x.size());

  mo::cpu_backend::ForwardIo<mo::bfloat16, mo::bfloat16> io;
  io.rows = rows;
  io.x = xb.data();
  io.y = yb.data();
  io.training = true;
  io.seed = 31;
  io.scratch = scratch.data();
  narrow.forward(io);
  mo::cpu_backend::BackwardIo<mo::bfloat16> back;
  back.rows = rows;
  back.dy = gb.data();
  back.dx = dxb.data();
  back.seed = 31;
  back.scratch = scratch.data();
  narrow.input_grad(back);

  const std::vector<float> y = wide.forward(x, 31), dx = wide.input_grad(g, 31);
  CHECK(relative_error(std::vector<float>(yb.begin(), yb.end()), y) < 4e-3);
  CHECK(relative_error(std::vector<float>(dxb.begin(), dxb.end()), dx) < 4e-3);
  CHECK(relative_error(y, x) > 1e-2);
}

TEST_CASE("augmentation layers: one draw per image, new each step, the same for a seed and step") {
  using L = mo::RandomRotation<R<1, 4>>;
  constexpr std::size_t rows = 6, values = 8 * 8 * 2;
  Kernel<L, 8, 8, 2> k(rows);
  // The same image in every row: the rows come out different.
  const std::vector<float> one = varied_images(1, 8, 8, 2, 3);
  std::vector<float> x;
  for (std::size_t r = 0; r < rows; ++r) x.insert(x.end(), one.begin(), one.end());
  const std::vector<float> y = k.forward(x, 555);
  for (std::size_t a = 0; a < rows; ++a)
    for (std::size_t b = a + 1; b < rows; ++b)
      CHECK(!std::equal(y.begin() + long(a * values), y.begin() + long((a + 1) * values),
                        y.begin() + long(b * values)));
  CHECK(k.forward(x, 555) == y);         // the same seed and step: bit for bit
  CHECK(k.forward(x, 556) != y);         // another step
  CHECK(k.forward(x, 555, false) == x);  // evaluate, predict: the identity

  // The draws cover Keras's range uniformly: 4000 angles in [-1/4, 1/4) of a turn.
  double sum = 0, lo = 1, hi = -1;
  for (std::size_t i = 0; i < 4000; ++i) {
    mo::Rng stream = mo::image_stream(555, 1, i);
    const double f = mo::draw_factors<L>(stream)[0];
    sum += f;
    lo = std::min(lo, f);
    hi = std::max(hi, f);
  }
  CHECK(lo >= -0.25);
  CHECK(hi < 0.25);
  CHECK(lo < -0.249);
  CHECK(hi > 0.249);
  CHECK(std::abs(sum / 4000) < 4 * 0.1443 / std::sqrt(4000.0));  // 4 sigma of the mean
}

namespace {

// Images whose class decides where a bright square sits, on noise.
mo::data::ImageDataset square_images(std::size_t count, std::size_t side, std::uint64_t seed) {
  mo::Rng rng(seed);
  std::vector<std::uint8_t> pixels(count * side * side);
  std::vector<std::int32_t> labels(count);
  for (std::size_t n = 0; n < count; ++n) {
    const auto label = static_cast<std::int32_t>(n % 3);
    labels[n] = label;
    for (std::size_t y = 0; y < side; ++y)
      for (std::size_t x = 0; x < side; ++x) {
        const bool lit = x / (side / 3) == std::size_t(label) && y > side / 4 && y < side / 2;
        pixels[(n * side + y) * side + x] =
            static_cast<std::uint8_t>(rng.uniform(0.0f, lit ? 255.0f : 100.0f));
      }
  }
  return mo::data::ImageDataset(std::move(pixels), std::move(labels), side, side, 1);
}

using Augment = mo::Sequential<mo::RandomTranslation<R<1, 8>, R<1, 8>>,
                               mo::RandomRotation<R<1, 20>, mo::Constant<>>,
                               mo::RandomZoom<R<1, 10>, mo::NearestNeighbor>,
                               mo::Rescaling<R<1, 255>>, mo::Conv2D<4, 3, mo::Same, mo::ReLU>,
                               mo::MaxPooling2D<2>, mo::Flatten, mo::Dense<3, mo::Softmax>>;
using Plain = mo::Sequential<mo::Rescaling<R<1, 255>>, mo::Conv2D<4, 3, mo::Same, mo::ReLU>,
                             mo::MaxPooling2D<2>, mo::Flatten, mo::Dense<3, mo::Softmax>>;

template <class M>
void compile(M& m) {
  m.compile(mo::Adam{{.learning_rate = 1e-2}}, mo::SparseCategoricalCrossentropy{},
            mo::metrics::Accuracy{});
}

}  // namespace

TEST_CASE("augmentation layers first in a model: fit trains, evaluate and predict see no change") {
  const auto images = square_images(48, 12, 9);
  mo::Model<Augment, mo::Input<12, 12, 1>> model{7};
  mo::Model<Plain, mo::Input<12, 12, 1>> plain{7};
  compile(model);
  compile(plain);
  const std::string summary = model.summary_string();
  CHECK(summary.find("RandomTranslation") != std::string::npos);
  CHECK(summary.find("RandomRotation") != std::string::npos);
  CHECK(summary.find("RandomZoom") != std::string::npos);

  const auto history = model.fit(images | mo::data::shuffle(48, 1) | mo::data::batch(16),
                                 {.epochs = 2, .verbose = 0});
  for (double loss : history.history.at("loss")) CHECK(std::isfinite(loss));

  // The same weights in a model without the augmentation: the same predictions and loss.
  plain.set_weights(model.get_weights());
  CHECK(model.predict(images | mo::data::batch(20)) == plain.predict(images | mo::data::batch(20)));
  const mo::Evaluation a = model.evaluate(images | mo::data::batch(16));
  const mo::Evaluation b = plain.evaluate(images | mo::data::batch(16));
  CHECK(a.loss == b.loss);
  CHECK(a.accuracy == b.accuracy);

  // A run is reproducible: the same seed, the same draws, the same weights; another seed,
  // other draws.
  mo::Model<Augment, mo::Input<12, 12, 1>> again{7}, other{8};
  compile(again);
  compile(other);
  again.fit(images | mo::data::shuffle(48, 1) | mo::data::batch(16), {.epochs = 2, .verbose = 0});
  CHECK(again.get_weights() == model.get_weights());
  other.set_weights(mo::Model<Augment, mo::Input<12, 12, 1>>{7}.get_weights());
  other.fit(images | mo::data::shuffle(48, 1) | mo::data::batch(16), {.epochs = 2, .verbose = 0});
  CHECK(other.get_weights() != model.get_weights());
}

TEST_CASE("augmentation layers train under mixed_bfloat16 too") {
  const auto images = square_images(32, 12, 4);
  mo::Model<Augment, mo::Input<12, 12, 1>, mo::mixed_bfloat16> model{2};
  compile(model);
  const auto history = model.fit(images | mo::data::batch(16), {.epochs = 2, .verbose = 0});
  for (double loss : history.history.at("loss")) CHECK(std::isfinite(loss));
}

namespace {

// Gradients of a convolution below the layer through the whole CPU step (forward draws, the
// input gradient redraws) against central differences in float64 of the loss.
template <class L>
void check_gradients_through_step() {
  using Net = mo::Sequential<mo::Conv2D<3, 3, mo::Same, mo::Tanh>, L, mo::Conv2D<2, 3>, mo::Flatten,
                             mo::Dense<3, mo::Softmax>>;
  using M = mo::Model<Net, mo::Input<7, 6, 2>>;
  using Spec = typename M::spec;
  M model{3};
  std::vector<float> w = model.get_parameters();
  mo::Rng rng(17);
  for (float& v : w) v += rng.uniform(-0.1f, 0.1f);
  std::vector<float> x(4 * Spec::inputs);
  std::vector<std::int32_t> y(4);
  mo::Rng data(23);
  for (float& v : x) v = data.uniform(-1.5f, 1.5f);
  for (auto& v : y) v = static_cast<std::int32_t>(data.below(Spec::outputs));
  mo::testing::StepLoss<Spec> loss(std::move(x), std::move(y), 5);
  std::vector<float> analytic;
  CHECK(std::isfinite(loss(w, &analytic)));
  // The first convolution's weights: their gradient passes through the layer's transpose.
  constexpr std::size_t first = 3 * 3 * 2 * 3 + 3;
  std::vector<double> got, want;
  for (std::size_t j = 0; j < first; ++j) {
    got.push_back(analytic[j]);
    want.push_back(loss.central_difference(w, j, 1e-2f));
  }
  const double error = relative_error(got, want);
  MESSAGE(L::class_name << ": gradient of the convolution below, relative error " << error);
  CHECK(error < 2e-3);
}

}  // namespace

TEST_CASE("augmentation layers: gradients through the whole step against central differences") {
  check_gradients_through_step<mo::RandomTranslation<R<1, 4>, R<1, 4>>>();
  check_gradients_through_step<mo::RandomZoom<R<1, 3>, mo::Wrap>>();
  check_gradients_through_step<mo::RandomRotation<R<1, 4>, mo::Constant<R<1, 2>>>>();
  check_gradients_through_step<mo::RandomRotation<R<1, 4>, mo::Nearest, mo::NearestNeighbor>>();
}
