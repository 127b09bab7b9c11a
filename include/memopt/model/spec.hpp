#pragma once
// ModelSpec: every compile-time fact about a network bound to an input shape and a policy,
// folded from what each layer declares (layers/layer.hpp). Nothing here knows a layer kind.
//
// Two indexings: *layers* are the elements of the Sequential, as Keras lists them; *nodes*
// are the layers that compute (a view such as Flatten only renames its input's memory), which
// are what the plan schedules and the backends run.

#include <algorithm>
#include <array>
#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "memopt/core/error.hpp"
#include "memopt/core/policy.hpp"
#include "memopt/core/shape.hpp"
#include "memopt/core/type_list.hpp"
#include "memopt/layers/activation.hpp"
#include "memopt/layers/add.hpp"
#include "memopt/layers/layer.hpp"
#include "memopt/layers/recompute.hpp"
#include "memopt/model/input.hpp"
#include "memopt/model/sequential.hpp"

namespace memopt {

/// A weight of the model: which layer declares it, its declaration, and its offset in the
/// flat buffer of trainable parameters or in the one of non-trainable state.
struct WeightEntry {
  std::size_t layer = 0;
  WeightDecl decl{};
  std::size_t offset = 0;
};

/// What the planner and the backends need of one node, as plain constexpr data.
struct NodeInfo {
  std::size_t layer = 0;  // index in the Sequential's layers
  // The nodes whose outputs this node reads, -1 for the model's input: the node before it in a
  // chain; Add reads two (a residual block's output, then its shortcut's).
  std::array<int, 2> sources{-1, -1};
  std::size_t input_count = 1;
  Shape in{};
  Shape out{};
  ActivationKind activation = ActivationKind::linear;
  bool recompute = false;
  BackwardReads reads{};
  std::size_t parameters = 0;  // trainable values
  std::size_t parameter_offset = 0;
  std::size_t state = 0;  // non-trainable values
  std::size_t state_offset = 0;
  std::array<SavedDecl, 2> saved{};
  std::size_t saved_count = 0;
};

/// Whether node `i`'s output goes to node `i + 1` alone, as its first input: what recomputing
/// it needs, since its forward reruns just before that node's backward (Recompute, and the
/// layers a MemoryBudget may choose).
constexpr bool output_only_to_next(std::span<const NodeInfo> nodes, std::size_t i) {
  for (std::size_t j = i + 1; j < nodes.size(); ++j)
    for (std::size_t k = 0; k < nodes[j].input_count; ++k)
      if (nodes[j].sources[k] == int(i) && (j != i + 1 || k != 0)) return false;
  return true;
}

namespace detail {
// Values of layer `layer`'s trainable (or non-trainable) weights: ModelSpec's constexpr
// counts and SpecTables' runtime ones are this one loop.
constexpr std::size_t layer_weight_count(std::span<const WeightEntry> weights, std::size_t layer,
                                         bool trainable) {
  std::size_t n = 0;
  for (const WeightEntry& e : weights)
    if (e.layer == layer && e.decl.trainable == trainable) n += e.decl.size();
  return n;
}

// Where weight `k` starts in Keras's order of every weight (`model.weights`, get_weights):
// layer by layer, a layer's trainable weights, then its non-trainable ones, each kind in the
// order the layer declares them. The values of the weights before it in that order.
constexpr std::size_t keras_weight_offset(std::span<const WeightEntry> weights, std::size_t k) {
  const WeightEntry& w = weights[k];
  std::size_t at = 0;
  for (std::size_t j = 0; j < weights.size(); ++j) {
    const WeightEntry& e = weights[j];
    const bool before =
        e.layer < w.layer ||
        (e.layer == w.layer && (e.decl.trainable == w.decl.trainable ? j < k : e.decl.trainable));
    if (before) at += e.decl.size();
  }
  return at;
}
}  // namespace detail

/// A model type's tables as values: what code that names and describes a model reads
/// (summary, checkpoint names, descriptions), so that such code compiles once whatever the
/// number of model types in a program. `ModelSpec::tables()` gives one.
struct SpecTables {
  std::span<const Shape> shapes;                    // [0] the input, [i + 1] layer i's output
  std::span<const std::string_view> layer_kinds;    // "dense", "conv2d", ...
  std::span<const std::string_view> layer_classes;  // "Dense", "Conv2D", ...
  std::span<const NodeInfo> nodes;
  std::span<const WeightEntry> weights;
  std::span<const LayerInputs> wiring;  // what each layer reads (model/wiring.hpp)

