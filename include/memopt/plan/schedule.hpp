#pragma once
// The ordered kernels of a step. Buffer lifetimes are intervals over these indices.
//
// A training step runs, in order: each layer's forward; the loss (softmax, cross-entropy and
// its gradient); then from the last layer down, any recomputation, the layer's weight
// gradient (dW, db) and, except for the first layer, its input gradient (dX times the previous
// activation's derivative); finally the optimizer. Splitting dW from dX is what lets the
// planner hand a ReLU layer's output over to its gradient: dW is its last reader, and dX
// reads the 1-bit mask instead.

#include <array>
#include <cstddef>
#include <string_view>

namespace memopt::plan {

/// What a step of a schedule does.
enum class StepKind { forward, loss, recompute, weight_grad, input_grad, optimizer };

constexpr std::string_view step_kind_name(StepKind k) {
  switch (k) {
    case StepKind::forward:
      return "forward";
    case StepKind::loss:
      return "loss";
    case StepKind::recompute:
      return "recompute";
    case StepKind::weight_grad:
      return "dW";
    case StepKind::input_grad:
      return "dX";
    case StepKind::optimizer:
      return "optimizer";
  }
  return "?";
}

/// One step: its kind and the layer it works on (-1 for the loss and the optimizer).
struct Step {
  StepKind kind{};
  int layer = -1;
};

/// The steps of a training or inference step, in the order they run.
///
/// ```cpp
/// constexpr auto s = mo::plan::training_schedule<Spec>();
/// static_assert(s.index(mo::plan::StepKind::loss) == int(Spec::depth));
/// ```
template <std::size_t N>
struct Schedule {
  std::array<Step, N> steps{};
  int count = 0;

  constexpr void add(Step s) { steps[static_cast<std::size_t>(count++)] = s; }
  constexpr const Step& operator[](int i) const { return steps[static_cast<std::size_t>(i)]; }

  constexpr bool contains(StepKind kind, int layer = -1) const {
    for (int i = 0; i < count; ++i)
      if ((*this)[i].kind == kind && (*this)[i].layer == layer) return true;
    return false;
  }
  /// The index of the step; a compile error in constant evaluation if there is none.
  constexpr int index(StepKind kind, int layer = -1) const {
    for (int i = 0; i < count; ++i)
      if ((*this)[i].kind == kind && (*this)[i].layer == layer) return i;
    throw "Schedule::index: no such step";  // NOLINT: unreachable for a built schedule
  }
};

/// The most steps a training step of `depth` layers has: forward, loss, recompute, dW, dX,
/// optimizer.
constexpr std::size_t max_training_steps(std::size_t depth) {
  return 4 * depth + 1;
}

}  // namespace memopt::plan
