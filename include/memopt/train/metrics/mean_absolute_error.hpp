#pragma once
// MeanAbsoluteError: Keras's keras.metrics.MeanAbsoluteError (keras/src/metrics/
// regression_metrics.py): the mean over samples of each sample's mean absolute difference.

#include <cmath>
#include <span>
#include <string_view>

#include "memopt/train/metric.hpp"
#include "memopt/train/metrics/detail/mean_of_row_means.hpp"

namespace memopt::metrics {

/// Keras's `mean_absolute_error` metric: mean over rows of mean_j |y_pred - y_true|, for float
/// targets as wide as the outputs.
///
/// ```cpp
/// std::vector<float> out(64 * 2), xy(64 * 2);  // predicted and true (x, y) per row
/// mo::metrics::MeanAbsoluteError mae;
/// mae.update_state(mo::MetricBatch<float>{.y_pred = out.data(), .rows = 64, .width = 2,
///                                         .y_true = xy.data(), .target_width = 2});
/// ```
class MeanAbsoluteError {
 public:
  static constexpr std::string_view name = "mean_absolute_error";

  void reset_state() { mean_.reset(); }

  void update_state(const MetricBatch<float>& batch) {
    mean_.add("MeanAbsoluteError", batch,
              [](double output, double target) { return std::fabs(output - target); });
  }

  double result() const { return mean_.mean(); }

  /// The sum of the row means and the rows (SummableMetric).
  std::span<double> state() { return mean_.state(); }

 private:
  detail::MeanOfRowMeans mean_;
};

}  // namespace memopt::metrics
