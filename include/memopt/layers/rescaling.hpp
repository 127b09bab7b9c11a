#pragma once
// Rescaling<Scale, Offset>: y = x * scale + offset, how 8-bit pixels enter a model.

#include <array>
#include <ratio>
#include <string_view>

#include "memopt/core/shape.hpp"
#include "memopt/layers/activation.hpp"
#include "memopt/layers/layer.hpp"
#include "memopt/layers/ratio.hpp"

namespace memopt {

/// Keras's `Rescaling(scale, offset)` with both written as `std::ratio`:
/// `Rescaling<std::ratio<1, 255>>` maps pixels 0..255 to [0, 1],
/// `Rescaling<std::ratio<1, 127>, std::ratio<-1>>` to about [-1, 1].
template <class Scale, class Offset = std::ratio<0>>
struct Rescaling {
  static_assert(is_ratio_v<Scale> && is_ratio_v<Offset>,
                "Rescaling: write scale and offset as std::ratio, e.g. "
                "Rescaling<std::ratio<1, 255>>");
  static constexpr double scale = ratio_value_v<Scale>;
  static constexpr double offset = ratio_value_v<Offset>;

  using layer_tag = void;
  using activation = Linear;
  static constexpr std::string_view name = "rescaling";
  static constexpr std::string_view class_name = "Rescaling";
  static constexpr std::string_view op = "scale + offset";
  static constexpr bool is_view = false;
  static constexpr BackwardReads backward_reads{};

  template <Shape In>
  static consteval bool accepts() {
    return true;
  }
  static constexpr Shape output_shape(Shape in) { return in; }
  static constexpr std::array<WeightDecl, 0> weights(Shape) { return {}; }
  static constexpr std::array<SavedDecl, 0> saved(Shape) { return {}; }
};

}  // namespace memopt
