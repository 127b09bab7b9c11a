#pragma once
// The ordered kernels of a step. Buffer lifetimes are intervals over these indices.

#include <cstddef>

namespace memopt::plan {

/// Training: forward 0..L-1, the loss, backward L-1..0, the optimizer.
struct TrainingSchedule {
  int depth;
  constexpr int forward(std::size_t layer) const { return static_cast<int>(layer); }
  constexpr int loss() const { return depth; }
  constexpr int backward(std::size_t layer) const { return 2 * depth - static_cast<int>(layer); }
  constexpr int optimizer() const { return 2 * depth + 1; }
  constexpr int steps() const { return 2 * depth + 2; }
};

/// Inference: forward 0..L-1 only.
struct InferenceSchedule {
  int depth;
  constexpr int forward(std::size_t layer) const { return static_cast<int>(layer); }
  constexpr int steps() const { return depth; }
};

}  // namespace memopt::plan
