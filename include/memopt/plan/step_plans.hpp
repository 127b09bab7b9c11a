#pragma once
// The training and inference plans of a model: its buffers, lifetimes and arena offsets.
//
// Everything here is `constexpr`: a model's plan for a batch size is a compile-time value.
// The plans are built from a `Graph`, the nodes of a model as plain data (ModelSpec::nodes):
// their sizes, activations, weights and what each declares it saves and reads in backward.
// Nothing here knows what a convolution or a pooling is. `Chain`, a chain of dense layers by
// widths, builds a Graph without a model type, so that tests can plan thousands of shapes in
// one constant evaluation.

#include <array>
#include <cstddef>
#include <cstdint>

#include "memopt/core/type_list.hpp"
#include "memopt/core/update_in_backward.hpp"
#include "memopt/layers/activation.hpp"
#include "memopt/layers/layer.hpp"
#include "memopt/layers/recompute.hpp"
#include "memopt/model/spec.hpp"
#include "memopt/plan/aux_layout.hpp"
#include "memopt/plan/buffer.hpp"
#include "memopt/plan/memory_plan.hpp"
#include "memopt/plan/offsets.hpp"
#include "memopt/plan/schedule.hpp"

namespace memopt::plan {

/// The nodes of a model as the planner sees them.
template <std::size_t MaxDepth>
struct Graph {
  std::size_t depth = 0;
  std::array<NodeInfo, MaxDepth> nodes{};
  std::size_t compute_bytes = sizeof(float);  // 4 under float32, 2 under 16-bit policies
  /// Each node's parameters are updated right after its last backward step
  /// (UpdateInBackward), so each node's gradient is a buffer of its own that dies there.
  bool update_in_backward = false;

  constexpr std::size_t parameter_count() const {
    std::size_t n = 0;
    for (std::size_t i = 0; i < depth; ++i) n += nodes[i].parameters;
    return n;
  }
  constexpr bool has_weight_grad(std::size_t i) const { return nodes[i].parameters > 0; }
  /// Whether a node reads another than the node before it: a model with residual blocks.
  constexpr bool has_branches() const {
    for (std::size_t i = 0; i < depth; ++i)
      if (nodes[i].input_count > 1 || nodes[i].sources[0] != static_cast<int>(i) - 1) return true;
    return false;
  }
  /// Whether node `j` (-1: the model's input) is input `k` of node `c`.
  constexpr bool reads(std::size_t c, int j, std::size_t k) const {
    return k < nodes[c].input_count && nodes[c].sources[k] == j;
  }
  constexpr bool reads(std::size_t c, int j) const { return reads(c, j, 0) || reads(c, j, 1); }
  /// Per node, whether it has a backward step: parameters of its own, or below it (a node it
  /// reads, or a node that one reads, and so on). One pass: each node reads only earlier ones.
  constexpr std::array<bool, MaxDepth> backward_nodes() const {
    std::array<bool, MaxDepth> b{};
    for (std::size_t j = 0; j < depth; ++j) b[j] = has_weight_grad(j) || reads_backward(b, j);
    return b;
  }
  /// Whether node i reads a node for which `backward` (backward_nodes()) is set.
  constexpr bool reads_backward(const std::array<bool, MaxDepth>& backward, std::size_t i) const {
    for (std::size_t k = 0; k < nodes[i].input_count; ++k)
      if (nodes[i].sources[k] >= 0 && backward[std::size_t(nodes[i].sources[k])]) return true;
    return false;
  }
  /// Node i passes a gradient down when a node it reads has a backward step.
  constexpr bool has_input_grad(std::size_t i) const { return reads_backward(backward_nodes(), i); }
  constexpr bool has_backward(std::size_t i) const {
    return has_weight_grad(i) || has_input_grad(i);
  }
  /// Whether input `k` of node `c` takes a gradient: it is a node with a backward step.
  constexpr bool passes_gradient(std::size_t c, std::size_t k) const {
    return k < nodes[c].input_count && nodes[c].sources[k] >= 0 &&
           has_backward(std::size_t(nodes[c].sources[k]));
  }
  /// Whether node `c`'s input gradient for its input `k` is the first to reach that node, and
  /// so writes its output gradient; a later one (a residual's other branch, run after it in
  /// backward) is summed into it. Backward runs the nodes from the last down.
  constexpr bool writes_gradient_first(std::size_t c, std::size_t k) const {
    const int j = nodes[c].sources[k];
    for (std::size_t d = c + 1; d < depth; ++d)
      if (reads(d, j)) return false;
    return k == 0 || nodes[c].sources[0] != j;
  }
  /// Node i recomputes its output by running its forward again (not GELU's element-wise pass).
  constexpr bool recomputes_product(std::size_t i) const {
    return i + 1 < depth && nodes[i].recompute && nodes[i].activation != ActivationKind::gelu;
  }
  /// The node whose backward runs right after node i's recomputation: a run of
  /// product-recomputed nodes is recomputed together, before the node above it.
  constexpr std::size_t recompute_host(std::size_t i) const {
    std::size_t h = i + 1;
    while (recomputes_product(h)) ++h;
    return h;
  }
};

/// A chain of `depth` dense layers, as a Graph without a model type.
///
/// ```cpp
/// mo::plan::Chain<2> c{.depth = 2, .dims = {784, 128, 10},
///                      .activations = {mo::ActivationKind::relu, mo::ActivationKind::softmax},
///                      .compute_bytes = 2};
/// auto p = mo::plan::training_plan_of(c, 32);
/// ```
template <std::size_t MaxDepth>
struct Chain {
  std::size_t depth = 0;
  std::array<std::size_t, MaxDepth + 1> dims{};  // input width, then each layer's units
  std::array<ActivationKind, MaxDepth> activations{};
  std::array<bool, MaxDepth> recompute{};     // per layer: Recompute<...>
  std::size_t compute_bytes = sizeof(float);  // 4 under float32, 2 under 16-bit policies

