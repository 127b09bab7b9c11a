#pragma once
// The training and inference plans of a model: its buffers, lifetimes and arena offsets.
//
// Everything here is `constexpr`: a model's plan for a batch size is a compile-time value.
// The plans are built from a `Chain`, a plain description of the layer chain (widths,
// activations, what is recomputed), so that tests can plan thousands of shapes in one
// constant evaluation without instantiating a model type for each.

#include <array>
#include <cstddef>
#include <cstdint>

#include "memopt/core/type_list.hpp"
#include "memopt/layers/activation.hpp"
#include "memopt/plan/aux_layout.hpp"
#include "memopt/plan/buffer.hpp"
#include "memopt/plan/memory_plan.hpp"
#include "memopt/plan/offsets.hpp"
#include "memopt/plan/recompute.hpp"
#include "memopt/plan/schedule.hpp"

namespace memopt::plan {

/// A chain of `depth` dense layers, as the planner sees it.
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

  constexpr std::size_t parameter_count() const {
    std::size_t n = 0;
    for (std::size_t i = 0; i < depth; ++i) n += dims[i] * dims[i + 1] + dims[i + 1];
    return n;
  }
  /// Layer i recomputes its output with a matrix product (not GELU's element-wise pass).
  constexpr bool recomputes_product(std::size_t i) const {
    return i + 1 < depth && recompute[i] && activations[i] != ActivationKind::gelu;
  }
  /// The layer whose weight gradient runs right after layer i's recomputation: a run of
  /// product-recomputed layers is recomputed together, before the layer above it.
  constexpr std::size_t recompute_host(std::size_t i) const {
    std::size_t h = i + 1;
    while (recomputes_product(h)) ++h;
    return h;
  }
};

/// The Chain of a ModelSpec.
template <class Spec>
constexpr Chain<Spec::depth> chain_of() {
  Chain<Spec::depth> c;
  c.depth = Spec::depth;
  for (std::size_t i = 0; i <= Spec::depth; ++i) c.dims[i] = Spec::dims[i];
  for (std::size_t i = 0; i < Spec::depth; ++i) c.activations[i] = Spec::activations[i];
  static_for<Spec::depth>([&](auto i) {
    c.recompute[i] = is_recompute_v<typename type_list_at<i, typename Spec::layers>::activation>;
  });
  c.compute_bytes = sizeof(typename Spec::compute_type);
  return c;
}

/// The steps of a training step of `c`, in order (see schedule.hpp).
template <std::size_t D>
constexpr Schedule<max_training_steps(D)> training_schedule_of(const Chain<D>& c) {
  Schedule<max_training_steps(D)> s;
  const int depth = static_cast<int>(c.depth);
  for (int i = 0; i < depth; ++i) s.add({StepKind::forward, i});
  s.add({StepKind::loss, -1});
  for (int i = depth - 1; i >= 0; --i) {
    for (int j = 0; j < i; ++j)
      if (c.recompute[std::size_t(j)] && c.recompute_host(std::size_t(j)) == std::size_t(i))
        s.add({StepKind::recompute, j});
    s.add({StepKind::weight_grad, i});
    if (i > 0) s.add({StepKind::input_grad, i});
  }
  s.add({StepKind::optimizer, -1});
  return s;
}

/// The most buffers a training step of `depth` layers has.
constexpr std::size_t max_training_buffers(std::size_t depth) {
  return 4 * depth + 2;
}

/// Bytes of the per-step scalars: loss sum, correct count, finite flag, padding.
inline constexpr std::size_t step_scalar_bytes = 16;

