#pragma once
// Exact fractions as template arguments (Dropout's rate, Rescaling's scale, BatchNormalization's
// momentum): std::ratio, which every C++20 compiler takes where a floating-point template
// argument is not yet portable.

#include <ratio>
#include <type_traits>

namespace memopt {

template <class R>
inline constexpr bool is_ratio_v = false;
template <std::intmax_t N, std::intmax_t D>
inline constexpr bool is_ratio_v<std::ratio<N, D>> = true;

/// The value of a std::ratio as a double.
template <class R>
inline constexpr double ratio_value_v = static_cast<double>(R::num) / static_cast<double>(R::den);

}  // namespace memopt
