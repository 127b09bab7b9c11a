#pragma once
// data::range: the integers of tf.data's Dataset.range(stop), range(start, stop[, step]).

#include <algorithm>
#include <concepts>
#include <cstddef>
#include <ranges>
#include <string>
#include <type_traits>

#include "memopt/core/error.hpp"

namespace memopt::data {
namespace detail {

// start + i * step: the i-th element of a stepped range.
template <class T>
struct Stepped {
  T start;
  T step;
  constexpr T operator()(T i) const noexcept { return static_cast<T>(start + i * step); }
};

}  // namespace detail

/// The integers `0, 1, ..., stop - 1` (none when `stop <= 0`): a lazy, sized, random-access
/// view whose elements are values, like `tf.data.Dataset.range(stop)`.
///
/// ```cpp
/// // 32 batches:
/// for (std::span<const int> b : mo::data::range(1000) | mo::data::batch(32)) use(b);
/// ```
template <std::integral T>
constexpr auto range(T stop) {
  return std::views::iota(T{0}, std::max(T{0}, stop));
}

/// The integers `start, start + 1, ..., stop - 1` (none when `stop <= start`).
///
/// ```cpp
/// auto tens = mo::data::range(10, 20);  // 10 ... 19
/// ```
template <std::integral A, std::integral B>
constexpr auto range(A start, B stop) {
  using T = std::common_type_t<A, B>;
  return std::views::iota(static_cast<T>(start),
                          std::max(static_cast<T>(start), static_cast<T>(stop)));
}

/// `start, start + step, ...` while below `stop` (above it for a negative step). Raises
/// `memopt::error` for a step of 0.
///
/// ```cpp
/// auto evens = mo::data::range(0, 10, 2);   // 0 2 4 6 8
/// auto down = mo::data::range(5, 0, -1);    // 5 4 3 2 1
/// ```
template <std::integral A, std::integral B, std::integral C>
constexpr auto range(A start, B stop, C step) {
  using T = std::common_type_t<A, B, C>;
  const T first = static_cast<T>(start), last = static_cast<T>(stop), by = static_cast<T>(step);
  if (by == 0) throw error("data::range: expected a step other than 0, found 0");
  T count = 0;
  if constexpr (std::is_signed_v<T>) {
    if (by > 0 && last > first) count = (last - first + by - 1) / by;
    if (by < 0 && last < first) count = (first - last - by - 1) / -by;
  } else {
    if (last > first) count = (last - first + by - 1) / by;
  }
  return std::views::iota(T{0}, count) | std::views::transform(detail::Stepped<T>{first, by});
}

}  // namespace memopt::data
