#pragma once
// memopt's element types as oneDNN data types.

#include <oneapi/dnnl/dnnl.hpp>

#include <concepts>
#include <cstddef>

#include "memopt/backend/cpu/dnnl/detail/staging.hpp"
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

/// An element type as data, so that code beyond a thin typed front compiles once for all
/// three: oneDNN's type, the bytes per element, and the copies to and from float32 of the
/// emulated 16-bit path (null for float32).
struct Element {
  ::dnnl::memory::data_type type;
  std::size_t bytes;
  void (*widen)(const void* in, float* out, std::size_t n);
  void (*narrow)(const float* in, void* out, std::size_t n);

  bool is_float32() const { return type == ::dnnl::memory::data_type::f32; }
};

template <DnnlElement T>
inline constexpr Element element_of = {
    data_type_of<T>(), sizeof(T),
    std::same_as<T, float> ? nullptr
                           : +[](const void* in, float* out, std::size_t n) {
                               if constexpr (!std::same_as<T, float>)
                                 widen(static_cast<const T*>(in), out, n);
                             },
    std::same_as<T, float> ? nullptr
                           : +[](const float* in, void* out, std::size_t n) {
                               if constexpr (!std::same_as<T, float>)
                                 narrow(in, static_cast<T*>(out), n);
                             }};

}  // namespace memopt::cpu_backend::onednn::detail
