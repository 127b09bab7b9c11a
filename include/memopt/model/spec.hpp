#pragma once
// ModelSpec: every compile-time fact about a network bound to an input width and a policy.

#include <array>
#include <cstddef>
#include <string>
#include <string_view>

#include "memopt/core/policy.hpp"
#include "memopt/core/type_list.hpp"
#include "memopt/layers/activation.hpp"
#include "memopt/model/input.hpp"
#include "memopt/model/sequential.hpp"

namespace memopt {

/// The shapes and parameter layout of `Net` on `In` under `P`, all `constexpr`.
///
/// Parameters live in one flat float buffer, layer after layer, each as its kernel
/// (stored like Keras's `[inputs, units]` row-major, which is `units x inputs` column-major)
/// followed by its bias.
///
/// ```cpp
/// using S = mo::ModelSpec<Net, mo::Input<784>, mo::float32>;
/// static_assert(S::dims[1] == 128 && S::parameter_count == 101'770);
/// ```
template <class Net, class In, Policy P>
struct ModelSpec {
  static_assert(is_sequential_v<Net>, "Model: the network must be a Sequential<...>");
  static_assert(is_input_v<In>, "Model: the second argument must be an Input<N>");

  using net = Net;
  using input = In;
  using policy = P;
  using compute_type = typename P::compute_type;
  using layers = typename Net::layers;

  static constexpr std::size_t depth = Net::depth;

  /// dims[0] is the input width; dims[i + 1] is layer i's output width.
  static constexpr std::array<std::size_t, depth + 1> dims = [] {
    std::array<std::size_t, depth + 1> d{};
    d[0] = In::features;
    static_for<depth>([&](auto i) { d[i + 1] = type_list_at<i, layers>::units; });
    return d;
  }();

  static constexpr std::array<ActivationKind, depth> activations = [] {
    std::array<ActivationKind, depth> a{};
    static_for<depth>([&](auto i) { a[i] = type_list_at<i, layers>::activation::kind; });
    return a;
  }();

  static constexpr std::size_t inputs = dims.front();
  static constexpr std::size_t outputs = dims.back();

  static constexpr std::size_t kernel_size(std::size_t layer) {
    return dims[layer] * dims[layer + 1];
  }
  static constexpr std::size_t layer_parameters(std::size_t layer) {
    return kernel_size(layer) + dims[layer + 1];
  }

  /// Offset of layer i's kernel in the flat parameter buffer; its bias follows the kernel.
  static constexpr std::array<std::size_t, depth + 1> parameter_offsets = [] {
    std::array<std::size_t, depth + 1> o{};
    for (std::size_t i = 0; i < depth; ++i) o[i + 1] = o[i] + layer_parameters(i);
    return o;
  }();
  static constexpr std::size_t kernel_offset(std::size_t layer) { return parameter_offsets[layer]; }
  static constexpr std::size_t bias_offset(std::size_t layer) {
    return parameter_offsets[layer] + kernel_size(layer);
  }

  static constexpr std::size_t parameter_count = parameter_offsets[depth];

  static constexpr bool ends_in_softmax = activations[depth - 1] == ActivationKind::softmax;

  static constexpr std::array<std::string_view, depth> layer_kinds = [] {
    std::array<std::string_view, depth> k{};
    static_for<depth>([&](auto i) { k[i] = type_list_at<i, layers>::name; });
    return k;
  }();

  /// Keras's layer names, numbered per kind: "dense", "dense_1", "dense_2", ...
  static std::string layer_name(std::size_t layer) {
    std::size_t same = 0;
    for (std::size_t i = 0; i < layer; ++i) same += layer_kinds[i] == layer_kinds[layer];
    std::string name(layer_kinds[layer]);
    return same == 0 ? name : name + "_" + std::to_string(same);
  }
};

}  // namespace memopt
