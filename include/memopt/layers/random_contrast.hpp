#pragma once
// RandomContrast<Factor, Options...>: Keras's random contrast adjustment of images, active in
// fit only.

#include <array>
#include <cstddef>
#include <string_view>
#include <type_traits>

#include "memopt/core/shape.hpp"
#include "memopt/layers/activation.hpp"
#include "memopt/layers/layer.hpp"
#include "memopt/layers/ratio.hpp"

namespace memopt {

/// Keras's `value_range=(low, high)` of the preprocessing layers that clip their output: the
/// range the incoming pixels have, `ValueRange<0, 255>` for 8-bit pixels, `ValueRange<0, 1>`
/// after `Rescaling<std::ratio<1, 255>>`.
template <long long Low, long long High>
struct ValueRange {
  static_assert(Low < High, "ValueRange<Low, High>: Low must be below High");
  static constexpr double low = static_cast<double>(Low), high = static_cast<double>(High);
};

namespace detail {
template <class T>
inline constexpr bool is_value_range_v = false;
template <long long L, long long H>
inline constexpr bool is_value_range_v<ValueRange<L, H>> = true;

template <class Default, class... Options>
struct value_range_option {
  using type = Default;
};
template <class Default, class O, class... Options>
struct value_range_option<Default, O, Options...> {
  using type = std::conditional_t<is_value_range_v<O>, O,
                                  typename value_range_option<Default, Options...>::type>;
};
template <class Default, class... Options>
struct ratio_option {
  using type = Default;
};
template <class Default, class O, class... Options>
struct ratio_option<Default, O, Options...> {
  using type =
      std::conditional_t<is_ratio_v<O>, O, typename ratio_option<Default, Options...>::type>;
};
}  // namespace detail

/// Keras's `RandomContrast(factor, value_range=(0, 255))`: in `fit` each image draws one
/// contrast factor c uniformly in [1 - lower, 1 + upper] and each of its values x becomes
/// `(x - mean) * c + mean`, `mean` the mean of x's channel over the image, clipped to the
/// value range; in `evaluate` and `predict` it is the identity. `Factor` is a std::ratio in
/// [0, 1]: lower = upper = Factor, or Keras's tuple `(lower, upper)` as two ratios. The
/// options after it, in any order: the upper bound (a second ratio) and a `ValueRange<low,
/// high>` (default 0 to 255, pixels as read from 8-bit images). Draws come from the model's
/// seed, the step number and the layer's place, one per image; backward keeps one bit per
/// value (whether it was clipped) only where a gradient flows through the layer.
///
/// ```cpp
/// using Net = mo::Sequential<mo::RandomContrast<std::ratio<1, 5>>,
///                            mo::Rescaling<std::ratio<1, 255>>, mo::Conv2D<8, 3, mo::ReLU>,
///                            mo::Flatten, mo::Dense<10, mo::Softmax>>;
/// using C = mo::RandomContrast<std::ratio<1, 10>, std::ratio<3, 10>, mo::ValueRange<0, 1>>;
/// static_assert(C::lower == 0.1 && C::upper == 0.3 && C::high == 1.0);
/// ```
template <class Factor, class... Options>
struct RandomContrast {
  static_assert(is_ratio_v<Factor>,
                "RandomContrast: write the factor as a std::ratio, e.g. "
                "RandomContrast<std::ratio<1, 5>> for Keras's factor=0.2");
  static_assert(((is_ratio_v<Options> + detail::is_value_range_v<Options> == 1) && ...),
                "RandomContrast: after the factor, each argument must be the upper factor (a "
                "std::ratio, for Keras's factor=(lower, upper)) or a ValueRange<low, high>");
  static_assert((std::size_t{0} + ... + is_ratio_v<Options>) <= 1 &&
                    (std::size_t{0} + ... + detail::is_value_range_v<Options>) <= 1,
                "RandomContrast: give at most one upper factor and one ValueRange");
  using Upper = typename detail::ratio_option<Factor, Options...>::type;
  using Range = typename detail::value_range_option<ValueRange<0, 255>, Options...>::type;

  static constexpr double lower = ratio_value_v<Factor>;
  static constexpr double upper = ratio_value_v<Upper>;
  static constexpr double low = Range::low, high = Range::high;
  static_assert(lower >= 0 && lower <= 1 && upper >= 0 && upper <= 1,
                "RandomContrast: each factor must be in [0, 1], as Keras's (the contrast factor "
                "is drawn in [1 - lower, 1 + upper])");

  using layer_tag = void;
  using activation = Linear;
  static constexpr std::string_view name = "random_contrast";
  static constexpr std::string_view class_name = "RandomContrast";
  static constexpr std::string_view op = "random contrast";
  static constexpr bool is_view = false;
  static constexpr BackwardReads backward_reads{};

  template <Shape In>
  static consteval bool accepts() {
    static_assert(In.rank == 3,
                  "RandomContrast: its input must be an image (height, width, channels); write "
                  "Input<H, W, C> and put RandomContrast before Flatten");
    return true;
  }
  static constexpr Shape output_shape(Shape in) { return in; }
  static constexpr std::array<WeightDecl, 0> weights(Shape) { return {}; }

  /// 64-bit words of "not clipped" bits per sample.
  static constexpr std::size_t mask_words(std::size_t values) { return (values + 63) / 64; }
  static constexpr std::array<SavedDecl, 1> saved(Shape in) {
    return {SavedDecl{"unclipped", mask_words(in.size()) * 8, 0, Unit::byte}};
  }
};

}  // namespace memopt
