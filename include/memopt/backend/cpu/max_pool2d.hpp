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
};

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

/// dx = dy routed to each window's argmax (summed where windows overlap), for `rows` samples,
/// times `keep(row, index)` of the input value it lands on (the derivative of a ReLU below,
/// read from its mask, so that the input gradient needs no second pass).
template <class T, class Keep>
void max_pool2d_backward(const MaxPool2dShape& s, std::size_t rows, const T* dy,
                         const std::uint8_t* argmax, float* dx, Keep&& keep) {
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
          dx[n * s.height * s.width * ch + at_input] +=
              static_cast<float>(dy[out + k]) * keep(n, at_input);
        }
      }
}

}  // namespace memopt::cpu_backend
