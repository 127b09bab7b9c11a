#pragma once
// CRC-32C (Castagnoli), in software: the checksum of TFRecord files (TensorBoard's event
// files). A table-driven loop is plenty for log records of a few kilobytes per epoch, and it
// needs neither SSE4.2 nor a library.

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace memopt::io::detail {

/// The reflected polynomial 0x1EDC6F41, one entry per byte value.
inline constexpr std::array<std::uint32_t, 256> crc32c_table = [] {
  std::array<std::uint32_t, 256> t{};
  for (std::uint32_t i = 0; i < 256; ++i) {
    std::uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1u) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
    t[i] = c;
  }
  return t;
}();

/// CRC-32C of `bytes`, continuing from `crc` (the value returned for the bytes before).
///
/// ```cpp
/// std::uint32_t c = mo::io::detail::crc32c("123456789");  // 0xE3069283
/// ```
constexpr std::uint32_t crc32c(std::string_view bytes, std::uint32_t crc = 0) {
  crc = ~crc;
  for (const char ch : bytes)
    crc = crc32c_table[(crc ^ static_cast<unsigned char>(ch)) & 0xFFu] ^ (crc >> 8);
  return ~crc;
}

/// TFRecord's masked CRC: rotated and offset so that a CRC stored inside checksummed data
/// does not checksum to a fixed value.
constexpr std::uint32_t masked_crc32c(std::string_view bytes) {
  const std::uint32_t c = crc32c(bytes);
  return ((c >> 15) | (c << 17)) + 0xA282EAD8u;
}

}  // namespace memopt::io::detail
