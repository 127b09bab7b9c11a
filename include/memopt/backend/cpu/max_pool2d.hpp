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
#include <type_traits>

#include "memopt/backend/cpu/parallel_rows.hpp"
#include "memopt/core/dtype.hpp"
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

/// The argmax a tiling forward records where the window's maximum is not positive and the
/// layer below is ReLU: no input of that window takes a gradient (see tiled_max_pool2d_forward).
inline constexpr std::uint8_t kNoGradient = 0xff;

namespace detail {

template <class T>
T kept_or_zero(bool keep, T v) {
  if constexpr (std::is_same_v<T, float>)
    return keep ? v : 0.0f;
  else
    return T::from_bits(keep ? v.bits : std::uint16_t{0});
}

}  // namespace detail

/// Max pooling over tiling windows (`S.tiles()`: valid padding, stride = pool, Keras's default)
/// with the geometry known at compile time, so that the window loops unroll and the channel
/// loop vectorizes. `argmax` may be null (inference).
///
/// With `ReluBelow` (the input is a ReLU's output), a window whose maximum is not positive
/// records kNoGradient: its argmax input is then exactly one where ReLU's derivative is 0
/// (relu(z) > 0 exactly where z > 0, and no other input of a window takes its gradient), so the
/// backward pass applies ReLU's derivative without reading ReLU's mask.
template <MaxPool2dShape S, bool ReluBelow, class T>
void tiled_max_pool2d_forward(std::size_t rows, const T* x, T* y, std::uint8_t* argmax) {
  static_assert(S.tiles(), "tiled_max_pool2d_forward: the windows must tile the input");
  static_assert(S.pool_h * S.pool_w < kNoGradient, "tiled_max_pool2d_forward: a window too large");
  constexpr std::size_t oh = S.height / S.pool_h, ow = S.width / S.pool_w, ch = S.channels;
  constexpr std::size_t row_values = S.width * ch;
  auto pool = [&](auto record, std::size_t begin, std::size_t end) {
    for (std::size_t n = begin; n < end; ++n)
      for (std::size_t i = 0; i < oh; ++i)
        for (std::size_t j = 0; j < ow; ++j) {
          const T* window = x + ((n * S.height + i * S.pool_h) * S.width + j * S.pool_w) * ch;
          const std::size_t out = ((n * oh + i) * ow + j) * ch;
          for (std::size_t k = 0; k < ch; ++k) {
            // The maximum compared as float and kept as the input element itself, which
            // becomes the output without rounding back from float (for the 16-bit types a
            // scalar routine that kept the loop from vectorizing).
            float best = -std::numeric_limits<float>::infinity();
            T stored = T(best);
            std::uint8_t arg = 0;
            // In row-major order, strictly greater: the first maximum wins, NaN never does.
            for (std::size_t at = 0; at < S.pool_h * S.pool_w; ++at) {
              const T raw = window[at / S.pool_w * row_values + at % S.pool_w * ch + k];
              const auto v = static_cast<float>(raw);
              if (v > best) {
                best = v;
                stored = raw;
                arg = static_cast<std::uint8_t>(at);
              }
            }
            y[out + k] = stored;
            if constexpr (decltype(record)::value) {
              if constexpr (ReluBelow) arg = best > 0.0f ? arg : kNoGradient;
              argmax[out + k] = arg;
            }
          }
        }
  };
  parallel_rows(rows, S.height * row_values, [&](std::size_t begin, std::size_t end) {
    if (argmax)
      pool(std::true_type{}, begin, end);
    else
      pool(std::false_type{}, begin, end);
  });
}

/// The input gradient of tiled_max_pool2d_forward: dy at each window's argmax, 0 elsewhere
/// (and wherever the forward recorded kNoGradient), written once per value in dx's own type.
template <MaxPool2dShape S, class T>
void tiled_max_pool2d_backward(std::size_t rows, const T* dy, const std::uint8_t* argmax, T* dx) {
  static_assert(S.tiles(), "tiled_max_pool2d_backward: the windows must tile the input");
  constexpr std::size_t oh = S.height / S.pool_h, ow = S.width / S.pool_w, ch = S.channels;
  constexpr std::size_t row_values = S.width * ch;
  const T zero = T(0.0f);
  parallel_rows(rows, S.height * row_values, [&](std::size_t begin, std::size_t end) {
    for (std::size_t n = begin; n < end; ++n) {
      T* dxn = dx + n * S.height * row_values;
      for (std::size_t i = 0; i < oh; ++i) {
        const std::uint8_t* arg = argmax + (n * oh + i) * ow * ch;
        const T* g = dy + (n * oh + i) * ow * ch;
        for (std::size_t kh = 0; kh < S.pool_h; ++kh) {
          T* row = dxn + (i * S.pool_h + kh) * row_values;
          for (std::size_t j = 0; j < ow; ++j)
            for (std::size_t kw = 0; kw < S.pool_w; ++kw) {
              const auto at = static_cast<std::uint8_t>(kh * S.pool_w + kw);
              T* to = row + (j * S.pool_w + kw) * ch;
              for (std::size_t k = 0; k < ch; ++k)
                to[k] = detail::kept_or_zero(arg[j * ch + k] == at, g[j * ch + k]);
            }
          // Columns past the last window (an odd width) take no gradient.
          for (std::size_t k = ow * S.pool_w * ch; k < row_values; ++k) row[k] = zero;
        }
      }
      for (std::size_t k = oh * S.pool_h * row_values; k < S.height * row_values; ++k)
        dxn[k] = zero;
    }
  });
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
  parallel_rows(rows, s.height * s.width * ch, [&](std::size_t begin, std::size_t end) {
    float best[block];
    std::uint8_t arg[block];
    for (std::size_t n = begin; n < end; ++n)
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
  });
}

/// dx = dy routed to each window's argmax (summed where windows overlap), for `rows` samples.
template <class T>
void max_pool2d_backward(const MaxPool2dShape& s, std::size_t rows, const T* dy,
                         const std::uint8_t* argmax, float* dx) {
  const WindowAxis r = s.rows(), c = s.cols();
  const std::size_t oh = static_cast<std::size_t>(r.out), ow = static_cast<std::size_t>(c.out);
  const std::size_t ch = s.channels;
  const std::size_t per_row = s.height * s.width * ch;
  parallel_rows(rows, per_row, [&](std::size_t begin, std::size_t end) {
    for (std::size_t k = begin * per_row; k < end * per_row; ++k) dx[k] = 0.0f;
    for (std::size_t n = begin; n < end; ++n)
      for (std::size_t i = 0; i < oh; ++i)
        for (std::size_t j = 0; j < ow; ++j) {
          const std::size_t out = ((n * oh + i) * ow + j) * ch;
          const auto top = static_cast<std::int64_t>(i * s.stride_h) - r.before;
          const auto left = static_cast<std::int64_t>(j * s.stride_w) - c.before;
          for (std::size_t k = 0; k < ch; ++k) {
            const std::size_t at = argmax[out + k];
            const auto ih =
                static_cast<std::size_t>(top + static_cast<std::int64_t>(at / s.pool_w));
            const auto iw =
                static_cast<std::size_t>(left + static_cast<std::int64_t>(at % s.pool_w));
            const std::size_t at_input = (ih * s.width + iw) * ch + k;
            dx[n * per_row + at_input] += static_cast<float>(dy[out + k]);
          }
        }
  });
}

}  // namespace memopt::cpu_backend
