#pragma once
// data::shard(num_shards, index): every num_shards-th element from index on (tf.data's
// shard), so that ranks of a data-parallel run read disjoint parts that together cover all.

#include <cstddef>
#include <iterator>
#include <ranges>
#include <string>
#include <utility>

#include "memopt/core/error.hpp"
#include "memopt/data/detail/element.hpp"
#include "memopt/data/detail/pipe.hpp"

namespace memopt::data {

/// The view `shard(n, i)` returns: the elements of `V` at positions i, i + n, i + 2n, ...
/// Over a random-access range the others are jumped over; otherwise they are read and
/// dropped, as tf.data does. Elements are `V`'s references, unchanged.
///
/// ```cpp
/// mo::distributed::LocalCommunicator comm;
/// auto mine = train | mo::data::shard(comm.size(), comm.rank());
/// ```
template <std::ranges::view V>
requires std::ranges::input_range<V>
class ShardView : public std::ranges::view_interface<ShardView<V>> {
 public:
  static constexpr bool hands_over_elements = detail::hands_over_v<V>;

  class Iterator {
   public:
    using iterator_concept = std::input_iterator_tag;
    using value_type = std::ranges::range_value_t<V>;
    using difference_type = std::ptrdiff_t;

    Iterator() = default;
    Iterator(ShardView* parent, std::ranges::iterator_t<V> it)
        : parent_(parent), it_(std::move(it)) {}

    decltype(auto) operator*() const { return *it_; }

    Iterator& operator++() {
      std::ranges::advance(it_, parent_->num_shards_, std::ranges::end(parent_->base_));
      return *this;
    }
    void operator++(int) { ++*this; }

    friend bool operator==(const Iterator& it, std::default_sentinel_t) { return it.done(); }

   private:
    bool done() const { return it_ == std::ranges::end(parent_->base_); }

    ShardView* parent_ = nullptr;
    std::ranges::iterator_t<V> it_{};
  };

  ShardView(V base, std::ptrdiff_t num_shards, std::ptrdiff_t index)
      : base_(std::move(base)), num_shards_(num_shards), index_(index) {}

  Iterator begin() {
    auto it = std::ranges::begin(base_);
    std::ranges::advance(it, index_, std::ranges::end(base_));
    return Iterator(this, std::move(it));
  }
  std::default_sentinel_t end() const noexcept { return std::default_sentinel; }

  /// ceil((size - index) / num_shards), when `V` knows its size.
  std::size_t size() requires std::ranges::sized_range<V> {
    return count(static_cast<std::size_t>(std::ranges::size(base_)));
  }
  std::size_t size() const requires detail::ConstSized<V> {
    return count(static_cast<std::size_t>(std::ranges::size(base_)));
  }

 private:
  std::size_t count(std::size_t n) const {
    const auto i = static_cast<std::size_t>(index_), s = static_cast<std::size_t>(num_shards_);
    return n > i ? (n - i + s - 1) / s : 0;
  }

  V base_;
  std::ptrdiff_t num_shards_ = 1;
  std::ptrdiff_t index_ = 0;
};

namespace detail {

struct shard_fn {
  template <std::ranges::viewable_range R>
  requires std::ranges::input_range<R>
  auto operator()(R&& range, std::ptrdiff_t num_shards, std::ptrdiff_t index) const {
    check(num_shards, index);
    using V = std::views::all_t<R>;
    return ShardView<V>(std::views::all(std::forward<R>(range)), num_shards, index);
  }
  auto operator()(std::ptrdiff_t num_shards, std::ptrdiff_t index) const {
    check(num_shards, index);
    return bind_back(*this, num_shards, index);
  }

 private:
  static void check(std::ptrdiff_t num_shards, std::ptrdiff_t index) {
    if (num_shards <= 0)
      throw error("data::shard: expected num_shards >= 1, found " + std::to_string(num_shards));
    if (index < 0 || index >= num_shards)
      throw error("data::shard: expected an index in [0, " + std::to_string(num_shards) +
                  "), found " + std::to_string(index));
  }
};

}  // namespace detail

/// tf.data's `shard`: element k goes to shard k % num_shards; this keeps shard `index`. Shard
/// before shuffling, so that the shards are disjoint and together cover the data; the first
/// `size % num_shards` shards hold one element more. num_shards < 1 or an index outside
/// [0, num_shards) raises `memopt::error`.
///
/// ```cpp
/// mo::distributed::LocalCommunicator comm;
/// auto mine = test | mo::data::shard(comm.size(), comm.rank()) | mo::data::shuffle(10'000, 1)
///                  | mo::data::batch(32);
/// ```
inline constexpr detail::shard_fn shard{};

}  // namespace memopt::data
