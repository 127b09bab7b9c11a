#pragma once
// GlobalAveragePooling2D: an image reduced to the mean of each channel.

#include <array>
#include <string_view>

#include "memopt/core/shape.hpp"
#include "memopt/layers/activation.hpp"
#include "memopt/layers/layer.hpp"

namespace memopt {

/// Keras's `GlobalAveragePooling2D`: the mean of each channel over the image, a vector of
/// `channels` values.
struct GlobalAveragePooling2D {
  using layer_tag = void;
  using activation = Linear;
  static constexpr std::string_view name = "global_average_pooling2d";
  static constexpr std::string_view class_name = "GlobalAveragePooling2D";
  static constexpr std::string_view op = "mean over height, width";
  static constexpr bool is_view = false;
  static constexpr BackwardReads backward_reads{};

  template <Shape In>
  static consteval bool accepts() {
    static_assert(In.rank == 3,
                  "GlobalAveragePooling2D: its input must be an image (height, width, "
                  "channels)");
    return true;
  }
  static constexpr Shape output_shape(Shape in) { return vector_shape(in.channels()); }
  static constexpr std::array<WeightDecl, 0> weights(Shape) { return {}; }
  static constexpr std::array<SavedDecl, 0> saved(Shape) { return {}; }
};

}  // namespace memopt
