#pragma once
// memopt's element types as oneDNN data types.

#include <oneapi/dnnl/dnnl.hpp>

#include <concepts>

#include "memopt/core/dtype.hpp"

namespace memopt::cpu_backend::onednn::detail {

/// The element types the oneDNN operations take for activations and weights: float32, and
/// the 16-bit types of mixed_bfloat16 and mixed_float16.
template <class T>
concept DnnlElement = std::same_as<T, float> || std::same_as<T, bfloat16> || std::same_as<T, half>;

template <DnnlElement T>
constexpr ::dnnl::memory::data_type data_type_of() {
  // memopt::bfloat16 is the top half of a float32 and memopt::half IEEE binary16, bit for bit
  // oneDNN's bf16 and f16 (both rounded to nearest even).
  if constexpr (std::same_as<T, float>)
    return ::dnnl::memory::data_type::f32;
  else if constexpr (std::same_as<T, bfloat16>)
    return ::dnnl::memory::data_type::bf16;
  else
    return ::dnnl::memory::data_type::f16;
}

}  // namespace memopt::cpu_backend::onednn::detail
