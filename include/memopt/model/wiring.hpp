#pragma once
// How a Sequential's elements become a flat list of layers and which output each layer reads.
// A plain layer reads the output before it; a Residual lays out its block's layers, its
// shortcut's, and an Add that reads the two branches' outputs.

#include <array>
#include <cstddef>
#include <type_traits>

#include "memopt/core/type_list.hpp"
#include "memopt/layers/activation.hpp"
#include "memopt/layers/add.hpp"
#include "memopt/layers/layer.hpp"
#include "memopt/layers/residual.hpp"

namespace memopt {

template <class... Ls>
struct Sequential;

/// What layer i reads, as indices into the model's shapes: 0 is the model's input, j + 1 the
/// output of layer j. `second` is Add's shortcut input, `no_input` for every other layer.
struct LayerInputs {
  static constexpr std::size_t no_input = static_cast<std::size_t>(-1);
  std::size_t first = 0;
  std::size_t second = no_input;
};

namespace detail {

// flat<E>: the layers of Sequential element E, and `place`, which writes their LayerInputs
// from position `k` on for an input at shape index `in`, advances `k` and returns the shape
// index of E's output.
template <class E>
struct flat {
  static_assert(Layer<E>,
                "Residual: every element of a block or a shortcut must be a layer, a "
                "Sequential<...> of layers or a Residual<...>");
  using layers = type_list<E>;
  template <std::size_t N>
  static constexpr std::size_t place(std::array<LayerInputs, N>& w, std::size_t& k,
                                     std::size_t in) {
    w[k++] = {in, LayerInputs::no_input};
    return k;
  }
};

template <>
struct flat<Identity> {
  using layers = type_list<>;
  template <std::size_t N>
  static constexpr std::size_t place(std::array<LayerInputs, N>&, std::size_t&, std::size_t in) {
    return in;
  }
};

template <class... Es>
struct flat<Sequential<Es...>> {
  using layers = type_list_concat<typename flat<Es>::layers...>;
  template <std::size_t N>
  static constexpr std::size_t place(std::array<LayerInputs, N>& w, std::size_t& k,
                                     std::size_t in) {
    ((in = flat<Es>::place(w, k, in)), ...);
    return in;
  }
};

template <class B, class S>
struct flat<Residual<B, S>> {
  static_assert(!std::is_same_v<B, Identity> && flat<B>::layers::size > 0,
                "Residual: the block needs at least one layer (Residual<Block, Shortcut>: "
                "Identity may only be the shortcut)");
  using layers =
      type_list_concat<typename flat<B>::layers, typename flat<S>::layers, type_list<Add>>;
  template <std::size_t N>
  static constexpr std::size_t place(std::array<LayerInputs, N>& w, std::size_t& k,
                                     std::size_t in) {
    const std::size_t block = flat<B>::place(w, k, in);
    const std::size_t shortcut = flat<S>::place(w, k, in);
    w[k++] = {block, shortcut};
    return k;
  }
};

// The LayerInputs of every layer of Sequential<Es...>, flattened.
template <class... Es>
constexpr auto wiring_of() {
  using F = flat<Sequential<Es...>>;
  std::array<LayerInputs, F::layers::size> w{};
  std::size_t k = 0;
  F::place(w, k, 0);
  return w;
}

}  // namespace detail
}  // namespace memopt
