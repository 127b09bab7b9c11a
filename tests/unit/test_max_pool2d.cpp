// The compile-time max pooling over tiling windows (backend/cpu/max_pool2d.hpp) against the
// general kernel, with ReLU's mask applied to the general kernel's gradient as the layer below
// would: the same outputs, and the same input gradients value for value, ReLU's derivative
// included, although the tiled kernels never read the mask.

#include <doctest/doctest.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include <memopt/backend/cpu/max_pool2d.hpp>
#include <memopt/backend/cpu/relu_mask.hpp>
#include <memopt/core/dtype.hpp>
#include <memopt/core/random.hpp>

namespace {

using memopt::bfloat16;
using memopt::Padding;
using memopt::cpu_backend::MaxPool2dShape;

// ReLU outputs with ties: values on a coarse grid, about a third of them 0, so that windows
// have repeated maxima and some have no positive value at all; a few NaNs where asked.
template <class T>
std::vector<T> relu_outputs(std::size_t n, std::uint64_t seed, bool with_nan) {
  memopt::Rng rng{seed};
  std::vector<T> v(n);
  for (std::size_t i = 0; i < n; ++i) {
    const float u = std::round(rng.uniform(-1.0f, 2.0f) * 4.0f) / 4.0f;
    v[i] = T(u > 0.0f ? u : 0.0f);
    if (with_nan && i % 37 == 5) v[i] = T(std::numeric_limits<float>::quiet_NaN());
  }
  return v;
}

template <class T, MaxPool2dShape S>
void check_tiled_matches_general(std::size_t rows, std::uint64_t seed, bool with_nan) {
  constexpr std::size_t in = S.height * S.width * S.channels;
  constexpr std::size_t out = (S.height / S.pool_h) * (S.width / S.pool_w) * S.channels;
  auto x = relu_outputs<T>(in * rows, seed, with_nan);
  std::vector<T> dy(out * rows);
  memopt::Rng rng{seed + 1};
  for (T& g : dy) g = T(rng.uniform(-1.0f, 1.0f));
  // Every window of an all-NaN or all-zero input must lose its gradient as well; make one.
  for (std::size_t k = 0; k < S.channels; ++k)
    for (std::size_t at = 0; at < S.pool_h * S.pool_w; ++at)
      x[(at / S.pool_w * S.width + at % S.pool_w) * S.channels + k] = T(0.0f);

  // The general kernels, then ReLU's derivative from its 1-bit mask, as ActivationGrad does.
  std::vector<T> y(out * rows);
  std::vector<std::uint8_t> argmax(out * rows);
  memopt::cpu_backend::max_pool2d_forward(S, rows, x.data(), y.data(), argmax.data());
  std::vector<float> dx(in * rows);
  memopt::cpu_backend::max_pool2d_backward(S, rows, dy.data(), argmax.data(), dx.data());
  const std::size_t mask_bytes = (in + 7) / 8;
  std::vector<std::uint8_t> mask(mask_bytes * rows);
  for (std::size_t n = 0; n < rows; ++n) {
    memopt::cpu_backend::pack_relu_mask(x.data() + n * in, in, mask.data() + n * mask_bytes);
    memopt::cpu_backend::mask_relu_gradient(mask.data() + n * mask_bytes, 0, dx.data() + n * in,
                                            in);
  }

  std::vector<T> tiled_y(out * rows);
  std::vector<std::uint8_t> tiled_argmax(out * rows);
  memopt::cpu_backend::tiled_max_pool2d_forward<S, true>(rows, x.data(), tiled_y.data(),
                                                         tiled_argmax.data());
  std::vector<T> tiled_dx(in * rows, T(7.0f));  // every value must be written
  memopt::cpu_backend::tiled_max_pool2d_backward<S>(rows, dy.data(), tiled_argmax.data(),
                                                    tiled_dx.data());

  std::size_t y_diff = 0, dx_diff = 0, no_gradient = 0, nonzero_dx = 0;
  for (std::size_t i = 0; i < out * rows; ++i) {
    const float a = static_cast<float>(y[i]), b = static_cast<float>(tiled_y[i]);
    y_diff += (a == b || (std::isnan(a) && std::isnan(b))) ? 0 : 1;
    no_gradient += tiled_argmax[i] == memopt::cpu_backend::kNoGradient ? 1 : 0;
  }
  for (std::size_t i = 0; i < in * rows; ++i) {
    dx_diff += dx[i] == static_cast<float>(tiled_dx[i]) ? 0 : 1;
    nonzero_dx += dx[i] != 0.0f ? 1 : 0;
  }
  CHECK(y_diff == 0);
  CHECK(dx_diff == 0);
  CHECK(no_gradient > 0);  // the zero windows above, at least
  CHECK(nonzero_dx > 0);

  // Without an argmax (inference) the outputs are the same.
  std::vector<T> inference_y(out * rows);
  memopt::cpu_backend::tiled_max_pool2d_forward<S, true>(rows, x.data(), inference_y.data(),
                                                         nullptr);
  CHECK(std::memcmp(inference_y.data(), tiled_y.data(), out * rows * sizeof(T)) == 0);
}

constexpr MaxPool2dShape kMnistPool{26, 26, 32, 2, 2, 2, 2, Padding::valid};
constexpr MaxPool2dShape kOddPool{7, 5, 3, 2, 2, 2, 2, Padding::valid};  // drops a row, a column
constexpr MaxPool2dShape kWidePool{9, 7, 5, 3, 3, 3, 3, Padding::valid};
constexpr MaxPool2dShape kTallPool{8, 6, 17, 2, 3, 2, 3, Padding::valid};

}  // namespace

