#pragma once
// RandomTranslation<HeightFactor, WidthFactor, Options...>: Keras's random shift of each image,
// active in fit only.

#include <array>
#include <cstddef>
#include <span>
#include <string_view>

#include "memopt/core/shape.hpp"
#include "memopt/layers/affine_options.hpp"
#include "memopt/layers/random_factor.hpp"

namespace memopt {

/// Keras's `RandomTranslation(height_factor, width_factor, fill_mode, interpolation,
/// fill_value)`. Each factor is a fraction of the image's height or width, a `std::ratio` f for
/// [-f, f] or `Range<Lo, Hi>`; a positive draw shifts the image down (right). Then, in any
/// order: a fill mode (`Reflect` by default, `Wrap`, `Constant<Value>`, `Nearest`) and an
/// interpolation (`Bilinear` by default, `NearestNeighbor`). In `fit` each image gets its own
/// draw, from the model's seed, the step and the layer's place; in `evaluate` and `predict`
/// the layer is the identity. No weights.
///
/// ```cpp
/// using T = mo::RandomTranslation<std::ratio<1, 10>, mo::Range<std::ratio<0>, std::ratio<1, 5>>,
///                                 mo::Constant<>, mo::NearestNeighbor>;
/// static_assert(T::lower[0] == -0.1 && T::upper[1] == 0.2);
/// static_assert(T::fill_mode == mo::FillMode::constant);
/// ```
template <class HeightFactor, class WidthFactor, class... Options>
struct RandomTranslation : detail::AffineAugmentation<Options...> {
  static_assert(is_factor_v<HeightFactor> && is_factor_v<WidthFactor>,
                "RandomTranslation: the height and width factors come first, each a std::ratio "
                "f (for [-f, f]) or Range<Lo, Hi>: RandomTranslation<std::ratio<1, 10>, "
                "std::ratio<1, 10>>");
  static_assert(factor_within_one_v<HeightFactor> && factor_within_one_v<WidthFactor>,
                "RandomTranslation: each factor is a fraction of the image's height or width and "
                "must lie in [-1, 1]");
  static_assert(AffineOptions<Options...>::all_known,
                "RandomTranslation: after the two factors, each argument must be a fill mode "
                "(Reflect, Wrap, Constant<Value>, Nearest) or an interpolation (Bilinear, "
                "NearestNeighbor), in any order");
  static_assert(AffineOptions<Options...>::fill_modes <= 1 &&
                    AffineOptions<Options...>::samplings <= 1,
                "RandomTranslation: give at most one fill mode and one interpolation");

  static constexpr std::string_view name = "random_translation";
  static constexpr std::string_view class_name = "RandomTranslation";

  /// Keras draws the height's fraction, then the width's.
  static constexpr std::size_t draws = 2;
  static constexpr std::array<double, 2> lower{factor_lower_v<HeightFactor>,
                                               factor_lower_v<WidthFactor>};
  static constexpr std::array<double, 2> upper{factor_upper_v<HeightFactor>,
                                               factor_upper_v<WidthFactor>};

  /// Output pixel (x, y) reads the input at (x - dx, y - dy), dx = width * f[1],
  /// dy = height * f[0].
  static constexpr AffineMap transform(std::span<const double, 2> f, std::size_t height,
                                       std::size_t width) {
    return AffineMap{1, 0, -f[1] * static_cast<double>(width),
                     0, 1, -f[0] * static_cast<double>(height)};
  }

  template <Shape In>
  static consteval bool accepts() {
    static_assert(In.rank == 3,
                  "RandomTranslation: its input must be an image (height, width, channels); "
                  "write Input<H, W, C> and put the layer before Flatten, first in the model "
                  "as Keras's augmentation usually is");
    return true;
  }
};

}  // namespace memopt
