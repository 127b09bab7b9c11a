// memopt::half's scalar conversions (core/dtype.hpp) against IEEE binary16 as defined, not
// against another implementation: every half widens to its exact value, and every float in a
// sweep of bit patterns (with each rounding boundary swept densely) narrows to its nearest
// half, ties to even. Built again by tests/native with the host's instructions, where the
// conversions also meet F16C's, and where loops over them vectorize.

#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#if defined(__F16C__)
#include <immintrin.h>
#endif

#include <memopt/core/dtype.hpp>

namespace {

using memopt::half;

// The value of half bits h, in double: sign, 5 exponent bits (bias 15), 10 mantissa bits.
double decode(std::uint16_t h) {
  const double sign = (h & 0x8000u) ? -1.0 : 1.0;
  const int exp = (h >> 10) & 0x1f;
  const int mant = h & 0x3ff;
  if (exp == 0x1f) return mant == 0 ? sign * INFINITY : NAN;
  if (exp == 0) return sign * std::ldexp(mant, -24);
  return sign * std::ldexp(1024 + mant, exp - 25);
}

std::string hex(std::uint32_t v) {
  char text[16];
  std::snprintf(text, sizeof text, "0x%x", static_cast<unsigned>(v));
  return text;
}

bool is_nan_bits(std::uint16_t h) {
  return (h & 0x7c00u) == 0x7c00u && (h & 0x3ffu) != 0;
}

// Whether `h` is what IEEE round-to-nearest-even makes of `f`; `why` says what is wrong.
bool narrows_correctly(float f, std::uint16_t h, const char*& why) {
  if (std::isnan(f)) {
    why = "NaN must stay a quiet NaN with its sign";
    return is_nan_bits(h) && (h & 0x0200u) && (h >> 15) == (std::bit_cast<std::uint32_t>(f) >> 31);
  }
  why = "the sign";
  if ((h >> 15) != (std::bit_cast<std::uint32_t>(f) >> 31)) return false;
  const double x = std::fabs(static_cast<double>(f));
  const std::uint16_t mag = h & 0x7fffu;
  // 65520 is halfway between 65504, the largest half, and the next step, 65536: it and all
  // above round to infinity.
  if (x >= 65520.0) {
    why = "overflow to infinity";
    return mag == 0x7c00u;
  }
  why = "a finite value that is not the nearest half";
  if (mag >= 0x7c00u) return false;
  const double got = decode(mag);
  const double below = mag > 0 ? decode(static_cast<std::uint16_t>(mag - 1)) : -1.0;
  const double above = decode(static_cast<std::uint16_t>(mag + 1));  // 0x7c00: infinity
  const double err = std::fabs(x - got);
  if (mag > 0 && std::fabs(x - below) < err) return false;
  if (std::fabs(x - above) < err) return false;
  // A tie goes to the even mantissa.
  why = "a tie not rounded to even";
  const bool tie = (mag > 0 && std::fabs(x - below) == err) || std::fabs(x - above) == err;
  return !tie || err == 0 || (mag & 1u) == 0;
}

// Every pattern at `stride`, and every pattern within `width` of each rounding boundary.
std::vector<std::uint32_t> float_patterns(std::uint32_t stride, std::uint32_t width) {
  std::vector<std::uint32_t> v;
  for (std::uint64_t u = 0; u <= 0xffffffffull; u += stride)
    v.push_back(static_cast<std::uint32_t>(u));
  const std::uint32_t edges[] = {
      0x33000000u,  // 2^-25: half the smallest subnormal
      0x33800000u,  // 2^-24: the smallest subnormal
      0x387fc000u,  // the largest subnormal
      0x38800000u,  // 2^-14: the smallest normal
      0x3f800000u,  // 1
      0x477fe000u,  // 65504: the largest half
      0x477ff000u,  // 65520: rounds to infinity
      0x7f800000u,  // infinity
  };
  for (const std::uint32_t e : edges)
    for (std::uint32_t d = 0; d <= 2 * width; ++d)
      for (const std::uint32_t sign : {0u, 0x80000000u}) {
        const std::uint32_t u = e - width + d;
        if (u <= 0x7fffffffu) v.push_back(u | sign);
      }
  return v;
}

}  // namespace

