#pragma once
// Recompute<Act>: an opt-in that trades compute for memory. The layer's output is not kept
// from forward to backward; backward recomputes it just before it is needed.

#include <string_view>

#include "memopt/layers/activation.hpp"

namespace memopt {

template <class A>
struct Recompute;

template <class A>
inline constexpr bool is_recompute_v = false;
template <class A>
inline constexpr bool is_recompute_v<Recompute<A>> = true;

/// Wraps a hidden layer's activation: `Dense<512, Recompute<ReLU>>` computes like
/// `Dense<512, ReLU>` but keeps its output only until the next layer has read it in forward.
/// Backward recomputes it when the next layer's weight gradient needs it:
///
/// - `Recompute<GELU>` keeps z (GELU's derivative needs it anyway) and recomputes
///   `gelu(z)`: one element-wise pass, no matrix product.
/// - any other activation reruns the layer's forward product from its input, which is kept
///   or itself recomputed. A run of Recompute layers comes back as one segment, as in
///   gradient checkpointing, so put Recompute on every other layer: the kept ones are the
///   checkpoints.
///
/// The arena shrinks where the step's peak has activations waiting for backward (on a 64-wide
/// MLP of 8 hidden layers with every other one recomputed, by a third at batch 4096); the
/// gradients are the same bits. The cost is one more forward product per recomputed layer.
///
/// ```cpp
/// using Net = mo::Sequential<mo::Dense<256, mo::Recompute<mo::ReLU>>, mo::Dense<64, mo::ReLU>,
///                            mo::Dense<256, mo::Recompute<mo::ReLU>>, mo::Dense<64, mo::ReLU>,
///                            mo::Dense<10, mo::Softmax>>;
/// auto model = mo::Model<Net, mo::Input<48>>{42};  // arena at batch 512: 1.16 MB, not 1.73
/// ```
template <class A>
struct Recompute {
  static_assert(ActivationFunction<A>,
                "Recompute: the argument must be an activation such as ReLU (write "
                "Dense<128, Recompute<ReLU>>)");
  static_assert(!is_recompute_v<A>, "Recompute: Recompute<Recompute<A>> means Recompute<A>");
  static_assert(A::kind != ActivationKind::softmax,
                "Recompute: Softmax belongs to the last layer, whose outputs the loss needs; "
                "recompute a hidden layer instead");

  using activation = A;
  static constexpr ActivationKind kind = A::kind;
  static constexpr std::string_view name = A::name;
};

}  // namespace memopt
