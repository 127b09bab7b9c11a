#pragma once
// A flat type list and the few operations the planner needs, written as folds over packs
// so that a deep model does not hit template recursion limits.

#include <cstddef>
#include <type_traits>
#include <utility>

namespace memopt {

/// A list of types: `type_list<Dense<128, ReLU>, Dense<10>>`.
template <class... Ts>
struct type_list {
  static constexpr std::size_t size = sizeof...(Ts);
};

namespace detail {

template <class T>
inline constexpr bool dependent_false = false;

template <std::size_t I, class T>
struct indexed {
  using type = T;
};

template <class Seq, class... Ts>
struct indexer;
template <std::size_t... Is, class... Ts>
struct indexer<std::index_sequence<Is...>, Ts...> : indexed<Is, Ts>... {};

template <std::size_t I, class T>
indexed<I, T> select(indexed<I, T>);

template <std::size_t I, class List>
struct at_impl;
template <std::size_t I, class... Ts>
struct at_impl<I, type_list<Ts...>> {
  static_assert(I < sizeof...(Ts), "type_list_at: index out of range");
  using type = typename decltype(select<I>(indexer<std::index_sequence_for<Ts...>, Ts...>{}))::type;
};

}  // namespace detail

/// The I-th type of a type_list, found without recursion.
template <std::size_t I, class List>
using type_list_at = typename detail::at_impl<I, List>::type;

namespace detail {
template <class... Lists>
struct concat_impl;
template <>
struct concat_impl<> {
  using type = type_list<>;
};
template <class... As>
struct concat_impl<type_list<As...>> {
  using type = type_list<As...>;
};
template <class... As, class... Bs, class... Rest>
struct concat_impl<type_list<As...>, type_list<Bs...>, Rest...> {
  using type = typename concat_impl<type_list<As..., Bs...>, Rest...>::type;
};
}  // namespace detail

/// The types of several type_lists in one, in order.
template <class... Lists>
using type_list_concat = typename detail::concat_impl<Lists...>::type;

/// Calls `f(std::integral_constant<std::size_t, I>{})` for I in [0, N).
template <std::size_t N, class F>
constexpr void static_for(F&& f) {
  [&]<std::size_t... Is>(std::index_sequence<Is...>) {
    (f(std::integral_constant<std::size_t, Is>{}), ...);
  }
  (std::make_index_sequence<N>{});
}

}  // namespace memopt