TEST_CASE("half: every half widens to its exact value") {
  int checked = 0;
  for (std::uint32_t h = 0; h < 0x10000u; ++h) {
    const auto bits = static_cast<std::uint16_t>(h);
    const float got = static_cast<float>(half::from_bits(bits));
    CAPTURE(h);
    if (is_nan_bits(bits)) {
      REQUIRE(std::isnan(got));
      // The payload and the sign carry over to float's top mantissa bits.
      REQUIRE(std::bit_cast<std::uint32_t>(got) ==
              (((h & 0x8000u) << 16) | 0x7f800000u | ((h & 0x3ffu) << 13)));
    } else {
      REQUIRE(static_cast<double>(got) == decode(bits));
      REQUIRE(std::signbit(got) == ((h & 0x8000u) != 0));  // -0 stays -0
    }
    ++checked;
  }
  CHECK(checked == 65536);
}

TEST_CASE("half: floats narrow to the nearest half, ties to even") {
  const auto patterns = float_patterns(1009, 4096);
  std::size_t failures = 0;
  for (const std::uint32_t u : patterns) {
    const float f = std::bit_cast<float>(u);
    const std::uint16_t h = half(f).bits;
    const char* why = "";
    if (!narrows_correctly(f, h, why)) {
      if (++failures <= 8)
        FAIL_CHECK("float bits " << hex(u) << " -> half " << hex(h) << ": " << std::string(why));
    }
  }
  CHECK(failures == 0);
  MESSAGE(patterns.size() << " float patterns narrowed");
  // Spot values worked by hand.
  CHECK(half(0.1f).bits == 0x2e66u);
  CHECK(half(65504.0f).bits == 0x7bffu);
  CHECK(half(65519.99f).bits == 0x7bffu);
  CHECK(half(65520.0f).bits == 0x7c00u);
  CHECK(half(std::ldexp(1.0f, -24)).bits == 0x0001u);
  CHECK(half(std::ldexp(1.0f, -25)).bits == 0x0000u);  // a tie, to even (0)
  CHECK(half(std::ldexp(3.0f, -25)).bits == 0x0002u);  // a tie, to even (2)
  CHECK(half(-0.0f).bits == 0x8000u);
}

#if defined(__F16C__)
TEST_CASE("half: the conversions agree with F16C's instructions") {
  const auto patterns = float_patterns(257, 64);
  std::size_t narrow_mismatches = 0;
  for (const std::uint32_t u : patterns) {
    const float f = std::bit_cast<float>(u);
    const auto hw = static_cast<std::uint16_t>(_cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT));
    const std::uint16_t ours = half(f).bits;
    // F16C keeps a NaN's top payload bits; memopt makes it the canonical quiet NaN.
    const bool same = std::isnan(f)
                          ? is_nan_bits(hw) && is_nan_bits(ours) && (hw >> 15) == (ours >> 15)
                          : hw == ours;
    if (!same && ++narrow_mismatches <= 8)
      FAIL_CHECK("float bits " << hex(u) << ": F16C " << hex(hw) << ", memopt " << hex(ours));
  }
  CHECK(narrow_mismatches == 0);
  std::size_t widen_mismatches = 0;
  for (std::uint32_t h = 0; h < 0x10000u; ++h) {
    const float hw = _cvtsh_ss(static_cast<unsigned short>(h));
    const float ours = static_cast<float>(half::from_bits(static_cast<std::uint16_t>(h)));
    // F16C quiets a signaling NaN; memopt keeps its bits (the quiet bit included).
    const std::uint32_t quiet = is_nan_bits(static_cast<std::uint16_t>(h)) ? 0x00400000u : 0u;
    if (std::bit_cast<std::uint32_t>(hw) != (std::bit_cast<std::uint32_t>(ours) | quiet))
      ++widen_mismatches;
  }
  CHECK(widen_mismatches == 0);
}
#else
// Built without F16C: tests/native builds this file with the host's instructions.
TEST_CASE("half: the conversions agree with F16C's instructions" * doctest::skip()) {}
#endif