  std::size_t layer_count() const { return layer_kinds.size(); }
  /// Whether a layer reads two inputs: a model with residual blocks (ModelSpec::has_residuals).
  bool has_branches() const {
    for (const LayerInputs& w : wiring)
      if (w.second != LayerInputs::no_input) return true;
    return false;
  }

  /// Keras's layer names, numbered per kind: "dense", "dense_1", "conv2d", ...
  std::string layer_name(std::size_t layer) const {
    std::size_t same = 0;
    for (std::size_t i = 0; i < layer; ++i) same += layer_kinds[i] == layer_kinds[layer];
    std::string name(layer_kinds[layer]);
    return same == 0 ? name : name + "_" + std::to_string(same);
  }
  /// The Keras name of node `node`'s layer.
  std::string node_name(std::size_t node) const { return layer_name(nodes[node].layer); }

  /// Trainable and non-trainable values of layer `layer`.
  std::size_t layer_parameter_count(std::size_t layer) const {
    return detail::layer_weight_count(weights, layer, true);
  }
  std::size_t layer_state_count(std::size_t layer) const {
    return detail::layer_weight_count(weights, layer, false);
  }

  /// Values of every weight, trainable or not: what get_weights holds.
  std::size_t weight_count() const {
    std::size_t n = 0;
    for (const WeightEntry& e : weights) n += e.decl.size();
    return n;
  }
  /// Where `weights[k]` starts among every weight in Keras's order (see join_weights).
  std::size_t keras_offset(std::size_t k) const { return detail::keras_weight_offset(weights, k); }
};

namespace detail {
inline void check_weight_spans(const SpecTables& model, std::size_t parameters, std::size_t state,
                               std::size_t all, const char* what) {
  std::size_t p = 0, s = 0;
  for (const WeightEntry& e : model.weights) (e.decl.trainable ? p : s) += e.decl.size();
  if (parameters != p || state != s || all != p + s)
    throw error(std::string(what) + ": expected " + std::to_string(p) + " trainable, " +
                std::to_string(s) + " non-trainable and " + std::to_string(p + s) +
                " values in all, found " + std::to_string(parameters) + ", " +
                std::to_string(state) + " and " + std::to_string(all));
}
}  // namespace detail

/// A model's weights, as Keras's `model.weights` and `get_weights()` hold them: every weight,
/// trainable or not, layer by layer; within a layer its trainable weights, then its
/// non-trainable ones (BatchNormalization: gamma, beta, moving_mean, moving_variance). memopt
/// keeps the two kinds apart, the trainable `parameters` that the optimizer updates and the
/// non-trainable `state` (each laid out by WeightEntry::offset): join_weights makes the one
/// from the two, split_weights the two from the one. Every copy of a model (EarlyStopping's
/// best weights, checkpoints, the data-parallel broadcast) copies this whole, so that no copy
/// leaves the moving statistics behind.
///
/// ```cpp
/// std::vector<float> parameters(M::spec::parameter_count), state(M::spec::state_count);
/// std::vector<float> all(M::spec::weight_count);
/// mo::join_weights(M::spec::tables(), parameters, state, all);
/// mo::split_weights(M::spec::tables(), all, parameters, state);  // back again
/// ```
inline void join_weights(const SpecTables& model, std::span<const float> parameters,
                         std::span<const float> state, std::span<float> all) {
  detail::check_weight_spans(model, parameters.size(), state.size(), all.size(), "join_weights");
  for (std::size_t k = 0; k < model.weights.size(); ++k) {
    const WeightEntry& e = model.weights[k];
    const std::span<const float> from = e.decl.trainable ? parameters : state;
    std::ranges::copy(from.subspan(e.offset, e.decl.size()),
                      all.subspan(model.keras_offset(k)).begin());
  }
}
inline void split_weights(const SpecTables& model, std::span<const float> all,
                          std::span<float> parameters, std::span<float> state) {
  detail::check_weight_spans(model, parameters.size(), state.size(), all.size(), "split_weights");
  for (std::size_t k = 0; k < model.weights.size(); ++k) {
    const WeightEntry& e = model.weights[k];
    const std::span<float> to = e.decl.trainable ? parameters : state;
    std::ranges::copy(all.subspan(model.keras_offset(k), e.decl.size()),
                      to.subspan(e.offset).begin());
  }
}

/// A policy that states a memory budget (MemoryBudget, plan/memory_budget.hpp): the planner
/// chooses which nodes recompute.
template <class P>
concept BudgetPolicy = requires {
  typename P::precision;
  P::budget_bytes;
  P::budget_batch;
};

/// What a budget `B` chooses for `Spec` (the network under B's precision): `choice`, a
/// plan::RecomputeChoice. Defined by plan/memory_budget.hpp, which defines MemoryBudget.
template <class Spec, class B>
struct budget_choice;

namespace detail {

// Output shapes, unchecked: a layer's output_shape saturates on input it cannot take, and
// ModelSpec's check reports the first such layer by name. Layer i reads shapes[wiring[i].first].
template <class List, std::size_t N>
constexpr std::array<Shape, List::size + 1> layer_shapes(Shape in,
                                                         const std::array<LayerInputs, N>& wiring) {
  std::array<Shape, List::size + 1> s{};
  s[0] = in;
  static_for<List::size>(
      [&](auto i) { s[i + 1] = type_list_at<i, List>::output_shape(s[wiring[i].first]); });
  return s;
}

// A residual's block and shortcut end in the same shape; the message's instantiation names
// both (a vector of n features is n x 0 x 0).
template <std::size_t BlockHeight, std::size_t BlockWidth, std::size_t BlockChannels,
          std::size_t ShortcutHeight, std::size_t ShortcutWidth, std::size_t ShortcutChannels>
struct check_residual_branches {
  static_assert(BlockHeight == ShortcutHeight && BlockWidth == ShortcutWidth &&
                    BlockChannels == ShortcutChannels,
                "Residual: the block's output and the shortcut's output differ in shape (the "
                "instantiation check_residual_branches<block h, w, c, shortcut h, w, c> names "
                "both); give the shortcut a layer that makes them equal, such as "
                "Conv2D<filters, 1, Strides<s>, Same>");
  static constexpr bool value = true;
};
template <Shape Block, Shape Shortcut>
inline constexpr bool residual_branches_match_v =
    check_residual_branches<Block.dims[0], Block.rank == 3 ? Block.dims[1] : 0,
                            Block.rank == 3 ? Block.dims[2] : 0, Shortcut.dims[0],
                            Shortcut.rank == 3 ? Shortcut.dims[1] : 0,
                            Shortcut.rank == 3 ? Shortcut.dims[2] : 0>::value;

}  // namespace detail

/// The shapes, weights and nodes of `Net` on `In` under `P`, all `constexpr`.
///
/// Trainable parameters live in one flat float buffer, layer after layer, each layer's weights
/// in its declaration order (a Dense kernel as Keras's `[inputs, units]` row-major, then its
/// bias); non-trainable weights (BatchNormalization's moving statistics) in another.
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

