#pragma once
// Dense<Units, Activation>: y = f(x W + b), the layer the guide's model is made of.

#include <array>
#include <cstddef>
#include <string_view>

#include "memopt/core/shape.hpp"
#include "memopt/layers/activation.hpp"
#include "memopt/layers/layer.hpp"

namespace memopt {

/// A fully connected layer of `Units` outputs followed by `Act`.
///
/// ```cpp
/// using Hidden = mo::Dense<128, mo::ReLU>;
/// static_assert(Hidden::parameters(784) == 784 * 128 + 128);
/// ```
template <std::size_t Units, class Act = Linear>
struct Dense {
  static_assert(Units > 0, "Dense: Units must be at least 1 (write e.g. Dense<128, ReLU>)");
  static_assert(ActivationFunction<Act>,
                "Dense: the second argument must be an activation: Linear, ReLU, Sigmoid, "
                "Tanh, GELU or Softmax");

  using layer_tag = void;
  using activation = Act;
  static constexpr std::size_t units = Units;
  static constexpr std::string_view name = "dense";
  static constexpr std::string_view class_name = "Dense";
  static constexpr std::string_view op = "matmul + bias";
  static constexpr bool is_view = false;
  static constexpr BackwardReads backward_reads{.weight_grad_reads_input = true};

  template <Shape In>
  static consteval bool accepts() {
    static_assert(In.rank == 1,
                  "Dense: its input is an image (height, width, channels); put Flatten or "
                  "GlobalAveragePooling2D before Dense");
    return true;
  }
  static constexpr Shape output_shape(Shape) { return vector_shape(Units); }

  /// Keras's `kernel` `[inputs, units]` (Glorot-uniform) and `bias` `[units]` (zeros).
  static constexpr std::array<WeightDecl, 2> weights(Shape in) {
    const std::size_t n = in.size();
    return {WeightDecl{"kernel", {n, Units}, 2, true, Init::glorot_uniform, n, Units},
            WeightDecl{"bias", {Units}, 1, true, Init::zeros}};
  }
  static constexpr std::array<SavedDecl, 0> saved(Shape) { return {}; }

  /// Trainable values for `inputs` input features.
  static constexpr std::size_t parameters(std::size_t inputs) { return inputs * Units + Units; }
};

}  // namespace memopt
