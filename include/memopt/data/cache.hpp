#pragma once
// data::cache(): keeps the elements of the first complete pass in memory (tf.data's cache).

#include <concepts>
#include <cstddef>
#include <iterator>
#include <ranges>
#include <type_traits>
#include <utility>
#include <vector>

#include "memopt/data/detail/element.hpp"
#include "memopt/data/detail/non_propagating_cache.hpp"
#include "memopt/data/detail/pipe.hpp"

namespace memopt::data {

/// The view `cache()` returns: the first pass reads `V` and keeps a copy of each element (moved
/// when `V` hands them over; a span or string view as an owning copy of its values); once a pass
/// has read `V` to its end, every later pass replays the copies without touching `V`, so expensive
/// work before `cache()` (decoding, a `map`) runs once. A first pass left early keeps nothing: the
/// next pass reads `V` again. Elements are `const value_type&`. Put a `shuffle` after `cache()`,
/// not before, or every epoch replays the first epoch's order.
///
/// ```cpp
/// auto decode = [](const mo::data::Sample& s) { return s; };  // an expensive step of your own
/// auto decoded = train | mo::data::map(decode) | mo::data::cache();
/// for (int epoch = 0; epoch < 10; ++epoch)
///   for (const auto& b : decoded | mo::data::shuffle(1024, epoch) | mo::data::batch(32)) step(b);
/// ```
template <std::ranges::view V>
requires std::ranges::input_range<V>
class CacheView : public std::ranges::view_interface<CacheView<V>> {
 public:
  using value_type = detail::stored_t<V>;
  class Iterator;

  explicit CacheView(V base) : base_(std::move(base)) {}

  Iterator begin() {
    index_ = 0;
    if (!complete_) {
      items_.clear();
      if constexpr (std::ranges::sized_range<V>) {
        items_.reserve(static_cast<std::size_t>(std::ranges::size(base_)));
      }
      current_.reset();
      current_.emplace(std::ranges::begin(base_));
      pull();
    }
    return Iterator(this);
  }
  std::default_sentinel_t end() const noexcept { return std::default_sentinel; }

  /// As many elements as `V`, when it knows.
  auto size() requires std::ranges::sized_range<V> { return std::ranges::size(base_); }
  auto size() const requires detail::ConstSized<V> { return std::ranges::size(base_); }

  /// Whether a complete pass has been cached.
  bool cached() const noexcept { return complete_; }

 private:
  // Copies the upstream element at the current position, or marks the cache complete.
  void pull() {
    auto& it = *current_;
    if (it == std::ranges::end(base_)) {
      complete_ = true;
      current_.reset();
    } else {
      items_.emplace_back(detail::own(detail::take_element<V>(it)));
    }
  }

  void advance() {
    ++index_;
    // Reading upstream only when the consumer asks for the element keeps the pass lazy.
    if (!complete_ && index_ == items_.size()) {
      ++*current_;
      pull();
    }
  }

  V base_;
  std::vector<value_type> items_;
  std::size_t index_ = 0;
  bool complete_ = false;
  detail::NonPropagatingCache<std::ranges::iterator_t<V>> current_;
};

/// The iterator of a `CacheView`: a handle on the view's position. Copies share it.
///
/// ```cpp
/// auto cached = train | mo::data::take(100) | mo::data::cache();
/// const auto& first = *cached.begin();
/// ```
template <std::ranges::view V>
requires std::ranges::input_range<V>
class CacheView<V>::Iterator {
 public:
  using iterator_concept = std::input_iterator_tag;
  using value_type = CacheView::value_type;
  using difference_type = std::ptrdiff_t;

  Iterator() = default;
  explicit Iterator(CacheView* parent) noexcept : parent_(parent) {}

  const value_type& operator*() const noexcept { return parent_->items_[parent_->index_]; }

  Iterator& operator++() {
    parent_->advance();
    return *this;
  }
  void operator++(int) { ++*this; }

  friend bool operator==(const Iterator& it, std::default_sentinel_t) noexcept { return it.done(); }

 private:
  // A friend of the iterator cannot reach into the view; a member can.
  bool done() const noexcept { return parent_->index_ >= parent_->items_.size(); }

  CacheView* parent_ = nullptr;
};

namespace detail {

struct cache_fn {
  template <std::ranges::viewable_range R>
  auto operator()(R&& range) const {
    using V = std::views::all_t<R>;
    static_assert(std::ranges::input_range<V>, "data::cache: expected an input range");
    static_assert(KeepableElements<V>,
                  "data::cache: elements are kept by value, but this range yields lvalues of a "
                  "move-only type that it does not hand over");
    return CacheView<V>(std::views::all(std::forward<R>(range)));
  }
  auto operator()() const { return bind_back(*this); }
};

}  // namespace detail

/// Caches a range's first complete pass in memory; see `CacheView`.
///
/// ```cpp
/// auto expensive = [] { return 1.0f; };  // a sample that costs to make
/// auto once = mo::data::generate(expensive) | mo::data::take(100) | mo::data::cache();
/// ```
inline constexpr detail::cache_fn cache{};

}  // namespace memopt::data
