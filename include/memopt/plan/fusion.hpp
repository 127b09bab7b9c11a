#pragma once
// Fusion: which operations of a training step run as one kernel, decided from the types.

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "memopt/layers/activation.hpp"
#include "memopt/plan/step_plans.hpp"

namespace memopt::plan {

/// One kernel of a training step and the operations fused into it.
struct FusedKernel {
  std::size_t node = 0;
  std::string_view pass;  // "forward", "backward" or "update"
  std::string ops;        // e.g. "matmul + bias + relu"
};

namespace detail {
template <class L>
constexpr std::string_view layer_op() {
  if constexpr (requires { L::op; })
    return L::op;
  else
    return L::name;
}
constexpr std::string_view activation_suffix(ActivationKind act) {
  switch (act) {
    case ActivationKind::relu:
      return " + relu";
    case ActivationKind::sigmoid:
      return " + sigmoid";
    case ActivationKind::tanh:
      return " + tanh";
    case ActivationKind::gelu:
      return " + gelu (keeps z)";
    default:
      return "";
  }
}
constexpr std::string_view derivative_suffix(ActivationKind below) {
  switch (below) {
    case ActivationKind::relu:
      return " * relu'";
    case ActivationKind::sigmoid:
      return " * sigmoid'";
    case ActivationKind::tanh:
      return " * tanh'";
    case ActivationKind::gelu:
      return " * gelu'";
    default:
      return "";
  }
}
}  // namespace detail

/// The kernels of a training step in order: forward per node (bias and activation in its
/// epilogue; the last also runs the loss head: its activation fused with `loss`, named as
/// Keras names it, or "the loss" before compile), backward per node (the weight gradient, then
/// the input gradient with the activation derivative of the node below fused in), then one
/// optimizer kernel.
template <class Spec>
std::vector<FusedKernel> training_kernels(std::string_view loss = {}) {
  constexpr auto g = graph_of<Spec>();
  constexpr std::size_t depth = Spec::depth;
  std::vector<FusedKernel> k;
  static_for<depth>([&](auto i) {
    using L = typename Spec::template node_layer<i>;
    std::string ops(detail::layer_op<L>());
    ops += detail::activation_suffix(g.nodes[i].activation);
    if (i + 1 == depth) {
      ops += ", then ";
      ops += loss.empty() ? std::string_view("the loss") : loss;
      ops += " + gradient + metrics";
    }
    k.push_back({i, "forward", std::move(ops)});
  });
  for (std::size_t j = 0; j < depth; ++j) {
    const std::size_t i = depth - 1 - j;
    if (!g.has_backward(i)) continue;
    std::string ops = g.has_weight_grad(i) ? "dW + db" : "";
    if (g.has_input_grad(i)) {
      ops += ops.empty() ? "dX" : ", dX";
      ops += detail::derivative_suffix(g.nodes[i - 1].activation);
    }
    k.push_back({i, "backward", std::move(ops)});
  }
  k.push_back({0, "update", "unscale + finite check + optimizer over all parameters"});
  return k;
}

}  // namespace memopt::plan
