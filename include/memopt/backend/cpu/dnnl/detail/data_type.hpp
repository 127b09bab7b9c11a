#pragma once
// memopt's element types as oneDNN data types.

#include <oneapi/dnnl/dnnl.hpp>

#include <concepts>

#include "memopt/core/dtype.hpp"

namespace memopt::cpu_backend::onednn::detail {

/// The element types the oneDNN operations take for activations and weights.
template <class T>
concept DnnlElement = std::same_as<T, float> || std::same_as<T, bfloat16>;

template <DnnlElement T>
constexpr ::dnnl::memory::data_type data_type_of() {
  // memopt::bfloat16 is the top half of a float32, as oneDNN's bf16 (round to nearest even).
  if constexpr (std::same_as<T, float>)
    return ::dnnl::memory::data_type::f32;
  else
    return ::dnnl::memory::data_type::bf16;
}

}  // namespace memopt::cpu_backend::onednn::detail
