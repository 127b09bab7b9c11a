#pragma once
// The vocabulary of sliding windows (Conv2D, MaxPooling2D, AveragePooling2D): a window's size
// and stride per axis, Keras's `valid` and `same` padding, and the output length and padding
// they give, computed exactly as TensorFlow does (the odd pixel of `same` goes after).

#include <concepts>
#include <cstddef>
#include <cstdint>

namespace memopt {

/// Keras's padding modes: `valid` (no padding) and `same` (output = ceil(input / stride)).
enum class Padding { valid, same };

/// Keras's `padding="valid"` as a window layer's option: `Conv2D<16, 3, Valid>` (the default).
struct Valid {
  static constexpr Padding padding = Padding::valid;
};
/// Keras's `padding="same"` as a window layer's option: `Conv2D<16, 3, Same, ReLU>`.
struct Same {
  static constexpr Padding padding = Padding::same;
};

/// A window extent or a stride per spatial axis: height, then width.
struct Extent2 {
  std::size_t h = 1;
  std::size_t w = 1;
  friend constexpr bool operator==(const Extent2&, const Extent2&) = default;
};

/// A rectangular kernel or pool: `Conv2D<32, KernelSize<3, 5>>`. A single number is square.
template <std::size_t H, std::size_t W>
inline constexpr Extent2 KernelSize{H, W};

/// Keras's `strides=` as a window layer's option: `Conv2D<32, 3, Strides<2>>` moves by 2 both
/// ways, `Strides<2, 1>` by 2 down and 1 across.
template <std::size_t H, std::size_t W = H>
struct Strides {
  static constexpr Extent2 extent{H, W};
};

/// What a window template argument may be: a number (square) or an `Extent2`.
template <auto V>
concept WindowArgument = std::integral<decltype(V)> || std::same_as<decltype(V), const Extent2> ||
    std::same_as<decltype(V), Extent2>;

namespace detail {
template <class O>
inline constexpr bool is_strides_v = false;
template <std::size_t H, std::size_t W>
inline constexpr bool is_strides_v<Strides<H, W>> = true;
template <class O>
inline constexpr bool is_padding_v = std::same_as<O, Same> || std::same_as<O, Valid>;
}  // namespace detail

/// The options a window layer takes after its window size, in any order, each at most once,
/// told apart by their kind: a padding (`Same`, `Valid`) and `Strides<h, w>`; Conv2D also
/// takes an activation. `Fallback` is the stride when none is given.
template <Extent2 Fallback, class... Options>
struct WindowOptions {
  static constexpr std::size_t paddings = (std::size_t{0} + ... + detail::is_padding_v<Options>);
  static constexpr std::size_t strides_given =
      (std::size_t{0} + ... + detail::is_strides_v<Options>);
  static constexpr Padding padding = [] {
    Padding p = Padding::valid;
    (
        [&] {
          if constexpr (detail::is_padding_v<Options>) p = Options::padding;
        }(),
        ...);
    return p;
  }();
  static constexpr Extent2 strides = [] {
    Extent2 e = Fallback;
    (
        [&] {
          if constexpr (detail::is_strides_v<Options>) e = Options::extent;
        }(),
        ...);
    return e;
  }();
};

/// The `Extent2` of a window template argument (negative numbers become 0, which the layers
/// reject by name).
template <auto V>
requires WindowArgument<V>
inline constexpr Extent2 extent_v = [] {
  if constexpr (std::integral<decltype(V)>) {
    const std::size_t n = V < 0 ? 0 : static_cast<std::size_t>(V);
    return Extent2{n, n};
  } else {
    return Extent2{V.h, V.w};
  }
}();

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
/// static_assert(mo::window_axis(7, 3, 2, mo::Padding::same) == mo::WindowAxis{4, 1, 1});
/// static_assert(mo::window_axis(28, 3, 1, mo::Padding::valid).out == 26);
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

/// The output length of a window over `in`, in `std::size_t`.
constexpr std::size_t window_out(std::size_t in, std::size_t kernel, std::size_t stride,
                                 Padding padding) {
  return static_cast<std::size_t>(window_axis(static_cast<std::int64_t>(in),
                                              static_cast<std::int64_t>(kernel),
                                              static_cast<std::int64_t>(stride), padding)
                                      .out);
}

}  // namespace memopt
