#pragma once
// The Layer concept: what Sequential accepts.

#include <concepts>
#include <cstddef>
#include <string_view>

#include "memopt/layers/activation.hpp"

namespace memopt {

/// A layer maps `inputs` features to `units` features through an activation, with
/// `parameters(inputs)` trainable values. Dense is the one memopt ships.
template <class L>
concept Layer = requires(std::size_t inputs) {
  typename L::layer_tag;
  typename L::activation;
  { L::units } -> std::convertible_to<std::size_t>;
  { L::name } -> std::convertible_to<std::string_view>;
  { L::parameters(inputs) } -> std::convertible_to<std::size_t>;
}
&&Activation<typename L::activation>;

}  // namespace memopt
