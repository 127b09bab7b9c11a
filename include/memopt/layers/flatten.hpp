#pragma once
// Flatten: an image seen as a vector. It computes nothing: the values are already stored
// sample after sample, channels last, which is Keras's flattening order.

#include <array>
#include <string_view>

#include "memopt/core/shape.hpp"
#include "memopt/layers/activation.hpp"
#include "memopt/layers/layer.hpp"

namespace memopt {

/// Keras's `Flatten`: `[h, w, c]` becomes `[h * w * c]`. A view: the plan gives it no buffer
/// and no step, and its neighbours share memory through it.
///
/// ```cpp
/// static_assert(mo::Flatten::output_shape(mo::image_shape(5, 5, 64)) == mo::vector_shape(1600));
/// ```
struct Flatten {
  using layer_tag = void;
  using activation = Linear;
  static constexpr std::string_view name = "flatten";
  static constexpr std::string_view class_name = "Flatten";
  static constexpr std::string_view op = "view";
  static constexpr bool is_view = true;
  static constexpr BackwardReads backward_reads{};

  template <Shape In>
  static consteval bool accepts() {
    return true;
  }
  static constexpr Shape output_shape(Shape in) { return vector_shape(in.size()); }
  static constexpr std::array<WeightDecl, 0> weights(Shape) { return {}; }
  static constexpr std::array<SavedDecl, 0> saved(Shape) { return {}; }
};

}  // namespace memopt
