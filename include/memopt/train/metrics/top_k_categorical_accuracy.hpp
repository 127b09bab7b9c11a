#pragma once
// TopKCategoricalAccuracy: Keras's keras.metrics.TopKCategoricalAccuracy
// (keras/src/metrics/accuracy_metrics.py): SparseTopKCategoricalAccuracy for one-hot targets.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "memopt/train/metric.hpp"
#include "memopt/train/metrics/detail/batch_checks.hpp"
#include "memopt/train/metrics/detail/hit_rate.hpp"
#include "memopt/train/metrics/sparse_top_k_categorical_accuracy.hpp"

namespace memopt::metrics {

/// Keras's `top_k_categorical_accuracy`: the fraction of rows whose target class, the argmax
/// of the float target row (the first of equal maxima, as argmax picks), is among the K
/// largest outputs, with SparseTopKCategoricalAccuracy's tie rule. Targets must be as wide
/// as the outputs.
///
/// ```cpp
/// std::vector<float> probs(32 * 10), one_hot(32 * 10);
/// mo::metrics::TopKCategoricalAccuracy<3> top3;
/// top3.update_state(mo::MetricBatch<float>{.y_pred = probs.data(), .rows = 32, .width = 10,
///                                          .y_true = one_hot.data(), .target_width = 10});
/// ```
template <int K = 5>
class TopKCategoricalAccuracy {
  static_assert(K >= 1, "TopKCategoricalAccuracy: K must be at least 1");

 public:
  static constexpr std::string_view name = "top_k_categorical_accuracy";
  static constexpr std::size_t k = K;

  void reset_state() { hits_.reset(); }

  void update_state(const MetricBatch<float>& batch) {
    detail::require_width("TopKCategoricalAccuracy", "target_width", batch.width,
                          batch.target_width, " (the output width)");
    detail::require_k_within_width("TopKCategoricalAccuracy", k, batch.width);
    for (std::size_t r = 0; r < batch.rows; ++r) {
      const float* target = batch.y_true + r * batch.width;
      std::size_t label = 0;
      for (std::size_t j = 1; j < batch.width; ++j)
        if (target[j] > target[label]) label = j;
      hits_.add(detail::label_in_top_k(batch.y_pred + r * batch.width, batch.width,
                                       static_cast<std::int64_t>(label), k));
    }
  }

  /// The fraction of rows seen since reset_state() that were hits; 0 before any row.
  double result() const { return hits_.rate(); }

  /// The hits and the rows (SummableMetric).
  std::span<double> state() { return hits_.state(); }

 private:
  detail::HitRate hits_;
};

}  // namespace memopt::metrics
