#pragma once
// The training and inference plans of a model: its buffers, lifetimes and arena offsets.

#include <cstddef>
#include <cstdint>

#include "memopt/layers/activation.hpp"
#include "memopt/plan/buffer.hpp"
#include "memopt/plan/memory_plan.hpp"
#include "memopt/plan/offsets.hpp"
#include "memopt/plan/schedule.hpp"

namespace memopt::plan {

/// The most buffers a training step of `depth` layers has.
constexpr std::size_t max_training_buffers(std::size_t depth) { return 3 * depth + 3; }

/// Bytes of the per-step scalars: loss sum, correct count, finite flag, padding.
inline constexpr std::size_t step_scalar_bytes = 16;

/// Every buffer of one training step at `batch` rows, placed in one arena.
/// A plan for batch B serves any smaller batch: each buffer holds `rows x width` values
/// sample after sample, so a partial batch uses a prefix.
///
/// ```cpp
/// constexpr auto p = mo::plan::training_plan<Spec>(32);
/// static_assert(p.is_valid());
/// ```
template <class Spec>
constexpr MemoryPlan<max_training_buffers(Spec::depth)> training_plan(std::size_t batch) {
  constexpr std::size_t depth = Spec::depth;
  constexpr std::size_t cs = sizeof(typename Spec::compute_type);
  const TrainingSchedule s{static_cast<int>(depth)};
  MemoryPlan<max_training_buffers(depth)> p;
  p.steps = s.steps();
  const auto rows = [&](std::size_t width, std::size_t elem) { return batch * width * elem; };

  p.add({BufferRole::input, -1, rows(Spec::dims[0], cs), s.forward(0), s.backward(0)});
  p.add({BufferRole::labels, -1, rows(1, sizeof(std::int32_t)), s.forward(0), s.loss()});
  for (std::size_t i = 0; i + 1 < depth; ++i) {
    const int l = static_cast<int>(i);
    const std::size_t bytes = rows(Spec::dims[i + 1], cs);
    p.add({BufferRole::activation, l, bytes, s.forward(i), s.backward(i + 1)});
    if (Spec::activations[i] == ActivationKind::gelu)
      p.add({BufferRole::pre_activation, l, bytes, s.forward(i), s.backward(i + 1)});
    p.add({BufferRole::activation_grad, l, bytes, s.backward(i + 1), s.backward(i)});
  }
  const int last = static_cast<int>(depth - 1);
  p.add({BufferRole::logits, last, rows(Spec::outputs, sizeof(float)), s.forward(depth - 1),
         s.backward(depth - 1)});
  if (cs != sizeof(float))
    p.add({BufferRole::logits_grad, last, rows(Spec::outputs, cs), s.loss(),
           s.backward(depth - 1)});
  p.add({BufferRole::parameter_grads, -1, Spec::parameter_count * sizeof(float),
         s.backward(depth - 1), s.optimizer()});
  p.add({BufferRole::step_scalars, -1, step_scalar_bytes, s.loss(), s.optimizer()});
  return assign_offsets(p);
}

/// The inference (predict) plan: a chain needs only two ping-pong buffers and the output.
template <class Spec>
constexpr MemoryPlan<Spec::depth + 1> inference_plan(std::size_t batch) {
  constexpr std::size_t depth = Spec::depth;
  constexpr std::size_t cs = sizeof(typename Spec::compute_type);
  const InferenceSchedule s{static_cast<int>(depth)};
  MemoryPlan<depth + 1> p;
  p.steps = s.steps();
  p.add({BufferRole::input, -1, batch * Spec::dims[0] * cs, s.forward(0), s.forward(0)});
  for (std::size_t i = 0; i + 1 < depth; ++i)
    p.add({BufferRole::activation, static_cast<int>(i), batch * Spec::dims[i + 1] * cs,
           s.forward(i), s.forward(i + 1)});
  p.add({BufferRole::logits, static_cast<int>(depth - 1), batch * Spec::outputs * sizeof(float),
         s.forward(depth - 1), s.forward(depth - 1)});
  return assign_offsets(p);
}

}  // namespace memopt::plan
