#pragma once
// RandomRotation<Factor, Options...>: Keras's random rotation of each image about its centre,
// active in fit only.

#include <array>
#include <cmath>
#include <cstddef>
#include <numbers>
#include <span>
#include <string_view>

#include "memopt/core/shape.hpp"
#include "memopt/layers/affine_options.hpp"
#include "memopt/layers/random_factor.hpp"

namespace memopt {

/// Keras's `RandomRotation(factor, fill_mode, interpolation, fill_value)`. The factor is a
/// fraction of a full turn (2 pi), a `std::ratio` f for [-f, f] or `Range<Lo, Hi>`, within
/// [-1, 1]: `RandomRotation<std::ratio<1, 10>>` turns each image by up to 36 degrees either
/// way, about the centre of the image. Then, in any order: a fill mode (`Reflect` by default,
/// `Wrap`, `Constant<Value>`, `Nearest`) and an interpolation (`Bilinear` by default,
/// `NearestNeighbor`). Identity in `evaluate` and `predict`.
///
/// ```cpp
/// using R = mo::RandomRotation<std::ratio<1, 10>, mo::Nearest>;
/// static_assert(R::lower[0] == -0.1 && R::fill_mode == mo::FillMode::nearest);
/// ```
template <class Factor, class... Options>
struct RandomRotation : detail::AffineAugmentation<Options...> {
  static_assert(is_factor_v<Factor>,
                "RandomRotation: the factor comes first, a fraction of a full turn: a std::ratio "
                "f (for [-f, f]) or Range<Lo, Hi>: RandomRotation<std::ratio<1, 10>>");
  static_assert(factor_within_one_v<Factor>,
                "RandomRotation: the factor is a fraction of a full turn and must lie in [-1, 1]");
  static_assert(AffineOptions<Options...>::all_known,
                "RandomRotation: after the factor, each argument must be a fill mode (Reflect, "
                "Wrap, Constant<Value>, Nearest) or an interpolation (Bilinear, "
                "NearestNeighbor), in any order");
  static_assert(AffineOptions<Options...>::fill_modes <= 1 &&
                    AffineOptions<Options...>::samplings <= 1,
                "RandomRotation: give at most one fill mode and one interpolation");

  static constexpr std::string_view name = "random_rotation";
  static constexpr std::string_view class_name = "RandomRotation";

  static constexpr std::size_t draws = 1;
  static constexpr std::array<double, 1> lower{factor_lower_v<Factor>};
  static constexpr std::array<double, 1> upper{factor_upper_v<Factor>};

  /// Keras's rotation by a = 2 pi f about the centre ((width - 1) / 2, (height - 1) / 2):
  /// x_in = cos a x - sin a y + x0, y_in = sin a x + cos a y + y0.
  static AffineMap transform(std::span<const double, 1> f, std::size_t height, std::size_t width) {
    const double angle = 2.0 * std::numbers::pi * f[0];
    const double c = std::cos(angle), s = std::sin(angle);
    const double w1 = static_cast<double>(width) - 1.0, h1 = static_cast<double>(height) - 1.0;
    return AffineMap{c, -s, (w1 - (c * w1 - s * h1)) / 2.0, s, c, (h1 - (s * w1 + c * h1)) / 2.0};
  }

  template <Shape In>
  static consteval bool accepts() {
    static_assert(In.rank == 3,
                  "RandomRotation: its input must be an image (height, width, channels); write "
                  "Input<H, W, C> and put the layer before Flatten, first in the model as "
                  "Keras's augmentation usually is");
    return true;
  }
};

}  // namespace memopt
