#pragma once
// io::encode_png: 8-bit RGB pixels as a PNG file's bytes, through zlib alone.
//
// The core target already links zlib (gzip datasets), while libpng comes only with the
// optional memopt::images target. Writing the few chunks a plain image needs (IHDR, one IDAT,
// IEND; every row with filter 0) keeps the TensorBoard callback, its one user, working for a
// program that links memopt::memopt alone.

#include <zlib.h>

#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <string_view>

#include "memopt/core/error.hpp"

namespace memopt::io {

namespace detail {

inline void put_be32(std::string& out, std::uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) out += static_cast<char>((v >> shift) & 0xFF);
}

/// One chunk: length, type, data, CRC-32 of type and data (PNG's CRC is zlib's).
inline void png_chunk(std::string& out, std::string_view type, std::string_view data) {
  put_be32(out, static_cast<std::uint32_t>(data.size()));
  const std::size_t crc_from = out.size();
  out.append(type);
  out.append(data);
  uLong crc = ::crc32(0L, Z_NULL, 0);
  crc = ::crc32(crc, reinterpret_cast<const Bytef*>(out.data() + crc_from),
                static_cast<uInt>(out.size() - crc_from));
  put_be32(out, static_cast<std::uint32_t>(crc));
}

}  // namespace detail

/// The PNG of a `width` x `height` image, `rgb` holding its rows top to bottom, three bytes
/// (red, green, blue) a pixel. Raises memopt::error when the sizes disagree or zlib fails.
///
/// ```cpp
/// std::vector<std::uint8_t> rgb(2 * 1 * 3, 255);  // two white pixels
/// std::string png = mo::io::encode_png(rgb, 2, 1);
/// ```
inline std::string encode_png(std::span<const std::uint8_t> rgb, int width, int height) {
  if (width <= 0 || height <= 0)
    throw error("encode_png: expected a positive width and height, found " + std::to_string(width) +
                " x " + std::to_string(height));
  const std::size_t row = static_cast<std::size_t>(width) * 3;
  if (rgb.size() != row * static_cast<std::size_t>(height))
    throw error("encode_png: expected " + std::to_string(row * static_cast<std::size_t>(height)) +
                " bytes for " + std::to_string(width) + " x " + std::to_string(height) +
                " RGB pixels, found " + std::to_string(rgb.size()));
  // The filtered rows: a filter byte (0, none) before each row.
  std::string raw;
  raw.reserve((row + 1) * static_cast<std::size_t>(height));
  for (int y = 0; y < height; ++y) {
    raw += '\0';
    raw.append(reinterpret_cast<const char*>(rgb.data()) + row * static_cast<std::size_t>(y), row);
  }
  if (raw.size() > std::numeric_limits<uLong>::max() / 2)
    throw error("encode_png: expected an image zlib can compress at once, found " +
                std::to_string(raw.size()) + " bytes");
  uLongf packed_size = ::compressBound(static_cast<uLong>(raw.size()));
  std::string packed(packed_size, '\0');
  const int rc = ::compress2(reinterpret_cast<Bytef*>(packed.data()), &packed_size,
                             reinterpret_cast<const Bytef*>(raw.data()),
                             static_cast<uLong>(raw.size()), Z_BEST_COMPRESSION);
  if (rc != Z_OK)
    throw error("encode_png: expected zlib to compress the pixels, found error " +
                std::to_string(rc));
  packed.resize(packed_size);

  std::string ihdr;
  detail::put_be32(ihdr, static_cast<std::uint32_t>(width));
  detail::put_be32(ihdr, static_cast<std::uint32_t>(height));
  ihdr += static_cast<char>(8);  // bits per channel
  ihdr += static_cast<char>(2);  // colour type 2: RGB
  ihdr.append(3, '\0');          // deflate, adaptive filtering, no interlace
  std::string png("\x89PNG\r\n\x1a\n", 8);
  detail::png_chunk(png, "IHDR", ihdr);
  detail::png_chunk(png, "IDAT", packed);
  detail::png_chunk(png, "IEND", {});
  return png;
}

}  // namespace memopt::io
