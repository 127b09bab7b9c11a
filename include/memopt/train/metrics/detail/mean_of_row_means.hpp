#pragma once
// The running mean Keras's regression metrics keep (reduction_metrics.MeanMetricWrapper over a
// per-sample loss): each row's mean over its last axis, averaged over every row seen.

#include <array>
#include <cstddef>
#include <span>
#include <string_view>

#include "memopt/train/metric.hpp"
#include "memopt/train/metrics/detail/batch_checks.hpp"

namespace memopt::metrics::detail {

/// Sums per-row means in double, so streaming batches adds the same terms in the same order
/// as one update over their concatenation.
class MeanOfRowMeans {
 public:
  /// Adds the mean of `elementwise(output, target)` over each row of `batch`.
  template <class Elementwise>
  void add(std::string_view metric, const MetricBatch<float>& batch, Elementwise elementwise) {
    require_width(metric, "target_width", batch.width, batch.target_width, " (the output width)");
    // A row of width 0 has no mean (Keras would give NaN); refuse it like a mismatch.
    if (batch.rows > 0 && batch.width == 0)
      require_width(metric, "an output width of at least", 1, batch.width);
    for (std::size_t r = 0; r < batch.rows; ++r) {
      const float* output = batch.y_pred + r * batch.width;
      const float* target = batch.y_true + r * batch.width;
      double row_sum = 0.0;
      for (std::size_t j = 0; j < batch.width; ++j)
        row_sum += elementwise(static_cast<double>(output[j]), static_cast<double>(target[j]));
      sum_and_rows_[0] += row_sum / static_cast<double>(batch.width);
    }
    sum_and_rows_[1] += static_cast<double>(batch.rows);
  }

  void reset() { sum_and_rows_ = {}; }

  /// The mean over rows; 0 before any row, as Keras's divide_no_nan gives.
  double mean() const {
    const auto [sum, rows] = sum_and_rows_;
    return rows == 0.0 ? 0.0 : sum / rows;
  }

  /// The sum of the row means and the rows.
  std::span<double> state() { return sum_and_rows_; }

 private:
  std::array<double, 2> sum_and_rows_{};
};

}  // namespace memopt::metrics::detail