  static constexpr std::size_t layer_count = Net::depth;
  /// What each layer reads (model/wiring.hpp): the layer before it, except in residuals.
  static constexpr std::array<LayerInputs, layer_count> wiring = Net::wiring;
  /// Whether some node reads two inputs (a Residual's Add).
  static constexpr bool has_residuals = [] {
    for (const LayerInputs& w : wiring)
      if (w.second != LayerInputs::no_input) return true;
    return false;
  }();

  // The Sequential checks its own elements; this, the layers of nested blocks.
  static_assert(
      [] {
        bool ok = true;
        static_for<layer_count - 1>([&](auto i) {
          ok &= type_list_at<i, layers>::activation::kind != ActivationKind::softmax;
        });
        return ok;
      }(),
      "Sequential: Softmax is only allowed on the model's last layer, where it is fused with "
      "the loss; a nested Sequential or a Residual block uses Linear or ReLU instead");
  static_assert(!std::is_same_v<type_list_at<layer_count - 1, layers>, Add>,
                "Model: a Residual cannot be the network's last element; the model ends with "
                "the layer whose outputs the loss reads, such as Dense<10, Softmax>");

  /// shapes[0] is the input's shape; shapes[i + 1] is layer i's output shape.
  static constexpr std::array<Shape, layer_count + 1> shapes =
      detail::layer_shapes<layers>(In::shape, wiring);
  static_assert([]<std::size_t... Is>(std::index_sequence<Is...>) {
    return (type_list_at<Is, layers>::template accepts<shapes[wiring[Is].first]>() && ...);
  }(std::make_index_sequence<layer_count>{}));
  static_assert([]<std::size_t... Is>(std::index_sequence<Is...>) {
    constexpr auto second = [](std::size_t i) {
      return wiring[i].second == LayerInputs::no_input ? wiring[i].first : wiring[i].second;
    };
    return (detail::residual_branches_match_v<shapes[wiring[Is].first], shapes[second(Is)]> && ...);
  }(std::make_index_sequence<layer_count>{}));

