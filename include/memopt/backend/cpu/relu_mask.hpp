#pragma once
// ReLU's 1-bit mask (plan/aux_layout.hpp's layout: bit u of a sample's row is z_u > 0): packed
// from values, and applied to a gradient.

#include <cstddef>
#include <cstdint>

namespace memopt::cpu_backend {

/// Bits u = 0..n-1 of `mask` (from bit 0 of its first byte) = values[u] > 0; the last byte's
/// unused bits are 0.
template <class V>
void pack_relu_mask(const V* values, std::size_t n, std::uint8_t* mask) {
  for (std::size_t j = 0; j < n; j += 8) {
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
