#pragma once
// Fusion: which operations of a training step run as one kernel, decided from the types.

#include <array>
#include <cstddef>
#include <span>
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

/// What the kernel list needs of one node: its operation's name, its activation, and which
/// backward passes the schedule gives it.
struct KernelNode {
  std::string_view op;  // "matmul", "conv2d", ...
  ActivationKind activation = ActivationKind::linear;
  bool backward = false, weight_grad = false, input_grad = false;
  // The activations of the nodes it reads, whose derivatives its input gradient applies (a
  // second one only for Add, `inputs == 2`).
  ActivationKind below = ActivationKind::linear, below2 = ActivationKind::linear;
  std::size_t inputs = 1;
};

/// The kernels of a training step over `nodes`, in order (training_kernels<Spec> below).
[[gnu::cold]] inline std::vector<FusedKernel> training_kernels(std::span<const KernelNode> nodes,
                                                               std::string_view loss = {}) {
  const std::size_t depth = nodes.size();
  std::vector<FusedKernel> k;
  for (std::size_t i = 0; i < depth; ++i) {
    std::string ops(nodes[i].op);
    ops += detail::activation_suffix(nodes[i].activation);
    if (i + 1 == depth) {
      ops += ", then ";
      ops += loss.empty() ? std::string_view("the loss") : loss;
      ops += " + gradient + metrics";
    }
    k.push_back({i, "forward", std::move(ops)});
  }
  for (std::size_t j = 0; j < depth; ++j) {
    const std::size_t i = depth - 1 - j;
    if (!nodes[i].backward) continue;
    std::string ops = nodes[i].weight_grad ? "dW + db" : "";
    if (nodes[i].input_grad) {
      ops += ops.empty() ? "dX" : ", dX";
      ops += detail::derivative_suffix(nodes[i].below);
      if (nodes[i].inputs == 2) {
        ops += ", dX of the shortcut";
        ops += detail::derivative_suffix(nodes[i].below2);
      }
    }
    k.push_back({i, "backward", std::move(ops)});
  }
  k.push_back({0, "update", "unscale + finite check + optimizer over all parameters"});
  return k;
}

/// The kernels of a training step in order: forward per node (bias and activation in its
/// epilogue; the last also runs the loss head: its activation fused with `loss`, named as
/// Keras names it, or "the loss" before compile), backward per node (the weight gradient, then
/// the input gradient with the activation derivative of the node below fused in), then one
/// optimizer kernel.
template <class Spec>
std::vector<FusedKernel> training_kernels(std::string_view loss = {}) {
  static constexpr auto nodes = [] {
    constexpr auto g = graph_of<Spec>();
    std::array<KernelNode, Spec::depth> n{};
    static_for<Spec::depth>([&](auto i) {
      n[i] = {detail::layer_op<typename Spec::template node_layer<i>>(),
              g.nodes[i].activation,
              g.has_backward(i),
              g.has_weight_grad(i),
              g.has_input_grad(i),
              Spec::input_activation(i, 0),
              Spec::input_activation(i, g.nodes[i].input_count - 1),
              g.nodes[i].input_count};
    });
    return n;
  }();
  return training_kernels(nodes, loss);
}

}  // namespace memopt::plan
