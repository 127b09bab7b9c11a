#pragma once
// data::generate(fn): a source that calls a function for each element, for synthetic data.

#include <concepts>
#include <cstddef>
#include <functional>
#include <iterator>
#include <optional>
#include <ranges>
#include <type_traits>
#include <utility>

#include "memopt/data/detail/element.hpp"

namespace memopt::data {
namespace detail {

template <class T>
struct IsOptional : std::false_type {};
template <class T>
struct IsOptional<std::optional<T>> : std::true_type {};

}  // namespace detail

/// The view `generate(fn)` returns: each element is the result of one call to `fn()`. When
/// `fn` returns a `std::optional<T>`, the elements are `T`s and the first empty optional ends
/// the pass (as a Python generator ends `tf.data.Dataset.from_generator`); otherwise the range
/// never ends, so cut it with `take`.
///
/// `fn` is called lazily, once per element actually read: on the first dereference of a
/// position (or its comparison with the end, for an optional). Each element is kept in the
/// view until the iterator moves on and is handed over as a mutable lvalue, so move-only
/// results work. A new pass keeps calling the same `fn` (state in it carries on).
///
/// ```cpp
/// mo::Rng rng{7};
/// auto noise = mo::data::generate([&] { return rng.uniform(-1.0f, 1.0f); })
///            | mo::data::take(1000) | mo::data::batch(100);
/// int n = 0;
/// auto five = mo::data::generate([&]() -> std::optional<int> {
///   return n < 5 ? std::optional(n++) : std::nullopt;
/// });
/// ```
template <std::move_constructible F>
requires std::is_object_v<F> && std::invocable<F&>
class GenerateView : public std::ranges::view_interface<GenerateView<F>> {
  using Result = std::remove_cvref_t<std::invoke_result_t<F&>>;
  static constexpr bool kFinite = detail::IsOptional<Result>::value;

 public:
  using value_type =
      typename std::conditional_t<kFinite, Result, std::optional<Result>>::value_type;
  static constexpr bool hands_over_elements = true;

  class Iterator {
   public:
    using iterator_concept = std::input_iterator_tag;
    using value_type = GenerateView::value_type;
    using difference_type = std::ptrdiff_t;

    Iterator() = default;
    explicit Iterator(GenerateView* parent) noexcept : parent_(parent) {}

    value_type& operator*() const {
      parent_->fetch();
      return *parent_->value_;
    }
    Iterator& operator++() {
      parent_->fetch();  // an element nobody read still counts: the generator's order is kept
      parent_->stale_ = true;
      return *this;
    }
    void operator++(int) { ++*this; }

    friend bool operator==(const Iterator& it, std::default_sentinel_t) { return it.done(); }

   private:
    // A friend of the iterator cannot reach into the view; a member can.
    bool done() const {
      parent_->fetch();
      return parent_->done_;
    }

    GenerateView* parent_ = nullptr;
  };

  explicit GenerateView(F fn) : fn_(std::move(fn)) {}

  Iterator begin() {
    stale_ = true;
    done_ = false;
    return Iterator(this);
  }
  auto end() const noexcept {
    if constexpr (kFinite) {
      return std::default_sentinel;
    } else {
      return std::unreachable_sentinel;
    }
  }

 private:
  // Calls fn for the current position, once.
  void fetch() {
    if (!stale_) return;
    stale_ = false;
    if constexpr (kFinite) {
      auto result = std::invoke(*fn_);
      if (result.has_value()) {
        detail::store(value_, std::move(*result));
      } else {
        done_ = true;
      }
    } else {
      detail::store(value_, std::invoke(*fn_));
    }
  }

  detail::Box<F> fn_;
  std::optional<value_type> value_;
  bool stale_ = true;
  bool done_ = false;
};

/// A source whose elements are the results of calling `fn()`; see `GenerateView`.
///
/// ```cpp
/// int i = 0;
/// auto squares = mo::data::generate([&] { ++i; return i * i; }) | mo::data::take(10);
/// ```
template <class F>
requires std::invocable < std::decay_t<F>
& > GenerateView<std::decay_t<F>> generate(F&& fn) {
  return GenerateView<std::decay_t<F>>(std::forward<F>(fn));
}

}  // namespace memopt::data
