#pragma once
// data::shuffle(buffer_size, seed): tf.data's buffered shuffle, reshuffled on every pass.

#include <algorithm>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <ranges>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "memopt/core/error.hpp"
#include "memopt/core/random.hpp"
#include "memopt/data/detail/element.hpp"
#include "memopt/data/detail/non_propagating_cache.hpp"
#include "memopt/data/detail/pipe.hpp"
#include "memopt/data/pass.hpp"

namespace memopt::data {
namespace detail {

inline void check_shuffle_buffer(std::ptrdiff_t buffer_size) {
  if (buffer_size <= 0) {
    throw error("data::shuffle: expected a buffer size > 0, found " + std::to_string(buffer_size));
  }
}

}  // namespace detail

/// The view `shuffle(buffer_size, seed)` returns: the elements of `V` in a random order, with
/// `tf.data.Dataset.shuffle`'s semantics.
///
/// A pass fills a buffer with the first `buffer_size` elements, then repeatedly hands out a
/// uniformly chosen buffered element and puts the next upstream element in its place; once
/// upstream is exhausted the buffer drains. A buffer at least as large as the dataset is
/// therefore a full, uniform shuffle; a smaller one moves each element at most about
/// `buffer_size` places (cheaper in memory, less random). Every pass (epoch) draws from its
/// own generator, derived from `seed` and the pass number, so the order differs from pass to
/// pass but is the same on every platform for a given seed (`memopt::Rng`); with
/// `reshuffle_each_iteration = false` every pass repeats the first pass's order. The pass
/// number is the view's own count of passes, or the one a `PassScope` names: `fit` names each
/// epoch's, so that a fit resumed in a new process shuffles as the uninterrupted one did.
///
/// Elements are kept by value in the buffer (moved when upstream hands them over; an element
/// that views values it does not own, such as the span `batch(n)` yields over numbers, as an
/// owning copy of them, see `detail::BorrowedElement`), and each is handed out as a mutable lvalue
/// that stays valid until the iterator moves on. The buffer is reused from pass to pass. Nothing is
/// read before `begin()`, which reads `buffer_size` elements; each increment reads one more.
///
/// ```cpp
/// auto [train, test] = mo::data::fashion_mnist();
/// auto epoch = train | mo::data::shuffle(60'000, /*seed=*/1) | mo::data::batch(32);
/// ```
template <std::ranges::view V>
requires std::ranges::input_range<V>
class ShuffleView : public std::ranges::view_interface<ShuffleView<V>> {
 public:
  using value_type = detail::stored_t<V>;
  static constexpr bool hands_over_elements = true;

  class Iterator;

  ShuffleView(V base, std::size_t buffer_size, std::uint64_t seed,
              bool reshuffle_each_iteration = true)
      : base_(std::move(base)),
        buffer_size_(buffer_size),
        seed_(seed),
        reshuffle_(reshuffle_each_iteration) {
    detail::check_shuffle_buffer(static_cast<std::ptrdiff_t>(buffer_size));
  }

  V base() const& requires std::copy_constructible<V> { return base_; }
  V base() && { return std::move(base_); }

  std::size_t buffer_size() const noexcept { return buffer_size_; }
  std::uint64_t seed() const noexcept { return seed_; }

  /// Starts a pass: fills the buffer and draws the first element.
  Iterator begin() {
    // Pass p (the PassScope's, under fit) seeds its generator from Rng(seed + p * golden).
    const std::uint64_t pass = reshuffle_ ? detail::next_pass(passes_) : 0;
    rng_ = Rng(Rng(seed_ + pass * 0x9e3779b97f4a7c15ull).next());
    buffer_.clear();
    if constexpr (std::ranges::sized_range<V>) {
      if (buffer_.capacity() == 0) {
        buffer_.reserve(std::min(buffer_size_, static_cast<std::size_t>(std::ranges::size(base_))));
      }
    }
    current_.emplace(std::ranges::begin(base_));
    auto& it = *current_;
    const auto last = std::ranges::end(base_);
    for (; buffer_.size() < buffer_size_ && it != last; ++it) {
      buffer_.emplace_back(detail::own(detail::take_element<V>(it)));
    }
    pick_ = kNone;
    draw();
    return Iterator(this);
  }
  std::default_sentinel_t end() const noexcept { return std::default_sentinel; }

