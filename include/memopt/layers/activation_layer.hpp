#pragma once
// Activation<Act>: an activation as a layer of its own, Keras's `layers.Activation("relu")`.

#include <array>
#include <string_view>

#include "memopt/core/shape.hpp"
#include "memopt/layers/activation.hpp"
#include "memopt/layers/layer.hpp"

namespace memopt {

/// Keras's `Activation(act)`: y = f(x), the same shape out as in, no weights. It lets a model
/// put a layer between a layer and its activation, as Keras's usual
/// Conv2D -> BatchNormalization -> Activation("relu") does:
///
/// ```cpp
/// using Net = mo::Sequential<mo::Conv2D<32, 3>, mo::BatchNormalization,
///                            mo::Activation<mo::ReLU>, mo::Flatten, mo::Dense<10>,
///                            mo::Activation<mo::Softmax>>;
/// ```
///
/// The layer's activation is its `activation`, so everything that reads a layer's activation
/// treats it as it treats Dense's: backward applies its derivative from ReLU's 1-bit mask,
/// GELU's z or the output; a last `Activation<Softmax>` is fused with the cross-entropy loss as
/// `Dense<N, Softmax>` is. It runs as an element-wise kernel of its own, not fused into the
/// layer before it: `Dense<64>, Activation<ReLU>` computes what `Dense<64, ReLU>` computes
/// (the same bits in float32) but keeps one more tensor; write the latter where nothing comes
/// between. Softmax spans a sample's values, which is Keras's last axis only for vectors: on
/// an image it does not compile.
template <class Act>
struct Activation {
  static_assert(ActivationFunction<Act>,
                "Activation: the argument must be an activation: Linear, ReLU, Sigmoid, Tanh, "
                "GELU or Softmax (write Activation<ReLU>)");

  using layer_tag = void;
  using activation = Act;
  static constexpr std::string_view name = "activation";
  static constexpr std::string_view class_name = "Activation";
  static constexpr std::string_view op = "copy";  // the kernel list adds " + relu" etc.
  static constexpr bool is_view = false;
  static constexpr BackwardReads backward_reads{};  // dx = dy: f' is applied from above

  template <Shape In>
  static consteval bool accepts() {
    static_assert(Act::kind != ActivationKind::softmax || In.rank == 1,
                  "Activation<Softmax>: its input is an image (height, width, channels) and "
                  "memopt's Softmax spans all of a sample's values, not Keras's last axis; put "
                  "Flatten or GlobalAveragePooling2D before it");
    return true;
  }
  static constexpr Shape output_shape(Shape in) { return in; }
  static constexpr std::array<WeightDecl, 0> weights(Shape) { return {}; }
  static constexpr std::array<SavedDecl, 0> saved(Shape) { return {}; }
};

}  // namespace memopt