  static constexpr std::array<bool, layer_count> is_view = [] {
    std::array<bool, layer_count> v{};
    static_for<layer_count>([&](auto i) { v[i] = type_list_at<i, layers>::is_view; });
    return v;
  }();

  /// Nodes: the layers that compute.
  static constexpr std::size_t depth = [] {
    std::size_t n = 0;
    for (bool v : is_view) n += v ? 0 : 1;
    return n;
  }();
  static_assert(depth > 0, "Model: the network needs at least one layer that computes");

  // Every weight, layer after layer ----------------------------------------------------------

  static constexpr std::size_t weight_count_declared = [] {
    std::size_t n = 0;
    static_for<layer_count>([&](auto i) { n += weight_decl_count_v<type_list_at<i, layers>>; });
    return n;
  }();

  static constexpr std::array<WeightEntry, weight_count_declared> weights = [] {
    std::array<WeightEntry, weight_count_declared> w{};
    std::size_t k = 0, trainable = 0, state = 0;
    static_for<layer_count>([&](auto i) {
      for (const WeightDecl& d : type_list_at<i, layers>::weights(shapes[wiring[i].first])) {
        std::size_t& next = d.trainable ? trainable : state;
        w[k++] = {i, d, next};
        next += d.size();
      }
    });
    return w;
  }();

  /// Trainable values (what the optimizer updates) and non-trainable ones.
  static constexpr std::size_t parameter_count = [] {
    std::size_t n = 0;
    for (const WeightEntry& e : weights) n += e.decl.trainable ? e.decl.size() : 0;
    return n;
  }();
  static constexpr std::size_t state_count = [] {
    std::size_t n = 0;
    for (const WeightEntry& e : weights) n += e.decl.trainable ? 0 : e.decl.size();
    return n;
  }();
  /// Every weight's values, trainable or not: what get_weights holds (see join_weights).
  static constexpr std::size_t weight_count = parameter_count + state_count;
  static_assert(parameter_count > 0, "Model: the network has no trainable parameters");

  /// Trainable values of layer `layer`, and where they start.
  static constexpr std::size_t layer_parameter_count(std::size_t layer) {
    return detail::layer_weight_count(weights, layer, true);
  }
  static constexpr std::size_t layer_state_count(std::size_t layer) {
    return detail::layer_weight_count(weights, layer, false);
  }
  static constexpr std::size_t layer_parameter_offset(std::size_t layer) {
    std::size_t n = 0;
    for (const WeightEntry& e : weights)
      if (e.layer < layer && e.decl.trainable) n += e.decl.size();
    return n;
  }
  static constexpr std::size_t layer_state_offset(std::size_t layer) {
    std::size_t n = 0;
    for (const WeightEntry& e : weights)
      if (e.layer < layer && !e.decl.trainable) n += e.decl.size();
    return n;
  }

  // Nodes ------------------------------------------------------------------------------------

  /// The node that computes shapes[s] (a view passes its input's through), -1 for the input.
  static constexpr std::array<int, layer_count + 1> producers = [] {
    std::array<int, layer_count + 1> p{};
    p[0] = -1;
    int node = 0;
    for (std::size_t i = 0; i < layer_count; ++i)
      p[i + 1] = is_view[i] ? p[wiring[i].first] : node++;
    return p;
  }();

