#pragma once
// io::image::decode: any supported image (JPEG, PNG, BMP), told apart by its first bytes.

#include <cstdint>
#include <span>

#include "memopt/core/error.hpp"
#include "memopt/io/image/bmp.hpp"
#include "memopt/io/image/format.hpp"
#include "memopt/io/image/image.hpp"
#include "memopt/io/image/jpeg.hpp"
#include "memopt/io/image/png.hpp"

namespace memopt::io::image {

/// Decodes `bytes` as the format their first bytes show (`detect_format`) to 8-bit pixels of
/// `mode`. `min_height` x `min_width` is a hint of the size the caller needs: a JPEG is then
/// decoded at the smallest DCT scale that still has it (`decode_jpeg`); other formats decode
/// at full size. An image of more than `max_pixels` pixels (`default_max_pixels`) is refused on
/// its header, before it is allocated. Data of no supported format raises `memopt::error`.
///
/// ```cpp
/// auto img = mo::io::image::decode(bytes, mo::io::image::ColorMode::rgb, 128, 128);
/// ```
inline Image decode(std::span<const std::uint8_t> bytes, ColorMode mode, int min_height = 0,
                    int min_width = 0, std::uint64_t max_pixels = default_max_pixels) {
  switch (detect_format(bytes)) {
    case Format::jpeg:
      return decode_jpeg(bytes, mode, min_height, min_width, max_pixels);
    case Format::png:
      return decode_png(bytes, mode, max_pixels);
    case Format::bmp:
      return decode_bmp(bytes, mode, max_pixels);
    default:
      throw error("decode: expected a JPEG, PNG or BMP image, found data of another kind");
  }
}

}  // namespace memopt::io::image
