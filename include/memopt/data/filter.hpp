#pragma once
// data::filter(pred): the elements for which a predicate holds, as std::views::filter.

#include <concepts>
#include <ranges>
#include <utility>

#include "memopt/data/detail/pipe.hpp"

namespace memopt::data {
namespace detail {

struct filter_fn {
  template <std::ranges::viewable_range R, class P>
  requires(!std::ranges::range<P>) auto operator()(R&& range, P pred) const {
    static_assert(std::predicate<const P&, std::ranges::range_reference_t<std::views::all_t<R>>>,
                  "data::filter: expected a predicate callable (as const) with the range's "
                  "elements and returning something convertible to bool");
    return std::views::filter(std::forward<R>(range), std::move(pred));
  }

  template <class P>
  requires(!std::ranges::range<P>) auto operator()(P pred) const {
    return bind_back(*this, std::move(pred));
  }
};

}  // namespace detail

/// The elements for which `pred(element)` is true, in order, lazily (tf.data's filter). It is
/// `std::views::filter`, so the predicate is called as const, once per element per pass.
///
/// ```cpp
/// auto shirts = train | mo::data::filter([](const mo::data::Sample& s) { return s.label == 6; });
/// ```
inline constexpr detail::filter_fn filter{};

}  // namespace memopt::data
