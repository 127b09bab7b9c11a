#pragma once
// data::prefetch(n) and prefetch(autotune): a worker thread reads ahead into a bounded queue.

#include <concepts>
#include <cstddef>
#include <ranges>
#include <string>
#include <utility>

#include "memopt/core/error.hpp"
#include "memopt/data/autotune.hpp"
#include "memopt/data/detail/async_view.hpp"
#include "memopt/data/detail/element.hpp"
#include "memopt/data/detail/pipe.hpp"

namespace memopt::data {

/// The view `prefetch` returns: the elements of `V`, read ahead by a `std::jthread` into a
/// bounded queue of pooled slots, so that producing element k + 1 overlaps with the consumer's
/// work on element k.
///
/// - Each element is a copy of (or, where `V` hands its elements over, moved from) upstream's
///   and is a mutable `value_type&`, valid until the iterator moves on. An element that views
///   values it does not own (the `std::span<const T>` that `batch(n)` yields over numbers, a
///   string view) arrives as an owning copy of them (`std::vector<T>`, `std::string`): the
///   worker refills upstream's buffer while the consumer reads. Slots are reused:
///   once warm, a pass allocates nothing (a `Batch` slot keeps its vectors' capacity).
/// - An exception thrown upstream is rethrown by the consumer's `++` (or `begin()`) at the
///   element where it happened; the elements before it arrive first.
/// - The iterator is move-only and owns the pass. Leaving a loop early (break, exception)
///   destroys it, which stops the worker reading and waits until it no longer touches `V`;
///   destroying the view joins the thread. `begin()` again starts a new pass on the same
///   thread and slots (fit's next epoch).
/// - Upstream is only read on the worker thread, so it needs no locking of its own.
///
/// ```cpp
/// auto batches = train | mo::data::shuffle(60'000, 1) | mo::data::batch(32)
///                      | mo::data::prefetch(mo::data::autotune);
/// for (const mo::data::Batch& b : batches) step(b);  // loading overlaps the step
/// ```
template <std::ranges::view V>
using PrefetchView = detail::AsyncView<V, detail::Identity>;

namespace detail {

struct prefetch_fn {
  template <std::ranges::viewable_range R>
  auto operator()(R&& range, std::ptrdiff_t depth) const {
    check(depth);
    return make(std::forward<R>(range),
                AsyncConfig{.threads = 1, .depth = static_cast<std::size_t>(depth)});
  }

  template <std::ranges::viewable_range R>
  auto operator()(R&& range, Autotune tune) const {
    check_cap(tune);
    return make(std::forward<R>(range), AsyncConfig{.threads = 1,
                                                    .depth = 1,
                                                    .autotune = true,
                                                    .memory_cap = tune.memory_cap,
                                                    .max_depth = tune.max_depth});
  }

  auto operator()(std::ptrdiff_t depth) const {
    check(depth);
    return bind_back(*this, depth);
  }
  auto operator()(Autotune tune) const {
    check_cap(tune);
    return bind_back(*this, tune);
  }

 private:
  template <class R>
  static auto make(R&& range, AsyncConfig config) {
    using V = std::views::all_t<R>;
    static_assert(std::ranges::input_range<V>, "data::prefetch: expected an input range");
    static_assert(KeepableElements<V>,
                  "data::prefetch: each element is stored in a queue slot, but this range yields "
                  "lvalues of a move-only type that it does not hand over; map them to values "
                  "first, e.g. map([](auto& x) { return std::move(x); })");
    return PrefetchView<V>(std::views::all(std::forward<R>(range)), Identity{}, config);
  }

  static void check(std::ptrdiff_t depth) {
    if (depth <= 0) {
      throw error("data::prefetch: expected a depth > 0 (or data::autotune), found " +
                  std::to_string(depth));
    }
  }
  static void check_cap(const Autotune& tune) {
    if (tune.memory_cap == 0) {
      throw error("data::prefetch: expected an autotune memory cap > 0 bytes, found 0");
    }
    if (tune.max_depth == 0) {
      throw error("data::prefetch: expected an autotune max_depth > 0, found 0");
    }
  }
};

}  // namespace detail

/// Reads a range ahead on a worker thread: `prefetch(n)` keeps up to `n` elements ready
/// beyond the one in use; `prefetch(autotune)` starts at 1 and grows while the consumer waits,
/// up to `Autotune::max_depth` and `Autotune::memory_cap` bytes; see `PrefetchView` and
/// `Autotune`.
///
/// ```cpp
/// auto ahead = train | mo::data::batch(32) | mo::data::prefetch(2);
/// auto tuned = train | mo::data::batch(32) | mo::data::prefetch(mo::data::autotune);
/// std::size_t depth = tuned.depth();  // after a pass: how deep autotune went
/// ```
inline constexpr detail::prefetch_fn prefetch{};

}  // namespace memopt::data
