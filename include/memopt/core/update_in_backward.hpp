#pragma once
// UpdateInBackward<Policy>: a precision policy that also moves the optimizer into backward.
// Each layer's parameters are updated as soon as backward has written that layer's weight
// gradient, so no step holds every gradient at once: the plan gives each layer's gradient a
// buffer of its own that dies at its update (plan/step_plans.hpp), and the arena shrinks by
// the whole gradient buffer less the largest layer's. PyTorch documents the same trick with
// per-parameter hooks ("How to save memory by fusing the optimizer step into the backward
// pass"); here the plan proves the saving at compile time.

#include <string>
#include <string_view>

#include "memopt/core/policy.hpp"

namespace memopt {

namespace detail {
// MemoryBudget<..., UpdateInBackward<P>> is the spelling that plans the budget with the
// smaller gradients; the other order would plan it without them.
template <class P>
concept StatesBudget = requires {
  typename P::precision;
};
}  // namespace detail

/// The precision of `P`, with every layer's parameters updated in backward, as soon as its
/// gradient is final (opt-in; float32 and mixed_bfloat16):
///
/// ```cpp
/// using Fused = mo::Model<Net, mo::Input<784>, mo::UpdateInBackward<>>;
/// Fused fused{42};  // Net: Dense<128, ReLU>, Dense<10, Softmax>; trains as any Model
/// static_assert(Fused::gradient_bytes(32) == (784 * 128 + 128) * 4);  // layer 1's alone
/// ```
///
/// The weights after each step are the same bits as the ordinary step's. What needs every
/// gradient before the first update cannot be: mixed_float16's dynamic loss scale (it skips a
/// step whose gradients are not all finite) fails to compile; global_clipnorm and
/// gradient_accumulation_steps raise at compile(), data parallelism at fit().
template <Policy P = float32>
struct UpdateInBackward : P {
  static_assert(!P::loss_scaling,
                "UpdateInBackward: a dynamic loss scale (mixed_float16) skips every update of a "
                "step when any gradient is not finite, which is known only after the last layer's "
                "gradient, when the layers above are already updated; use "
                "UpdateInBackward<mo::mixed_bfloat16> or <mo::float32>");
  static_assert(!detail::StatesBudget<P>,
                "UpdateInBackward: write MemoryBudget<Bytes, Batch, UpdateInBackward<P>>, so that "
                "the budget is planned with the per-layer gradients");
  using ordinary = P;  // the same policy with the optimizer after backward
  static constexpr bool update_in_backward = true;
};

namespace detail {
/// Why UpdateInBackward refuses a data-parallel fit (raised by Model's fit and the CPU
/// executor), and gradient accumulation (raised at compile()).
inline constexpr std::string_view update_in_backward_data_parallel =
    "fit: UpdateInBackward cannot train data-parallel (FitOptions::communicator): each layer's "
    "update needs the gradient summed over every rank, which the layers above it would wait "
    "for; train on one rank, or drop UpdateInBackward";
inline std::string update_in_backward_accumulation(std::string_view optimizer, long long steps) {
  return "Model::compile: " + std::string(optimizer) +
         "'s gradient_accumulation_steps = " + std::to_string(steps) +
         " applies the mean of several batches' gradients, which UpdateInBackward never keeps "
         "(each layer is updated from its own batch's gradient); drop one of the two";
}
}  // namespace detail

/// Whether policy `P` updates the parameters inside backward (UpdateInBackward, alone or
/// under a MemoryBudget).
template <class P>
inline constexpr bool updates_in_backward_v = [] {
  if constexpr (requires { P::update_in_backward; })
    return static_cast<bool>(P::update_in_backward);
  else
    return false;
}();

}  // namespace memopt
