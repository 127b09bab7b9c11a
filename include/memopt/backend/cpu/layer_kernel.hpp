#pragma once
// LayerKernel<Layer, Spec, Node>: the CPU backend's operations for one layer type, one file
// per layer under backend/cpu/layers/. A layer without one fails to compile on the CPU
// backend with its name in the message.

#include <cstddef>
#include <string_view>

#include "memopt/backend/cpu/node_io.hpp"
#include "memopt/core/type_list.hpp"

namespace memopt::cpu_backend {

template <class Layer, class Spec, std::size_t Node>
struct LayerKernel {
  static_assert(::memopt::detail::dependent_false<Layer>,
                "cpu backend: this layer has no CPU kernel; include its header from "
                "<memopt/backend/cpu/layers/...> or use a layer the CPU backend supports");
};

/// What the executor calls on a node's kernel: `prepare(capacity)` once per batch capacity
/// (where oneDNN creates its primitives), `scratch_floats(rows)`, and `forward`; nodes with
/// parameters add `weight_grad`, nodes above one add `input_grad`.
template <class K, class T>
concept ForwardKernel = requires(K& k, const K& ck, std::size_t n, const ForwardIo<T, T>& io,
                                 const ForwardIo<T, float>& last) {
  k.prepare(n);
  { K::scratch_floats(n) } -> std::convertible_to<std::size_t>;
  ck.forward(io);
  ck.forward(last);
};

}  // namespace memopt::cpu_backend
