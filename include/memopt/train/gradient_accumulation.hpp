#pragma once
// GradientAccumulation: Keras 3's `gradient_accumulation_steps`. The gradients of N batches
// are summed in float32 beside the parameters (not in the planned arena, so that a step keeps
// the arena of one batch), and the optimizer applies their mean once every N batches.
// keras/src/optimizers/base_optimizer.py: _backend_apply_gradients,
// _backend_increment_gradient_accumulators, the `iterations` property.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "memopt/core/error.hpp"

namespace memopt {

/// How far the current update's accumulation has got, and how many batches an update takes.
/// The sums themselves live in a buffer the caller owns (the executor keeps them after the
/// optimizer's slots, laid out like the parameters), so that checkpoints save them with the
/// optimizer's state, as Keras saves its "gradient_accumulator" variables.
///
/// Each batch's gradient (the mean over its rows) is added weighted by its rows, and the
/// update's gradient is that sum over the rows of all N batches: the mean over samples, which
/// is the gradient one batch of all those rows would give. Keras divides the sum of the N
/// batch means by N instead; the two agree whenever the N batches are the same size, and
/// differ only when a shorter last batch of an epoch falls into an update.
///
/// ```cpp
/// mo::GradientAccumulation acc(4);
/// std::vector<float> g(1000), sums(1000);  // one value per parameter
/// for (int b = 0; b < 4; ++b) {
///   // ... g = this batch's mean gradient over its 32 rows ...
///   if (acc.add(g, 32, sums)) { /* g now holds the mean over 128 rows: apply it */ }
/// }
/// ```
class GradientAccumulation {
 public:
  /// `steps`: batches per update (Keras's gradient_accumulation_steps); 1 applies every batch.
  explicit GradientAccumulation(int steps = 1)
      : steps_(checked_steps(steps, "GradientAccumulation")) {}

  /// Raises memopt::error unless `steps >= 1`; returns it. `who` names the caller.
  static int checked_steps(std::int64_t steps, const char* who) {
    if (steps < 1)
      throw error(std::string(who) +
                  ": gradient_accumulation_steps must be >= 1 (1: an update every batch); "
                  "found " +
                  std::to_string(steps));
    return static_cast<int>(steps);
  }

  int steps() const { return steps_; }
  /// Whether updates take more than one batch (else add is never called and no sums exist).
  bool enabled() const { return steps_ > 1; }
  /// Batches added since the last update, and their rows.
  int batches() const { return batches_; }
  std::uint64_t rows() const { return rows_; }

  /// Adds one batch's gradients `grads` (finite and unscaled: the mean over its `rows`) to
  /// `sums`. When this batch completes the update, `grads` becomes the mean over every row of
  /// its batches, `sums` is cleared, and add returns true; otherwise `grads` is left alone.
  bool add(std::span<float> grads, std::size_t rows, std::span<float> sums) {
    if (!accumulate(grads, rows, sums)) return false;
    take_mean(grads, sums, rows_);
    return true;
  }

  /// add's first half: `sums += rows * grads`; true when this batch completes the update
  /// (then `sums` holds the update's whole sum, over `rows()` rows).
  bool accumulate(std::span<const float> grads, std::size_t rows, std::span<float> sums) {
    const auto w = static_cast<float>(rows);
    // The first batch of an update overwrites: no pass to clear the sums is needed.
    if (batches_ == 0)
      for (std::size_t j = 0; j < grads.size(); ++j) sums[j] = w * grads[j];
    else
      for (std::size_t j = 0; j < grads.size(); ++j) sums[j] += w * grads[j];
    rows_ += rows;
    return ++batches_ >= steps_;
  }
  /// add's second half, once accumulate returned true: `grads = sums / total_rows` (the rows
  /// of every rank's batches, under data parallelism, where `sums` is summed over ranks too);
  /// then the sums and the count start again.
  void take_mean(std::span<float> grads, std::span<float> sums, std::uint64_t total_rows) {
    const auto inverse = static_cast<float>(1.0 / static_cast<double>(total_rows));
    // Cleared as it is read, so that a checkpoint taken between updates holds zeros, as
    // Keras's accumulators do after an update.
    for (std::size_t j = 0; j < grads.size(); ++j) {
      grads[j] = sums[j] * inverse;
      sums[j] = 0.0f;
    }
    batches_ = 0;
    rows_ = 0;
  }

  /// Where a restored checkpoint's accumulation stood: `batches` in [0, steps) and their
  /// `rows` (zero exactly when `batches` is). Raises memopt::error naming what was found.
  void restore(std::int64_t batches, std::uint64_t rows) {
    if (batches < 0 || batches >= steps_ || (batches == 0) != (rows == 0))
      throw error(
          "load: gradient accumulation (__metadata__ \"accumulated_batches\", "
          "\"accumulated_rows\"): expected 0 to " +
          std::to_string(steps_ - 1) +
          " batches, with rows exactly when there are batches; found " + std::to_string(batches) +
          " batches of " + std::to_string(rows) + " rows");
    batches_ = static_cast<int>(batches);
    rows_ = rows;
  }

 private:
  int steps_ = 1;
  int batches_ = 0;
  std::uint64_t rows_ = 0;
};

namespace detail {
/// The steps an optimizer asks for: its `options.gradient_accumulation_steps` (the library's
/// optimizers, as Keras's take it), 1 for an optimizer without that option.
template <class O>
int gradient_accumulation_steps(const O& o) {
  if constexpr (requires { o.options.gradient_accumulation_steps; })
    return GradientAccumulation::checked_steps(o.options.gradient_accumulation_steps,
                                               std::string(O::name).c_str());
  else
    return 1;
}
}  // namespace detail

}  // namespace memopt
