#pragma once
// The step at which an epoch's loss first stopped being finite, found from the running sums
// a backend keeps, and a loss value written as a user reads it.

#include <cmath>
#include <cstddef>
#include <optional>
#include <string>

#include <fmt/format.h>

namespace memopt::train {

/// A loss as a user reads it: "nan" (never "-nan": a NaN's sign bit means nothing), "inf",
/// "-inf", or the number as fmt writes it.
///
/// ```cpp
/// mo::train::format_loss(-std::numeric_limits<double>::quiet_NaN());  // "nan"
/// ```
inline std::string format_loss(double loss) {
  if (std::isnan(loss)) return "nan";
  if (std::isinf(loss)) return loss > 0 ? "inf" : "-inf";
  return fmt::format("{}", loss);
}

/// The first step of an epoch whose loss was not finite: its index in the epoch (from 0, as
/// Keras's `on_train_batch_end` counts) and its mean loss over the step's rows.
struct NonfiniteStep {
  int step = 0;
  double loss = 0;
};

/// Follows an epoch's running loss sum step by step and keeps the first step whose loss was
/// not finite. A sum that is not finite stays so (inf + x is inf or nan, nan + x is nan), so
/// the first step after which the running sum is not finite is the step that made it so,
/// and the difference of the sums around it is that step's own loss: what was found, before
/// later steps turn an inf into a nan.
///
/// ```cpp
/// mo::train::NonfiniteLossWatch watch;
/// mo::StepTotals totals;
/// for (int k = 0; k < 100; ++k) {
///   step(totals);  // adds the step's loss and samples to totals
///   if (watch.observe(k, totals.loss_sum, totals.samples)) break;
/// }
/// ```
class NonfiniteLossWatch {
 public:
  /// Forgets the epoch before: sums and the step found start again from zero.
  void begin_epoch() { *this = NonfiniteLossWatch{}; }

  /// After step `step`, the running loss sum and sample count since the epoch began. True
  /// only for the first step whose loss is not finite.
  bool observe(int step, double loss_sum, std::size_t samples) {
    if (first_) return false;
    if (std::isfinite(loss_sum)) {
      loss_sum_ = loss_sum;
      samples_ = samples;
      return false;
    }
    const std::size_t rows = samples > samples_ ? samples - samples_ : 0;
    first_ =
        NonfiniteStep{step, rows ? (loss_sum - loss_sum_) / static_cast<double>(rows) : loss_sum};
    return true;
  }

  /// The first step found, if any.
  const std::optional<NonfiniteStep>& first() const { return first_; }

 private:
  double loss_sum_ = 0;
  std::size_t samples_ = 0;
  std::optional<NonfiniteStep> first_{};
};

}  // namespace memopt::train
