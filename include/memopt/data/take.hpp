#pragma once
// data::take(n): the first n elements (tf.data's take), reading nothing past the n-th.

#include <algorithm>
#include <concepts>
#include <cstddef>
#include <iterator>
#include <ranges>
#include <string>
#include <type_traits>
#include <utility>

#include "memopt/core/error.hpp"
#include "memopt/data/detail/element.hpp"
#include "memopt/data/detail/pipe.hpp"

namespace memopt::data {

/// The view `take(n)` returns over a range without random access: its first `n` elements.
/// Unlike `std::views::take` (whose `counted_iterator` moves its base past the n-th element,
/// which for a batch, shuffle or prefetch upstream reads one element more), its iterator stops
/// moving upstream once the n-th element has been handed out, so a pass reads exactly what it
/// uses. Elements are `V`'s references, unchanged; the iterator is `V`'s, wrapped (move-only
/// when that is).
///
/// ```cpp
/// auto five = train | mo::data::shuffle(1024, 1) | mo::data::batch(32) | mo::data::take(5);
/// ```
template <std::ranges::view V>
requires std::ranges::input_range<V>
class TakeView : public std::ranges::view_interface<TakeView<V>> {
 public:
  static constexpr bool hands_over_elements = detail::hands_over_v<V>;

  class Iterator {
   public:
    using iterator_concept = std::input_iterator_tag;
    using value_type = std::ranges::range_value_t<V>;
    using difference_type = std::ptrdiff_t;

    Iterator() = default;
    Iterator(TakeView* parent, std::ranges::iterator_t<V> it, std::ptrdiff_t left)
        : parent_(parent), it_(std::move(it)), left_(left) {}

    decltype(auto) operator*() const { return *it_; }

    Iterator& operator++() {
      if (--left_ > 0) ++it_;
      return *this;
    }
    void operator++(int) { ++*this; }

    friend bool operator==(const Iterator& it, std::default_sentinel_t) { return it.done(); }

   private:
    bool done() const { return left_ <= 0 || it_ == std::ranges::end(parent_->base_); }

    TakeView* parent_ = nullptr;
    std::ranges::iterator_t<V> it_{};
    std::ptrdiff_t left_ = 0;
  };

  TakeView(V base, std::ptrdiff_t count) : base_(std::move(base)), count_(count) {}

  Iterator begin() { return Iterator(this, std::ranges::begin(base_), count_); }
  std::default_sentinel_t end() const noexcept { return std::default_sentinel; }

  /// `min(n, size of V)`, when `V` knows its size.
  std::size_t size() requires std::ranges::sized_range<V> {
    return std::min(static_cast<std::size_t>(std::ranges::size(base_)),
                    static_cast<std::size_t>(count_));
  }
  std::size_t size() const requires detail::ConstSized<V> {
    return std::min(static_cast<std::size_t>(std::ranges::size(base_)),
                    static_cast<std::size_t>(count_));
  }

 private:
  V base_;
  std::ptrdiff_t count_ = 0;
};

namespace detail {

inline void check_count(const char* who, std::ptrdiff_t n) {
  if (n < 0) {
    throw error(std::string(who) + ": expected a count >= 0, found " + std::to_string(n));
  }
}

struct take_fn {
  template <std::ranges::viewable_range R>
  auto operator()(R&& range, std::ptrdiff_t n) const {
    check_count("data::take", n);
    using V = std::views::all_t<R>;
    if constexpr (std::ranges::random_access_range<V> && std::ranges::sized_range<V>) {
      // Random access jumps: std::views::take reads nothing past the end it computes.
      return std::views::take(std::forward<R>(range),
                              static_cast<std::ranges::range_difference_t<R>>(n));
    } else {
      return TakeView<V>(std::views::all(std::forward<R>(range)), n);
    }
  }
  auto operator()(std::ptrdiff_t n) const {
    check_count("data::take", n);
    return bind_back(*this, n);
  }
};

}  // namespace detail

/// The first `n` elements (all of them when there are fewer), lazily: nothing past the n-th
/// element is read. Over a sized random-access range it is `std::views::take`; otherwise a
/// `TakeView`. A negative `n` raises `memopt::error`.
///
/// ```cpp
/// auto next_sample = [] { return 0.5f; };
/// auto first_ten = mo::data::generate(next_sample) | mo::data::take(10);
/// ```
inline constexpr detail::take_fn take{};

}  // namespace memopt::data
