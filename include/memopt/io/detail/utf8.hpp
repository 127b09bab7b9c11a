#pragma once
// UTF-8 as RFC 3629 defines it: the length of the well-formed sequence at a position, so
// that JSON text can be checked byte by byte without decoding it.

#include <cstddef>
#include <string>
#include <string_view>

namespace memopt::io::detail {

/// The length (1 to 4) of the well-formed UTF-8 sequence starting at `s[i]`, or 0 when the
/// bytes there are not one: a stray continuation byte, an overlong form, a surrogate, a code
/// point above U+10FFFF, or a sequence cut short by the end of `s`.
constexpr std::size_t utf8_sequence_length(std::string_view s, std::size_t i) {
  const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char lead = byte(i);
  if (lead < 0x80) return 1;
  // The second byte's range depends on the lead byte; the others are 80..BF.
  std::size_t length = 0;
  unsigned char low = 0x80, high = 0xbf;
  if (lead >= 0xc2 && lead <= 0xdf) {
    length = 2;
  } else if (lead >= 0xe0 && lead <= 0xef) {
    length = 3;
    if (lead == 0xe0) low = 0xa0;   // no overlong forms
    if (lead == 0xed) high = 0x9f;  // no surrogates
  } else if (lead >= 0xf0 && lead <= 0xf4) {
    length = 4;
    if (lead == 0xf0) low = 0x90;   // no overlong forms
    if (lead == 0xf4) high = 0x8f;  // nothing above U+10FFFF
  } else {
    return 0;
  }
  if (s.size() - i < length) return 0;
  if (byte(i + 1) < low || byte(i + 1) > high) return 0;
  for (std::size_t k = 2; k < length; ++k)
    if (byte(i + k) < 0x80 || byte(i + k) > 0xbf) return 0;
  return length;
}

/// Whether all of `s` is well-formed UTF-8.
constexpr bool is_utf8(std::string_view s) {
  for (std::size_t i = 0; i < s.size();) {
    const std::size_t n = utf8_sequence_length(s, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

/// "the byte 0xff": how messages about JSON text name a byte that cannot be shown as is.
inline std::string byte_name(unsigned char c) {
  constexpr char hex[] = "0123456789abcdef";
  return std::string("the byte 0x") + hex[c >> 4] + hex[c & 0xf];
}

static_assert(is_utf8("plain") && is_utf8("\xc3\xa9t\xc3\xa9") && is_utf8("\xf0\x9f\x98\x80"));
static_assert(!is_utf8("\xc0\xaf") && !is_utf8("\xed\xa0\x80") && !is_utf8("\xf4\x90\x80\x80") &&
              !is_utf8("\xe2\x82") && !is_utf8("\x80"));

}  // namespace memopt::io::detail
