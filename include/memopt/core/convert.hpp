#pragma once
// Bulk conversion between float and the 16-bit storage types, vectorised where the host
// has the instructions (F16C for half). The CPU backend converts whole buffers at a time
// so that 16-bit policies cost little more than float32 there.

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#if defined(__F16C__) && !defined(__CUDA_ARCH__)
#include <immintrin.h>
#endif

#include "memopt/core/dtype.hpp"

// GCC 12 at -O3 -march=native can inline these into callers whose count it cannot bound and
// then warns that a 2^63rd iteration would overflow; no count here comes near that.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Waggressive-loop-optimizations"
#endif

namespace memopt {

/// dst[i] = float(src[i]) for i in [0, n).
///
/// ```cpp
/// std::vector<mo::half> halves(256);
/// std::vector<float> floats(256);
/// mo::convert(halves.data(), floats.data(), halves.size());
/// ```
template <FloatingElement From>
void convert(const From* src, float* dst, std::size_t n) {
  if constexpr (std::is_same_v<From, float>) {
    std::memcpy(dst, src, n * sizeof(float));
  } else {
    std::size_t i = 0;
    if constexpr (std::is_same_v<From, half>) {
#if defined(__F16C__) && !defined(__CUDA_ARCH__)
      for (; n - i >= 8; i += 8) {
        const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i));
        _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(h));
      }
#endif
    }
    for (; i < n; ++i) dst[i] = static_cast<float>(src[i]);
  }
}

/// dst[i] = To(src[i]) for i in [0, n), rounding to nearest even. (float to float is the
/// overload above.)
template <FloatingElement To>
requires(!std::is_same_v<To, float>) void convert(const float* src, To* dst, std::size_t n) {
  std::size_t i = 0;
  if constexpr (std::is_same_v<To, half>) {
#if defined(__F16C__) && !defined(__CUDA_ARCH__)
    for (; n - i >= 8; i += 8) {
      const __m128i h =
          _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
      _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i), h);
    }
#endif
  }
  for (; i < n; ++i) dst[i] = To(src[i]);
}

/// dst[i] = To(src[i]) for 8-bit pixels, i in [0, n): exact in every storage type (0..255 fit
/// the 8-bit significands of bfloat16 and half), so an 8-bit batch enters a model as the same
/// values a float batch of 0..255 would, with no float copy between.
///
/// ```cpp
/// #include <memopt/data/image_dataset.hpp>
/// auto [images, labels] = mo::data::fashion_mnist_uint8();
/// for (const mo::data::ImageBatch& batch : images | mo::data::batch(32)) {
///   std::vector<float> input(batch.pixels().size());
///   mo::convert(batch.pixels().data(), input.data(), batch.pixels().size());
/// }
/// ```
template <FloatingElement To>
void convert(const std::uint8_t* src, To* dst, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) dst[i] = To(static_cast<float>(src[i]));
}

}  // namespace memopt

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
