#pragma once
// ModelPlan<Net, Input, Policy>: a model's compile-time facts (shapes, parameters, arena bytes,
// the plans) without a backend, data, I/O or training loop. Model derives from it; a program
// that only plans includes <memopt/core.hpp> and compiles in a fraction of a second.

#include <cstddef>

#include "memopt/core/policy.hpp"
#include "memopt/model/spec.hpp"
#include "memopt/plan/step_plans.hpp"

namespace memopt {

/// The plans of `Net` on `In` under `P`: what `Model<Net, In, P, Backend>` knows before it runs.
///
/// ```cpp
/// #include <memopt/core.hpp>
/// using M = mo::ModelPlan<Net, mo::Input<784>, mo::mixed_float16>;
/// static_assert(M::arena_bytes(32) == M::lower_bound_bytes(32));
/// ```
///
/// The plans are constexpr code, so a deep model costs compile-time work that compilers cap:
/// with GCC's default -fconstexpr-ops-limit (2^25) a chain of about 250 layers plans in a
/// static_assert (200 Dense layers: 4 s). Deeper, GCC stops with "constexpr evaluation
/// operation count exceeds limit": add -fconstexpr-ops-limit=268435456. Clang's default
/// -fconstexpr-steps (2^20) stops at about 170 layers; 200 need -fconstexpr-steps=134217728.
template <class Net, class In, Policy P = float32>
struct ModelPlan {
  using spec = ModelSpec<Net, In, P>;
  using policy = P;

  static constexpr std::size_t parameter_count = spec::parameter_count;

  /// Bytes of the training arena for `batch` rows, as planned.
  static constexpr std::size_t arena_bytes(std::size_t batch) {
    return plan::training_plan<spec>(batch).arena_bytes;
  }
  /// Bytes if every buffer of the step had its own allocation.
  static constexpr std::size_t naive_bytes(std::size_t batch) {
    return plan::training_plan<spec>(batch).naive_bytes();
  }
  /// The most bytes alive at once during a step: no arena can be smaller.
  static constexpr std::size_t lower_bound_bytes(std::size_t batch) {
    return plan::training_plan<spec>(batch).lower_bound_bytes();
  }
  /// The most bytes of parameter gradients alive at once during a step, as planned: every
  /// parameter's (`parameter_count * 4`), or under UpdateInBackward the largest layer's.
  /// From the buffers' lifetimes alone (no placement), so it is cheap to static_assert.
  static constexpr std::size_t gradient_bytes(std::size_t batch) {
    return plan::gradient_bytes(plan::training_buffers_of(plan::graph_of<spec>(), batch));
  }
  /// The same three for `predict` and `evaluate`, whose plan keeps nothing for backward.
  static constexpr std::size_t inference_arena_bytes(std::size_t batch) {
    return plan::inference_plan<spec>(batch).arena_bytes;
  }
  static constexpr std::size_t inference_naive_bytes(std::size_t batch) {
    return plan::inference_plan<spec>(batch).naive_bytes();
  }
  static constexpr std::size_t inference_lower_bound_bytes(std::size_t batch) {
    return plan::inference_plan<spec>(batch).lower_bound_bytes();
  }
  /// The plans themselves: each buffer's role, layer, bytes, offset and lifetime (first and
  /// last step of `training_schedule()`).
  ///
  /// ```cpp
  /// constexpr auto p = M::training_plan(32);
  /// static_assert(p.find(mo::plan::BufferRole::activation, 0).offset % 256 == 0);
  /// ```
  static constexpr auto training_plan(std::size_t batch) {
    return plan::training_plan<spec>(batch);
  }
  static constexpr auto inference_plan(std::size_t batch) {
    return plan::inference_plan<spec>(batch);
  }
  static constexpr auto training_schedule() { return plan::training_schedule<spec>(); }
};

}  // namespace memopt
