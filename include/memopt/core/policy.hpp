#pragma once
// Precision policies: which types a model computes, stores and accumulates in.

#include <concepts>
#include <string_view>

#include "memopt/core/dtype.hpp"

namespace memopt {

/// What a precision policy names. Write your own by providing the same members:
///
/// ```cpp
/// struct my_policy {
///   using compute_type = mo::bfloat16;     // activations and matmul inputs
///   using variable_type = float;           // master weights
///   using accumulate_type = float;         // matmul accumulators, losses
///   static constexpr bool loss_scaling = false;
///   static constexpr std::string_view name = "my_policy";
/// };
/// ```
template <class P>
concept Policy = requires {
  typename P::compute_type;
  typename P::variable_type;
  typename P::accumulate_type;
  { P::loss_scaling } -> std::convertible_to<bool>;
  { P::name } -> std::convertible_to<std::string_view>;
}
&&FloatingElement<typename P::compute_type>&& std::same_as<typename P::variable_type, float>&&
    std::same_as<typename P::accumulate_type, float>;

/// Everything in float32, as Keras's default policy.
struct float32 {
  using compute_type = float;
  using variable_type = float;
  using accumulate_type = float;
  static constexpr bool loss_scaling = false;
  static constexpr std::string_view name = "float32";
};

/// Keras's `mixed_float16`: half activations and matmul inputs, float32 master weights and
/// accumulation, dynamic loss scaling so that small gradients survive in half.
struct mixed_float16 {
  using compute_type = half;
  using variable_type = float;
  using accumulate_type = float;
  static constexpr bool loss_scaling = true;
  static constexpr std::string_view name = "mixed_float16";
};

/// Keras's `mixed_bfloat16`: bfloat16 keeps float32's range, so no loss scaling.
struct mixed_bfloat16 {
  using compute_type = bfloat16;
  using variable_type = float;
  using accumulate_type = float;
  static constexpr bool loss_scaling = false;
  static constexpr std::string_view name = "mixed_bfloat16";
};

static_assert(Policy<float32> && Policy<mixed_float16> && Policy<mixed_bfloat16>);

}  // namespace memopt
