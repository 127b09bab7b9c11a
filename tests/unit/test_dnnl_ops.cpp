// The oneDNN CPU operations (backend/cpu/dnnl/): each forward and backward against a float64
// reference written here, gradients against central finite differences of that reference,
// Keras's padding on odd sizes and strides, BatchNormalization's statistics by hand, Dropout's
// mask rate and scaling.
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <iterator>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "memopt/backend/cpu/dnnl/arithmetic_probe.hpp"
#include "memopt/backend/cpu/dnnl/batch_norm.hpp"
#include "memopt/backend/cpu/dnnl/context.hpp"
#include "memopt/backend/cpu/dnnl/conv2d.hpp"
#include "memopt/backend/cpu/dnnl/dropout.hpp"
#include "memopt/backend/cpu/dnnl/flatten.hpp"
#include "memopt/backend/cpu/dnnl/global_average_pooling.hpp"
#include "memopt/backend/cpu/dnnl/matmul.hpp"
#include "memopt/backend/cpu/dnnl/padding.hpp"
#include "memopt/backend/cpu/dnnl/pool2d.hpp"
#include "memopt/backend/cpu/dnnl/relu.hpp"
#include "memopt/backend/cpu/dnnl/rescaling.hpp"
#include "memopt/core/dtype.hpp"
#include "memopt/core/random.hpp"

namespace {

namespace dn = memopt::cpu_backend::onednn;
using dn::Padding;
using memopt::bfloat16;
using Vec = std::vector<double>;

// 64-byte aligned bytes, as an arena slice would be; no slack beyond the next 64 bytes, so
// AddressSanitizer sees an operation that writes past what it asked for.
struct Aligned {
  explicit Aligned(std::size_t bytes)
      : ptr(static_cast<std::byte*>(
            std::aligned_alloc(64, bytes == 0 ? 64 : (bytes + 63) / 64 * 64))) {}
  void* get() const { return ptr.get(); }
  struct Free {
    void operator()(std::byte* p) const { std::free(p); }
  };
  std::unique_ptr<std::byte, Free> ptr;
};

Vec random_vec(std::size_t n, std::uint64_t seed) {
  memopt::Rng rng{seed};
  Vec v(n);
  for (double& x : v) x = rng.uniform(-1.0f, 1.0f);
  return v;
}

template <class T>
std::vector<T> cast(const Vec& v) {
  std::vector<T> out(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) out[i] = T(static_cast<float>(v[i]));
  return out;
}

template <class T>
Vec widen(const std::vector<T>& v) {
  Vec out(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) out[i] = static_cast<float>(v[i]);
  return out;
}

// ||got - want|| / ||want||; `want` must not be all zero.
double rel_error(const Vec& got, const Vec& want) {
  REQUIRE(got.size() == want.size());
  double num = 0, den = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    num += (got[i] - want[i]) * (got[i] - want[i]);
    den += want[i] * want[i];
  }
  REQUIRE(den > 0);
  return std::sqrt(num / den);
}

