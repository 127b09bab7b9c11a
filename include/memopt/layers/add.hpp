#pragma once
// Add: the sum of two branches of the same shape, Keras's `layers.add([a, b])`. Residual puts
// it after a block and its shortcut; it is the one layer with two inputs.

#include <array>
#include <cstddef>
#include <string_view>

#include "memopt/core/shape.hpp"
#include "memopt/layers/activation.hpp"
#include "memopt/layers/layer.hpp"

namespace memopt {

/// Keras's `Add`: y = a + b. Its first input is the block's output, its second the shortcut's
/// (the Sequential's wiring says which nodes those are); the model checks at compile time that
/// the two shapes agree. Backward passes dy to both, each times the derivative of its own
/// activation below. Written by `Residual`, not by hand.
struct Add {
  using layer_tag = void;
  using activation = Linear;
  static constexpr std::string_view name = "add";
  static constexpr std::string_view class_name = "Add";
  static constexpr std::string_view op = "add";
  static constexpr bool is_view = false;
  static constexpr BackwardReads backward_reads{};  // dx = dy: nothing kept

  template <Shape In>
  static consteval bool accepts() {
    return true;
  }
  static constexpr Shape output_shape(Shape in) { return in; }
  static constexpr std::array<WeightDecl, 0> weights(Shape) { return {}; }
  static constexpr std::array<SavedDecl, 0> saved(Shape) { return {}; }
};

}  // namespace memopt