TEST_CASE("max pooling over tiling windows: as the general kernel, ReLU's derivative included") {
  static_assert(kMnistPool.tiles() && kOddPool.tiles() && kWidePool.tiles() && kTallPool.tiles());
  SUBCASE("float32") {
    check_tiled_matches_general<float, kMnistPool>(3, 11, false);
    check_tiled_matches_general<float, kOddPool>(4, 12, true);
    check_tiled_matches_general<float, kWidePool>(2, 13, true);
    check_tiled_matches_general<float, kTallPool>(2, 14, false);
  }
  SUBCASE("bfloat16") {
    check_tiled_matches_general<bfloat16, kMnistPool>(3, 21, false);
    check_tiled_matches_general<bfloat16, kOddPool>(4, 22, true);
    check_tiled_matches_general<bfloat16, kWidePool>(2, 23, true);
  }
  SUBCASE("half") {
    check_tiled_matches_general<memopt::half, kOddPool>(4, 31, true);
    check_tiled_matches_general<memopt::half, kTallPool>(2, 32, false);
  }
}

TEST_CASE("max pooling over tiling windows: a window without a positive value takes no gradient") {
  // One sample, one channel, 2x4 -> 1x2: the first window's maximum is 0 (ReLU's zeros), the
  // second's 3 at its last position.
  constexpr MaxPool2dShape s{2, 4, 1, 2, 2, 2, 2, Padding::valid};
  const float x[] = {0.0f, 0.0f, 1.0f, 2.0f, 0.0f, 0.0f, 0.5f, 3.0f};
  float y[2];
  std::uint8_t argmax[2];
  memopt::cpu_backend::tiled_max_pool2d_forward<s, true>(1, x, y, argmax);
  CHECK(y[0] == 0.0f);
  CHECK(y[1] == 3.0f);
  CHECK(argmax[0] == memopt::cpu_backend::kNoGradient);
  CHECK(argmax[1] == 3);
  const float dy[] = {5.0f, -2.0f};
  float dx[8];
  memopt::cpu_backend::tiled_max_pool2d_backward<s>(1, dy, argmax, dx);
  const float expected[] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, -2.0f};
  for (int i = 0; i < 8; ++i) CHECK(dx[i] == expected[i]);
  // Over a linear input the first maximum takes the gradient, as TensorFlow's.
  memopt::cpu_backend::tiled_max_pool2d_forward<s, false>(1, x, y, argmax);
  CHECK(argmax[0] == 0);
}
