#pragma once
// train::Executor: what Model asks of a backend's executor around the steps themselves.

#include <concepts>
#include <cstddef>
#include <cstdint>

#include "memopt/core/gradient_reducer.hpp"
#include "memopt/core/step_totals.hpp"
#include "memopt/train/loss_scale.hpp"
#include "memopt/train/optimizers/sgd.hpp"

namespace memopt::train {

namespace detail {
// A poll_losses callback, for the concept to name (a lambda there trips some front ends).
struct IgnoreLosses {
  void operator()(int /*step*/, double /*loss_sum*/, std::size_t /*samples*/) const {}
};
}  // namespace detail

/// A backend's executor for one model: its arena for up to `capacity()` rows (`prepare`), the
/// loss and accuracy sums of the steps run since `take_totals`, and the hooks fit uses. Every
/// backend answers every call, so that Model needs no probe for what one backend lacks; where
/// a backend cannot do a thing it says so in its answer:
///
/// - `check_optimizer(opt)` (static): raises, or fails to compile, for an optimizer the
///   backend cannot run; a no-op where it runs them all.
/// - `running_totals()`: the sums so far, or null where they are not known without waiting
///   for a device.
/// - `watch_losses(on)` and `poll_losses(f)`: `f(step, loss_sum, samples)` for each training
///   step finished since the last poll (step counted from 0 at `take_totals`), without
///   waiting; a device backend reports them only while watching.
/// - `synchronize(iterations, scale)`: the true step count and loss scale, where a device
///   keeps them (skipped steps); a no-op on the host.
/// - `reduces_gradients` and `set_gradient_reducer`: whether data parallelism can hand the
///   step's gradients to a reducer (distributed/bucket_reducer.hpp).
///
/// ```cpp
/// static_assert(mo::train::Executor<mo::Model<Net, mo::Input<8>>::executor_type>);
/// ```
template <class E>
concept Executor = requires(E& e, const E& ce, std::size_t n, std::int64_t& iterations,
                            DynamicLossScale& scale, GradientReducer* reducer) {
  typename E::spec;
  e.prepare(n, n);
  { ce.capacity() } -> std::convertible_to<std::size_t>;
  { e.take_totals() } -> std::same_as<StepTotals>;
  { ce.running_totals() } -> std::same_as<const StepTotals*>;
  e.watch_losses(true);
  e.poll_losses(detail::IgnoreLosses{});
  e.synchronize(iterations, scale);
  E::check_optimizer(SGD{});
  { E::reduces_gradients } -> std::convertible_to<bool>;
  e.set_gradient_reducer(reducer);
};

}  // namespace memopt::train