/// The buffers of a training step of `c` at `batch` rows with their lifetimes, not yet
/// placed. Who reads what, and so when each buffer dies:
///
/// - a hidden layer's output is read by the next layer's forward and dW, and by its dX when
///   the derivative is computed from the output (Sigmoid, Tanh); ReLU's dX reads the mask,
///   GELU's reads z (`pre_activation`, leading dimension rounded to 8 as cuBLASLt wants);
/// - under Recompute the output lives only until the next forward, and a second copy from
///   the layer's recompute step until its last backward reader;
/// - an activation gradient is written by the dX above it and read by its layer's dW and dX;
/// - the logits (float32) hold z, then p, then dL/dz in place; under 16-bit policies the loss
///   writes dL/dz as `logits_grad` in the compute type and the logits die at the loss.
template <std::size_t D>
constexpr MemoryPlan<max_training_buffers(D)> training_buffers_of(const Chain<D>& c,
                                                                  std::size_t batch) {
  const auto s = training_schedule_of(c);
  const std::size_t depth = c.depth;
  const std::size_t cs = c.compute_bytes;
  const bool narrow = cs != sizeof(float);
  // Each step's index by kind and layer (the loss and the optimizer under layer D), found in
  // one pass over the schedule rather than a search per lookup.
  int index[6][D + 1]{};
  for (int k = 0; k < s.count; ++k)
    index[static_cast<int>(s[k].kind)][s[k].layer < 0 ? D : static_cast<std::size_t>(s[k].layer)] =
        k;
  const auto at = [&](StepKind k, std::size_t layer) { return index[static_cast<int>(k)][layer]; };
  const auto values = [&](std::size_t width) { return batch * width * cs; };

  MemoryPlan<max_training_buffers(D)> p;
  p.steps = s.count;
  p.add({BufferRole::input, -1, values(c.dims[0]), 0, at(StepKind::weight_grad, 0)});
  p.add({BufferRole::labels, -1, batch * sizeof(std::int32_t), 0, at(StepKind::loss, D)});
  for (std::size_t i = 0; i + 1 < depth; ++i) {
    const int l = static_cast<int>(i);
    const std::size_t width = c.dims[i + 1];
    const ActivationKind act = c.activations[i];
    const bool from_output = act == ActivationKind::sigmoid || act == ActivationKind::tanh;
    // The last step that reads the output: dX above it when f' is read from it, else dW.
    const int last_read =
        from_output ? at(StepKind::input_grad, i + 1) : at(StepKind::weight_grad, i + 1);
    const int fwd = at(StepKind::forward, i);
    if (c.recompute[i]) {
      const int re = at(StepKind::recompute, i);
      p.add({BufferRole::activation, l, values(width), fwd, at(StepKind::forward, i + 1)});
      p.add({BufferRole::recomputed_activation, l, values(width), re, last_read});
      if (act == ActivationKind::relu)
        p.add({BufferRole::relu_mask, l, relu_mask_bytes(width, batch), re,
               at(StepKind::input_grad, i + 1)});
    } else {
      p.add({BufferRole::activation, l, values(width), fwd, last_read});
      if (act == ActivationKind::relu)
        p.add({BufferRole::relu_mask, l, relu_mask_bytes(width, batch), fwd,
               at(StepKind::input_grad, i + 1)});
    }
    if (act == ActivationKind::gelu)
      p.add({BufferRole::pre_activation, l, batch * gelu_aux_ld(width) * cs, fwd,
             at(StepKind::input_grad, i + 1)});
    p.add({BufferRole::activation_grad, l, values(width), at(StepKind::input_grad, i + 1),
           i == 0 ? at(StepKind::weight_grad, 0) : at(StepKind::input_grad, i)});
  }
  const std::size_t last = depth - 1;
  const int li = static_cast<int>(last);
  const int grad_read =
      depth > 1 ? at(StepKind::input_grad, last) : at(StepKind::weight_grad, last);
  const int loss = at(StepKind::loss, D);
  const int optimizer = at(StepKind::optimizer, D);
  p.add({BufferRole::logits, li, batch * c.dims[depth] * sizeof(float), at(StepKind::forward, last),
         narrow ? loss : grad_read});
  if (narrow) p.add({BufferRole::logits_grad, li, values(c.dims[depth]), loss, grad_read});
  p.add({BufferRole::parameter_grads, -1, c.parameter_count() * sizeof(float),
         at(StepKind::weight_grad, last), optimizer});
  p.add({BufferRole::step_scalars, -1, step_scalar_bytes, loss, optimizer});
  return p;
}

/// Every buffer of one training step of `c` at `batch` rows, placed in one arena.
template <std::size_t D>
constexpr MemoryPlan<max_training_buffers(D)> training_plan_of(const Chain<D>& c,
                                                               std::size_t batch) {
  return assign_offsets(training_buffers_of(c, batch));
}

/// The inference (predict) plan of `c`: each output lives from its layer to the next, so a
/// chain needs two ping-pong buffers and the output.
template <std::size_t D>
constexpr MemoryPlan<D + 1> inference_plan_of(const Chain<D>& c, std::size_t batch) {
  const std::size_t depth = c.depth;
  const std::size_t cs = c.compute_bytes;
  MemoryPlan<D + 1> p;
  p.steps = static_cast<int>(depth);
  p.add({BufferRole::input, -1, batch * c.dims[0] * cs, 0, 0});
  for (std::size_t i = 0; i + 1 < depth; ++i)
    p.add({BufferRole::activation, static_cast<int>(i), batch * c.dims[i + 1] * cs,
           static_cast<int>(i), static_cast<int>(i + 1)});
  p.add({BufferRole::logits, static_cast<int>(depth - 1), batch * c.dims[depth] * sizeof(float),
         static_cast<int>(depth - 1), static_cast<int>(depth - 1)});
  return assign_offsets(p);
}

/// The steps of `Spec`'s training step.
template <class Spec>
constexpr Schedule<max_training_steps(Spec::depth)> training_schedule() {
  return training_schedule_of(chain_of<Spec>());
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
  static_assert(
      !is_recompute_v<typename type_list_at<Spec::depth - 1, typename Spec::layers>::activation>,
      "training_plan: Recompute on the last layer saves nothing (the loss reads its "
      "outputs at once); use it on hidden layers");
  return training_plan_of(chain_of<Spec>(), batch);
}

/// The inference (predict) plan of `Spec` at `batch` rows.
template <class Spec>
constexpr MemoryPlan<Spec::depth + 1> inference_plan(std::size_t batch) {
  return inference_plan_of(chain_of<Spec>(), batch);
}

}  // namespace memopt::plan
