#pragma once
// The Layer concept: what Sequential accepts, and the algebra every layer states about itself
// at compile time. The planner and the checkpoint code read these declarations; they never ask
// what kind of layer they are looking at.

#include <array>
#include <concepts>
#include <cstddef>
#include <string_view>

#include "memopt/core/shape.hpp"
#include "memopt/layers/activation.hpp"

namespace memopt {

/// How a weight starts: Keras's defaults per weight.
enum class Init { zeros, ones, glorot_uniform };

/// One weight of a layer as Keras names and shapes it: `kernel` `[kh, kw, in, filters]`,
/// `bias` `[filters]`, `moving_mean` `[channels]` (not trainable), ...
///
/// ```cpp
/// constexpr mo::WeightDecl k{"kernel", {784, 128}, 2, true, mo::Init::glorot_uniform, 784, 128};
/// static_assert(k.size() == 784 * 128);
/// ```
struct WeightDecl {
  std::string_view name;
  std::array<std::size_t, 4> shape{};
  std::size_t rank = 0;
  bool trainable = true;
  Init init = Init::zeros;
  std::size_t fan_in = 0;  // Glorot's limit is sqrt(6 / (fan_in + fan_out))
  std::size_t fan_out = 0;

  constexpr std::size_t size() const {
    std::size_t n = 1;
    for (std::size_t i = 0; i < rank; ++i) n *= shape[i];
    return n;
  }
};

/// The element a saved buffer holds: the policy's compute type, float32, or raw bytes (masks,
/// pooling's argmax).
enum class Unit { compute, f32, byte };

/// A buffer a layer keeps from its forward pass for its own backward pass (pooling's argmax,
/// Dropout's mask, BatchNormalization's batch statistics): `per_sample` units per row of the
/// batch plus `fixed` units, alive from the layer's forward to its last backward step.
struct SavedDecl {
  std::string_view name;
  std::size_t per_sample = 0;
  std::size_t fixed = 0;
  Unit unit = Unit::compute;
};

/// What a layer's backward steps read besides the gradient of its output. The planner keeps a
/// layer's input alive exactly as long as these say, and the layer below's ReLU mask only for
/// an input gradient that reads it.
struct BackwardReads {
  bool weight_grad_reads_input = false;  // dW = f(x, dy): Dense, Conv2D
  bool input_grad_reads_input = false;   // dx = f(x, dy): BatchNormalization
  // dx applies a ReLU below from the layer's own saved buffer, not from ReLU's mask: max
  // pooling over tiling windows, whose argmax marks the windows whose maximum is not positive.
  bool input_grad_carries_relu_below = false;
};

namespace detail {
template <class L>
concept has_layer_algebra = requires(Shape s) {
  { L::output_shape(s) } -> std::same_as<Shape>;
  L::weights(s);
  L::saved(s);
  { L::backward_reads } -> std::convertible_to<BackwardReads>;
  { L::is_view } -> std::convertible_to<bool>;
};
}  // namespace detail

/// A layer states its Keras names, its activation (`Linear` for layers without one), its output
/// shape for an input shape, its weights, what it saves for backward and what backward reads.
/// `L::template accepts<In>()` fails to compile, naming the layer and the fix, for an input
/// shape the layer cannot take.
template <class L>
concept Layer = requires {
  typename L::layer_tag;
  typename L::activation;
  { L::name } -> std::convertible_to<std::string_view>;
  { L::class_name } -> std::convertible_to<std::string_view>;
}
&&ActivationFunction<typename L::activation>&& detail::has_layer_algebra<L>;

/// The number of weights (trainable or not) that `L` declares.
template <class L>
inline constexpr std::size_t weight_decl_count_v = std::tuple_size_v<decltype(L::weights(Shape{}))>;

/// The number of buffers that `L` saves for backward.
template <class L>
inline constexpr std::size_t saved_decl_count_v = std::tuple_size_v<decltype(L::saved(Shape{}))>;

}  // namespace memopt