double dot(const Vec& a, const Vec& b) {
  double s = 0;
  for (std::size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

// Central differences of a scalar loss with respect to each element of `v`.
Vec finite_diff(Vec& v, const std::function<double()>& loss) {
  const double h = 1e-6;
  Vec g(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) {
    const double keep = v[i];
    v[i] = keep + h;
    const double up = loss();
    v[i] = keep - h;
    const double down = loss();
    v[i] = keep;
    g[i] = (up - down) / (2 * h);
  }
  return g;
}

// --- Conv2D reference ------------------------------------------------------------------------

struct ConvRef {
  dn::Conv2dShape s;
  std::int64_t oh() const { return s.out_height(); }
  std::int64_t ow() const { return s.out_width(); }
  std::size_t xi(std::int64_t n, std::int64_t h, std::int64_t w, std::int64_t c) const {
    return static_cast<std::size_t>(((n * s.height + h) * s.width + w) * s.in_channels + c);
  }
  std::size_t yi(std::int64_t n, std::int64_t h, std::int64_t w, std::int64_t f) const {
    return static_cast<std::size_t>(((n * oh() + h) * ow() + w) * s.filters + f);
  }
  std::size_t wi(std::int64_t i, std::int64_t j, std::int64_t c, std::int64_t f) const {
    return static_cast<std::size_t>(((i * s.kernel_w + j) * s.in_channels + c) * s.filters + f);
  }
  // Visits every (input, output, weight) index triple that the convolution multiplies.
  template <class F>
  void each(F&& f) const {
    const auto r = s.rows(), c = s.cols();
    for (std::int64_t n = 0; n < s.batch; ++n)
      for (std::int64_t y = 0; y < oh(); ++y)
        for (std::int64_t x = 0; x < ow(); ++x)
          for (std::int64_t i = 0; i < s.kernel_h; ++i)
            for (std::int64_t j = 0; j < s.kernel_w; ++j) {
              const std::int64_t ih = y * s.stride_h - r.before + i;
              const std::int64_t iw = x * s.stride_w - c.before + j;
              if (ih < 0 || ih >= s.height || iw < 0 || iw >= s.width) continue;
              for (std::int64_t ci = 0; ci < s.in_channels; ++ci)
                for (std::int64_t fo = 0; fo < s.filters; ++fo)
                  f(xi(n, ih, iw, ci), yi(n, y, x, fo), wi(i, j, ci, fo), fo);
            }
  }
  // The pre-activation z = conv(x, w) + b, and y = act(z).
  Vec pre(const Vec& x, const Vec& w, const Vec& b) const {
    Vec z(s.output_elements(), 0.0);
    if (s.bias)
      for (std::size_t k = 0; k < z.size(); ++k) z[k] = b[k % static_cast<std::size_t>(s.filters)];
    each([&](std::size_t a, std::size_t o, std::size_t k, std::int64_t) { z[o] += x[a] * w[k]; });
    return z;
  }
  Vec forward(const Vec& x, const Vec& w, const Vec& b) const {
    Vec y = pre(x, w, b);
    if (s.relu)
      for (double& v : y) v = v > 0 ? v : 0;
    return y;
  }
  Vec backward_data(const Vec& dz, const Vec& w) const {
    Vec dx(s.input_elements(), 0.0);
    each([&](std::size_t a, std::size_t o, std::size_t k, std::int64_t) { dx[a] += dz[o] * w[k]; });
    return dx;
  }
  void backward_weights(const Vec& x, const Vec& dz, Vec& dw, Vec& db) const {
    dw.assign(s.kernel_elements(), 0.0);
    db.assign(static_cast<std::size_t>(s.filters), 0.0);
    each([&](std::size_t a, std::size_t o, std::size_t k, std::int64_t) { dw[k] += x[a] * dz[o]; });
    for (std::size_t o = 0; o < dz.size(); ++o) db[o % db.size()] += dz[o];
  }
};

std::string describe(const dn::Conv2dShape& s) {
  return std::to_string(s.batch) + "x" + std::to_string(s.height) + "x" + std::to_string(s.width) +
         "x" + std::to_string(s.in_channels) + " -> " + std::to_string(s.filters) + " k" +
         std::to_string(s.kernel_h) + "x" + std::to_string(s.kernel_w) + " s" +
         std::to_string(s.stride_h) + "x" + std::to_string(s.stride_w) +
         (s.padding == Padding::same ? " same" : " valid") + (s.relu ? " relu" : "") +
         (s.bias ? "" : " nobias");
}

const dn::Conv2dShape kConvCases[] = {
    {2, 7, 5, 3, 4, 3, 3, 2, 2, Padding::same, true, false},
    {2, 7, 5, 3, 4, 3, 3, 2, 2, Padding::valid, true, true},
    {3, 7, 5, 1, 8, 3, 2, 1, 2, Padding::same, true, true},
    {2, 9, 6, 5, 3, 2, 2, 1, 1, Padding::valid, false, false},
    {1, 7, 5, 16, 32, 5, 5, 2, 1, Padding::same, true, false},
    {2, 8, 7, 3, 2, 1, 1, 3, 3, Padding::same, true, false},
    {2, 6, 6, 2, 3, 2, 2, 2, 2, Padding::same, true, true},
    {4, 28, 28, 1, 32, 3, 3, 1, 1, Padding::valid, true, true},
    {2, 13, 13, 32, 64, 3, 3, 1, 1, Padding::valid, true, true},
};

// Runs Conv2d<T> on one case; returns the errors of y, dx, dw, db against the reference.
template <class T>
std::array<double, 4> conv_errors(const dn::Conv2dShape& s, std::uint64_t seed,
                                  const dn::Conv2dTuning& layouts = {}) {
  const ConvRef ref{s};
  dn::Conv2d<T> conv(s, layouts);
  // Inputs rounded to T first, so the reference sees exactly what the op sees.
  const auto x = cast<T>(random_vec(s.input_elements(), seed));
  const auto w = cast<T>(random_vec(s.kernel_elements(), seed + 1));
  const auto b = cast<float>(random_vec(static_cast<std::size_t>(s.filters), seed + 2));
  const auto dy = cast<T>(random_vec(s.output_elements(), seed + 3));
  Aligned scratch(conv.scratchpad_bytes());

  std::vector<T> y(s.output_elements());
  conv.forward(x.data(), w.data(), b.data(), y.data(), scratch.get());
  const Vec want_y = ref.forward(widen(x), widen(w), widen(b));

  // The gradient at the pre-activation: through the ReLU, gated by the op's own output.
  std::vector<T> dz(s.output_elements());
  if (s.relu)
    dn::relu_backward(y.data(), dy.data(), dz.data(), dz.size());
  else
    dz = dy;
  std::vector<T> dx(s.input_elements());
  conv.backward_data(dz.data(), w.data(), dx.data(), scratch.get());
  std::vector<float> dw(s.kernel_elements()), db(static_cast<std::size_t>(s.filters));
  conv.backward_weights(x.data(), dz.data(), dw.data(), db.data(), scratch.get());

  Vec want_dz = widen(dy);
  if (s.relu)
    for (std::size_t i = 0; i < want_dz.size(); ++i)
      if (!(want_y[i] > 0)) want_dz[i] = 0;
  const Vec want_dx = ref.backward_data(want_dz, widen(w));
  Vec want_dw, want_db;
  ref.backward_weights(widen(x), want_dz, want_dw, want_db);
  return {rel_error(widen(y), want_y), rel_error(widen(dx), want_dx), rel_error(widen(dw), want_dw),
          s.bias ? rel_error(widen(db), want_db) : 0.0};
}

}  // namespace

TEST_CASE("dnnl: the oneDNN version is reported") {
  const std::string v = dn::version_string();
  MESSAGE("oneDNN " << v);
  CHECK(v.rfind("2.", 0) == 0);  // the 2.x API these wrappers use
}

// --- matrix products -------------------------------------------------------------------------

// The float64 product c (m x n) = op(a) op(b), each operand stored row-major as the transpose
// flag says (a: m x k, or k x m when transposed; b: k x n, or n x k).
Vec reference_product(const Vec& a, bool ta, const Vec& b, bool tb, std::size_t m, std::size_t k,
                      std::size_t n) {
  Vec c(m * n, 0.0);
  for (std::size_t i = 0; i < m; ++i)
    for (std::size_t j = 0; j < n; ++j)
      for (std::size_t p = 0; p < k; ++p)
        c[i * n + j] += (ta ? a[p * m + i] : a[i * k + p]) * (tb ? b[j * k + p] : b[p * n + j]);
  return c;
}

TEST_CASE("dnnl: Matmul's three arrangements match the float64 reference") {
  // Odd sizes, a single row or column, a long inner dimension, and Dense's own shapes.
  const dn::MatmulShape sizes[] = {{1, 1, 1},      {7, 5, 3},     {1, 784, 128}, {33, 17, 1},
                                   {32, 784, 128}, {5, 1600, 10}, {128, 3, 257}};
  std::uint64_t seed = 1;
  for (const dn::MatmulShape& size : sizes) {
    for (const auto& [ta, tb] : {std::pair{false, false}, {true, false}, {false, true}}) {
      dn::MatmulShape s = size;
      s.transpose_a = ta;
      s.transpose_b = tb;
      CAPTURE(s.m);
      CAPTURE(s.k);
      CAPTURE(s.n);
      CAPTURE(ta);
      CAPTURE(tb);
      const auto m = static_cast<std::size_t>(s.m), k = static_cast<std::size_t>(s.k),
                 n = static_cast<std::size_t>(s.n);
      const Vec a = random_vec(m * k, seed++), b = random_vec(k * n, seed++);
      const dn::Matmul product(s);
      Aligned scratch(product.scratchpad_bytes());
      // Filled with NaN: the product must overwrite every element of its output.
      std::vector<float> c(m * n, std::nanf(""));
      product.run(cast<float>(a).data(), cast<float>(b).data(), c.data(), scratch.get());
      CHECK(rel_error(widen(c), reference_product(a, ta, b, tb, m, k, n)) < 1e-5);
    }
  }
}

TEST_CASE("dnnl: Keras's valid and same padding") {
  // tf.nn.conv2d: same -> ceil(in / stride), the odd padding pixel after.
  CHECK(dn::window_axis(7, 3, 2, Padding::same) == dn::WindowAxis{4, 1, 1});
  CHECK(dn::window_axis(5, 3, 2, Padding::same) == dn::WindowAxis{3, 1, 1});
  CHECK(dn::window_axis(5, 2, 1, Padding::same) == dn::WindowAxis{5, 0, 1});
  CHECK(dn::window_axis(6, 2, 2, Padding::same) == dn::WindowAxis{3, 0, 0});
  CHECK(dn::window_axis(8, 1, 3, Padding::same) == dn::WindowAxis{3, 0, 0});  // stride > kernel
  CHECK(dn::window_axis(4, 4, 1, Padding::same) == dn::WindowAxis{4, 1, 2});
  CHECK(dn::window_axis(7, 3, 2, Padding::valid) == dn::WindowAxis{3, 0, 0});
  CHECK(dn::window_axis(5, 2, 2, Padding::valid) == dn::WindowAxis{2, 0, 0});
  CHECK(dn::window_axis(2, 3, 1, Padding::valid).out == 0);
}

TEST_CASE("dnnl: Conv2d<float> forward and backward match the float64 reference") {
  std::uint64_t seed = 100;
  double worst = 0;
  using dn::Layout;
  // Slices of 2 rows: batches of 3 end with a slice of 1, whose weight gradient is added.
  const dn::Conv2dTuning layouts[] = {
      {},
      {Layout::plain, Layout::plain, Layout::plain},
      {Layout::blocked, Layout::blocked, Layout::blocked},
      {Layout::plain, Layout::plain, Layout::plain, 2},
      {Layout::blocked, Layout::blocked, Layout::blocked, 2},
      {Layout::blocked_weights, Layout::blocked_weights, Layout::blocked_weights, 2}};
  for (const auto& s : kConvCases)
    for (std::size_t l = 0; l < std::size(layouts); ++l) {
      CAPTURE(describe(s));
      CAPTURE(l);  // automatic, plain, blocked, plain by 2 rows, blocked by 2 rows, blocked
                   // weights by 2 rows
      const auto e = conv_errors<float>(s, seed += 10, layouts[l]);
      for (double v : e) worst = std::max(worst, v);
      CHECK(e[0] <= 1e-5);
      CHECK(e[1] <= 1e-5);
      CHECK(e[2] <= 1e-5);
      CHECK(e[3] <= 1e-5);
    }
  dn::Conv2d<float> conv(kConvCases[7]);
  MESSAGE("worst relative error " << worst << "; MNIST conv1 runs " << conv.implementation());
}

TEST_CASE("dnnl: Conv2d runs a batch in slices that keep a slice's input and output in 1 MiB") {
  // The MNIST convnet: 28x28x1 -> 26x26x32 takes 89.7 KB a row, 13x13x32 -> 11x11x64 52.6 KB.
  const dn::Conv2d<float> conv1(dn::Conv2dShape{128, 28, 28, 1, 32, 3, 3});
  const dn::Conv2d<float> conv2(dn::Conv2dShape{128, 13, 13, 32, 64, 3, 3});
  CHECK(conv1.tuning().rows_per_pass == 8);
  CHECK(conv2.tuning().rows_per_pass == 16);
  // AVX-512 computes on channels-last activations; below it GEMM's data gradient is faster
  // on slices of 16 rows or fewer, and its weight gradient below 4 input channels.
  const bool avx512 = dn::has_avx512_core();
  CHECK(conv2.tuning().forward == (avx512 ? dn::Layout::blocked_weights : dn::Layout::blocked));
  CHECK(conv2.tuning().backward_data == (avx512 ? dn::Layout::blocked_weights : dn::Layout::plain));
  CHECK(conv1.tuning().backward_weights ==
        (avx512 ? dn::Layout::blocked_weights : dn::Layout::plain));
  // A batch smaller than a slice runs whole; a row larger than 1 MiB runs alone.
  CHECK(dn::Conv2d<float>(dn::Conv2dShape{3, 28, 28, 1, 32, 3, 3}).tuning().rows_per_pass == 3);
  CHECK(dn::Conv2d<float>(dn::Conv2dShape{4, 224, 224, 3, 64, 3, 3}).tuning().rows_per_pass == 1);
  // Whole batches of 128 with blocked data gradients, as asked.
  const dn::Conv2d<float> whole(dn::Conv2dShape{128, 13, 13, 32, 64, 3, 3},
                                dn::Conv2dTuning{.rows_per_pass = 1024});
  CHECK(whole.tuning().rows_per_pass == 128);
  CHECK(whole.tuning().backward_data ==
        (avx512 ? dn::Layout::blocked_weights : dn::Layout::blocked));
}

TEST_CASE("dnnl: 16-bit convolutions of fewer than 4 input channels compute in float32") {
  const dn::Conv2d<bfloat16> conv1(dn::Conv2dShape{16, 28, 28, 1, 32, 3, 3});
  const dn::Conv2d<bfloat16> conv2(dn::Conv2dShape{16, 13, 13, 32, 64, 3, 3});
  CHECK(conv1.tuning().arithmetic == dn::Arithmetic::float32);
  CHECK_FALSE(conv1.native());
  // The others follow the probe of this CPU's 16-bit kernels.
  const dn::ArithmeticProbe& probe = dn::arithmetic_probe<bfloat16>();
  CHECK(conv2.tuning().arithmetic ==
        (probe.sixteen_bit_pays() ? dn::Arithmetic::element : dn::Arithmetic::float32));
  CHECK(conv2.native() == probe.sixteen_bit_pays());
  // Asked for, the bf16 kernels serve one channel too where this CPU has them.
  const dn::Conv2d<bfloat16> asked(dn::Conv2dShape{16, 28, 28, 1, 32, 3, 3},
                                   dn::Conv2dTuning{.arithmetic = dn::Arithmetic::element});
  CHECK(asked.tuning().arithmetic == dn::Arithmetic::element);
  CHECK(asked.native() == probe.native);
}

TEST_CASE("dnnl: the arithmetic probe keeps 16-bit kernels unless they are over 1.25x slower") {
  SUBCASE("the rule") {
    CHECK(dn::ArithmeticProbe{true, 1.2, 1.0}.sixteen_bit_pays());
    CHECK(dn::ArithmeticProbe{true, 0.3, 1.0}.sixteen_bit_pays());
    CHECK_FALSE(dn::ArithmeticProbe{true, 1.3, 1.0}.sixteen_bit_pays());
    CHECK_FALSE(dn::ArithmeticProbe{false, 0.0, 1.0}.sixteen_bit_pays());
  }
  SUBCASE("measured once a process, both paths timed where both exist") {
    const dn::ArithmeticProbe& bf16 = dn::arithmetic_probe<bfloat16>();
    CHECK(&bf16 == &dn::arithmetic_probe<bfloat16>());
    CHECK(&bf16 != &dn::arithmetic_probe<memopt::half>());
    for (const dn::ArithmeticProbe* p : {&bf16, &dn::arithmetic_probe<memopt::half>()}) {
      CHECK(p->float32_ms > 0);
      CHECK(p->float32_ms < 1e4);
      CHECK((p->sixteen_bit_ms > 0) == p->native);
    }
    // Native exactly where oneDNN creates the 16-bit kernels when asked for them.
    const dn::Conv2d<bfloat16> asked(dn::Conv2dShape{16, 13, 13, 32, 64, 3, 3},
                                     dn::Conv2dTuning{.arithmetic = dn::Arithmetic::element});
    CHECK(bf16.native == asked.native());
    MESSAGE("bfloat16 convolutions on this CPU: " << bf16.sixteen_bit_ms << " ms, through float32 "
                                                  << bf16.float32_ms << " ms");
  }
}

TEST_CASE("dnnl: Conv2d<bfloat16> forward and backward within 1e-2 of the reference") {
  std::uint64_t seed = 500;
  double worst = 0;
  for (const auto& s : kConvCases) {
    CAPTURE(describe(s));
    // oneDNN's bf16 kernels, and float32 ones on widened copies, for every shape.
    for (const auto a : {dn::Arithmetic::element, dn::Arithmetic::float32}) {
      CAPTURE(static_cast<int>(a));
      const auto e = conv_errors<bfloat16>(s, seed += 10,
                                           dn::Conv2dTuning{.rows_per_pass = 2, .arithmetic = a});
      for (double v : e) worst = std::max(worst, v);
      CHECK(e[0] <= 1e-2);
      CHECK(e[1] <= 1e-2);
      CHECK(e[2] <= 1e-2);
      CHECK(e[3] <= 1e-2);
    }
  }
  dn::Conv2d<bfloat16> conv(kConvCases[8]);
  MESSAGE("worst relative error " << worst << "; bf16 convolution native on this CPU: "
                                  << conv.native() << " (" << conv.implementation() << ")");
}

TEST_CASE("dnnl: Conv2d<half> forward and backward within 1e-2 of the reference") {
  std::uint64_t seed = 600;
  double worst = 0;
  for (const auto& s : kConvCases) {
    CAPTURE(describe(s));
    const auto e = conv_errors<memopt::half>(s, seed += 10);
    for (double v : e) worst = std::max(worst, v);
    CHECK(e[0] <= 1e-2);
    CHECK(e[1] <= 1e-2);
    CHECK(e[2] <= 1e-2);
    CHECK(e[3] <= 1e-2);
  }
  dn::Conv2d<memopt::half> conv(kConvCases[8]);
  MESSAGE("worst relative error " << worst
                                  << "; f16 convolution native on this CPU: " << conv.native());
}

TEST_CASE("dnnl: Conv2d gradients match central finite differences") {
  for (const auto& s : {dn::Conv2dShape{2, 5, 4, 2, 3, 3, 3, 2, 2, Padding::same, true, true},
                        dn::Conv2dShape{1, 6, 5, 3, 2, 2, 3, 1, 2, Padding::valid, true, false}}) {
    CAPTURE(describe(s));
    const ConvRef ref{s};
    Vec x = random_vec(s.input_elements(), 7), w = random_vec(s.kernel_elements(), 8);
    Vec b = random_vec(static_cast<std::size_t>(s.filters), 9);
    const Vec r = random_vec(s.output_elements(), 10);
    auto loss = [&] { return dot(ref.forward(x, w, b), r); };  // L = sum(y * r)

    dn::Conv2d<float> conv(s);
    Aligned scratch(conv.scratchpad_bytes());
    const auto xf = cast<float>(x), wf = cast<float>(w), bf = cast<float>(b), rf = cast<float>(r);
    std::vector<float> y(s.output_elements()), dz(y.size()), dx(xf.size()), dw(wf.size()),
        db(bf.size());
    conv.forward(xf.data(), wf.data(), bf.data(), y.data(), scratch.get());
    if (s.relu)
      dn::relu_backward(y.data(), rf.data(), dz.data(), dz.size());  // dL/dy = r
    else
      dz = rf;
    conv.backward_data(dz.data(), wf.data(), dx.data(), scratch.get());
    conv.backward_weights(xf.data(), dz.data(), dw.data(), db.data(), scratch.get());

    CHECK(rel_error(widen(dx), finite_diff(x, loss)) <= 1e-4);
    CHECK(rel_error(widen(dw), finite_diff(w, loss)) <= 1e-4);
    CHECK(rel_error(widen(db), finite_diff(b, loss)) <= 1e-4);
  }
}

TEST_CASE("dnnl: Conv2d rejects a kernel larger than its input") {
  CHECK_THROWS_AS(dn::Conv2d<float>(dn::Conv2dShape{1, 2, 5, 1, 1, 3, 3}), memopt::error);
  CHECK_THROWS_AS(dn::Conv2d<float>(dn::Conv2dShape{1, 5, 5, 1, 1, 3, 3, 0, 1}), memopt::error);
  CHECK_NOTHROW(dn::Conv2d<float>(dn::Conv2dShape{1, 2, 5, 1, 1, 3, 3, 1, 1, Padding::same}));
}

// --- Pooling -----------------------------------------------------------------------------------

namespace {

struct PoolRef {
  dn::Pool2dShape s;
  // For each output, the input indices inside its window (padding excluded).
  template <class F>
  void each_window(F&& f) const {
    const auto r = s.rows(), c = s.cols();
    std::vector<std::size_t> in;
    for (std::int64_t n = 0; n < s.batch; ++n)
      for (std::int64_t y = 0; y < r.out; ++y)
        for (std::int64_t x = 0; x < c.out; ++x)
          for (std::int64_t ch = 0; ch < s.channels; ++ch) {
            in.clear();
            for (std::int64_t i = 0; i < s.pool_h; ++i)
              for (std::int64_t j = 0; j < s.pool_w; ++j) {
                const std::int64_t ih = y * s.stride_h - r.before + i;
                const std::int64_t iw = x * s.stride_w - c.before + j;
                if (ih < 0 || ih >= s.height || iw < 0 || iw >= s.width) continue;
                in.push_back(static_cast<std::size_t>(
                    ((n * s.height + ih) * s.width + iw) * s.channels + ch));
              }
            f(static_cast<std::size_t>(((n * r.out + y) * c.out + x) * s.channels + ch), in);
          }
  }
  Vec forward(const Vec& x) const {
    Vec y(s.output_elements());
    each_window([&](std::size_t o, const std::vector<std::size_t>& in) {
      double acc = s.kind == dn::PoolKind::max ? -1e300 : 0.0;
      for (std::size_t i : in) acc = s.kind == dn::PoolKind::max ? std::max(acc, x[i]) : acc + x[i];
      y[o] = s.kind == dn::PoolKind::max ? acc : acc / static_cast<double>(in.size());
    });
    return y;
  }
  Vec backward(const Vec& x, const Vec& dy) const {
    Vec dx(s.input_elements(), 0.0);
    each_window([&](std::size_t o, const std::vector<std::size_t>& in) {
      if (s.kind == dn::PoolKind::max) {
        std::size_t arg = in.front();
        for (std::size_t i : in)
          if (x[i] > x[arg]) arg = i;
        dx[arg] += dy[o];
      } else {
        for (std::size_t i : in) dx[i] += dy[o] / static_cast<double>(in.size());
      }
    });
    return dx;
  }
};

std::string describe(const dn::Pool2dShape& s) {
  return std::string(s.kind == dn::PoolKind::max ? "max " : "avg ") + std::to_string(s.batch) +
         "x" + std::to_string(s.height) + "x" + std::to_string(s.width) + "x" +
         std::to_string(s.channels) + " pool" + std::to_string(s.pool_h) + "x" +
         std::to_string(s.pool_w) + " s" + std::to_string(s.stride_h) + "x" +
         std::to_string(s.stride_w) + (s.padding == Padding::same ? " same" : " valid");
}

const dn::Pool2dShape kPoolCases[] = {
    {2, 7, 5, 3, 2, 2, 2, 2, Padding::valid, dn::PoolKind::max},
    {2, 7, 5, 3, 2, 2, 2, 2, Padding::same, dn::PoolKind::max},
    {2, 7, 5, 3, 3, 3, 2, 2, Padding::same, dn::PoolKind::max},
    {2, 7, 5, 3, 2, 2, 2, 2, Padding::same, dn::PoolKind::average},
    {2, 7, 5, 4, 3, 2, 1, 2, Padding::same, dn::PoolKind::average},
    {2, 7, 5, 4, 3, 3, 1, 1, Padding::valid, dn::PoolKind::average},
    {3, 26, 26, 32, 2, 2, 2, 2, Padding::valid, dn::PoolKind::max},
    {3, 11, 11, 64, 2, 2, 2, 2, Padding::valid, dn::PoolKind::max},
};

template <class T>
std::array<double, 2> pool_errors(const dn::Pool2dShape& s, std::uint64_t seed, double shift) {
  const PoolRef ref{s};
  dn::Pool2d<T> pool(s);
  Vec xv = random_vec(s.input_elements(), seed);
  for (double& v : xv) v += shift;
  const auto x = cast<T>(xv);
  const auto dy = cast<T>(random_vec(s.output_elements(), seed + 1));
  Aligned workspace(pool.workspace_bytes()), scratch(pool.scratchpad_bytes());
  std::vector<T> y(s.output_elements()), dx(s.input_elements());
  std::vector<T> y_infer(s.output_elements());
  pool.forward_inference(x.data(), y_infer.data(), scratch.get());
  pool.forward(x.data(), y.data(), workspace.get(), scratch.get());
  pool.backward(dy.data(), workspace.get(), dx.data(), scratch.get());
  const Vec want_y = ref.forward(widen(x));
  return {std::max(rel_error(widen(y), want_y), rel_error(widen(y_infer), want_y)),
          rel_error(widen(dx), ref.backward(widen(x), widen(dy)))};
}

}  // namespace

TEST_CASE("dnnl: Pool2d<float> forward and backward match the float64 reference") {
  std::uint64_t seed = 300;
  for (const auto& s : kPoolCases) {
    CAPTURE(describe(s));
    // All-negative inputs too: a max over `same` padding must not see the padding as 0.
    for (double shift : {0.0, -3.0}) {
      CAPTURE(shift);
      const auto e = pool_errors<float>(s, seed += 10, shift);
      CHECK(e[0] <= 1e-5);
      CHECK(e[1] <= 1e-5);
    }
  }
}

TEST_CASE("dnnl: Pool2d<bfloat16> within 1e-2 of the reference") {
  std::uint64_t seed = 700;
  for (const auto& s : kPoolCases) {
    CAPTURE(describe(s));
    const auto e = pool_errors<bfloat16>(s, seed += 10, 0.0);
    CHECK(e[0] <= 1e-2);
    CHECK(e[1] <= 1e-2);
  }
}

TEST_CASE("dnnl: Pool2d<half> within 1e-2 of the reference") {
  std::uint64_t seed = 800;
  for (const auto& s : kPoolCases) {
    CAPTURE(describe(s));
    const auto e = pool_errors<memopt::half>(s, seed += 10, 0.0);
    CHECK(e[0] <= 1e-2);
    CHECK(e[1] <= 1e-2);
  }
}

TEST_CASE("dnnl: max pooling keeps its argmax in the workspace") {
  const dn::Pool2dShape s{1, 4, 4, 1, 2, 2, 2, 2, Padding::valid, dn::PoolKind::max};
  dn::Pool2d<float> pool(s);
  CHECK(pool.workspace_bytes() > 0);
  CHECK(dn::Pool2d<float>(
            dn::Pool2dShape{1, 4, 4, 1, 2, 2, 2, 2, Padding::valid, dn::PoolKind::average})
            .workspace_bytes() == 0);
  // Each 2x2 window's maximum sits at a different corner.
  std::vector<float> x{9, 1, 2, 3,  //
                       4, 5, 6, 8,  //
                       1, 2, 3, 4,  //
                       7, 0, 5, 2};
  const std::vector<float> dy{10, 20, 30, 40};
  Aligned workspace(pool.workspace_bytes()), scratch(pool.scratchpad_bytes());
  std::vector<float> y(4), dx(16, -1.0f);
  pool.forward(x.data(), y.data(), workspace.get(), scratch.get());
  CHECK(y == std::vector<float>{9, 8, 7, 5});
  // Overwrite x: backward must use the recorded argmax, not recompute it.
  std::fill(x.begin(), x.end(), 0.0f);
  pool.backward(dy.data(), workspace.get(), dx.data(), scratch.get());
  CHECK(dx == std::vector<float>{10, 0, 0, 0,  //
                                 0, 0, 0, 20,  //
                                 0, 0, 0, 0,   //
                                 30, 0, 40, 0});
}

TEST_CASE("dnnl: Pool2d gradients match central finite differences") {
  for (const auto kind : {dn::PoolKind::max, dn::PoolKind::average}) {
    const dn::Pool2dShape s{2, 5, 4, 2, 3, 2, 2, 2, Padding::same, kind};
    CAPTURE(describe(s));
    const PoolRef ref{s};
    Vec x = random_vec(s.input_elements(), 21);
    const Vec r = random_vec(s.output_elements(), 22);
    dn::Pool2d<float> pool(s);
    Aligned workspace(pool.workspace_bytes()), scratch(pool.scratchpad_bytes());
    const auto xf = cast<float>(x), rf = cast<float>(r);
    std::vector<float> y(r.size()), dx(x.size());
    pool.forward(xf.data(), y.data(), workspace.get(), scratch.get());
    pool.backward(rf.data(), workspace.get(), dx.data(), scratch.get());
    CHECK(rel_error(widen(dx), finite_diff(x, [&] { return dot(ref.forward(x), r); })) <= 1e-4);
  }
}

// --- BatchNormalization ------------------------------------------------------------------------

namespace {

struct BnRef {
  dn::BatchNormShape s;
  std::size_t channels() const { return static_cast<std::size_t>(s.channels); }
  void stats(const Vec& x, Vec& mean, Vec& var) const {
    const std::size_t c = channels(), m = x.size() / c;
    mean.assign(c, 0.0);
    var.assign(c, 0.0);
    for (std::size_t i = 0; i < x.size(); ++i) mean[i % c] += x[i] / static_cast<double>(m);
    for (std::size_t i = 0; i < x.size(); ++i)
      var[i % c] += (x[i] - mean[i % c]) * (x[i] - mean[i % c]) / static_cast<double>(m);
  }
  Vec normalize(const Vec& x, const Vec& g, const Vec& b, const Vec& mean, const Vec& var) const {
    Vec y(x.size());
    const std::size_t c = channels();
    for (std::size_t i = 0; i < x.size(); ++i) {
      const double gamma = s.scale ? g[i % c] : 1.0, beta = s.center ? b[i % c] : 0.0;
      y[i] = gamma * (x[i] - mean[i % c]) / std::sqrt(var[i % c] + s.epsilon) + beta;
    }
    return y;
  }
  Vec train(const Vec& x, const Vec& g, const Vec& b) const {
    Vec mean, var;
    stats(x, mean, var);
    return normalize(x, g, b, mean, var);
  }
};

}  // namespace

TEST_CASE("dnnl: BatchNorm by hand: batch statistics, moving statistics, inference") {
  // Two samples, two channels: channel 0 sees {1, 3} (mean 2, var 1), channel 1 {0, 4}
  // (mean 2, var 4; biased, as Keras).
  dn::BatchNorm<float> bn(dn::BatchNormShape{2, 1, 1, 2});
  const std::vector<float> x{1, 0, 3, 4}, gamma{2, 1}, beta{0.5f, -1};
  Aligned scratch(bn.scratchpad_bytes());
  std::vector<float> y(4), mean(2), var(2);
  bn.forward_training(x.data(), gamma.data(), beta.data(), y.data(), mean.data(), var.data(),
                      scratch.get());
  CHECK(mean[0] == doctest::Approx(2.0));
  CHECK(mean[1] == doctest::Approx(2.0));
  CHECK(var[0] == doctest::Approx(1.0));
  CHECK(var[1] == doctest::Approx(4.0));
  // y = gamma * (x - mean) / sqrt(var + 1e-3) + beta
  CHECK(y[0] == doctest::Approx(-1.4990007493755464).epsilon(1e-6));
  CHECK(y[1] == doctest::Approx(-1.9998750234326181).epsilon(1e-6));
  CHECK(y[2] == doctest::Approx(2.499000749375546).epsilon(1e-6));
  CHECK(y[3] == doctest::Approx(-0.00012497656738186258).epsilon(1e-3));

  // Keras's initial moving statistics are 0 and 1; one step at momentum 0.99.
  std::vector<float> moving_mean{0, 0}, moving_var{1, 1};
  dn::update_moving_statistics(moving_mean.data(), moving_var.data(), mean.data(), var.data(), 2);
  CHECK(moving_mean[0] == doctest::Approx(0.02));
  CHECK(moving_mean[1] == doctest::Approx(0.02));
  CHECK(moving_var[0] == doctest::Approx(1.0));
  CHECK(moving_var[1] == doctest::Approx(1.03));
  dn::update_moving_statistics(moving_mean.data(), moving_var.data(), mean.data(), var.data(), 2,
                               0.5f);
  CHECK(moving_mean[0] == doctest::Approx(1.01));
  CHECK(moving_var[1] == doctest::Approx(2.515));

  // Inference normalizes with the given statistics instead of the batch's.
  const std::vector<float> mm{0.5f, -1}, mv{4, 0.25f};
  bn.forward_inference(x.data(), gamma.data(), beta.data(), mm.data(), mv.data(), y.data(),
                       scratch.get());
  CHECK(y[0] == doctest::Approx(0.9999375117163091).epsilon(1e-6));
  CHECK(y[1] == doctest::Approx(0.9960119601394981).epsilon(1e-6));
  CHECK(y[2] == doctest::Approx(2.9996875585815452).epsilon(1e-6));
  CHECK(y[3] == doctest::Approx(8.98005980069749).epsilon(1e-6));

  // With the batch's own statistics, inference reproduces training.
  std::vector<float> y_train(4), y_infer(4);
  bn.forward_training(x.data(), gamma.data(), beta.data(), y_train.data(), mean.data(), var.data(),
                      scratch.get());
  bn.forward_inference(x.data(), gamma.data(), beta.data(), mean.data(), var.data(), y_infer.data(),
                       scratch.get());
  for (std::size_t i = 0; i < 4; ++i) CHECK(y_infer[i] == doctest::Approx(y_train[i]));
}

TEST_CASE("dnnl: BatchNorm forward and backward match the float64 reference") {
  const dn::BatchNormShape cases[] = {{4, 7, 5, 3},
                                      {3, 13, 13, 32},
                                      {16, 1, 1, 10},
                                      {2, 5, 3, 6, 1e-3f, false, true},
                                      {2, 5, 3, 6, 1e-3f, true, false}};
  std::uint64_t seed = 900;
  for (const auto& s : cases) {
    CAPTURE(s.batch * 1000 + s.height * 100 + s.channels);
    const BnRef ref{s};
    const std::size_t n = s.elements(), c = static_cast<std::size_t>(s.channels);
    Vec x = random_vec(n, seed += 10);
    for (std::size_t i = 0; i < n; ++i) x[i] = 3.0 * x[i] + static_cast<double>(i % c);
    const Vec g = random_vec(c, seed + 1), b = random_vec(c, seed + 2),
              dy = random_vec(n, seed + 3);
    const auto xf = cast<float>(x), gf = cast<float>(g), bf = cast<float>(b), dyf = cast<float>(dy);

    dn::BatchNorm<float> bn(s);
    Aligned scratch(bn.scratchpad_bytes());
    std::vector<float> y(n), mean(c), var(c), dx(n), dg(c, 7.0f), db(c, 7.0f);
    bn.forward_training(xf.data(), gf.data(), bf.data(), y.data(), mean.data(), var.data(),
                        scratch.get());
    Vec want_mean, want_var;
    ref.stats(widen(xf), want_mean, want_var);
    CHECK(rel_error(widen(mean), want_mean) <= 1e-5);
    CHECK(rel_error(widen(var), want_var) <= 1e-5);
    CHECK(rel_error(widen(y), ref.train(widen(xf), g, b)) <= 1e-5);

    bn.backward(xf.data(), dyf.data(), gf.data(), mean.data(), var.data(), dx.data(), dg.data(),
                db.data(), scratch.get());
    // The float64 gradients by central differences of L = sum(y * dy), on the small cases
    // (each difference is a full forward); the closed form below covers every case.
    Vec xd = widen(xf), gd = widen(gf), bd = widen(bf);
    auto loss = [&] { return dot(ref.train(xd, gd, bd), dy); };
    if (n <= 2000) {
      CHECK(rel_error(widen(dx), finite_diff(xd, loss)) <= 1e-4);
      if (s.scale) CHECK(rel_error(widen(dg), finite_diff(gd, loss)) <= 1e-4);
      if (s.center) CHECK(rel_error(widen(db), finite_diff(bd, loss)) <= 1e-4);
    }

    // The closed form, to 1e-5: dx = gamma / sigma * (dy - mean(dy) - xhat * mean(dy * xhat)).
    Vec want_dx(n), sum_dy(c, 0.0), sum_dy_xhat(c, 0.0);
    const double m = static_cast<double>(n / c);
    for (std::size_t i = 0; i < n; ++i) {
      const double xhat = (xd[i] - want_mean[i % c]) / std::sqrt(want_var[i % c] + s.epsilon);
      sum_dy[i % c] += dy[i];
      sum_dy_xhat[i % c] += dy[i] * xhat;
    }
    for (std::size_t i = 0; i < n; ++i) {
      const double sigma = std::sqrt(want_var[i % c] + s.epsilon);
      const double xhat = (xd[i] - want_mean[i % c]) / sigma;
      want_dx[i] = (s.scale ? gd[i % c] : 1.0) / sigma *
                   (dy[i] - sum_dy[i % c] / m - xhat * sum_dy_xhat[i % c] / m);
    }
    CHECK(rel_error(widen(dx), want_dx) <= 1e-5);
    if (s.scale) CHECK(rel_error(widen(dg), sum_dy_xhat) <= 1e-5);
    if (s.center) CHECK(rel_error(widen(db), sum_dy) <= 1e-5);

    // Inference with moving statistics against the reference.
    const Vec mm = random_vec(c, seed + 4);
    Vec mv = random_vec(c, seed + 5);
    for (double& v : mv) v = v * v + 0.5;
    bn.forward_inference(xf.data(), gf.data(), bf.data(), cast<float>(mm).data(),
                         cast<float>(mv).data(), y.data(), scratch.get());
    CHECK(rel_error(widen(y), ref.normalize(widen(xf), g, b, widen(cast<float>(mm)),
                                            widen(cast<float>(mv)))) <= 1e-5);
  }
}

TEST_CASE_TEMPLATE("dnnl: BatchNorm<16-bit> within 1e-2 of the reference", T, bfloat16,
                   memopt::half) {
  const dn::BatchNormShape s{4, 7, 5, 8};
  const BnRef ref{s};
  const std::size_t n = s.elements(), c = 8;
  const auto x = cast<T>(random_vec(n, 41)), dy = cast<T>(random_vec(n, 42));
  const auto g = cast<float>(random_vec(c, 43)), b = cast<float>(random_vec(c, 44));
  dn::BatchNorm<T> bn(s);
  Aligned scratch(bn.scratchpad_bytes());
  std::vector<T> y(n), dx(n);
  std::vector<float> mean(c), var(c), dg(c), db(c);
  bn.forward_training(x.data(), g.data(), b.data(), y.data(), mean.data(), var.data(),
                      scratch.get());
  CHECK(rel_error(widen(y), ref.train(widen(x), widen(g), widen(b))) <= 1e-2);
  bn.backward(x.data(), dy.data(), g.data(), mean.data(), var.data(), dx.data(), dg.data(),
              db.data(), scratch.get());
  Vec xd = widen(x), gd = widen(g), bd = widen(b);
  const Vec dyd = widen(dy);
  auto loss = [&] { return dot(ref.train(xd, gd, bd), dyd); };
  CHECK(rel_error(widen(dx), finite_diff(xd, loss)) <= 1e-2);
  CHECK(rel_error(widen(dg), finite_diff(gd, loss)) <= 1e-2);
}

// --- Small operations -------------------------------------------------------------------------

TEST_CASE("dnnl: Dropout keeps 1 - rate of the elements, scaled by 1 / (1 - rate)") {
  const std::size_t n = 100'003;  // not a multiple of 64
  const float rate = 0.3f;
  const auto x = cast<float>(random_vec(n, 51));
  std::vector<float> y(n), dx(n);
  std::vector<std::uint64_t> mask(dn::dropout_mask_words(n), ~0ull);
  memopt::Rng rng{1234};
  dn::dropout_forward(x.data(), y.data(), mask.data(), n, rate, rng);
  std::size_t kept = 0, consistent = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const bool bit = (mask[i / 64] >> (i % 64)) & 1u;
    kept += bit;
    const float want = bit ? x[i] / (1.0f - rate) : 0.0f;
    consistent += std::abs(y[i] - want) <= 1e-6f * std::abs(want);
  }
  CHECK(consistent == n);
  // The kept fraction: 0.7 with a standard deviation of sqrt(0.21 / n) = 0.00145.
  CHECK(static_cast<double>(kept) / n == doctest::Approx(0.7).epsilon(0.01));
  CHECK((mask.back() >> (n % 64)) == 0);  // no bits past the end

  // The same seed gives the same mask; another seed another.
  std::vector<std::uint64_t> again(mask.size()), other(mask.size());
  memopt::Rng same{1234}, different{1235};
  dn::dropout_forward(x.data(), y.data(), again.data(), n, rate, same);
  CHECK(again == mask);
  dn::dropout_forward(x.data(), y.data(), other.data(), n, rate, different);
  CHECK(other != mask);

  // Backward: the same mask and scale.
  const auto dy = cast<float>(random_vec(n, 52));
  dn::dropout_backward(dy.data(), mask.data(), dx.data(), n, rate);
  std::size_t ok = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const bool bit = (mask[i / 64] >> (i % 64)) & 1u;
    const float want = bit ? dy[i] / (1.0f - rate) : 0.0f;
    ok += std::abs(dx[i] - want) <= 1e-6f * std::abs(want);
  }
  CHECK(ok == n);

  // rate 0 is the identity; rate 1 is not a dropout.
  memopt::Rng r0{1};
  dn::dropout_forward(x.data(), y.data(), mask.data(), n, 0.0f, r0);
  CHECK(y == x);
  CHECK_THROWS_AS(dn::dropout_forward(x.data(), y.data(), mask.data(), n, 1.0f, r0), memopt::error);
}

