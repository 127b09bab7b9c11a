#pragma once
// data::repeat(count): the passes of a range one after another (tf.data's repeat).

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <optional>
#include <ranges>
#include <string>
#include <type_traits>
#include <utility>

#include "memopt/core/error.hpp"
#include "memopt/data/detail/element.hpp"
#include "memopt/data/detail/non_propagating_cache.hpp"
#include "memopt/data/detail/pipe.hpp"
#include "memopt/data/pass.hpp"

namespace memopt::data {

/// The view `repeat(count)` returns: `count` passes over `V` in a row, or passes without end
/// for `repeat()`. Each pass is a fresh `begin()` of `V`, so a `shuffle` before `repeat`
/// reshuffles every time round, as in tf.data. An upstream pass that yields nothing ends the
/// repetition (instead of looping forever). Elements are `V`'s references, unchanged.
///
/// ```cpp
/// auto steps = train | mo::data::shuffle(60'000, 1) | mo::data::repeat()
///                    | mo::data::batch(32) | mo::data::take(10'000);  // batches span epochs
/// ```
template <std::ranges::view V>
requires std::ranges::input_range<V>
class RepeatView : public std::ranges::view_interface<RepeatView<V>> {
 public:
  static constexpr bool hands_over_elements = detail::hands_over_v<V>;
  class Iterator;

  /// `count` passes (a negative count repeats without end).
  RepeatView(V base, std::ptrdiff_t count) : base_(std::move(base)), count_(count) {}

  Iterator begin() {
    passes_ = 0;
    current_.reset();
    if (count_ != 0) start();
    return Iterator(this);
  }
  std::default_sentinel_t end() const noexcept { return std::default_sentinel; }

  /// The number of passes, negative for without end.
  std::ptrdiff_t count() const noexcept { return count_; }

 private:
  void start() {
    current_.reset();  // the finished pass's iterator first: it may own a worker's pass
    // Within pass p of a PassScope, upstream's k-th pass is p * count + k (an endless repeat
    // strides by 2^32), so that every pass upstream has a number of its own.
    std::optional<std::uint64_t> pass;
    if (const auto outer = PassScope::current()) {
      const std::uint64_t stride = count_ > 0 ? static_cast<std::uint64_t>(count_) : 1ull << 32;
      pass = *outer * stride + static_cast<std::uint64_t>(passes_);
    }
    const PassScope scope(pass);
    current_.emplace(std::ranges::begin(base_));
    if (*current_ == std::ranges::end(base_)) current_.reset();
  }

  void advance() {
    auto& it = *current_;
    ++it;
    if (it != std::ranges::end(base_)) return;
    ++passes_;
    if (count_ < 0 || passes_ < count_) {
      start();
    } else {
      current_.reset();
    }
  }

  V base_;
  std::ptrdiff_t count_ = -1;
  std::ptrdiff_t passes_ = 0;
  detail::NonPropagatingCache<std::ranges::iterator_t<V>> current_;
};

/// The iterator of a `RepeatView`: a handle on the view's position. Copies share it.
///
/// ```cpp
/// auto repeated = train | mo::data::repeat(2);
/// auto it = repeated.begin();
/// ```
template <std::ranges::view V>
requires std::ranges::input_range<V>
class RepeatView<V>::Iterator {
 public:
  using iterator_concept = std::input_iterator_tag;
  using value_type = std::ranges::range_value_t<V>;
  using difference_type = std::ptrdiff_t;

  Iterator() = default;
  explicit Iterator(RepeatView* parent) noexcept : parent_(parent) {}

  decltype(auto) operator*() const { return **parent_->current_; }

  Iterator& operator++() {
    parent_->advance();
    return *this;
  }
  void operator++(int) { ++*this; }

  friend bool operator==(const Iterator& it, std::default_sentinel_t) noexcept { return it.done(); }

 private:
  // A friend of the iterator cannot reach into the view; a member can.
  bool done() const noexcept { return !parent_->current_.has_value(); }

  RepeatView* parent_ = nullptr;
};

namespace detail {

struct repeat_fn {
  template <std::ranges::viewable_range R>
  auto operator()(R&& range, std::ptrdiff_t count = -1) const {
    using V = std::views::all_t<R>;
    static_assert(std::ranges::input_range<V>, "data::repeat: expected an input range");
    return RepeatView<V>(std::views::all(std::forward<R>(range)), count);
  }
  auto operator()(std::ptrdiff_t count = -1) const { return bind_back(*this, count); }
};

}  // namespace detail

/// Repeats a range `count` times, or without end for `repeat()` or a negative count; see
/// `RepeatView`.
///
/// ```cpp
/// auto three_epochs = train | mo::data::repeat(3) | mo::data::batch(32);
/// ```
inline constexpr detail::repeat_fn repeat{};

}  // namespace memopt::data
