#pragma once
// data::detail element helpers: how adaptors that hold elements (shuffle, prefetch, cache, a
// parallel map) take them from upstream, store them without reallocating, and size them.

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <ranges>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "memopt/data/sample.hpp"

namespace memopt::data::detail {

/// Whether a view hands its elements over: its reference is an lvalue into storage the view
/// refills on the next increment (a shuffle buffer, a prefetch slot, a generator's last
/// value), so a downstream adaptor that keeps elements may move from it instead of copying.
/// That is what lets move-only elements flow through `shuffle` and `prefetch`. A view says so
/// with `static constexpr bool hands_over_elements = true;`; the standard wrappers that pass
/// references through unchanged inherit it.
///
/// ```cpp
/// using mo::data::Dataset, mo::data::ShuffleView, mo::data::detail::HandsOver;
/// static_assert(HandsOver<ShuffleView<std::ranges::ref_view<Dataset>>>::value);
/// ```
template <class V>
    struct HandsOver : std::bool_constant < requires {
  requires V::hands_over_elements;
} > {};
template <class V>
struct HandsOver<std::ranges::ref_view<V>> : HandsOver<V> {};
template <class V>
struct HandsOver<std::ranges::owning_view<V>> : HandsOver<V> {};
template <class V>
struct HandsOver<std::ranges::take_view<V>> : HandsOver<V> {};
template <class V>
struct HandsOver<std::ranges::drop_view<V>> : HandsOver<V> {};
template <class V, class P>
struct HandsOver<std::ranges::filter_view<V, P>> : HandsOver<V> {};

template <class V>
inline constexpr bool hands_over_v = HandsOver<std::remove_cvref_t<V>>::value;

/// The element at `it` of a range of type `V`, moved when `V` hands its elements over and the
/// reference is a mutable lvalue, else as the reference itself (a copy happens where it is
/// stored).
template <class V, class I>
constexpr decltype(auto) take_element(I& it) {
  using Ref = std::iter_reference_t<I>;
  if constexpr (hands_over_v<V> && std::is_lvalue_reference_v<Ref> &&
                !std::is_const_v<std::remove_reference_t<Ref>>) {
    return std::move(*it);
  } else {
    return *it;
  }
}

/// The type `take_element<V>` yields for a range of type `V`.
template <class V>
using taken_t = decltype(take_element<V>(std::declval<std::ranges::iterator_t<V>&>()));

/// An element that views values it does not own: a borrowed view whose elements are lvalues,
/// such as the `std::span<const T>` that `batch(n)` yields over numbers (into a buffer it
/// refills), a `std::string_view` or a `std::ranges::subrange` over a container. An adaptor
/// that keeps such an element past the upstream increment (shuffle's buffer, cache, a
/// prefetch slot, a parallel map's worker) would keep a view of values that upstream is about
/// to overwrite, so it keeps a copy of the values instead (`owned_t`). A view whose values are
/// computed (`std::views::iota`) owns them and stays as it is.
///
/// ```cpp
/// using mo::data::detail::BorrowedElement;
/// static_assert(BorrowedElement<std::span<const int>>);
/// static_assert(!BorrowedElement<std::vector<int>> && !BorrowedElement<mo::data::Batch>);
/// ```
template <class T>
concept BorrowedElement = std::ranges::view<T> && std::ranges::borrowed_range<T> &&
    std::is_lvalue_reference_v<std::ranges::range_reference_t<T>>;

template <class T>
struct Owned {
  using type = T;
};
template <BorrowedElement T>
struct Owned<T> {
  using type = std::vector<std::ranges::range_value_t<T>>;
};
template <class C, class Traits>
struct Owned<std::basic_string_view<C, Traits>> {
  using type = std::basic_string<C, Traits>;
};

/// What an adaptor that keeps elements of type `T` stores: `T` itself, or for a
/// `BorrowedElement` an owning copy of its values (`std::vector<value>`, `std::string` for a
/// string view), which converts back to the span or view a consumer spells.
template <class T>
using owned_t = typename Owned<std::remove_cvref_t<T>>::type;

/// The type that an adaptor over `V` keeps (`owned_t` of what `take_element` yields).
template <class V>
using stored_t = owned_t<taken_t<V>>;

/// Whether an adaptor can keep the elements of `V`: a `BorrowedElement` (its values are
/// copied), or a type constructible from what `take_element` yields (moved when `V` hands its
/// elements over, else copied).
template <class V>
concept KeepableElements = BorrowedElement<std::remove_cvref_t<taken_t<V>>> ||
    std::constructible_from<std::remove_cvref_t<taken_t<V>>, taken_t<V>>;

/// `value` as the adaptor keeps it: a `BorrowedElement`'s values copied into an `owned_t`,
/// anything else forwarded.
template <class U>
constexpr decltype(auto) own(U&& value) {
  if constexpr (BorrowedElement<std::remove_cvref_t<U>>) {
    return owned_t<U>(std::ranges::begin(value), std::ranges::end(value));
  } else {
    return std::forward<U>(value);
  }
}

/// Assigns `value` to a kept element `dst`, reusing its storage: a `BorrowedElement`'s values
/// are assigned into the owning container (which keeps its capacity, so that a refill of as
/// many values allocates nothing).
template <class T, class U>
void assign_element(T& dst, U&& value) {
  if constexpr (BorrowedElement<std::remove_cvref_t<U>>) {
    dst.assign(std::ranges::begin(value), std::ranges::end(value));
  } else {
    dst = std::forward<U>(value);
  }
}

/// Stores `value` in `slot`, owning it (`own`). An engaged slot is assigned to, so that a
/// `Batch` or a vector refilled with as many values as before keeps its storage: that is what
/// makes a pool of slots allocation-free once warm.
template <class T, class U>
void store(std::optional<T>& slot, U&& value) {
  if constexpr (BorrowedElement<std::remove_cvref_t<U>> || std::is_assignable_v<T&, U&&>) {
    if (slot.has_value()) {
      assign_element(*slot, std::forward<U>(value));
      return;
    }
  }
  slot.emplace(own(std::forward<U>(value)));
}

/// Bytes an element holds, its heap storage included where it is visible: features and labels
/// of a labelled batch, what an element says with `byte_size()` (an image batch), the values of a
/// contiguous sized range, else `sizeof`. Prefetch's autotune divides its memory cap by this.
template <class T>
std::size_t element_bytes(const T& element) {
  if constexpr (LabeledBatch<T>) {
    return sizeof(T) + std::span<const float>(element.features()).size_bytes() +
           std::span<const std::int32_t>(element.labels()).size_bytes();
  } else if constexpr (requires { element.byte_size(); }) {
    return static_cast<std::size_t>(element.byte_size());
  } else if constexpr (std::ranges::contiguous_range<const T> &&
                       std::ranges::sized_range<const T>) {
    return sizeof(T) + static_cast<std::size_t>(std::ranges::size(element)) *
                           sizeof(std::ranges::range_value_t<const T>);
  } else {
    return sizeof(T);
  }
}

/// A view whose size can be asked through a const reference, without iterating it (a
/// `BatchView` is not a const range, but knows its size when its base does).
template <class V>
concept ConstSized = requires(const V& v) {
  std::ranges::size(v);
};

/// Holds a callable and makes any callable assignable (a lambda with captures is not), so
/// that views holding one are `std::movable`, as views must be.
template <class F>
class Box {
 public:
  Box() = default;
  constexpr explicit Box(F fn) : fn_(std::move(fn)) {}
  constexpr Box(const Box&) = default;
  constexpr Box(Box&&) = default;
  constexpr Box& operator=(const Box& other) {
    if (this != &other) {
      fn_.reset();
      if (other.fn_) fn_.emplace(*other.fn_);
    }
    return *this;
  }
  constexpr Box& operator=(Box&& other) noexcept(std::is_nothrow_move_constructible_v<F>) {
    if (this != &other) {
      fn_.reset();
      if (other.fn_) fn_.emplace(std::move(*other.fn_));
    }
    return *this;
  }
  ~Box() = default;

  constexpr F& operator*() noexcept { return *fn_; }
  constexpr const F& operator*() const noexcept { return *fn_; }

 private:
  std::optional<F> fn_;
};

}  // namespace memopt::data::detail
