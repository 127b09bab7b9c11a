#pragma once
// data::batch(n, drop_remainder) and batch<N>(): the lazy adaptor that groups a range into
// contiguous batches.

#include <concepts>
#include <cstddef>
#include <iterator>
#include <ranges>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "memopt/core/error.hpp"
#include "memopt/data/detail/element.hpp"
#include "memopt/data/detail/non_propagating_cache.hpp"
#include "memopt/data/detail/pipe.hpp"
#include "memopt/data/labeled_batch.hpp"
#include "memopt/data/sample.hpp"
#include "memopt/data/static_batch.hpp"
#include "memopt/data/target_batch.hpp"  // the batch_type of TargetSample, complete here

namespace memopt::data {
namespace detail {

/// A range whose elements are labelled samples: it batches into `data::Batch`.
template <class R>
concept SampleRange =
    std::ranges::input_range<R> && std::convertible_to<std::ranges::range_reference_t<R>, Sample>;

/// A range of plain numbers: it batches into `std::span<const T>`. `bool` is left out because
/// `std::vector<bool>` has no contiguous storage to view.
template <class R>
concept ValueRange = std::ranges::input_range<R> && !SampleRange<R> &&
                     std::is_arithmetic_v<std::ranges::range_value_t<R>> &&
                     !std::same_as<std::ranges::range_value_t<R>, bool>;

/// A range whose elements name their own batch type (`T::batch_type`, e.g. `LabeledImage`
/// batches into `ImageBatch`, `TargetSample` into `TargetBatch`), which offers `clear()`,
/// `reserve(rows, element)` and `push_back(element)`.
template <class R>
concept SelfBatchingRange = std::ranges::input_range<R> && !SampleRange<R> && requires {
  typename std::remove_cvref_t<std::ranges::range_reference_t<R>>::batch_type;
};

template <class R>
concept Batchable = SampleRange<R> || ValueRange<R> || SelfBatchingRange<R>;

// Where a batch lives and how the iterator hands it out; `N` is the static batch size, or
// std::dynamic_extent.
template <class V, std::size_t N>
struct BatchTraits {
  using storage = std::conditional_t<N == std::dynamic_extent, Batch, StaticBatch<N>>;
  using reference = const storage&;
};

template <ValueRange V, std::size_t N>
struct BatchTraits<V, N> {
  using value = std::ranges::range_value_t<V>;
  using storage = std::vector<value>;
  using reference = std::span<const value, N>;
};

template <SelfBatchingRange V, std::size_t N>
struct BatchTraits<V, N> {
  using storage = typename std::remove_cvref_t<std::ranges::range_reference_t<V>>::batch_type;
  using reference = const storage&;
};

// Rows filled so far (a StaticBatch's size() is always N).
template <class S>
std::size_t rows_in(const S& storage) noexcept {
  if constexpr (requires { storage.rows(); }) {
    return storage.rows();
  } else {
    return storage.size();
  }
}

inline void check_batch_size(std::ptrdiff_t batch_size) {
  if (batch_size <= 0) {
    throw error("data::batch: expected a batch size > 0, found " + std::to_string(batch_size));
  }
}

}  // namespace detail

/// The view `batch(n, drop_remainder)` returns: consecutive groups of `n` elements of `V`.
///
/// Over `Sample`s each element is a `const Batch&` (contiguous features and labels, a
/// `LabeledBatch`); over `TargetSample`s a `const TargetBatch&` (features and float targets);
/// over elements that name a `batch_type`, that type; over numbers a `std::span<const T>`.
/// With a static size `N` (`batch<N>()`) every batch has exactly `N` rows, a partial last
/// batch is dropped, and the elements are `const StaticBatch<N>&`, the `batch_type`, or
/// `std::span<const T, N>`. The batch lives in the view
/// and is refilled in place, so after the first batch iteration allocates nothing, also
/// across passes (epochs): a batch is valid until the iterator is incremented.
///
/// It is an input range: nothing is read from `V` before `begin()`, `begin()` reads the first
/// batch, and each increment reads the next, so a loop that stops early reads no more than it
/// used. Calling `begin()` again starts a new pass when `V` is a forward range. When `V` is
/// sized, so is the view: `ceil(size / n)` batches, or `floor` with `drop_remainder`.
///
/// ```cpp
/// auto batches = train | mo::data::batch(32);
/// std::size_t n = 0;
/// for (const mo::data::Batch& b : batches) {
///   fmt::print("\r{}/{}", ++n, batches.size());  // 1875/1875
///   step(b.features(), b.labels());
/// }
/// ```
template <std::ranges::view V, std::size_t N = std::dynamic_extent>
requires detail::Batchable<V>
class BatchView : public std::ranges::view_interface<BatchView<V, N>> {
  using Traits = detail::BatchTraits<V, N>;

