#pragma once
// Keras's `valid` and `same` padding for one spatial axis of a convolution or a pooling
// window, computed exactly as TensorFlow does (the odd pixel of `same` goes after).

#include <cstdint>

namespace memopt::cpu_backend::onednn {

/// Keras's padding modes.
enum class Padding { valid, same };

/// One spatial axis of a sliding window: output length and the zero padding before/after.
struct WindowAxis {
  std::int64_t out = 0;     ///< output length
  std::int64_t before = 0;  ///< padding at the low end (top or left)
  std::int64_t after = 0;   ///< padding at the high end (bottom or right)

  friend constexpr bool operator==(const WindowAxis&, const WindowAxis&) = default;
};

/// The output length and padding of a window of `kernel` taps moved by `stride` over `in`.
///
/// `valid`: out = floor((in - kernel) / stride) + 1, no padding (0 when kernel > in).
/// `same`:  out = ceil(in / stride); pad_total = max((out - 1) * stride + kernel - in, 0),
///          pad_before = pad_total / 2, the rest after, as tf.nn.conv2d does.
///
/// ```cpp
/// static_assert(window_axis(7, 3, 2, Padding::same) == WindowAxis{4, 1, 1});
/// static_assert(window_axis(28, 3, 1, Padding::valid).out == 26);
/// ```
constexpr WindowAxis window_axis(std::int64_t in, std::int64_t kernel, std::int64_t stride,
                                 Padding padding) {
  WindowAxis w;
  if (in <= 0 || kernel <= 0 || stride <= 0) return w;
  if (padding == Padding::valid) {
    w.out = in < kernel ? 0 : (in - kernel) / stride + 1;
    return w;
  }
  w.out = (in + stride - 1) / stride;
  const std::int64_t total = (w.out - 1) * stride + kernel - in;
  const std::int64_t pad = total > 0 ? total : 0;
  w.before = pad / 2;
  w.after = pad - w.before;
  return w;
}

static_assert(window_axis(7, 3, 2, Padding::same) == WindowAxis{4, 1, 1});
static_assert(window_axis(5, 2, 2, Padding::same) == WindowAxis{3, 0, 1});
static_assert(window_axis(28, 3, 1, Padding::valid) == WindowAxis{26, 0, 0});
static_assert(window_axis(26, 2, 2, Padding::valid) == WindowAxis{13, 0, 0});
static_assert(window_axis(11, 2, 2, Padding::valid) == WindowAxis{5, 0, 0});

}  // namespace memopt::cpu_backend::onednn
