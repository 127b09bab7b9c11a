#pragma once
// One training step: the plan's schedule, walked once for every backend that runs steps one
// by one. The order of the kernels lives in plan/ (training_schedule); this loop only turns
// each scheduled step into the executor's call for it, unrolled at compile time.

#include <cstddef>
#include <cstdint>

#include "memopt/core/dtype.hpp"
#include "memopt/core/type_list.hpp"
#include "memopt/plan/schedule.hpp"
#include "memopt/plan/step_plans.hpp"
#include "memopt/train/loss.hpp"

namespace memopt::train {

/// An executor that runs a training step kernel by kernel, as the schedule orders them.
template <class E>
concept SteppedExecutor = requires(E& e, const float* x, const std::int32_t* y, std::size_t n) {
  typename E::spec;
  e.begin_step(x, y, n, std::int64_t{0});
  e.loss(1.0f);
  e.template forward<0>();
};

namespace detail {

// Whether E updates each node's parameters in backward (UpdateInBackward).
template <class E>
inline constexpr bool updates_in_backward = [] {
  if constexpr (requires { E::updates_in_backward; })
    return static_cast<bool>(E::updates_in_backward);
  else
    return false;
}();

// Whether step k of `schedule` is the last backward step (dW or dX) of its node.
template <class Schedule>
constexpr bool ends_backward_of_node(const Schedule& schedule, int k) {
  const auto backward = [](plan::StepKind kind) {
    return kind == plan::StepKind::weight_grad || kind == plan::StepKind::input_grad;
  };
  if (!backward(schedule[k].kind)) return false;
  return k + 1 >= schedule.count || !backward(schedule[k + 1].kind) ||
         schedule[k + 1].layer != schedule[k].layer;
}

// The loss steps of the schedule: a compiled loss, or SparseCategoricalCrossentropy on the
// model's head. Named types rather than lambdas, so that run_schedule is instantiated once
// for float rows and 8-bit pixels alike.
template <class L>
struct ApplyLoss {
  const L& loss;
  float* predictions;
  template <class E, class LossScale>
  void operator()(E& e, const LossScale& scale) const {
    e.loss(loss, scale.value(), predictions);
  }
};
struct ApplyDefaultLoss {
  template <class E, class LossScale>
  void operator()(E& e, const LossScale& scale) const {
    e.loss(scale.value());
  }
};

// The schedule after begin_step, unrolled. It does not depend on the batch's element type:
// only begin_step reads the inputs.
template <class E, class Optimizer, class LossScale, class LossStep>
void run_schedule(E& e, const Optimizer& opt, std::int64_t& iterations, LossScale& scale,
                  const LossStep& loss_step) {
  using Spec = typename E::spec;
  static constexpr auto schedule = plan::training_schedule<Spec>();
  static_for<static_cast<std::size_t>(schedule.count)>([&](auto k) {
    constexpr plan::Step step = schedule[static_cast<int>(k)];
    constexpr auto node = static_cast<std::size_t>(step.layer < 0 ? 0 : step.layer);
    if constexpr (step.kind == plan::StepKind::forward)
      e.template forward<node>();
    else if constexpr (step.kind == plan::StepKind::loss)
      loss_step(e, scale);
    else if constexpr (step.kind == plan::StepKind::recompute)
      e.template recompute<node>();
    else if constexpr (step.kind == plan::StepKind::weight_grad)
      e.template weight_grad<node>();
    else if constexpr (step.kind == plan::StepKind::input_grad)
      e.template input_grad<node>();
    else
      e.finish_step(opt, iterations, scale);
    // After a node's last backward step (its dX when it has one: BatchNormalization writes
    // dgamma and dbeta there), its gradients are final: data parallelism may send them, and
    // under UpdateInBackward the node's parameters are updated from them at once.
    if constexpr (ends_backward_of_node(schedule, static_cast<int>(k)) &&
                  requires { e.template gradients_ready<node>(); })
      e.template gradients_ready<node>();
    if constexpr (ends_backward_of_node(schedule, static_cast<int>(k)) && updates_in_backward<E>)
      e.template update_in_backward<node>(opt, iterations, scale);
  });
}

}  // namespace detail

/// Runs one training step of `rows` samples on `e`: forward, `loss`, backward and the
/// optimizer, in the order of `plan::training_schedule<Spec>()`. `x` holds float features or
/// 8-bit pixels (`rows x inputs` either way), `y` the targets of the loss (class indices, or
/// `outputs` floats per row). With `predictions`, the activated outputs land there
/// (`rows x outputs`), for metrics.
///
/// ```cpp
/// auto& executor = model.executor();
/// const mo::Adam adam{};
/// executor.prepare(32, adam.slots() * model.parameter_count);
/// std::vector<float> x(32 * 784), y(32 * 10);  // y: 10 target values a row
/// std::int64_t iterations = 0;
/// mo::NoLossScale loss_scale;
/// mo::train::training_step(executor, x.data(), y.data(), 32, adam, mo::MeanSquaredError{},
///                          iterations, loss_scale);
/// ```
template <SteppedExecutor E, InputElement X, Loss L, class Optimizer, class LossScale>
void training_step(E& e, const X* x, const typename L::target_type* y, std::size_t rows,
                   const Optimizer& opt, const L& loss, std::int64_t& iterations, LossScale& scale,
                   float* predictions = nullptr) {
  [[maybe_unused]] const auto scope = e.step_scope();
  e.begin_step(x, y, rows, iterations);
  detail::run_schedule(e, opt, iterations, scale, detail::ApplyLoss<L>{loss, predictions});
}

/// The same with class indices and SparseCategoricalCrossentropy on the model's Softmax (or
/// on the logits of a Linear last layer).
///
/// ```cpp
/// auto& executor = model.executor();
/// const mo::Adam adam{};
/// executor.prepare(32, adam.slots() * model.parameter_count);
/// std::vector<float> x(32 * 784);
/// std::vector<std::int32_t> y(32);  // class indices
/// std::int64_t iterations = 0;
/// mo::NoLossScale loss_scale;
/// mo::train::training_step(executor, x.data(), y.data(), 32, adam, iterations, loss_scale);
/// ```
template <SteppedExecutor E, InputElement X, class Optimizer, class LossScale>
void training_step(E& e, const X* x, const std::int32_t* y, std::size_t rows, const Optimizer& opt,
                   std::int64_t& iterations, LossScale& scale) {
  [[maybe_unused]] const auto scope = e.step_scope();
  e.begin_step(x, y, rows, iterations);
  detail::run_schedule(e, opt, iterations, scale, detail::ApplyDefaultLoss{});
}

/// An executor that runs a whole training step on inputs of element type X.
template <class E, class X, class Optimizer, class LossScale>
concept WholeStepExecutor = requires(E& e, const X* x, const std::int32_t* y, std::size_t n,
                                     const Optimizer& opt, std::int64_t& it, LossScale& scale) {
  e.train_step(x, y, n, opt, it, scale);
};

/// Backends that run a whole step as one unit (the CUDA backend replays one CUDA graph per
/// step) take it whole.
template <class E, InputElement X, class Optimizer, class LossScale>
requires(!SteppedExecutor<E>) void training_step(E& e, const X* x, const std::int32_t* y,
                                                 std::size_t rows, const Optimizer& opt,
                                                 std::int64_t& iterations, LossScale& scale) {
  static_assert(WholeStepExecutor<E, X, Optimizer, LossScale>,
                "train::training_step: this backend reads float batches only (the CUDA backend "
                "does not take 8-bit images yet): use mo::cpu, or batches of floats");
  e.train_step(x, y, rows, opt, iterations, scale);
}

}  // namespace memopt::train
