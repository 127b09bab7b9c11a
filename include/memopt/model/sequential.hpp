#pragma once
// Sequential<Layers...>: a chain of layers, each feeding the next, and residual blocks.

#include <array>
#include <cstddef>
#include <ratio>
#include <type_traits>

#include "memopt/core/type_list.hpp"
#include "memopt/layers/activation.hpp"
#include "memopt/layers/layer.hpp"
#include "memopt/layers/rescaling.hpp"
#include "memopt/layers/residual.hpp"
#include "memopt/model/wiring.hpp"

namespace memopt {

template <class T>
inline constexpr bool is_sequential_v = false;
template <class... Ls>
inline constexpr bool is_sequential_v<Sequential<Ls...>> = true;

namespace detail {

// An activation written where a layer goes: what a Keras user writes for
// `layers.Activation("relu")`. Reported by its own message, before any other check.
template <class L>
inline constexpr bool is_bare_activation_v = ActivationFunction<L> && !Layer<L>;

// Checked one layer at a time so that the diagnostic names the position and the type.
template <std::size_t Position, class L, bool IsLast>
struct check_sequential_layer {
  static_assert(Layer<L> || ActivationFunction<L> || is_residual_v<L> || is_sequential_v<L>,
                "Sequential: this element is not a layer; every element must be a layer "
                "such as Dense<64, ReLU>");
  static constexpr bool value = true;
};

template <std::size_t Position, Layer L, bool IsLast>
struct check_sequential_layer<Position, L, IsLast> {
  static_assert(IsLast || L::activation::kind != ActivationKind::softmax,
                "Sequential: Softmax is only allowed on the last layer, where it is fused "
                "with the loss; use Linear or ReLU here and put Softmax at the end");
  static constexpr bool value = true;
};

template <class... Ls, std::size_t... Is>
constexpr bool check_sequential(std::index_sequence<Is...>) {
  return (check_sequential_layer<Is, Ls, Is + 1 == sizeof...(Ls)>::value && ...);
}

// What stands in for an element that is not a layer once its check has failed: an identity
// layer, so that the shapes, weights and plans computed from `layers` raise no further errors
// and the check's message is the only one.
template <class L>
using layer_or_stand_in = std::conditional_t<Layer<L> || is_residual_v<L> || is_sequential_v<L>, L,
                                             Rescaling<std::ratio<1>>>;

}  // namespace detail

/// A chain of layers: `Sequential<Dense<128, ReLU>, Dense<10, Softmax>>`. An element may be a
/// `Residual<Block, Shortcut>` (layers/residual.hpp), which adds its block's layers, its
/// shortcut's and an `Add` to `layers`, or a Sequential, whose layers it adds in order (as a
/// Keras Sequential nested in another); `wiring` says which output each layer reads.
///
/// ```cpp
/// using Net = mo::Sequential<mo::Dense<128, mo::ReLU>, mo::Dense<10, mo::Softmax>>;
/// static_assert(Net::depth == 2);
/// ```
template <class... Ls>
struct Sequential {
  static_assert(sizeof...(Ls) > 0,
                "Sequential: needs at least one layer (write e.g. Sequential<Dense<10, "
                "Softmax>>)");
  // Before the per-element checks, so that it is the first error.
  static_assert(!(detail::is_bare_activation_v<Ls> || ...),
                "Sequential: an activation (ReLU, Sigmoid, Tanh, GELU, Softmax) is not a "
                "layer; give it to the layer before it (Dense<64, ReLU>, Conv2D<16, 3, Same, "
                "ReLU>) or wrap it in the layer Activation<ReLU>");
  static_assert(detail::check_sequential<Ls...>(std::index_sequence_for<Ls...>{}));

  /// Every layer, residual blocks laid out (see Residual), and what each reads.
  using layers = typename detail::flat<Sequential<detail::layer_or_stand_in<Ls>...>>::layers;
  static constexpr auto wiring = detail::wiring_of<detail::layer_or_stand_in<Ls>...>();
  static constexpr std::size_t depth = layers::size;
};

}  // namespace memopt
