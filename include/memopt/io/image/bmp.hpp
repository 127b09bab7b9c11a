#pragma once
// io::image::decode_bmp: BMP through stb_image (Debian's compiled libstb).

#include <stb_image.h>

#include <climits>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <string>

#include "memopt/core/error.hpp"
#include "memopt/io/image/format.hpp"
#include "memopt/io/image/image.hpp"

namespace memopt::io::image {
namespace detail {

struct StbiFree {
  void operator()(stbi_uc* pixels) const noexcept { stbi_image_free(pixels); }
};

}  // namespace detail

/// Decodes the BMP in `bytes` (1, 4, 8, 16, 24 or 32 bits per pixel, uncompressed or RLE, as
/// stb_image reads them) to 8-bit pixels of `mode`; colour becomes grey with Pillow's luma, and
/// alpha is dropped. Anything but a BMP is refused, even where stb_image could read it: the
/// other formats have decoders of their own. A malformed file raises `memopt::error` with
/// stb_image's reason.
///
/// ```cpp
/// auto img = mo::io::image::decode_bmp(bytes, mo::io::image::ColorMode::rgb);
/// ```
inline Image decode_bmp(std::span<const std::uint8_t> bytes, ColorMode mode) {
  if (detect_format(bytes) != Format::bmp) {
    throw error("decode_bmp: expected a BMP file (it begins with \"BM\"), found other data");
  }
  if (bytes.size() > static_cast<std::size_t>(INT_MAX)) {
    throw error("decode_bmp: expected a BMP file under 2 GiB, found " +
                std::to_string(bytes.size()) + " bytes");
  }
  int width = 0, height = 0, in_file = 0;
  std::unique_ptr<stbi_uc, detail::StbiFree> rgb(stbi_load_from_memory(
      bytes.data(), static_cast<int>(bytes.size()), &width, &height, &in_file, 3));
  if (!rgb) {
    const char* reason = stbi_failure_reason();
    throw error(std::string("decode_bmp: expected a readable BMP, found an error (") +
                (reason != nullptr ? reason : "unknown") + ")");
  }
  Image out;
  out.height = height;
  out.width = width;
  out.channels = channels_of(mode);
  out.pixels.resize(out.bytes());
  if (mode == ColorMode::rgb) {
    std::memcpy(out.pixels.data(), rgb.get(), out.bytes());
  } else {
    detail::convert_channels(rgb.get(), 3, out.pixels.data(), 1,
                             static_cast<std::size_t>(width) * static_cast<std::size_t>(height));
  }
  return out;
}

}  // namespace memopt::io::image
