#pragma once
// RandomZoom<HeightFactor, [WidthFactor,] Options...>: Keras's random zoom of each image about
// its centre, active in fit only.

#include <array>
#include <cstddef>
#include <span>
#include <string_view>
#include <type_traits>

#include "memopt/core/shape.hpp"
#include "memopt/layers/affine_options.hpp"
#include "memopt/layers/random_factor.hpp"

namespace memopt {

namespace detail {
// RandomZoom's arguments after the height factor: a width factor first if one is given (a
// std::ratio or a Range), then the options.
template <class... Rest>
struct zoom_arguments {
  static constexpr bool has_width = false;
  using width = void;
  using options = AffineOptions<Rest...>;
};
template <class First, class... Rest>
requires is_factor_v<First>
struct zoom_arguments<First, Rest...> {
  static constexpr bool has_width = true;
  using width = First;
  using options = AffineOptions<Rest...>;
};
template <class... Rest>
struct zoom_base : AffineAugmentation<Rest...> {};
template <class First, class... Rest>
requires is_factor_v<First>
struct zoom_base<First, Rest...> : AffineAugmentation<Rest...> {
};
}  // namespace detail

/// Keras's `RandomZoom(height_factor, width_factor=None, fill_mode, interpolation,
/// fill_value)`. Each factor is a `std::ratio` f for [-f, f] or `Range<Lo, Hi>`, within
/// [-1, 1]; a draw z scales the sampled region by 1 + z about the image's centre, so a positive
/// draw zooms out and a negative one zooms in, as Keras's. Without a width factor the width
/// takes the height's draw (the aspect ratio is kept). Then, in any order: a fill mode
/// (`Reflect` by default, `Wrap`, `Constant<Value>`, `Nearest`) and an interpolation
/// (`Bilinear` by default, `NearestNeighbor`). Identity in `evaluate` and `predict`.
///
/// ```cpp
/// using Z = mo::RandomZoom<std::ratio<1, 5>>;  // both axes by the same draw in [-0.2, 0.2)
/// static_assert(Z::draws == 1 && Z::fill_mode == mo::FillMode::reflect);
/// using Q = mo::Range<std::ratio<0>, std::ratio<1, 2>>;  // the width's factor, then options
/// using W = mo::RandomZoom<std::ratio<1, 5>, Q, mo::Wrap>;
/// static_assert(W::draws == 2 && W::upper[1] == 0.5);
/// ```
template <class HeightFactor, class... Rest>
struct RandomZoom : detail::zoom_base<Rest...> {
 private:
  using args = detail::zoom_arguments<Rest...>;
  using Width = std::conditional_t<args::has_width, typename args::width, HeightFactor>;

 public:
  static_assert(is_factor_v<HeightFactor>,
                "RandomZoom: the height factor comes first, a std::ratio f (for [-f, f]) or "
                "Range<Lo, Hi>: RandomZoom<std::ratio<1, 5>>");
  static_assert(factor_within_one_v<HeightFactor> && factor_within_one_v<Width>,
                "RandomZoom: each factor must lie in [-1, 1] (1 + factor scales the image)");
  static_assert(args::options::all_known,
                "RandomZoom: after the height factor (and an optional width factor), each "
                "argument must be a fill mode (Reflect, Wrap, Constant<Value>, Nearest) or an "
                "interpolation (Bilinear, NearestNeighbor), in any order");
  static_assert(args::options::fill_modes <= 1 && args::options::samplings <= 1,
                "RandomZoom: give at most one fill mode and one interpolation");

  static constexpr std::string_view name = "random_zoom";
  static constexpr std::string_view class_name = "RandomZoom";

  /// The height's draw, then the width's if the layer has a width factor.
  static constexpr std::size_t draws = args::has_width ? 2 : 1;
  static constexpr std::array<double, draws> lower = [] {
    if constexpr (args::has_width)
      return std::array<double, 2>{factor_lower_v<HeightFactor>, factor_lower_v<Width>};
    else
      return std::array<double, 1>{factor_lower_v<HeightFactor>};
  }();
  static constexpr std::array<double, draws> upper = [] {
    if constexpr (args::has_width)
      return std::array<double, 2>{factor_upper_v<HeightFactor>, factor_upper_v<Width>};
    else
      return std::array<double, 1>{factor_upper_v<HeightFactor>};
  }();

  /// Keras's zoom matrix: x_in = zx * x + (width - 1) / 2 * (1 - zx), zx = 1 + f (and y alike),
  /// which keeps the centre of the image where it is.
  static constexpr AffineMap transform(std::span<const double, draws> f, std::size_t height,
                                       std::size_t width) {
    const double zy = 1.0 + f[0];
    const double zx = 1.0 + f[draws - 1];
    return AffineMap{zx,  0,  (static_cast<double>(width) - 1.0) / 2.0 * (1.0 - zx),
                     0.0, zy, (static_cast<double>(height) - 1.0) / 2.0 * (1.0 - zy)};
  }

  template <Shape In>
  static consteval bool accepts() {
    static_assert(In.rank == 3,
                  "RandomZoom: its input must be an image (height, width, channels); write "
                  "Input<H, W, C> and put the layer before Flatten, first in the model as "
                  "Keras's augmentation usually is");
    return true;
  }
};

}  // namespace memopt