  /// As many elements as `V`, when it knows.
  auto size() requires std::ranges::sized_range<V> { return std::ranges::size(base_); }
  auto size() const requires detail::ConstSized<V> { return std::ranges::size(base_); }

 private:
  static constexpr std::size_t kNone = static_cast<std::size_t>(-1);

  // Refills the place of the element just handed out (or closes the gap once upstream is
  // exhausted), then draws the next one. Refilling here rather than when the element was
  // handed out keeps that element valid while the consumer uses it, and reads upstream only
  // when the consumer asks for more.
  void draw() {
    if (pick_ != kNone) {
      auto& it = *current_;
      if (it != std::ranges::end(base_)) {
        detail::assign_element(buffer_[pick_], detail::take_element<V>(it));
        ++it;
      } else {
        if (pick_ + 1 != buffer_.size()) buffer_[pick_] = std::move(buffer_.back());
        buffer_.pop_back();
      }
    }
    pick_ = buffer_.empty() ? kNone : static_cast<std::size_t>(rng_.below(buffer_.size()));
  }

  V base_;
  std::size_t buffer_size_ = 1;
  std::uint64_t seed_ = 0;
  bool reshuffle_ = true;
  std::uint64_t passes_ = 0;
  Rng rng_{0};
  std::vector<value_type> buffer_;
  std::size_t pick_ = kNone;
  detail::NonPropagatingCache<std::ranges::iterator_t<V>> current_;
};

/// The iterator of a `ShuffleView`: a handle on the view's current element. Copies share it,
/// as with any input iterator.
///
/// ```cpp
/// auto shuffled = train | mo::data::shuffle(1024, 1);
/// auto it = shuffled.begin();
/// auto& first = *it;
/// ```
template <std::ranges::view V>
requires std::ranges::input_range<V>
class ShuffleView<V>::Iterator {
 public:
  using iterator_concept = std::input_iterator_tag;
  using value_type = ShuffleView::value_type;
  using difference_type = std::ptrdiff_t;

  Iterator() = default;
  explicit Iterator(ShuffleView* parent) noexcept : parent_(parent) {}

  value_type& operator*() const noexcept { return parent_->buffer_[parent_->pick_]; }

  Iterator& operator++() {
    parent_->draw();
    return *this;
  }
  void operator++(int) { ++*this; }

  friend bool operator==(const Iterator& it, std::default_sentinel_t) noexcept { return it.done(); }

 private:
  bool done() const noexcept { return parent_->pick_ == kNone; }

  ShuffleView* parent_ = nullptr;
};

namespace detail {

struct shuffle_fn {
  template <std::ranges::viewable_range R>
  auto operator()(R&& range, std::ptrdiff_t buffer_size, std::uint64_t seed,
                  bool reshuffle_each_iteration = true) const {
    using V = std::views::all_t<R>;
    static_assert(std::ranges::input_range<V>, "data::shuffle: expected an input range");
    static_assert(std::movable<stored_t<V>> && KeepableElements<V>,
                  "data::shuffle: the buffer keeps elements by value, but they cannot be stored "
                  "(not movable, or lvalues of a move-only type the range does not hand over; "
                  "map them to values first)");
    check_shuffle_buffer(buffer_size);
    return ShuffleView<V>(std::views::all(std::forward<R>(range)),
                          static_cast<std::size_t>(buffer_size), seed, reshuffle_each_iteration);
  }

  auto operator()(std::ptrdiff_t buffer_size, std::uint64_t seed,
                  bool reshuffle_each_iteration = true) const {
    check_shuffle_buffer(buffer_size);
    return bind_back(*this, buffer_size, seed, reshuffle_each_iteration);
  }
};

}  // namespace detail

/// Shuffles a range through a buffer of `buffer_size` elements, reshuffling on every pass
/// unless `reshuffle_each_iteration` is false; see `ShuffleView`. Pipes, or takes the range
/// first.
///
/// ```cpp
/// auto full = train | mo::data::shuffle(train.size(), 42);   // a uniform permutation
/// auto local = train | mo::data::shuffle(1024, 42);          // a sliding-window shuffle
/// auto fixed = train | mo::data::shuffle(1024, 42, /*reshuffle_each_iteration=*/false);
/// ```
inline constexpr detail::shuffle_fn shuffle{};

}  // namespace memopt::data
