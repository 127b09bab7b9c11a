#pragma once
// data::detail::bind_back: partial application of a range adaptor, so that `batch(32)` pipes.

#include <concepts>
#include <ranges>
#include <tuple>
#include <type_traits>
#include <utility>

namespace memopt::data::detail {

template <class L, class R>
class Composed;

/// Tag base of every pipeable closure; its hidden friends give all closures `operator|`.
///
/// ```cpp
/// static_assert(std::derived_from<decltype(mo::data::batch(32)), mo::data::detail::PipeBase>);
/// ```
struct PipeBase {
  // A range on the left applies the closure: `range | batch(32)` is `batch(32)(range)`.
  template <std::ranges::viewable_range R, class C>
  requires std::derived_from<std::remove_cvref_t<C>, PipeBase> && std::invocable<C, R>
  friend constexpr auto operator|(R&& range, C&& closure) {
    return std::forward<C>(closure)(std::forward<R>(range));
  }

  // Two closures compose into one, applied left to right: `shuffle(n) | batch(32)`.
  template <class L, class R>
  requires std::derived_from<std::remove_cvref_t<L>, PipeBase> &&
      std::derived_from<std::remove_cvref_t<R>, PipeBase>
  friend constexpr auto operator|(L&& lhs, R&& rhs) {
    return Composed<std::remove_cvref_t<L>, std::remove_cvref_t<R>>(std::forward<L>(lhs),
                                                                    std::forward<R>(rhs));
  }
};

/// An adaptor `fn` with its trailing arguments bound: `closure(range)` is
/// `fn(range, args...)`. Arguments are stored by value, so a closure can outlive them.
///
/// ```cpp
/// auto by32 = mo::data::detail::bind_back(mo::data::detail::batch_fn{}, 32, false);
/// auto batches = train | by32;
/// ```
template <class Fn, class... Args>
class Closure : public PipeBase {
 public:
  template <class... As>
  constexpr explicit Closure(Fn fn, As&&... args)
      : fn_(std::move(fn)), args_(std::forward<As>(args)...) {}

  template <std::ranges::viewable_range R>
  requires std::invocable<const Fn&, R, const Args&...>
  constexpr auto operator()(R&& range) const& {
    return std::apply([&](const Args&... args) { return fn_(std::forward<R>(range), args...); },
                      args_);
  }

  // An rvalue closure hands its arguments over instead of copying them.
  template <std::ranges::viewable_range R>
  requires std::invocable<const Fn&, R, Args...>
  constexpr auto operator()(R&& range) && {
    return std::apply(
        [&](Args&... args) { return fn_(std::forward<R>(range), std::move(args)...); }, args_);
  }

 private:
  [[no_unique_address]] Fn fn_;
  std::tuple<Args...> args_;
};

/// `fn` with `args` bound after the range argument; the building block of every adaptor's
/// partial application.
///
/// ```cpp
/// struct first_fn {  // `range | first(n)`: the range's first n elements
///   template <std::ranges::viewable_range R>
///   constexpr auto operator()(R&& range, std::ptrdiff_t n) const {
///     return std::views::take(std::forward<R>(range), n);
///   }
///   constexpr auto operator()(std::ptrdiff_t n) const {
///     return mo::data::detail::bind_back(*this, n);
///   }
/// };
/// inline constexpr first_fn first{};
/// ```
template <class Fn, class... Args>
constexpr auto bind_back(Fn fn, Args&&... args) {
  return Closure<Fn, std::decay_t<Args>...>(std::move(fn), std::forward<Args>(args)...);
}

/// Two closures applied one after the other: `(lhs | rhs)(range)` is `rhs(lhs(range))`.
///
/// ```cpp
/// auto pipeline = mo::data::shuffle(60'000, 1) | mo::data::batch(32);
/// auto batches = train | pipeline;
/// ```
template <class L, class R>
class Composed : public PipeBase {
 public:
  constexpr Composed(L lhs, R rhs) : lhs_(std::move(lhs)), rhs_(std::move(rhs)) {}

  template <std::ranges::viewable_range Rng>
  requires std::invocable<const L&, Rng> &&
      std::invocable<const R&, std::invoke_result_t<const L&, Rng>>
  constexpr auto operator()(Rng&& range) const& { return rhs_(lhs_(std::forward<Rng>(range))); }

  template <std::ranges::viewable_range Rng>
  requires std::invocable<L, Rng> && std::invocable<R, std::invoke_result_t<L, Rng>>
  constexpr auto operator()(Rng&& range) && {
    return std::move(rhs_)(std::move(lhs_)(std::forward<Rng>(range)));
  }

 private:
  [[no_unique_address]] L lhs_;
  [[no_unique_address]] R rhs_;
};

}  // namespace memopt::data::detail
