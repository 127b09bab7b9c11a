#pragma once
// io::image::decode_bmp: BMP through stb_image (Debian's compiled libstb).

// stb_image comes with the CMake target memopt::images, not with memopt::memopt:
// name the target before the compiler's "No such file" (the include below then stops
// the compilation).
#if !__has_include(<stb_image.h>)
#error \
    "memopt: the image headers need stb_image.h (stb_image), which comes with the memopt::images CMake target: target_link_libraries(app PRIVATE memopt::images)"
#endif
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

inline std::uint32_t bmp_u16(std::span<const std::uint8_t> b, std::size_t at) noexcept {
  return static_cast<std::uint32_t>(b[at] | (b[at + 1] << 8));
}
inline std::uint32_t bmp_u32(std::span<const std::uint8_t> b, std::size_t at) noexcept {
  return bmp_u16(b, at) | (bmp_u16(b, at + 2) << 16);
}

/// What a BMP's headers say: its size, and where its pixel rows lie in the file.
struct BmpHeader {
  std::uint64_t height = 0;  // rows; a negative height in the file (a top-down BMP) made positive
  std::uint64_t width = 0;
  std::uint64_t offset = 0;  // where the first row begins
  std::uint64_t stride = 0;  // bytes of one row, padded to a multiple of 4
  std::uint64_t row = 0;     // bytes of one row's pixels, without that padding
};

/// Reads the headers of the BMP in `bytes` (`detect_format` has seen "BM" and 26 bytes), for
/// the encodings stb_image decodes: a 12-byte (OS/2) or 40, 56, 108 or 124-byte (Windows) info
/// header; 1, 4 or 8 bits per pixel with a palette, or 16, 24 or 32 without; uncompressed, or
/// bit-field masks at 16 and 32 bits. Anything else raises `memopt::error` here, before stb_image
/// would allocate the image only to refuse it.
inline BmpHeader bmp_header(std::span<const std::uint8_t> bytes) {
  const std::uint32_t info_size = bmp_u32(bytes, 14);
  if (info_size != 12 && info_size != 40 && info_size != 56 && info_size != 108 &&
      info_size != 124) {
    throw error("decode_bmp: expected an info header of 12, 40, 56, 108 or 124 bytes, found " +
                std::to_string(info_size));
  }
  if (bytes.size() < 14 + std::size_t{info_size}) {
    throw error("decode_bmp: expected " + std::to_string(14 + info_size) +
                " bytes of headers, found a file of " + std::to_string(bytes.size()) + " bytes");
  }
  BmpHeader h;
  std::int64_t rows = 0, columns = 0;
  std::uint32_t bits = 0, compression = 0;
  if (info_size == 12) {
    columns = bmp_u16(bytes, 18);
    rows = bmp_u16(bytes, 20);
    bits = bmp_u16(bytes, 24);
  } else {
    columns = static_cast<std::int32_t>(bmp_u32(bytes, 18));
    rows = static_cast<std::int32_t>(bmp_u32(bytes, 22));
    bits = bmp_u16(bytes, 28);
    compression = bmp_u32(bytes, 30);
  }
  if (rows < 0) rows = -rows;
  if (columns <= 0 || rows <= 0 || rows > INT_MAX) {
    throw error("decode_bmp: expected a positive width and height, found " +
                std::to_string(columns) + " x " + std::to_string(rows));
  }
  const bool palette = bits == 1 || bits == 4 || bits == 8;
  const bool plain = compression == 0 && (palette || bits == 16 || bits == 24 || bits == 32);
  const bool masks = compression == 3 && (bits == 16 || bits == 32);
  if (!plain && !masks) {
    throw error(
        "decode_bmp: expected 1, 4, 8, 16, 24 or 32 bits per pixel, uncompressed or "
        "with bit-field masks (compression 0 or 3), found " +
        std::to_string(bits) + " bits with compression " + std::to_string(compression) +
        (compression == 1 || compression == 2 ? " (RLE, which is not read)" : ""));
  }
  h.height = static_cast<std::uint64_t>(rows);
  h.width = static_cast<std::uint64_t>(columns);
  h.offset = bmp_u32(bytes, 10);
  h.row = (h.width * bits + 7) / 8;
  h.stride = (h.row + 3) / 4 * 4;
  if (h.offset < 14 + std::uint64_t{info_size}) {
    throw error("decode_bmp: expected the pixel data after the " + std::to_string(14 + info_size) +
                " bytes of headers, found it at byte " + std::to_string(h.offset));
  }
  return h;
}

}  // namespace detail

/// Decodes the BMP in `bytes` (1, 4, 8, 16, 24 or 32 bits per pixel, uncompressed or with
/// bit-field masks, as stb_image reads them; RLE is refused) to 8-bit pixels of `mode`; colour
/// becomes grey with Pillow's luma, and alpha is dropped. Anything but a BMP is refused, even
/// where stb_image could read it: the other formats have decoders of their own.
///
/// The headers are read first: an image of more than `max_pixels` pixels
/// (`default_max_pixels`) is refused before anything of its size is allocated, and so is a file
/// too short for the rows its headers promise (from their offset, each padded to 4 bytes but
/// the last, as Pillow reads them), which stb_image would otherwise fill with black. Any error
/// raises `memopt::error` saying what was expected and what was found (stb_image's reason for a
/// malformed file).
///
/// ```cpp
/// auto img = mo::io::image::decode_bmp(bytes, mo::io::image::ColorMode::rgb);
/// ```
inline Image decode_bmp(std::span<const std::uint8_t> bytes, ColorMode mode,
                        std::uint64_t max_pixels = default_max_pixels) {
  if (detect_format(bytes) != Format::bmp) {
    throw error("decode_bmp: expected a BMP file (it begins with \"BM\"), found other data");
  }
  if (bytes.size() > static_cast<std::size_t>(INT_MAX)) {
    throw error("decode_bmp: expected a BMP file under 2 GiB, found " +
                std::to_string(bytes.size()) + " bytes");
  }
  const detail::BmpHeader header = detail::bmp_header(bytes);
  detail::check_pixel_limit("decode_bmp", header.height, header.width, max_pixels);
  // Every row but the last with its padding, as Pillow asks (a writer may leave it off).
  const std::uint64_t end = header.offset +
                            detail::checked_mul("decode_bmp", header.height - 1, header.stride) +
                            header.row;
  if (end > bytes.size()) {
    throw error("decode_bmp: expected " + std::to_string(end) + " bytes (" +
                std::to_string(header.height) + " rows of " + std::to_string(header.stride) +
                " bytes from byte " + std::to_string(header.offset) +
                ", the last without its padding), found " + std::to_string(bytes.size()) +
                ": the file is truncated");
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
