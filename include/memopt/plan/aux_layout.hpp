#pragma once
// The layouts of the buffers that cuBLASLt's activation epilogues write in forward and read in
// backward: the ReLU bit mask (RELU_AUX / DRELU) and the GELU input (GELU_AUX / DGELU).
//
// Every backend lays these buffers out the same way, so that one plan serves all of them. The
// leading dimensions are cuBLASLt's rules (cublasLt.h, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD):
// a multiple of 128 bits for the mask, a multiple of 8 elements for the GELU input.

#include <cstddef>
#include <cstdint>

#include "memopt/core/host_device.hpp"

namespace memopt::plan {

/// Bits between two samples of a ReLU mask: the layer's width rounded up to 128.
///
/// ```cpp
/// static_assert(mo::plan::relu_mask_ld(10) == 128 && mo::plan::relu_mask_ld(129) == 256);
/// ```
constexpr std::size_t relu_mask_ld(std::size_t width) {
  return (width + 127) / 128 * 128;
}

/// Bytes of a ReLU mask for `batch` samples of `width` values: 1/16 of a 16-bit copy when
/// `width` is a multiple of 128.
///
/// ```cpp
/// static_assert(mo::plan::relu_mask_bytes(128, 32) * 16 == 128 * 32 * 2);
/// ```
constexpr std::size_t relu_mask_bytes(std::size_t width, std::size_t batch) {
  return relu_mask_ld(width) / 8 * batch;
}

/// Elements between two samples of a GELU layer's kept input z: the width rounded up to 8.
///
/// ```cpp
/// static_assert(mo::plan::gelu_aux_ld(19) == 24);
/// ```
constexpr std::size_t gelu_aux_ld(std::size_t width) {
  return (width + 7) / 8 * 8;
}

/// Bit `unit` of sample `row` of a mask with leading dimension `ld` bits. Bits are stored
/// sample after sample, least significant bit first within each byte.
///
/// ```cpp
/// std::uint8_t m[16] = {};
/// mo::plan::set_mask_bit(m, 128, 3, 0, true);
/// assert(mo::plan::mask_bit(m, 128, 3, 0));
/// ```
MEMOPT_HD_INLINE bool mask_bit(const std::uint8_t* mask, std::size_t ld, std::size_t unit,
                               std::size_t row) {
  const std::size_t bit = row * ld + unit;
  return ((mask[bit / 8] >> (bit % 8)) & 1u) != 0;
}

/// Sets bit `unit` of sample `row` to `value` (see mask_bit for the layout).
MEMOPT_HD_INLINE void set_mask_bit(std::uint8_t* mask, std::size_t ld, std::size_t unit,
                                   std::size_t row, bool value) {
  const std::size_t bit = row * ld + unit;
  const auto one = static_cast<std::uint8_t>(1u << (bit % 8));
  mask[bit / 8] = value ? static_cast<std::uint8_t>(mask[bit / 8] | one)
                        : static_cast<std::uint8_t>(mask[bit / 8] & ~one);
}

}  // namespace memopt::plan
