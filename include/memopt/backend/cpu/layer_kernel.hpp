#pragma once
// LayerKernel<Layer, Spec, Node>: the CPU backend's operations for one layer type, one file
// per layer under backend/cpu/layers/. A layer without one fails to compile on the CPU
// backend with its name in the message.

#include <cstddef>
#include <string_view>

#include "memopt/backend/cpu/node_io.hpp"
#include "memopt/core/type_list.hpp"
#include "memopt/layers/activation.hpp"

namespace memopt::cpu_backend {

template <class Layer, class Spec, std::size_t Node>
struct LayerKernel {
  static_assert(::memopt::detail::dependent_false<Layer>,
                "cpu backend: this layer has no CPU kernel here; include "
                "<memopt/backend/cpu.hpp> from a host (.cpp) file: under nvcc the CPU "
                "backend runs Dense layers only");
};

/// What the executor calls on every node's kernel: `prepare(rows)` before it runs a batch of
/// `rows` samples (where oneDNN creates its primitives, once per batch size), then
/// `scratch_bytes(rows)`, the float scratch it needs for that many rows, and `forward`. Nodes
/// with parameters add `weight_grad`, nodes above one add `input_grad`; the executor only
/// instantiates the steps the schedule has.
template <class K, class T>
concept NodeKernel = requires(K& k, const K& ck, std::size_t n, const ForwardIo<T, T>& io) {
  k.prepare(n);
  { ck.scratch_bytes(n) } -> std::convertible_to<std::size_t>;
  k.forward(io);
};

/// The activation node `I`'s kernel applies itself. The last node's belongs to the loss head
/// (backend/cpu/loss_head.hpp), which fuses it with the loss or applies it with its
/// derivative, so that node writes its pre-activation.
template <class Spec, std::size_t I>
constexpr ActivationKind kernel_activation(ActivationKind act) {
  return I + 1 == Spec::depth ? ActivationKind::linear : act;
}

}  // namespace memopt::cpu_backend
