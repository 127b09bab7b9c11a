#pragma once
// Keras's Dropout (inverted dropout) for training: each element is dropped with
// probability `rate`, the kept ones scaled by 1 / (1 - rate); a 1-bit mask per element is
// what backward keeps. Identity outside training (the caller simply skips it).

#include <cstddef>
#include <cstdint>
#include <string>

#include "memopt/backend/cpu/dnnl/detail/data_type.hpp"
#include "memopt/core/error.hpp"
#include "memopt/core/random.hpp"

namespace memopt::cpu_backend::onednn {

/// 64-bit words of the keep mask for `n` elements (bit i % 64 of word i / 64).
///
/// ```cpp
/// std::vector<std::uint64_t> mask(dropout_mask_words(n));
/// ```
constexpr std::size_t dropout_mask_words(std::size_t n) {
  return (n + 63) / 64;
}

namespace detail {

inline void check_dropout_rate(float rate) {
  if (!(rate >= 0.0f && rate < 1.0f))
    throw error("Dropout: expected a rate in [0, 1), found " + std::to_string(rate));
}

}  // namespace detail

/// y = x * keep / (1 - rate), keep ~ Bernoulli(1 - rate) drawn from `rng` (one draw per
/// element, in order, so a seed reproduces the mask); the keep bits go to `mask`.
///
/// ```cpp
/// mo::Rng rng{seed};
/// dropout_forward(x, y, mask.data(), n, 0.5f, rng);
/// ```
template <detail::DnnlElement T>
void dropout_forward(const T* x, T* y, std::uint64_t* mask, std::size_t n, float rate, Rng& rng) {
  detail::check_dropout_rate(rate);
  const float scale = 1.0f / (1.0f - rate);
  for (std::size_t w = 0; w < dropout_mask_words(n); ++w) {
    std::uint64_t bits = 0;
    const std::size_t end = n - w * 64 < 64 ? n - w * 64 : 64;
    for (std::size_t b = 0; b < end; ++b) {
      const std::size_t i = w * 64 + b;
      const bool keep = rng.uniform(0.0f, 1.0f) >= rate;
      bits |= static_cast<std::uint64_t>(keep) << b;
      y[i] = keep ? T(static_cast<float>(x[i]) * scale) : T(0.0f);
    }
    mask[w] = bits;
  }
}

/// dx = dy * keep / (1 - rate) with the mask `dropout_forward` wrote.
///
/// ```cpp
/// dropout_backward(dy, mask.data(), dx, n, 0.5f);
/// ```
template <detail::DnnlElement T>
void dropout_backward(const T* dy, const std::uint64_t* mask, T* dx, std::size_t n, float rate) {
  detail::check_dropout_rate(rate);
  const float scale = 1.0f / (1.0f - rate);
  for (std::size_t i = 0; i < n; ++i) {
    const bool keep = (mask[i / 64] >> (i % 64)) & 1u;
    dx[i] = keep ? T(static_cast<float>(dy[i]) * scale) : T(0.0f);
  }
}

}  // namespace memopt::cpu_backend::onednn
