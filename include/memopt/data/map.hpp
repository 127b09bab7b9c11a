#pragma once
// data::map(fn[, threads]): applies a function to each element, lazily or on worker threads.

#include <algorithm>
#include <concepts>
#include <cstddef>
#include <functional>
#include <ranges>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>

#include "memopt/core/error.hpp"
#include "memopt/data/autotune.hpp"
#include "memopt/data/detail/async_view.hpp"
#include "memopt/data/detail/element.hpp"
#include "memopt/data/detail/pipe.hpp"

namespace memopt::data {

/// The view `map(fn, threads)` returns: `fn` applied to each element of `V` on `threads`
/// worker threads, results in upstream order (as `tf.data`'s `map(num_parallel_calls=...)`
/// with `deterministic=True`). Upstream is read by one worker at a time; `fn` runs on the
/// workers concurrently, so it must be safe to call from several threads at once. Up to
/// `2 * threads` elements are in flight. An element that views values it does not own (a
/// `std::span` from `batch(n)` over numbers, a string view) reaches `fn` as an owning copy
/// (`std::vector`, `std::string`), and a result that does is kept as one. Results live in
/// pooled slots and are handed out as mutable lvalues; an exception from `fn` or upstream is
/// rethrown at its element; leaving a loop early stops the workers. See `detail::AsyncView` for the
/// mechanics it shares with `prefetch`.
///
/// ```cpp
/// auto decode_png = [](const mo::data::Sample& s) { return s; };  // a decoder of your own
/// auto decoded = train | mo::data::map(decode_png, 4) | mo::data::batch(32);
/// ```
template <std::ranges::view V, class F>
using ParallelMapView = detail::AsyncView<V, F>;

namespace detail {

/// Calls `fn` with an element as an rvalue when the upstream view hands its elements over and
/// `fn` accepts one (so a move-only element can be taken by value), else as it is.
template <class F>
struct HandOverCall {
  F fn;

  template <class T>
  decltype(auto) operator()(T& element) {
    if constexpr (std::invocable<F&, T&&>) {
      return std::invoke(fn, std::move(element));
    } else {
      return std::invoke(fn, element);
    }
  }
  template <class T>
  decltype(auto) operator()(T& element) const {
    if constexpr (std::invocable<const F&, T&&>) {
      return std::invoke(fn, std::move(element));
    } else {
      return std::invoke(fn, element);
    }
  }
};

inline std::size_t check_threads(std::ptrdiff_t threads) {
  if (threads <= 0) {
    throw error("data::map: expected a number of threads > 0 (or data::autotune), found " +
                std::to_string(threads));
  }
  return static_cast<std::size_t>(threads);
}

struct map_fn {
  template <std::ranges::viewable_range R, class F>
  requires(!std::ranges::range<F>) auto operator()(R&& range, F fn) const {
    using V = std::views::all_t<R>;
    using Ref = std::ranges::range_reference_t<V>;
    if constexpr (hands_over_v<V> && std::is_lvalue_reference_v<Ref> &&
                  !std::is_const_v<std::remove_reference_t<Ref>>) {
      return std::views::transform(std::views::all(std::forward<R>(range)),
                                   HandOverCall<F>{std::move(fn)});
    } else {
      static_assert(std::invocable<F&, Ref>,
                    "data::map: the function cannot be called with the range's elements");
      return std::views::transform(std::views::all(std::forward<R>(range)), std::move(fn));
    }
  }

  template <std::ranges::viewable_range R, class F>
  requires(!std::ranges::range<F>) auto operator()(R&& range, F fn, std::ptrdiff_t threads) const {
    return parallel(std::forward<R>(range), std::move(fn), check_threads(threads));
  }

  template <std::ranges::viewable_range R, class F>
  requires(!std::ranges::range<F>) auto operator()(R&& range, F fn, Autotune) const {
    return parallel(std::forward<R>(range), std::move(fn),
                    std::max(1u, std::thread::hardware_concurrency()));
  }

  template <class F>
  requires(!std::ranges::range<F>) auto operator()(F fn) const {
    return bind_back(*this, std::move(fn));
  }

  template <class F>
  requires(!std::ranges::range<F>) auto operator()(F fn, std::ptrdiff_t threads) const {
    check_threads(threads);
    return bind_back(*this, std::move(fn), threads);
  }

  template <class F>
  requires(!std::ranges::range<F>) auto operator()(F fn, Autotune tune) const {
    return bind_back(*this, std::move(fn), tune);
  }

 private:
  template <class R, class F>
  static auto parallel(R&& range, F fn, std::size_t threads) {
    using V = std::views::all_t<R>;
    using In = stored_t<V>;
    static_assert(KeepableElements<V>,
                  "data::map: with threads, each element is copied to its worker, but this range "
                  "yields lvalues of a move-only type that it does not hand over");
    static_assert(std::invocable<F&, In&&> || std::invocable<F&, In&>,
                  "data::map: the function cannot be called with the range's elements");
    return ParallelMapView<V, F>(std::views::all(std::forward<R>(range)), std::move(fn),
                                 AsyncConfig{.threads = threads, .depth = 2 * threads});
  }
};

}  // namespace detail

/// Applies `fn` to each element. `map(fn)` is lazy and sequential (a `std::views::transform`:
/// `fn` runs when an element is read). `map(fn, threads)` and `map(fn, autotune)` (one thread
/// per core) run `fn` ahead on worker threads and keep upstream order; see `ParallelMapView`.
///
/// ```cpp
/// auto squares = mo::data::range(10) | mo::data::map([](int i) { return i * i; });
/// auto normalize = [](const mo::data::Sample& s) { return s; };
/// auto scaled = train | mo::data::map(normalize, mo::data::autotune);
/// ```
inline constexpr detail::map_fn map{};

}  // namespace memopt::data