  static constexpr std::array<NodeInfo, depth> nodes = [] {
    std::array<NodeInfo, depth> n{};
    std::size_t k = 0;
    static_for<layer_count>([&](auto i) {
      using L = type_list_at<i, layers>;
      if constexpr (!L::is_view) {
        NodeInfo& node = n[k++];
        node.layer = i;
        node.sources[0] = producers[wiring[i].first];
        if (wiring[i].second != LayerInputs::no_input) {
          node.sources[1] = producers[wiring[i].second];
          node.input_count = 2;
        }
        node.in = shapes[wiring[i].first];
        node.out = shapes[i + 1];
        node.activation = L::activation::kind;
        node.recompute = is_recompute_v<typename L::activation>;
        node.reads = L::backward_reads;
        node.parameters = layer_parameter_count(i);
        node.parameter_offset = layer_parameter_offset(i);
        node.state = layer_state_count(i);
        node.state_offset = layer_state_offset(i);
        static_assert(saved_decl_count_v<L> <= 2,
                      "ModelSpec: a layer may save at most two buffers");
        constexpr std::size_t saved_count = saved_decl_count_v<L>;
        if constexpr (saved_count != 0) {
          const auto saved = L::saved(shapes[wiring[i].first]);
          for (std::size_t s = 0; s < saved.size(); ++s) node.saved[s] = saved[s];
        }
        node.saved_count = saved_count;
      }
    });
    if constexpr (BudgetPolicy<P>) {
      constexpr auto& chosen =
          budget_choice<ModelSpec<Net, In, typename P::precision>, P>::choice.recompute;
      for (std::size_t i = 0; i < depth; ++i) n[i].recompute = chosen[i];
    }
    return n;
  }();

  // Recompute reruns a node's forward just before the node above it needs its output, so the
  // output must go to that node only.
  static_assert(
      [] {
        for (std::size_t i = 0; i < depth; ++i)
          if (nodes[i].recompute && !output_only_to_next(nodes, i)) return false;
        return true;
      }(),
      "Recompute: this layer's output is read by a residual's Add or by both branches of a "
      "Residual; recompute a layer inside a block whose output only the next layer reads");

  /// The activation of the node that is node `n`'s input `k` (Linear for the model's input):
  /// the derivative node `n`'s input gradient applies.
  static constexpr ActivationKind input_activation(std::size_t n, std::size_t k = 0) {
    const int j = nodes[n].sources[k];
    return j < 0 ? ActivationKind::linear : nodes[std::size_t(j)].activation;
  }

  /// The layer type of node `N`.
  template <std::size_t N>
  using node_layer = type_list_at<nodes[N].layer, layers>;

  /// dims[0] is the input's size; dims[i + 1] is node i's output size (values per sample).
  static constexpr std::array<std::size_t, depth + 1> dims = [] {
    std::array<std::size_t, depth + 1> d{};
    d[0] = In::features;
    for (std::size_t i = 0; i < depth; ++i) d[i + 1] = nodes[i].out.size();
    return d;
  }();

  static constexpr std::array<ActivationKind, depth> activations = [] {
    std::array<ActivationKind, depth> a{};
    for (std::size_t i = 0; i < depth; ++i) a[i] = nodes[i].activation;
    return a;
  }();

  static constexpr std::size_t inputs = dims.front();
  static constexpr std::size_t outputs = dims.back();
  static_assert(shapes[layer_count].rank == 1,
                "Model: the network's output is an image; end it with Flatten or "
                "GlobalAveragePooling2D and a Dense layer");

  /// Node i's first and second weights (a Dense or Conv2D kernel and bias).
  static constexpr std::size_t layer_parameters(std::size_t node) { return nodes[node].parameters; }
  static constexpr std::size_t kernel_offset(std::size_t node) {
    return nodes[node].parameter_offset;
  }
  static constexpr std::size_t kernel_size(std::size_t node) {
    for (const WeightEntry& e : weights)
      if (e.layer == nodes[node].layer && e.decl.trainable) return e.decl.size();
    return 0;
  }
  static constexpr std::size_t bias_offset(std::size_t node) {
    return kernel_offset(node) + kernel_size(node);
  }

  static constexpr bool ends_in_softmax = activations[depth - 1] == ActivationKind::softmax;

  static constexpr std::array<std::string_view, layer_count> layer_kinds = [] {
    std::array<std::string_view, layer_count> k{};
    static_for<layer_count>([&](auto i) { k[i] = type_list_at<i, layers>::name; });
    return k;
  }();
  static constexpr std::array<std::string_view, layer_count> layer_classes = [] {
    std::array<std::string_view, layer_count> k{};
    static_for<layer_count>([&](auto i) { k[i] = type_list_at<i, layers>::class_name; });
    return k;
  }();

  /// These tables as values (SpecTables), for code that need not be compiled per model.
  static constexpr SpecTables tables() {
    return {shapes, layer_kinds, layer_classes, nodes, weights, wiring};
  }
  /// Keras's layer names, numbered per kind: "dense", "dense_1", "conv2d", ...
  static std::string layer_name(std::size_t layer) { return tables().layer_name(layer); }
  /// The Keras name of node `node`'s layer.
  static std::string node_name(std::size_t node) { return tables().node_name(node); }
};

}  // namespace memopt
