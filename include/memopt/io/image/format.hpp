#pragma once
// io::image::detect_format: JPEG, PNG or BMP, told by a file's first bytes, not its name.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

namespace memopt::io::image {

/// The encodings memopt decodes.
enum class Format : std::uint8_t { unknown, jpeg, png, bmp };

/// Its usual name.
constexpr std::string_view name_of(Format format) noexcept {
  switch (format) {
    case Format::jpeg:
      return "JPEG";
    case Format::png:
      return "PNG";
    case Format::bmp:
      return "BMP";
    default:
      return "unknown";
  }
}

/// The format that `bytes` begin with: JPEG (FF D8 FF), PNG (its 8-byte signature) or BMP
/// ("BM" and a header long enough to hold one); `unknown` otherwise. A file's extension plays
/// no part, so a PNG saved as `.jpg` still decodes.
///
/// ```cpp
/// if (mo::io::image::detect_format(bytes) == mo::io::image::Format::png) { /* ... */ }
/// ```
constexpr Format detect_format(std::span<const std::uint8_t> bytes) noexcept {
  if (bytes.size() >= 3 && bytes[0] == 0xFF && bytes[1] == 0xD8 && bytes[2] == 0xFF) {
    return Format::jpeg;
  }
  constexpr std::uint8_t kPng[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
  if (bytes.size() >= 8) {
    bool png = true;
    for (std::size_t i = 0; i < 8; ++i) png = png && bytes[i] == kPng[i];
    if (png) return Format::png;
  }
  // A BITMAPFILEHEADER (14 bytes) and at least the smallest info header (12 bytes).
  if (bytes.size() >= 26 && bytes[0] == 'B' && bytes[1] == 'M') return Format::bmp;
  return Format::unknown;
}

}  // namespace memopt::io::image