TEST_CASE("dnnl: GlobalAveragePooling2D, Flatten and Rescaling") {
  const std::size_t N = 3, H = 5, W = 3, C = 4;
  const Vec xd = random_vec(N * H * W * C, 61), dyd = random_vec(N * C, 62);
  const auto x = cast<float>(xd), dy = cast<float>(dyd);
  std::vector<float> y(N * C), dx(x.size());
  dn::global_average_pooling_forward(x.data(), y.data(), N, H, W, C);
  Vec want(N * C, 0.0), want_dx(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    const std::size_t n = i / (H * W * C), c = i % C;
    want[n * C + c] += static_cast<double>(x[i]) / (H * W);
    want_dx[i] = static_cast<double>(dy[n * C + c]) / (H * W);
  }
  CHECK(rel_error(widen(y), want) <= 1e-6);
  dn::global_average_pooling_backward(dy.data(), dx.data(), N, H, W, C);
  CHECK(rel_error(widen(dx), want_dx) <= 1e-6);

  std::vector<float> flat(x.size()), back(x.size());
  dn::flatten_forward(x.data(), flat.data(), x.size());
  CHECK(flat == x);
  dn::flatten_backward(flat.data(), back.data(), x.size());
  CHECK(back == x);

  const std::vector<std::uint8_t> pixels{0, 1, 128, 255};
  std::vector<float> scaled(4);
  dn::rescaling_forward(pixels.data(), scaled.data(), 4, 1.0f / 255.0f, 0.0f);
  CHECK(scaled[0] == 0.0f);
  CHECK(scaled[2] == doctest::Approx(128.0 / 255.0));
  CHECK(scaled[3] == doctest::Approx(1.0));
  dn::rescaling_forward(pixels.data(), scaled.data(), 4, 1.0f / 127.5f, -1.0f);
  CHECK(scaled[0] == -1.0f);
  CHECK(scaled[3] == doctest::Approx(1.0));
  std::vector<float> g{1, -2, 3, 0.5f}, dg(4);
  dn::rescaling_backward(g.data(), dg.data(), 4, 0.5f);
  CHECK(dg == std::vector<float>{0.5f, -1, 1.5f, 0.25f});
}

TEST_CASE("dnnl: the ReLU backward from the output and from a 1-bit mask") {
  const std::size_t n = 1000;  // not a multiple of 64
  Vec yd = random_vec(n, 71);
  for (double& v : yd) v = v > 0 ? v : 0;  // a ReLU's output: about half zeros
  const auto y = cast<float>(yd), dy = cast<float>(random_vec(n, 72));
  std::vector<float> from_y(n), from_mask(n);
  std::vector<std::uint64_t> mask(dn::relu_mask_words(n), ~0ull);
  dn::relu_backward(y.data(), dy.data(), from_y.data(), n);
  dn::relu_mask_pack(y.data(), mask.data(), n);
  dn::relu_backward_masked(mask.data(), dy.data(), from_mask.data(), n);
  std::size_t zeros = 0, right = 0;
  for (std::size_t i = 0; i < n; ++i) {
    zeros += y[i] == 0.0f;
    right += from_y[i] == (y[i] > 0.0f ? dy[i] : 0.0f);
  }
  CHECK(zeros > n / 4);
  CHECK(zeros < 3 * n / 4);
  CHECK(right == n);
  CHECK(from_mask == from_y);
  CHECK((mask.back() >> (n % 64)) == 0);  // no bits past the end
}
