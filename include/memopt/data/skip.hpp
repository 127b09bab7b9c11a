#pragma once
// data::skip(n): all but the first n elements (tf.data's skip), as std::views::drop.

#include <cstddef>
#include <ranges>
#include <string>
#include <utility>

#include "memopt/core/error.hpp"
#include "memopt/data/detail/pipe.hpp"

namespace memopt::data {
namespace detail {

struct skip_fn {
  template <std::ranges::viewable_range R>
  auto operator()(R&& range, std::ptrdiff_t n) const {
    check(n);
    return std::views::drop(std::forward<R>(range),
                            static_cast<std::ranges::range_difference_t<R>>(n));
  }
  auto operator()(std::ptrdiff_t n) const {
    check(n);
    return bind_back(*this, n);
  }

 private:
  static void check(std::ptrdiff_t n) {
    if (n < 0) throw error("data::skip: expected a count >= 0, found " + std::to_string(n));
  }
};

}  // namespace detail

/// The elements after the first `n` (none when there are fewer). The skipped elements are
/// still read, when the pass starts, unless the range can jump (random access). It is
/// `std::views::drop`; a negative `n` raises `memopt::error`.
///
/// ```cpp
/// auto validation = train | mo::data::take(1000);
/// auto training = train | mo::data::skip(1000);
/// ```
inline constexpr detail::skip_fn skip{};

}  // namespace memopt::data
