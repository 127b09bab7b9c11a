#pragma once
// io::image::Image and ColorMode: decoded 8-bit pixels, rows of interleaved channels.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "memopt/core/error.hpp"

namespace memopt::io::image {

/// The channels a decoder produces, as Keras's `color_mode`: `grayscale` is 1 channel (a colour
/// source is converted with ITU-R 601-2 luma, Pillow's `convert("L")`: L = R 299/1000 +
/// G 587/1000 + B 114/1000), `rgb` is 3 (a grey source is replicated, an alpha channel dropped).
///
/// ```cpp
/// auto img = mo::io::image::decode(bytes, mo::io::image::ColorMode::rgb);
/// ```
enum class ColorMode : std::uint8_t { grayscale, rgb };

/// Channels per pixel for `mode`: 1 or 3.
constexpr int channels_of(ColorMode mode) noexcept {
  return mode == ColorMode::grayscale ? 1 : 3;
}

/// Keras's name of `mode`.
constexpr std::string_view name_of(ColorMode mode) noexcept {
  return mode == ColorMode::grayscale ? "grayscale" : "rgb";
}

/// Pillow's `Image.MAX_IMAGE_PIXELS`, 2^30 / 4 / 3 = 89,478,485 pixels (about 9459 x 9459): the
/// most pixels a decoder accepts unless told otherwise (`LoadOptions::max_pixels`). The size is
/// read from the file's header and checked before anything that large is allocated, so that a
/// tiny file claiming a huge image (a "decompression bomb") costs nothing. Pillow only warns up
/// to twice this size; memopt refuses above it, with a message saying how to raise it.
///
/// ```cpp
/// mo::io::image::LoadOptions opts{.height = 224, .width = 224,
///                                 .max_pixels = 4 * mo::io::image::default_max_pixels};
/// ```
inline constexpr std::uint64_t default_max_pixels = (std::uint64_t{1} << 30) / 4 / 3;
static_assert(default_max_pixels == 89'478'485, "Pillow's MAX_IMAGE_PIXELS");

namespace detail {

/// An allocator that leaves elements made without a value uninitialised, so that a vector of
/// bytes resized with it is not zeroed first: a decoder overwrites every byte anyway, and
/// zeroing a large image would touch every page of it before the first row is decoded (or
/// found missing).
template <class T>
struct NoFillAllocator : std::allocator<T> {
  template <class U>
  struct rebind {
    using other = NoFillAllocator<U>;
  };
  NoFillAllocator() = default;
  template <class U>
  NoFillAllocator(const NoFillAllocator<U>& /*other*/) noexcept {}

  template <class U>
  void construct(U* p) noexcept(std::is_nothrow_default_constructible_v<U>) {
    ::new (static_cast<void*>(p)) U;
  }
  template <class U, class... Args>
  void construct(U* p, Args&&... args) {
    std::construct_at(p, std::forward<Args>(args)...);
  }
};

/// `a * b` in 64 bits, or `memopt::error` naming `who` where it does not fit: image buffers
/// are sized with this, never in the 32-bit arithmetic of a library's macro.
inline std::uint64_t checked_mul(std::string_view who, std::uint64_t a, std::uint64_t b) {
  std::uint64_t product = 0;
  if (__builtin_mul_overflow(a, b, &product)) {
    throw error(std::string(who) + ": expected an image size that fits in 64 bits, found " +
                std::to_string(a) + " x " + std::to_string(b));
  }
  return product;
}

/// The one check of an image's size against the pixel limit, which every decoder makes on the
/// header it has just read, before allocating anything of the image's size. Returns the number
/// of pixels; `who` names the decoder in the message.
inline std::uint64_t check_pixel_limit(std::string_view who, std::uint64_t height,
                                       std::uint64_t width, std::uint64_t max_pixels) {
  const std::uint64_t pixels = checked_mul(who, height, width);
  if (pixels > max_pixels) {
    throw error(
        std::string(who) + ": expected at most " + std::to_string(max_pixels) +
        " pixels (max_pixels, Pillow's limit by default), found " + std::to_string(height) + " x " +
        std::to_string(width) + " = " + std::to_string(pixels) +
        " pixels; raise max_pixels in LoadOptions or ImageDirectoryOptions to decode images "
        "this large");
  }
  return pixels;
}

}  // namespace detail

/// Decoded pixels: a `std::vector` of bytes whose `resize` does not zero what it adds, since a
/// decoder writes every byte. Compare it with another container by `std::ranges::equal`.
using PixelBuffer = std::vector<std::uint8_t, detail::NoFillAllocator<std::uint8_t>>;

/// A decoded image: `height` rows of `width` pixels of `channels` interleaved 8-bit values,
/// row-major without padding (`pixels.size() == height * width * channels`).
///
/// ```cpp
/// mo::io::image::Image img = mo::io::image::decode_png(bytes, mo::io::image::ColorMode::rgb);
/// std::uint8_t red_of_first_pixel = img.pixels[0];
/// ```
struct Image {
  PixelBuffer pixels = {};
  int height = 0;
  int width = 0;
  int channels = 0;

  std::size_t bytes() const noexcept {
    return static_cast<std::size_t>(height) * static_cast<std::size_t>(width) *
           static_cast<std::size_t>(channels);
  }
};

namespace detail {

/// Pillow's `convert("L")` in fixed point: (R 19595 + G 38470 + B 7471 + 2^15) >> 16.
constexpr std::uint8_t luma(std::uint8_t r, std::uint8_t g, std::uint8_t b) noexcept {
  return static_cast<std::uint8_t>((r * 19595u + g * 38470u + b * 7471u + 0x8000u) >> 16);
}

/// Converts `count` pixels of `from` channels (1 grey, 2 grey+alpha, 3 RGB, 4 RGBA) to `to`
/// channels (1 or 3) from `src` into `dst`; `dst` may be `src` when `to <= from`, since each
/// pixel is read before it is written and never behind.
inline void convert_channels(const std::uint8_t* src, int from, std::uint8_t* dst, int to,
                             std::size_t count) noexcept {
  for (std::size_t i = 0; i < count; ++i) {
    const std::uint8_t* p = src + i * static_cast<std::size_t>(from);
    std::uint8_t* q = dst + i * static_cast<std::size_t>(to);
    if (from <= 2) {
      const std::uint8_t g = p[0];
      if (to == 1) {
        q[0] = g;
      } else {
        q[0] = g;
        q[1] = g;
        q[2] = g;
      }
    } else {
      const std::uint8_t r = p[0], g = p[1], b = p[2];
      if (to == 1) {
        q[0] = luma(r, g, b);
      } else {
        q[0] = r;
        q[1] = g;
        q[2] = b;
      }
    }
  }
}

}  // namespace detail
}  // namespace memopt::io::image
