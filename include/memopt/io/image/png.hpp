#pragma once
// io::image::decode_png: PNG through libpng's simplified API (png_image).

// libpng comes with the CMake target memopt::images, not with memopt::memopt:
// name the target before the compiler's "No such file" (the include below then stops
// the compilation).
#if !__has_include(<png.h>)
#error \
    "memopt: the image headers need png.h (libpng), which comes with the memopt::images CMake target: target_link_libraries(app PRIVATE memopt::images)"
#endif
#include <png.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "memopt/core/error.hpp"
#include "memopt/io/image/image.hpp"

namespace memopt::io::image {
namespace detail {

/// Frees libpng's state on every way out; after `png_image_finish_read`, which frees it
/// itself, this does nothing.
struct PngImageFree {
  png_image* png;
  ~PngImageFree() { png_image_free(png); }
};

}  // namespace detail

/// Decodes the PNG in `bytes` to 8-bit pixels of `mode`. libpng's simplified API reads every
/// colour type and bit depth (palette, grey, 16-bit, interlaced) as 8-bit RGBA; this then
/// keeps grey as it is, drops alpha (as Pillow's `convert("RGB")` and TensorFlow's
/// `decode_png(channels=3)`, rather than compositing) and turns colour into grey with
/// Pillow's luma. It uses no `setjmp`, so C++ frames are never jumped over. An image of more
/// than `max_pixels` pixels (`default_max_pixels`) is refused on its header, before its buffer
/// is allocated; a truncated or corrupt file raises `memopt::error` with libpng's reason.
///
/// ```cpp
/// auto img = mo::io::image::decode_png(bytes, mo::io::image::ColorMode::grayscale);
/// ```
inline Image decode_png(std::span<const std::uint8_t> bytes, ColorMode mode,
                        std::uint64_t max_pixels = default_max_pixels) {
  png_image png{};
  png.version = PNG_IMAGE_VERSION;
  const detail::PngImageFree free_png{&png};
  if (png_image_begin_read_from_memory(&png, bytes.data(), bytes.size()) == 0) {
    throw error(std::string("decode_png: expected a PNG header, found an unreadable one (") +
                png.message + ")");
  }
  const std::uint64_t pixels =
      detail::check_pixel_limit("decode_png", png.height, png.width, max_pixels);
  png.format = PNG_FORMAT_RGBA;
  // A 16-bit file without gamma information is sRGB like the 8-bit ones (libpng would
  // otherwise take it as linear and brighten it when reducing to 8 bits).
  png.flags |= PNG_IMAGE_FLAG_16BIT_sRGB;
  Image out;
  out.height = static_cast<int>(png.height);
  out.width = static_cast<int>(png.width);
  out.channels = channels_of(mode);
  // RGBA, sized in 64 bits: PNG_IMAGE_SIZE multiplies in 32 and wraps from 2^30 pixels up.
  out.pixels.resize(static_cast<std::size_t>(detail::checked_mul("decode_png", pixels, 4)));
  if (png_image_finish_read(&png, nullptr, out.pixels.data(), 0, nullptr) == 0) {
    throw error(std::string("decode_png: expected complete PNG data, found an error (") +
                png.message + ")");
  }
  const auto count = static_cast<std::size_t>(pixels);
  // A grey source arrives as R = G = B, whose luma is that grey exactly (the weights sum to 1).
  detail::convert_channels(out.pixels.data(), 4, out.pixels.data(), out.channels, count);
  out.pixels.resize(out.bytes());
  return out;
}

}  // namespace memopt::io::image