 public:
  class Iterator;

  BatchView() requires std::default_initializable<V>
  = default;

  /// Groups `base` into batches of `batch_size` (> 0); reads nothing yet.
  BatchView(V base, std::size_t batch_size, bool drop_remainder = false)
      : base_(std::move(base)), batch_size_(batch_size), drop_remainder_(drop_remainder) {
    detail::check_batch_size(static_cast<std::ptrdiff_t>(batch_size));
  }

  /// Groups `base` into batches of exactly `N` (the static form); reads nothing yet.
  explicit BatchView(V base) requires(N != std::dynamic_extent)
      : base_(std::move(base)), batch_size_(N), drop_remainder_(true) {}

  V base() const& requires std::copy_constructible<V> { return base_; }
  V base() && { return std::move(base_); }

  std::size_t batch_size() const noexcept { return batch_size_; }
  bool drop_remainder() const noexcept { return drop_remainder_; }

  /// Starts a pass over `V` and reads its first batch.
  Iterator begin() {
    current_.emplace(std::ranges::begin(base_));
    advance_ = false;
    fill();
    return Iterator(this);
  }
  std::default_sentinel_t end() const noexcept { return std::default_sentinel; }

  /// The number of batches a pass yields.
  std::size_t size() requires std::ranges::sized_range<V> {
    return count(static_cast<std::size_t>(std::ranges::size(base_)));
  }
  std::size_t size() const requires detail::ConstSized<V> {
    return count(static_cast<std::size_t>(std::ranges::size(base_)));
  }

 private:
  std::size_t count(std::size_t elements) const noexcept {
    return drop_remainder_ ? elements / batch_size_
                           : elements / batch_size_ + (elements % batch_size_ != 0 ? 1 : 0);
  }

  // Refills the batch in place with the next `batch_size_` elements; an empty batch means
  // the pass is over.
  void fill() {
    storage_.clear();
    auto& it = *current_;
    const auto last = std::ranges::end(base_);
    for (std::size_t rows = 0; rows < batch_size_; ++rows) {
      // Upstream moves past the last row used only when another row is wanted, so a loop
      // that stops reads nothing beyond what it used (moving past may read: filter, shuffle).
      if (advance_) ++it;
      advance_ = false;
      if (it == last) break;
      advance_ = true;
      if constexpr (detail::SampleRange<V>) {
        const Sample sample = *it;
        // The width is known only once a sample arrives; reserve() is a no-op after the first.
        if (rows == 0) storage_.reserve(batch_size_, sample.features.size());
        storage_.push_back(sample);
      } else if constexpr (detail::SelfBatchingRange<V>) {
        const auto& element = *it;
        if (rows == 0) storage_.reserve(batch_size_, element);
        storage_.push_back(element);
      } else {
        if (rows == 0) storage_.reserve(batch_size_);
        storage_.push_back(*it);
      }
    }
    if (drop_remainder_ && detail::rows_in(storage_) < batch_size_) storage_.clear();
  }

  V base_ = V();
  std::size_t batch_size_ = 1;
  bool drop_remainder_ = false;
  bool advance_ = false;
  detail::NonPropagatingCache<std::ranges::iterator_t<V>> current_;
  typename Traits::storage storage_;
};

/// The iterator of a `BatchView`: a handle on the view's current batch. Copies share that
/// batch, as with any input iterator; incrementing one reads the next batch for all.
///
/// ```cpp
/// auto it = batches.begin();
/// const mo::data::Batch& first = *it;
/// ```
template <std::ranges::view V, std::size_t N>
requires detail::Batchable<V>
class BatchView<V, N>::Iterator {
 public:
  using iterator_concept = std::input_iterator_tag;
  using value_type = std::remove_cvref_t<typename Traits::reference>;
  using reference = typename Traits::reference;
  using difference_type = std::ptrdiff_t;

  Iterator() = default;
  explicit Iterator(BatchView* parent) noexcept : parent_(parent) {}

  reference operator*() const noexcept { return reference(parent_->storage_); }

