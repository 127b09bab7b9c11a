#pragma once
// ReLU's 1-bit mask (plan/aux_layout.hpp's layout: bit u of a sample's row is z_u > 0): packed
// from values, and applied to a gradient.

#include <cstddef>
#include <cstdint>
#include <type_traits>

#if defined(__AVX2__) && !defined(__CUDA_ARCH__)
#include <immintrin.h>
#endif

#include "memopt/core/dtype.hpp"

namespace memopt::cpu_backend {

/// Bits u = 0..n-1 of `mask` (from bit 0 of its first byte) = values[u] > 0; the last byte's
/// unused bits are 0.
template <class V>
void pack_relu_mask(const V* values, std::size_t n, std::uint8_t* mask) {
  std::size_t j = 0;
#if defined(__AVX2__) && !defined(__CUDA_ARCH__)
  // A compare and a movemask a byte, which GCC 12 does not make of the loop below: for
  // 16 x 26 x 26 x 32 values on a Sapphire Rapids (-O3 -march=native, a scratch timing loop),
  // 25 us against 42 us in float, 23 us against 55 us in bfloat16.
  if constexpr (std::is_same_v<V, float> || std::is_same_v<V, bfloat16>) {
    const __m256 zero = _mm256_setzero_ps();
    for (; n - j >= 8; j += 8) {
      __m256 v;
      if constexpr (std::is_same_v<V, float>) {
        v = _mm256_loadu_ps(values + j);
      } else {
        const __m128i bits = _mm_loadu_si128(reinterpret_cast<const __m128i*>(values + j));
        v = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(bits), 16));
      }
      mask[j / 8] =
          static_cast<std::uint8_t>(_mm256_movemask_ps(_mm256_cmp_ps(v, zero, _CMP_GT_OQ)));
    }
  }
#endif
  for (; j < n; j += 8) {
    unsigned bits = 0;
    const std::size_t m = n - j < 8 ? n - j : 8;
    for (std::size_t k = 0; k < m; ++k)
      bits |= (static_cast<float>(values[j + k]) > 0.0f ? 1u : 0u) << k;
    mask[j / 8] = static_cast<std::uint8_t>(bits);
  }
}

/// g[k] *= bit (first + k) of `mask`, for k in [0, n): a gradient times ReLU's derivative.
inline void mask_relu_gradient(const std::uint8_t* mask, std::size_t first, float* g,
                               std::size_t n) {
  if (first % 8 == 0) {
    // Eight values a byte in a loop of fixed count, which GCC turns into one vector shift,
    // mask and multiply (a bit index computed per value defeated it: 5x slower).
    const std::uint8_t* m = mask + first / 8;
    const std::size_t whole = n / 8;
    for (std::size_t b = 0; b < whole; ++b)
      for (unsigned t = 0; t < 8; ++t)
        g[b * 8 + t] *= static_cast<float>((static_cast<unsigned>(m[b]) >> t) & 1u);
    first += whole * 8;
    g += whole * 8;
    n -= whole * 8;
  }
  for (std::size_t k = 0; k < n; ++k)
    g[k] *= static_cast<float>((mask[(first + k) / 8] >> ((first + k) % 8)) & 1u);
}

}  // namespace memopt::cpu_backend
