#pragma once
// What a backend accumulates over the steps of an epoch, read once at its end.

#include <cstddef>

namespace memopt {

/// Sums over steps since the last read: the loss (per sample), correct predictions, the
/// samples seen and the updates skipped for non-finite gradients.
struct StepTotals {
  double loss_sum = 0;
  double correct = 0;
  std::size_t samples = 0;
  std::size_t skipped_steps = 0;

  double mean_loss() const { return samples ? loss_sum / static_cast<double>(samples) : 0.0; }
  double accuracy() const { return samples ? correct / static_cast<double>(samples) : 0.0; }
};

}  // namespace memopt
