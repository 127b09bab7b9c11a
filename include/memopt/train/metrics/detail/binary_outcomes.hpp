#pragma once
// The (output, is-positive) pairs that Precision, Recall and AUC count, read from either kind of
// target the way Keras reads them (keras/src/metrics/metrics_utils.py,
// update_confusion_matrix_variables): every element is its own binary decision, and the target
// is cast to bool, so any nonzero target is a positive.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "memopt/core/error.hpp"
#include "memopt/train/metric.hpp"
#include "memopt/train/metrics/detail/batch_checks.hpp"

namespace memopt::metrics::detail {

/// Keras requires every threshold to lie in [0, 1] (metrics_utils.parse_init_thresholds).
inline float checked_threshold(std::string_view metric, float threshold) {
  if (threshold >= 0.0f && threshold <= 1.0f) return threshold;
  throw error(std::string(metric) + ": expected thresholds in [0, 1], found " +
              std::to_string(threshold));
}

/// Calls `visit(output, positive)` for every output of a batch with float targets, one target
/// per output (multi-label or binary; Keras flattens both). A target of 0.3, or NaN, is a
/// positive, as in Keras's `cast(y_true, "bool")`.
template <class Visit>
void for_each_binary_outcome(std::string_view metric, const MetricBatch<float>& batch,
                             Visit&& visit) {
  require_width(metric, "target_width", batch.width, batch.target_width, " (the output width)");
  const std::size_t count = batch.rows * batch.width;
  // NaN != 0 holds, so a NaN target is a positive, as bool(NaN) is in Keras.
  for (std::size_t i = 0; i < count; ++i) visit(batch.y_pred[i], batch.y_true[i] != 0.0f);
}

/// Calls `visit(output, positive)` for every row of a binary model (one output per row) with
/// integer labels; any nonzero label is a positive, as Keras's bool cast makes it.
template <class Visit>
void for_each_binary_outcome(std::string_view metric, const MetricBatch<std::int32_t>& batch,
                             Visit&& visit) {
  require_width(metric, "output width", 1, batch.width, " for int32 labels");
  for (std::size_t i = 0; i < batch.rows; ++i) visit(batch.y_pred[i], batch.y_true[i] != 0);
}

}  // namespace memopt::metrics::detail