  Iterator& operator++() {
    parent_->fill();
    return *this;
  }
  void operator++(int) { ++*this; }

  friend bool operator==(const Iterator& it, std::default_sentinel_t) noexcept { return it.done(); }

 private:
  // A friend of the iterator cannot reach into the view; a member can.
  bool done() const noexcept { return detail::rows_in(parent_->storage_) == 0; }

  BatchView* parent_ = nullptr;
};

template <class R>
BatchView(R&&, std::size_t, bool) -> BatchView<std::views::all_t<R>>;

namespace detail {

struct batch_fn {
  template <std::ranges::viewable_range R>
  auto operator()(R&& range, std::ptrdiff_t batch_size, bool drop_remainder = false) const {
    static_assert(Batchable<std::views::all_t<R>>,
                  "data::batch: expected a range of data::Sample (features and a label), of "
                  "arithmetic values or of elements with a batch_type (data::TargetSample, "
                  "data::LabeledImage); map other elements to one of these first");
    check_batch_size(batch_size);
    return BatchView<std::views::all_t<R>>(std::views::all(std::forward<R>(range)),
                                           static_cast<std::size_t>(batch_size), drop_remainder);
  }

  // Checked here already, so that `batch(0)` fails where it is written.
  auto operator()(std::ptrdiff_t batch_size, bool drop_remainder = false) const {
    check_batch_size(batch_size);
    return detail::bind_back(*this, batch_size, drop_remainder);
  }
};

template <std::size_t N>
struct static_batch_fn {
  static_assert(N > 0, "data::batch<N>: the batch size must be > 0");

  template <std::ranges::viewable_range R>
  auto operator()(R&& range) const {
    static_assert(Batchable<std::views::all_t<R>>,
                  "data::batch<N>: expected a range of data::Sample (features and a label), of "
                  "arithmetic values or of elements with a batch_type (data::TargetSample, "
                  "data::LabeledImage); map other elements to one of these first");
    return BatchView<std::views::all_t<R>, N>(std::views::all(std::forward<R>(range)));
  }
};

}  // namespace detail

// `batch` is a set of functions rather than one function object, so that the static form
// can be spelled `batch<N>()` beside `batch(n)`.

/// Groups a range into batches of `batch_size`, lazily; see `BatchView`. The last, partial
/// batch is kept unless `drop_remainder` is true. Takes the range first (`batch(range, 32)`),
/// or pipes without it (`range | batch(32)`); an lvalue range is taken by reference.
///
/// ```cpp
/// auto batches = std::views::iota(0, 1000) | mo::data::batch(32);  // 32 batches, the last of 8
/// std::size_t total = 0;
/// for (std::span<const int> b : batches) total += b.size();
/// auto full = train | mo::data::batch(32, /*drop_remainder=*/true);
/// ```
template <std::ranges::viewable_range R>
auto batch(R&& range, std::ptrdiff_t batch_size, bool drop_remainder = false) {
  return detail::batch_fn{}(std::forward<R>(range), batch_size, drop_remainder);
}

/// `batch(n, drop_remainder)` without the range: a closure that pipes.
///
/// ```cpp
/// auto pipeline = mo::data::shuffle(60'000, 1) | mo::data::batch(32);
/// ```
inline auto batch(std::ptrdiff_t batch_size, bool drop_remainder = false) {
  return detail::batch_fn{}(batch_size, drop_remainder);
}

/// Groups a range into batches of exactly `N` rows, `N` known at compile time; a partial last
/// batch is dropped. Elements are `const StaticBatch<N>&` (over samples) or
/// `std::span<const T, N>` (over numbers).
///
/// ```cpp
/// for (const mo::data::StaticBatch<32>& b : train | mo::data::batch<32>()) step(b);  // 32 rows
/// auto spans = mo::data::batch<4>(std::views::iota(0, 10));  // {0..3}, {4..7}
/// ```
template <std::size_t N, std::ranges::viewable_range R>
auto batch(R&& range) {
  return detail::static_batch_fn<N>{}(std::forward<R>(range));
}

/// `batch<N>()` without the range: a closure that pipes.
///
/// ```cpp
/// auto batches = train | mo::data::shuffle(60'000, 1) | mo::data::batch<32>();
/// ```
template <std::size_t N>
auto batch() {
  return detail::bind_back(detail::static_batch_fn<N>{});
}

}  // namespace memopt::data
