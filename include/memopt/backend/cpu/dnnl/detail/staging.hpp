#pragma once
// Carving a caller's scratchpad into oneDNN's part and float32 staging buffers, and the
// 16-bit <-> float32 copies of the emulated path (CPUs without bf16/f16 kernels).

#include <cstddef>
#include <cstdint>

#include "memopt/core/dtype.hpp"

namespace memopt::cpu_backend::onednn::detail {

inline constexpr std::size_t kScratchAlign = 64;

constexpr std::size_t align_up(std::size_t bytes) {
  return (bytes + kScratchAlign - 1) / kScratchAlign * kScratchAlign;
}

/// The float32 buffer at `offset` bytes into `scratchpad`.
inline float* staging_at(void* scratchpad, std::size_t offset) {
  return reinterpret_cast<float*>(static_cast<std::byte*>(scratchpad) + offset);
}

inline void widen(const bfloat16* in, float* out, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) out[i] = memopt::detail::bfloat16_bits_to_float(in[i].bits);
}

inline void narrow(const float* in, bfloat16* out, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) out[i].bits = memopt::detail::float_to_bfloat16_bits(in[i]);
}

inline void widen(const half* in, float* out, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) out[i] = memopt::detail::half_bits_to_float(in[i].bits);
}

inline void narrow(const float* in, half* out, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) out[i].bits = memopt::detail::float_to_half_bits(in[i]);
}

}  // namespace memopt::cpu_backend::onednn::detail
