#pragma once
// RandomFlip<Mode>: Keras's random horizontal and/or vertical flip of images, active in fit only.

#include <array>
#include <string_view>
#include <type_traits>

#include "memopt/core/shape.hpp"
#include "memopt/layers/activation.hpp"
#include "memopt/layers/layer.hpp"

namespace memopt {

/// RandomFlip's modes, Keras's `mode="horizontal"`, `"vertical"` and
/// `"horizontal_and_vertical"`: which axes an image may be flipped along.
struct Horizontal {
  static constexpr bool horizontal = true, vertical = false;
  static constexpr std::string_view keras = "horizontal";
};
struct Vertical {
  static constexpr bool horizontal = false, vertical = true;
  static constexpr std::string_view keras = "vertical";
};
struct HorizontalAndVertical {
  static constexpr bool horizontal = true, vertical = true;
  static constexpr std::string_view keras = "horizontal_and_vertical";
};

namespace detail {
template <class M>
inline constexpr bool is_flip_mode_v =
    std::is_same_v<M, Horizontal> || std::is_same_v<M, Vertical> ||
    std::is_same_v<M, HorizontalAndVertical>;
}  // namespace detail

/// Keras's `RandomFlip(mode)`, default `HorizontalAndVertical` as Keras's: in `fit` each image
/// is mirrored left-right with probability 1/2 (along its width) and, independently, upside
/// down with probability 1/2 (along its height), as its mode allows; in `evaluate` and
/// `predict` it is the identity. Draws come from the model's seed, the step number and the
/// layer's place, one per image, so a run (and a resumed run) is reproducible; backward flips
/// the gradient by the same draws and stores nothing.
///
/// ```cpp
/// using Net = mo::Sequential<mo::RandomFlip<mo::Horizontal>, mo::Rescaling<std::ratio<1, 255>>,
///                            mo::Conv2D<8, 3, mo::ReLU>, mo::Flatten, mo::Dense<10, mo::Softmax>>;
/// static_assert(mo::RandomFlip<>::output_shape(mo::image_shape(32, 32, 3)) ==
///               mo::image_shape(32, 32, 3));
/// ```
template <class Mode = HorizontalAndVertical>
struct RandomFlip {
  static_assert(detail::is_flip_mode_v<Mode>,
                "RandomFlip: the mode must be Horizontal, Vertical or HorizontalAndVertical "
                "(Keras's \"horizontal\", \"vertical\", \"horizontal_and_vertical\")");
  using mode = Mode;

  using layer_tag = void;
  using activation = Linear;
  static constexpr std::string_view name = "random_flip";
  static constexpr std::string_view class_name = "RandomFlip";
  static constexpr std::string_view op = "random flip";
  static constexpr bool is_view = false;
  static constexpr BackwardReads backward_reads{};

  template <Shape In>
  static consteval bool accepts() {
    static_assert(In.rank == 3,
                  "RandomFlip: its input must be an image (height, width, channels); write "
                  "Input<H, W, C> and put RandomFlip before Flatten");
    return true;
  }
  static constexpr Shape output_shape(Shape in) { return in; }
  static constexpr std::array<WeightDecl, 0> weights(Shape) { return {}; }
  static constexpr std::array<SavedDecl, 0> saved(Shape) { return {}; }
};

}  // namespace memopt
