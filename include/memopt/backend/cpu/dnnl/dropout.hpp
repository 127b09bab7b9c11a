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
/// using namespace mo::cpu_backend::onednn;
/// const std::size_t n = 32 * 128;
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

/// y = x * keep / (1 - rate), keep ~ Bernoulli(1 - rate) drawn from `rng` (two 32-bit draws
/// per generator step, in order, so a seed reproduces the mask); the keep bits go to `mask`.
/// Branch-free: with rate 0.5 a branch per value mispredicts half the time.
///
/// ```cpp
/// using namespace mo::cpu_backend::onednn;
/// const std::size_t n = 32 * 128;
/// std::vector<float> x(n), y(n);
/// std::vector<std::uint64_t> mask(dropout_mask_words(n));
/// mo::Rng rng{42};
/// dropout_forward(x.data(), y.data(), mask.data(), n, 0.5f, rng);
/// ```
template <detail::DnnlElement T>
void dropout_forward(const T* x, T* y, std::uint64_t* mask, std::size_t n, float rate, Rng& rng) {
  detail::check_dropout_rate(rate);
  const float scale = 1.0f / (1.0f - rate);
  // keep when a uniform 32-bit draw is at or above rate * 2^32.
  const auto threshold = static_cast<std::uint64_t>(static_cast<double>(rate) * 4294967296.0);
  for (std::size_t w = 0; w < dropout_mask_words(n); ++w) {
    // The word's bits first, then its values in a loop of their own that the compiler
    // vectorizes (one loop doing both ran 3x slower on bfloat16).
    std::uint64_t bits = 0;
    const std::size_t end = n - w * 64 < 64 ? n - w * 64 : 64;
    for (std::size_t b = 0; b < end; b += 2) {
      const std::uint64_t r = rng.next();
      bits |= static_cast<std::uint64_t>((r & 0xffffffffu) >= threshold) << b;
      if (b + 1 < end) bits |= static_cast<std::uint64_t>((r >> 32) >= threshold) << (b + 1);
    }
    mask[w] = bits;
    const T* xw = x + w * 64;
    T* yw = y + w * 64;
    for (std::size_t b = 0; b < end; ++b)
      yw[b] = T(static_cast<float>(xw[b]) * scale * static_cast<float>((bits >> b) & 1u));
  }
}

/// dx = dy * keep / (1 - rate) with the mask `dropout_forward` wrote.
///
/// ```cpp
/// using namespace mo::cpu_backend::onednn;
/// const std::size_t n = 32 * 128;
/// std::vector<float> dy(n), dx(n);
/// std::vector<std::uint64_t> mask(dropout_mask_words(n));  // as dropout_forward left it
/// dropout_backward(dy.data(), mask.data(), dx.data(), n, 0.5f);
/// ```
template <detail::DnnlElement T>
void dropout_backward(const T* dy, const std::uint64_t* mask, T* dx, std::size_t n, float rate) {
  detail::check_dropout_rate(rate);
  const float scale = 1.0f / (1.0f - rate);
  for (std::size_t i = 0; i < n; ++i) {
    const auto keep = static_cast<float>((mask[i / 64] >> (i % 64)) & 1u);
    dx[i] = T(static_cast<float>(dy[i]) * scale * keep);
  }
}

}  // namespace memopt::cpu_backend::onednn
