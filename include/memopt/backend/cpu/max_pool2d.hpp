#pragma once
// Max pooling over NHWC tensors with its argmax kept as one byte per output value.
//
// Why not oneDNN's: on this CPU (AVX2, oneDNN 2.6.3) its NHWC max pooling with a workspace
// takes 9-11 ms forward and 7-10 ms backward for the MNIST convnet's first pool at batch 128
// (26x26x32, one thread; bench_cnn_steps --profile), several times what reading the input
// costs. Here the channels are the inner loop, which the compiler vectorizes.

#include <cstddef>
#include <cstdint>
#include <limits>

#include "memopt/backend/cpu/relu_mask.hpp"
#include "memopt/core/convert.hpp"
#include "memopt/layers/window.hpp"

namespace memopt::cpu_backend {

/// The geometry of a 2-D max pooling over [batch, height, width, channels].
struct MaxPool2dShape {
  std::size_t height = 1, width = 1, channels = 1;
  std::size_t pool_h = 2, pool_w = 2, stride_h = 2, stride_w = 2;
  Padding padding = Padding::valid;

  constexpr WindowAxis rows() const {
    return window_axis(static_cast<std::int64_t>(height), static_cast<std::int64_t>(pool_h),
                       static_cast<std::int64_t>(stride_h), padding);
  }
  constexpr WindowAxis cols() const {
    return window_axis(static_cast<std::int64_t>(width), static_cast<std::int64_t>(pool_w),
                       static_cast<std::int64_t>(stride_w), padding);
  }
  /// The windows tile the input: no padding, no overlap (Keras's default, stride = pool).
  constexpr bool tiles() const {
    return padding == Padding::valid && stride_h == pool_h && stride_w == pool_w;
  }
};

/// The input gradient of tiling windows (`s.tiles()`), written once per value in dx's own type
/// `D` (no float copy of the whole gradient under 16-bit policies): dy at each window's
/// argmax, 0 elsewhere, times ReLU's mask of the input where `relu_mask` is not null
/// (plan/aux_layout.hpp's layout, `mask_row_bytes` a sample). Each input row is built in
/// `row` (width * channels floats), masked and stored while it is in L1: loops that GCC
/// vectorizes, where one loop doing all three did not.
template <class T, class D>
void tiled_max_pool2d_backward(const MaxPool2dShape& s, std::size_t rows, const T* dy,
                               const std::uint8_t* argmax, D* dx, float* row,
                               const std::uint8_t* relu_mask = nullptr,
                               std::size_t mask_row_bytes = 0) {
  const std::size_t oh = s.height / s.pool_h, ow = s.width / s.pool_w, ch = s.channels;
  const std::size_t row_values = s.width * ch;  // one input row of one sample
  for (std::size_t n = 0; n < rows; ++n) {
    D* dxn = dx + n * s.height * row_values;
    const std::uint8_t* mask = relu_mask ? relu_mask + n * mask_row_bytes : nullptr;
    for (std::size_t ih = 0; ih < oh * s.pool_h; ++ih) {
      const std::size_t i = ih / s.pool_h, kh = ih % s.pool_h;
      for (std::size_t j = 0; j < ow; ++j) {
        const std::uint8_t* arg = argmax + ((n * oh + i) * ow + j) * ch;
        const T* g = dy + ((n * oh + i) * ow + j) * ch;
        for (std::size_t kw = 0; kw < s.pool_w; ++kw) {
          const auto at = static_cast<std::uint8_t>(kh * s.pool_w + kw);
          float* r = row + (j * s.pool_w + kw) * ch;
          for (std::size_t k = 0; k < ch; ++k)
            r[k] = arg[k] == at ? static_cast<float>(g[k]) : 0.0f;
        }
      }
      // Columns past the last window (an odd width) take no gradient.
      for (std::size_t k = ow * s.pool_w * ch; k < row_values; ++k) row[k] = 0.0f;
      if (mask) mask_relu_gradient(mask, ih * row_values, row, row_values);
      convert(row, dxn + ih * row_values, row_values);
    }
    for (std::size_t k = oh * s.pool_h * row_values; k < s.height * row_values; ++k)
      dxn[k] = D(0.0f);
  }
}

/// y = the maximum of each window (padding never wins), `argmax` = its position in the window
/// (kh * pool_w + kw; the first in row-major order on ties, as TensorFlow's), for `rows`
/// samples. `argmax` may be null (inference).
template <class T>
void max_pool2d_forward(const MaxPool2dShape& s, std::size_t rows, const T* x, T* y,
                        std::uint8_t* argmax) {
  const WindowAxis r = s.rows(), c = s.cols();
  const std::size_t oh = static_cast<std::size_t>(r.out), ow = static_cast<std::size_t>(c.out);
  const std::size_t ch = s.channels;
  constexpr std::size_t block = 64;  // channels held in registers / L1 at once
  float best[block];
  std::uint8_t arg[block];
  for (std::size_t n = 0; n < rows; ++n)
    for (std::size_t i = 0; i < oh; ++i)
      for (std::size_t j = 0; j < ow; ++j) {
        const std::size_t out = ((n * oh + i) * ow + j) * ch;
        const auto top = static_cast<std::int64_t>(i * s.stride_h) - r.before;
        const auto left = static_cast<std::int64_t>(j * s.stride_w) - c.before;
        for (std::size_t c0 = 0; c0 < ch; c0 += block) {
          const std::size_t cn = ch - c0 < block ? ch - c0 : block;
          // The first pixel inside the input, so that a window of NaNs still points into it.
          const std::size_t first = static_cast<std::size_t>(top < 0 ? -top : 0) * s.pool_w +
                                    static_cast<std::size_t>(left < 0 ? -left : 0);
          for (std::size_t k = 0; k < cn; ++k) {
            best[k] = -std::numeric_limits<float>::infinity();
            arg[k] = static_cast<std::uint8_t>(first);
          }
          for (std::size_t kh = 0; kh < s.pool_h; ++kh) {
            const std::int64_t ih = top + static_cast<std::int64_t>(kh);
            if (ih < 0 || ih >= static_cast<std::int64_t>(s.height)) continue;
            for (std::size_t kw = 0; kw < s.pool_w; ++kw) {
              const std::int64_t iw = left + static_cast<std::int64_t>(kw);
              if (iw < 0 || iw >= static_cast<std::int64_t>(s.width)) continue;
              const T* px = x +
                            ((n * s.height + static_cast<std::size_t>(ih)) * s.width +
                             static_cast<std::size_t>(iw)) *
                                ch +
                            c0;
              const auto at = static_cast<std::uint8_t>(kh * s.pool_w + kw);
              for (std::size_t k = 0; k < cn; ++k) {
                const float v = static_cast<float>(px[k]);
                const bool more = v > best[k];
                best[k] = more ? v : best[k];
                arg[k] = more ? at : arg[k];
              }
            }
          }
          for (std::size_t k = 0; k < cn; ++k) y[out + c0 + k] = T(best[k]);
          if (argmax)
            for (std::size_t k = 0; k < cn; ++k) argmax[out + c0 + k] = arg[k];
        }
      }
}

/// dx = dy routed to each window's argmax (summed where windows overlap), for `rows` samples.
template <class T>
void max_pool2d_backward(const MaxPool2dShape& s, std::size_t rows, const T* dy,
                         const std::uint8_t* argmax, float* dx) {
  const WindowAxis r = s.rows(), c = s.cols();
  const std::size_t oh = static_cast<std::size_t>(r.out), ow = static_cast<std::size_t>(c.out);
  const std::size_t ch = s.channels;
  for (std::size_t k = 0; k < rows * s.height * s.width * ch; ++k) dx[k] = 0.0f;
  for (std::size_t n = 0; n < rows; ++n)
    for (std::size_t i = 0; i < oh; ++i)
      for (std::size_t j = 0; j < ow; ++j) {
        const std::size_t out = ((n * oh + i) * ow + j) * ch;
        const auto top = static_cast<std::int64_t>(i * s.stride_h) - r.before;
        const auto left = static_cast<std::int64_t>(j * s.stride_w) - c.before;
        for (std::size_t k = 0; k < ch; ++k) {
          const std::size_t at = argmax[out + k];
          const auto ih = static_cast<std::size_t>(top + static_cast<std::int64_t>(at / s.pool_w));
          const auto iw = static_cast<std::size_t>(left + static_cast<std::int64_t>(at % s.pool_w));
          const std::size_t at_input = (ih * s.width + iw) * ch + k;
          dx[n * s.height * s.width * ch + at_input] += static_cast<float>(dy[out + k]);
        }
      }
}

}  // namespace memopt::cpu_backend