  constexpr Graph<MaxDepth> graph() const {
    Graph<MaxDepth> g;
    g.depth = depth;
    g.compute_bytes = compute_bytes;
    std::size_t offset = 0;
    for (std::size_t i = 0; i < depth; ++i) {
      NodeInfo& n = g.nodes[i];
      n.layer = i;
      n.sources[0] = static_cast<int>(i) - 1;
      n.in = vector_shape(dims[i]);
      n.out = vector_shape(dims[i + 1]);
      n.activation = activations[i];
      n.recompute = recompute[i];
      n.reads.weight_grad_reads_input = true;
      n.parameters = dims[i] * dims[i + 1] + dims[i + 1];
      n.parameter_offset = offset;
      offset += n.parameters;
    }
    return g;
  }
  constexpr std::size_t parameter_count() const { return graph().parameter_count(); }
  constexpr bool recomputes_product(std::size_t i) const {
    return i + 1 < depth && recompute[i] && activations[i] != ActivationKind::gelu;
  }
  constexpr std::size_t recompute_host(std::size_t i) const {
    std::size_t h = i + 1;
    while (recomputes_product(h)) ++h;
    return h;
  }
};

/// The Graph of a ModelSpec.
template <class Spec>
constexpr Graph<Spec::depth> graph_of() {
  Graph<Spec::depth> g;
  g.depth = Spec::depth;
  for (std::size_t i = 0; i < Spec::depth; ++i) g.nodes[i] = Spec::nodes[i];
  g.compute_bytes = sizeof(typename Spec::compute_type);
  g.update_in_backward = updates_in_backward_v<typename Spec::policy>;
  return g;
}

/// The Chain of a ModelSpec made of Dense layers only (what the CUDA backend runs today).
template <class Spec>
constexpr Chain<Spec::depth> chain_of() {
  Chain<Spec::depth> c;
  c.depth = Spec::depth;
  for (std::size_t i = 0; i <= Spec::depth; ++i) c.dims[i] = Spec::dims[i];
  for (std::size_t i = 0; i < Spec::depth; ++i) {
    c.activations[i] = Spec::nodes[i].activation;
    c.recompute[i] = Spec::nodes[i].recompute;
  }
  c.compute_bytes = sizeof(typename Spec::compute_type);
  return c;
}

/// The steps of a training step of `g`, in order (see schedule.hpp): each node's forward, the
/// loss, then from the last node down any recomputation it hosts, its weight gradient (nodes
/// with parameters) and its input gradient (nodes above one with parameters), the optimizer.
template <std::size_t D>
constexpr Schedule<max_training_steps(D)> training_schedule_of(const Graph<D>& g) {
  Schedule<max_training_steps(D)> s;
  const int depth = static_cast<int>(g.depth);
  const std::array<bool, D> backward = g.backward_nodes();
  for (int i = 0; i < depth; ++i) s.add({StepKind::forward, i});
  s.add({StepKind::loss, -1});
  for (int i = depth - 1; i >= 0; --i) {
    const auto u = static_cast<std::size_t>(i);
    for (int j = 0; j < i; ++j)
      if (g.nodes[std::size_t(j)].recompute && g.recompute_host(std::size_t(j)) == u)
        s.add({StepKind::recompute, j});
    if (g.has_weight_grad(u)) s.add({StepKind::weight_grad, i});
    if (g.reads_backward(backward, u)) s.add({StepKind::input_grad, i});
  }
  s.add({StepKind::optimizer, -1});
  return s;
}
template <std::size_t D>
constexpr Schedule<max_training_steps(D)> training_schedule_of(const Chain<D>& c) {
  return training_schedule_of(c.graph());
}

/// The most buffers a training step of `depth` nodes has: seven per node (its output, a
/// recomputed copy, ReLU's mask or GELU's z, two saved, its output gradient and, under
/// UpdateInBackward, its parameters' gradient) and five of the whole step. A residual's Add
/// keeps only its output and its gradient, which leaves room for the one branch_grad each Add
/// adds.
constexpr std::size_t max_training_buffers(std::size_t depth) {
  return 7 * depth + 5;
}

/// Bytes of the per-step scalars: loss sum, correct count, finite flag, padding.
inline constexpr std::size_t step_scalar_bytes = 16;

/// The buffers of a training step of `g` at `batch` rows with their lifetimes, not yet
/// placed. Who reads what, and so when each buffer dies:
///
/// - a hidden node's output is read by the forward of each node that reads it (the next one in
///   a chain; a residual's branch point has two readers, a block's output its Add), by their
///   backward steps that declare they read their input (a Dense's dW), by their
///   recomputation, and by their dX when the node's activation derivative is computed from its
///   output (Sigmoid, Tanh); ReLU's derivative reads a 1-bit mask instead, GELU's reads z
///   (`pre_activation`, leading dimension rounded to 8 as cuBLASLt wants): the readers' dX
///   apply them;
/// - under Recompute the output lives only until the next forward, and a second copy from the
///   node's recompute step until its last backward reader;
/// - what a node saves for itself lives from its forward to its last backward step;
/// - an output gradient is written by the first dX above it and read by its node's dW and dX;
///   a second reader's dX (a residual's other branch) writes a `branch_grad` of its own,
///   which the executor adds into it at once;
/// - the logits (float32) hold z, then p, then dL/dz in place; under 16-bit policies the loss
///   writes dL/dz as `logits_grad` in the compute type and the logits die at the loss.
template <std::size_t D>
[[gnu::cold]] constexpr MemoryPlan<max_training_buffers(D)> training_buffers_of(const Graph<D>& g,
                                                                                std::size_t batch) {
  const auto s = training_schedule_of(g);
  const std::size_t depth = g.depth;
  const std::size_t cs = g.compute_bytes;
  const bool narrow = cs != sizeof(float);
  // Each step's index by kind and node (the loss and the optimizer under D), -1 if absent,
  // found in one pass over the schedule rather than a search per lookup.
  int index[6][D + 1];
  for (auto& row : index)
    for (int& v : row) v = -1;
  for (int k = 0; k < s.count; ++k)
    index[static_cast<int>(s[k].kind)][s[k].layer < 0 ? D : static_cast<std::size_t>(s[k].layer)] =
        k;
  const auto at = [&](StepKind k, std::size_t node) { return index[static_cast<int>(k)][node]; };
  const auto later = [](int a, int b) { return a > b ? a : b; };
  const auto values = [&](std::size_t width) { return batch * width * cs; };
  const auto saved_bytes = [&](const SavedDecl& d) {
    const std::size_t unit = d.unit == Unit::compute ? cs : d.unit == Unit::f32 ? 4 : 1;
    return (d.per_sample * batch + d.fixed) * unit;
  };
  // The last backward step of node i that reads its own output gradient or saved buffers.
  const auto last_backward = [&](std::size_t i) {
    return later(at(StepKind::input_grad, i), at(StepKind::weight_grad, i));
  };
  // The last step that reads input k of node n.
  const auto last_input_read = [&](std::size_t n, std::size_t k) {
    int last = at(StepKind::forward, n);
    if (k != 0) return last;  // Add's backward reads neither input
    if (g.nodes[n].reads.weight_grad_reads_input) last = later(last, at(StepKind::weight_grad, n));
    if (g.nodes[n].reads.input_grad_reads_input) last = later(last, at(StepKind::input_grad, n));
    return later(last, at(StepKind::recompute, n));
  };
  const std::array<bool, D> backward = g.backward_nodes();
  const auto add_saved = [&](MemoryPlan<max_training_buffers(D)>& p, std::size_t i) {
    if (!backward[i]) return;  // nothing reads them: the forward pass skips them
    for (std::size_t k = 0; k < g.nodes[i].saved_count; ++k)
      p.add({BufferRole::saved, static_cast<int>(i), saved_bytes(g.nodes[i].saved[k]),
             at(StepKind::forward, i), last_backward(i), 0, static_cast<int>(k)});
  };
  // What the readers of each output do with it, in one pass over the nodes (entry j + 1 for
  // node j's output, entry 0 for the model's input): the last step that reads it, the last
  // forward that reads it, the first and last dX that apply its f', the last dX that needs
  // ReLU's mask for it, and its last reader, whose dX writes its gradient first.
  struct Readers {
    int last_read = 0, last_forward = 0, first_dx = -1, last_dx = -1, mask_dx = -1, last = -1;
  };
  Readers readers[D + 1]{};
  for (std::size_t c = 0; c < depth; ++c)
    for (std::size_t k = 0; k < g.nodes[c].input_count; ++k) {
      const int j = g.nodes[c].sources[k];
      Readers& r = readers[j + 1];
      const ActivationKind act =
          j < 0 ? ActivationKind::linear : g.nodes[std::size_t(j)].activation;
      const int dx = at(StepKind::input_grad, c);
      r.last_read = later(r.last_read, last_input_read(c, k));
      if (act == ActivationKind::sigmoid || act == ActivationKind::tanh)
        r.last_read = later(r.last_read, dx);
      r.last_forward = later(r.last_forward, at(StepKind::forward, c));
      r.last = static_cast<int>(c);
      if (dx < 0) continue;
      r.first_dx = r.first_dx < 0 ? dx : (dx < r.first_dx ? dx : r.first_dx);
      r.last_dx = later(r.last_dx, dx);
      if (k != 0 || !g.nodes[c].reads.input_grad_carries_relu_below)
        r.mask_dx = later(r.mask_dx, dx);
    }

  MemoryPlan<max_training_buffers(D)> p;
  p.steps = s.count;
  p.add({BufferRole::input, -1, values(g.nodes[0].in.size()), 0, readers[0].last_read});
  p.add({BufferRole::labels, -1, batch * sizeof(std::int32_t), 0, at(StepKind::loss, D)});
  for (std::size_t i = 0; i + 1 < depth; ++i) {
    const int l = static_cast<int>(i);
    const std::size_t width = g.nodes[i].out.size();
    const ActivationKind act = g.nodes[i].activation;
    const Readers& r = readers[i + 1];
    const int fwd = at(StepKind::forward, i);
    const bool mask = act == ActivationKind::relu && r.mask_dx >= 0;
    if (g.nodes[i].recompute) {
      const int re = at(StepKind::recompute, i);
      p.add({BufferRole::activation, l, values(width), fwd, r.last_forward});
      p.add({BufferRole::recomputed_activation, l, values(width), re, r.last_read});
      if (mask) p.add({BufferRole::relu_mask, l, relu_mask_bytes(width, batch), re, r.mask_dx});
    } else {
      p.add({BufferRole::activation, l, values(width), fwd, r.last_read});
      if (mask) p.add({BufferRole::relu_mask, l, relu_mask_bytes(width, batch), fwd, r.mask_dx});
    }
    if (act == ActivationKind::gelu && r.last_dx >= 0)
      p.add({BufferRole::pre_activation, l, batch * gelu_aux_ld(width) * cs, fwd, r.last_dx});
    add_saved(p, i);
    if (backward[i])
      p.add({BufferRole::activation_grad, l, values(width), r.first_dx, last_backward(i)});
  }
  // A second gradient of an output, from a reader that is not its last (a residual's block,
  // whose Add has written the gradient first), lives for that reader's dX alone.
  for (std::size_t c = 0; c < depth; ++c)
    for (std::size_t k = 0; k < g.nodes[c].input_count; ++k) {
      const int j = g.nodes[c].sources[k];
      if (j < 0 || !backward[std::size_t(j)]) continue;
      const bool first =
          readers[j + 1].last == static_cast<int>(c) && (k == 0 || g.nodes[c].sources[0] != j);
      if (first) continue;
      const int dx = at(StepKind::input_grad, c);
      p.add({BufferRole::branch_grad, static_cast<int>(c),
             values(g.nodes[std::size_t(j)].out.size()), dx, dx, 0, static_cast<int>(k)});
    }
  const std::size_t last = depth - 1;
  const int li = static_cast<int>(last);
  const int loss = at(StepKind::loss, D);
  const int optimizer = at(StepKind::optimizer, D);
  const int grad_read = later(last_backward(last), loss);
  const std::size_t outputs = g.nodes[last].out.size();
  p.add({BufferRole::logits, li, batch * outputs * sizeof(float), at(StepKind::forward, last),
         narrow ? loss : grad_read});
  if (narrow) p.add({BufferRole::logits_grad, li, values(outputs), loss, grad_read});
  add_saved(p, last);
  if (g.update_in_backward) {
    // Written from the node's dW (BatchNormalization's in its dX) and applied by the update
    // that follows its last backward step.
    for (std::size_t i = 0; i < depth; ++i)
      if (g.has_weight_grad(i))
        p.add({BufferRole::parameter_grads, static_cast<int>(i),
               g.nodes[i].parameters * sizeof(float), at(StepKind::weight_grad, i),
               last_backward(i)});
  } else {
    int first_weight_grad = optimizer;
    for (int k = s.count - 1; k >= 0; --k)
      if (s[k].kind == StepKind::weight_grad) first_weight_grad = k;
    p.add({BufferRole::parameter_grads, -1, g.parameter_count() * sizeof(float), first_weight_grad,
           optimizer});
  }
  p.add({BufferRole::step_scalars, -1, step_scalar_bytes, loss, optimizer});
  return p;
}
template <std::size_t D>
constexpr MemoryPlan<max_training_buffers(D)> training_buffers_of(const Chain<D>& c,
                                                                  std::size_t batch) {
  return training_buffers_of(c.graph(), batch);
}

/// The most bytes of parameter gradients alive at one step of plan `p`: every parameter's
/// after backward, or under UpdateInBackward the largest node's (each dies at its update).
template <std::size_t N>
constexpr std::size_t gradient_bytes(const MemoryPlan<N>& p) {
  std::size_t most = 0;
  for (int step = 0; step < p.steps; ++step) {
    std::size_t live = 0;
    for (const Buffer& b : p)
      if (b.role == BufferRole::parameter_grads && b.first <= step && step <= b.last)
        live += b.bytes;
    most = live > most ? live : most;
  }
  return most;
}

/// Every buffer of one training step of `g` at `batch` rows, placed in one arena.
template <std::size_t D>
constexpr MemoryPlan<max_training_buffers(D)> training_plan_of(const Graph<D>& g,
                                                               std::size_t batch) {
  return assign_offsets(training_buffers_of(g, batch));
}
template <std::size_t D>
constexpr MemoryPlan<max_training_buffers(D)> training_plan_of(const Chain<D>& c,
                                                               std::size_t batch) {
  return training_plan_of(c.graph(), batch);
}

/// The inference (predict) plan of `g`: each output lives from its node to the last node that
/// reads it, so a chain needs two ping-pong buffers and the output.
template <std::size_t D>
constexpr MemoryPlan<D + 1> inference_plan_of(const Graph<D>& g, std::size_t batch) {
  const std::size_t depth = g.depth;
  const std::size_t cs = g.compute_bytes;
  int last_reader[D + 1]{};  // entry j + 1: the last node that reads node j's output
  for (std::size_t c = 0; c < depth; ++c)
    for (std::size_t k = 0; k < g.nodes[c].input_count; ++k)
      last_reader[g.nodes[c].sources[k] + 1] = static_cast<int>(c);
  MemoryPlan<D + 1> p;
  p.steps = static_cast<int>(depth);
  p.add({BufferRole::input, -1, batch * g.nodes[0].in.size() * cs, 0, last_reader[0]});
  for (std::size_t i = 0; i + 1 < depth; ++i)
    p.add({BufferRole::activation, static_cast<int>(i), batch * g.nodes[i].out.size() * cs,
           static_cast<int>(i), last_reader[i + 1]});
  p.add({BufferRole::logits, static_cast<int>(depth - 1),
         batch * g.nodes[depth - 1].out.size() * sizeof(float), static_cast<int>(depth - 1),
         static_cast<int>(depth - 1)});
  return assign_offsets(p);
}
template <std::size_t D>
constexpr MemoryPlan<D + 1> inference_plan_of(const Chain<D>& c, std::size_t batch) {
  return inference_plan_of(c.graph(), batch);
}

/// The steps of `Spec`'s training step.
template <class Spec>
constexpr Schedule<max_training_steps(Spec::depth)> training_schedule() {
  return training_schedule_of(graph_of<Spec>());
}

/// Every buffer of one training step of `Spec` at `batch` rows, placed in one arena.
/// A plan for batch B serves any smaller batch: each buffer holds `rows x width` values
/// sample after sample, so a partial batch uses a prefix.
///
/// ```cpp
/// constexpr auto p = mo::plan::training_plan<Spec>(32);
/// static_assert(p.is_valid() && p.arena_bytes == p.lower_bound_bytes());
/// ```
template <class Spec>
constexpr MemoryPlan<max_training_buffers(Spec::depth)> training_plan(std::size_t batch) {
  static_assert(!Spec::nodes[Spec::depth - 1].recompute,
                "training_plan: Recompute on the last layer saves nothing (the loss reads its "
                "outputs at once); use it on hidden layers");
  return training_plan_of(graph_of<Spec>(), batch);
}

/// The inference (predict) plan of `Spec` at `batch` rows.
template <class Spec>
constexpr MemoryPlan<Spec::depth + 1> inference_plan(std::size_t batch) {
  return inference_plan_of(graph_of<Spec>(), batch);
}

}  // namespace memopt::plan
