#pragma once
// Fusion: which operations of a training step run as one kernel, decided from the types.

#include <array>
#include <cstddef>
#include <string_view>

#include "memopt/layers/activation.hpp"

namespace memopt::plan {

/// One kernel of a training step and the operations fused into it.
struct FusedKernel {
  std::size_t layer = 0;
  std::string_view pass;  // "forward" or "backward"
  std::string_view ops;   // e.g. "matmul + bias + relu"
};

namespace detail {
constexpr std::string_view forward_ops(ActivationKind act, bool last) {
  switch (act) {
    case ActivationKind::relu:
      return "matmul + bias + relu";
    case ActivationKind::sigmoid:
      return "matmul + bias + sigmoid";
    case ActivationKind::tanh:
      return "matmul + bias + tanh";
    case ActivationKind::gelu:
      return "matmul + bias + gelu (keeps z)";
    case ActivationKind::softmax:
      return "matmul + bias, then softmax + cross-entropy + gradient + accuracy";
    case ActivationKind::linear:
      return last ? "matmul + bias, then softmax + cross-entropy + gradient + accuracy"
                  : "matmul + bias";
  }
  return "";
}
constexpr std::string_view backward_ops(ActivationKind previous, bool first) {
  if (first) return "dW + db";
  switch (previous) {
    case ActivationKind::relu:
      return "dW + db, dX * relu'";
    case ActivationKind::sigmoid:
      return "dW + db, dX * sigmoid'";
    case ActivationKind::tanh:
      return "dW + db, dX * tanh'";
    case ActivationKind::gelu:
      return "dW + db, dX * gelu'";
    default:
      return "dW + db, dX";
  }
}
}  // namespace detail

/// The kernels of a training step in order: forward per layer (bias and activation in the
/// matmul's epilogue; the last also fuses softmax with the loss), backward per layer (the
/// previous layer's activation derivative fused into dX), then one optimizer kernel.
template <class Spec>
constexpr std::array<FusedKernel, 2 * Spec::depth + 1> training_kernels() {
  constexpr std::size_t depth = Spec::depth;
  std::array<FusedKernel, 2 * depth + 1> k{};
  for (std::size_t i = 0; i < depth; ++i)
    k[i] = {i, "forward", detail::forward_ops(Spec::activations[i], i + 1 == depth)};
  for (std::size_t j = 0; j < depth; ++j) {
    const std::size_t i = depth - 1 - j;
    k[depth + j] = {
        i, "backward",
        detail::backward_ops(i ? Spec::activations[i - 1] : ActivationKind::linear, i == 0)};
  }
  k[2 * depth] = {0, "update", "unscale + finite check + optimizer over all parameters"};
  return k;
}

}  // namespace memopt::plan
