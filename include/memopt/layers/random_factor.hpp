#pragma once
// The factors of Keras's random augmentation layers: a single fraction f, drawn from [-f, f],
// or two bounds, Range<Lo, Hi>, as Keras's `factor=(lo, hi)`.

#include <ratio>

#include "memopt/layers/ratio.hpp"

namespace memopt {

/// Keras's two-bound factor, `factor=(lo, hi)`, each bound a `std::ratio`: draws are uniform in
/// [lo, hi). As Keras does, the bounds may come in either order.
///
/// ```cpp
/// using R = mo::Range<std::ratio<-1, 10>, std::ratio<1, 5>>;
/// static_assert(mo::factor_lower_v<R> == -0.1 && mo::factor_upper_v<R> == 0.2);
/// static_assert(mo::factor_lower_v<std::ratio<1, 4>> == -0.25);
/// ```
template <class Lo, class Hi>
struct Range {
  static_assert(is_ratio_v<Lo> && is_ratio_v<Hi>,
                "Range: write both bounds as std::ratio, e.g. "
                "Range<std::ratio<-1, 10>, std::ratio<1, 5>>");
  static constexpr double first = ratio_value_v<Lo>;
  static constexpr double second = ratio_value_v<Hi>;
};

namespace detail {
template <class F>
struct factor_bounds {
  static constexpr bool valid = false;
  static constexpr double lower = 0, upper = 0;
};
// A single fraction f is [-|f|, |f|].
template <std::intmax_t N, std::intmax_t D>
struct factor_bounds<std::ratio<N, D>> {
  static constexpr bool valid = true;
  static constexpr double magnitude = ratio_value_v<std::ratio<N, D>>;
  static constexpr double upper = magnitude < 0 ? -magnitude : magnitude;
  static constexpr double lower = -upper;
};
template <class Lo, class Hi>
struct factor_bounds<Range<Lo, Hi>> {
  static constexpr bool valid = true;
  static constexpr double lower =
      Range<Lo, Hi>::first < Range<Lo, Hi>::second ? Range<Lo, Hi>::first : Range<Lo, Hi>::second;
  static constexpr double upper =
      Range<Lo, Hi>::first < Range<Lo, Hi>::second ? Range<Lo, Hi>::second : Range<Lo, Hi>::first;
};
}  // namespace detail

/// Whether `F` is a factor: a `std::ratio` or a `Range`.
template <class F>
inline constexpr bool is_factor_v = detail::factor_bounds<F>::valid;
/// The lower and upper bounds of the draws of factor `F`.
template <class F>
inline constexpr double factor_lower_v = detail::factor_bounds<F>::lower;
template <class F>
inline constexpr double factor_upper_v = detail::factor_bounds<F>::upper;
/// Whether both bounds of `F` lie in [-1, 1], the range Keras accepts.
template <class F>
inline constexpr bool factor_within_one_v = factor_lower_v<F> >= -1.0 && factor_upper_v<F> <= 1.0;

}  // namespace memopt
