#pragma once
// MeanSquaredError: Keras's keras.metrics.MeanSquaredError (keras/src/metrics/
// regression_metrics.py): the mean over samples of each sample's mean squared difference.

#include <span>
#include <string_view>

#include "memopt/train/metric.hpp"
#include "memopt/train/metrics/detail/mean_of_row_means.hpp"

namespace memopt::metrics {

/// Keras's `mean_squared_error` metric: mean over rows of mean_j (y_pred - y_true)^2, for
/// float targets as wide as the outputs.
///
/// ```cpp
/// std::vector<float> out(64), prices(64);  // predicted and true prices
/// mo::metrics::MeanSquaredError mse;
/// mse.update_state(mo::MetricBatch<float>{.y_pred = out.data(), .rows = 64, .width = 1,
///                                         .y_true = prices.data(), .target_width = 1});
/// ```
class MeanSquaredError {
 public:
  static constexpr std::string_view name = "mean_squared_error";

  void reset_state() { mean_.reset(); }

  void update_state(const MetricBatch<float>& batch) {
    mean_.add("MeanSquaredError", batch, [](double output, double target) {
      const double difference = output - target;
      return difference * difference;
    });
  }

  double result() const { return mean_.mean(); }

  /// The sum of the row means and the rows (SummableMetric).
  std::span<double> state() { return mean_.state(); }

 private:
  detail::MeanOfRowMeans mean_;
};

}  // namespace memopt::metrics
