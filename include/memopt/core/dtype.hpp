#pragma once
// 16-bit floating-point storage types usable on host and device.
//
// They store bits and convert through float: memopt computes in float (or in tensor
// cores' float accumulators) and keeps 16-bit values only to halve memory. The bit layouts
// match CUDA's __half and __nv_bfloat16, so device code may reinterpret them.

#include <bit>
#include <cstdint>
#include <string_view>
#include <type_traits>

#include "memopt/core/host_device.hpp"

namespace memopt {

namespace detail {

MEMOPT_HD_INLINE std::uint32_t float_bits(float f) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(f);
#else
  return std::bit_cast<std::uint32_t>(f);
#endif
}

MEMOPT_HD_INLINE float bits_float(std::uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  return std::bit_cast<float>(u);
#endif
}

// IEEE binary16, round to nearest even, with subnormals, infinities and NaN (quiet, without
// its payload). Like half_bits_to_float, each case is computed and masks pick one, so that
// loops over it vectorize.
MEMOPT_HD_INLINE std::uint16_t float_to_half_bits(float f) {
  const std::uint32_t x = float_bits(f);
  const std::uint32_t sign = (x >> 16) & 0x8000u;
  const std::uint32_t abs = x & 0x7fffffffu;
  // Normals: rebias the exponent from 127 to 15 and round the 13 dropped bits to nearest even
  // (a carry out of the mantissa correctly bumps the exponent, up to infinity).
  const std::uint32_t normal = (abs - 0x38000000u + 0xfffu + ((abs >> 13) & 1u)) >> 13;
  // Below the smallest normal half: adding 0.5 leaves the value's multiple of 2^-24 in the low
  // bits, rounded to nearest even by the float addition itself.
  const std::uint32_t small = float_bits(bits_float(abs) + 0.5f) - 0x3f000000u;
  const std::uint32_t is_small = 0u - static_cast<std::uint32_t>(abs < 0x38800000u);
  const std::uint32_t is_big = 0u - static_cast<std::uint32_t>(abs >= 0x477ff000u);  // > 65504
  const std::uint32_t nan = abs > 0x7f800000u ? 0x0200u : 0u;  // on top of infinity
  const std::uint32_t finite = (small & is_small) | (normal & ~(is_small | is_big));
  return static_cast<std::uint16_t>(sign | finite | (0x7c00u & is_big) | nan);
}

// Exact, and without branches or loops, so that compilers vectorize loops over it: each case
// is computed and the exponent picks one.
MEMOPT_HD_INLINE float half_bits_to_float(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t body = static_cast<std::uint32_t>(h & 0x7fffu) << 13;  // at float's place
  const std::uint32_t exp = body & 0x0f800000u;
  const std::uint32_t normal = body + 0x38000000u;   // exponent rebiased from 15 to 127
  const std::uint32_t inf_nan = body | 0x7f800000u;  // NaN keeps its payload
  // Subnormals and zeros: mantissa x 2^-24, exact in float.
  const std::uint32_t small = float_bits(static_cast<float>(h & 0x3ffu) * 0x1p-24f);
  // Masks rather than ?:, which GCC 12 keeps as branches.
  const std::uint32_t top = 0u - static_cast<std::uint32_t>(exp == 0x0f800000u);
  const std::uint32_t bottom = 0u - static_cast<std::uint32_t>(exp == 0);
  return bits_float(sign | (inf_nan & top) | (small & bottom) | (normal & ~(top | bottom)));
}

MEMOPT_HD_INLINE std::uint16_t float_to_bfloat16_bits(float f) {
  const std::uint32_t x = float_bits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((x >> 16) | 0x40u);
  const std::uint32_t rounding = 0x7fffu + ((x >> 16) & 1u);
  return static_cast<std::uint16_t>((x + rounding) >> 16);
}

MEMOPT_HD_INLINE float bfloat16_bits_to_float(std::uint16_t b) {
  return bits_float(static_cast<std::uint32_t>(b) << 16);
}

}  // namespace detail

/// IEEE half precision (binary16) storage: 1 sign, 5 exponent, 10 mantissa bits.
///
/// ```cpp
/// mo::half h = 0.1f;           // rounds to nearest even
/// float back = h;              // 0.0999755859375f
/// ```
struct half {
  std::uint16_t bits = 0;

  half() = default;
  MEMOPT_HD half(float f) : bits(detail::float_to_half_bits(f)) {}  // NOLINT: implicit like float
  MEMOPT_HD operator float() const { return detail::half_bits_to_float(bits); }
  static MEMOPT_HD half from_bits(std::uint16_t b) {
    half h;
    h.bits = b;
    return h;
  }
};

/// bfloat16 storage: float32's exponent range with 8 bits of mantissa.
///
/// ```cpp
/// mo::bfloat16 b = 3.14159f;   // 3.140625f
/// ```
struct bfloat16 {
  std::uint16_t bits = 0;

  bfloat16() = default;
  MEMOPT_HD bfloat16(float f) : bits(detail::float_to_bfloat16_bits(f)) {}  // NOLINT
  MEMOPT_HD operator float() const { return detail::bfloat16_bits_to_float(bits); }
  static MEMOPT_HD bfloat16 from_bits(std::uint16_t b) {
    bfloat16 h;
    h.bits = b;
    return h;
  }
};

static_assert(sizeof(half) == 2 && sizeof(bfloat16) == 2);
static_assert(std::is_trivially_copyable_v<half> && std::is_trivially_copyable_v<bfloat16>);

/// The floating-point element types memopt stores.
template <class T>
concept FloatingElement =
    std::same_as<T, float> || std::same_as<T, half> || std::same_as<T, bfloat16>;

/// The element types a batch's inputs arrive in: float features, or 8-bit pixels that the
/// backend converts to its compute type as it loads the input buffer.
template <class T>
concept InputElement = std::same_as<T, float> || std::same_as<T, std::uint8_t>;

/// The element types of a batch's targets: class indices, or float vectors (one-hot rows,
/// 0/1 labels, regression values).
template <class T>
concept TargetElement = std::same_as<T, std::int32_t> || std::same_as<T, float>;

/// The name safetensors and summaries use for an element type: "F32", "F16", "BF16".
template <FloatingElement T>
constexpr std::string_view dtype_name() {
  if constexpr (std::same_as<T, float>)
    return "F32";
  else if constexpr (std::same_as<T, half>)
    return "F16";
  else
    return "BF16";
}

}  // namespace memopt
