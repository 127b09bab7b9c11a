#pragma once
// SparseTopKCategoricalAccuracy: Keras's keras.metrics.SparseTopKCategoricalAccuracy
// (keras/src/metrics/accuracy_metrics.py): the fraction of rows whose label is among the K
// largest outputs, with in_top_k's tie rule.

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "memopt/core/error.hpp"
#include "memopt/train/metric.hpp"
#include "memopt/train/metrics/detail/batch_checks.hpp"
#include "memopt/train/metrics/detail/hit_rate.hpp"

namespace memopt::metrics {

namespace detail {

/// Keras's ops.in_top_k as its TensorFlow backend computes it (tf.math.in_top_k): the label is
/// in the top k when fewer than k outputs are strictly larger than the label's output, so
/// every class tied with the k-th largest counts as in the top k. A label outside
/// [0, width), or any non-finite output in the row, is a miss.
inline bool label_in_top_k(const float* row, std::size_t width, std::int64_t label, std::size_t k) {
  if (label < 0 || static_cast<std::size_t>(label) >= width) return false;
  const float label_output = row[label];
  std::size_t larger = 0;
  for (std::size_t j = 0; j < width; ++j) {
    if (!std::isfinite(row[j])) return false;
    if (row[j] > label_output) ++larger;
  }
  return larger < k;
}

/// Throws unless a row has at least K outputs to pick the top K from.
inline void require_k_within_width(std::string_view metric, std::size_t k, std::size_t width) {
  if (k <= width) return;
  throw error(std::string(metric) + ": expected an output width of at least K = " +
              std::to_string(k) + ", found " + std::to_string(width));
}

}  // namespace detail

/// Keras's `sparse_top_k_categorical_accuracy`: the fraction of rows whose int32 label is
/// among the K largest outputs. Ties follow in_top_k: a label whose output equals the K-th
/// largest counts, even when that makes more than K classes "top K" (outputs
/// [0.5, 0.2, 0.2, 0.2] put each of classes 1-3 in the top 2). Labels out of range and rows
/// with NaN or infinite outputs count as misses, as TensorFlow's kernel has it.
///
/// ```cpp
/// std::vector<float> probs(32 * 100);
/// std::vector<std::int32_t> labels(32);
/// mo::metrics::SparseTopKCategoricalAccuracy<5> top5;
/// top5.update_state(mo::MetricBatch<std::int32_t>{.y_pred = probs.data(), .rows = 32,
///                                                 .width = 100, .y_true = labels.data()});
/// double accuracy = top5.result();
/// ```
template <int K = 5>
class SparseTopKCategoricalAccuracy {
  static_assert(K >= 1, "SparseTopKCategoricalAccuracy: K must be at least 1");

 public:
  static constexpr std::string_view name = "sparse_top_k_categorical_accuracy";
  static constexpr std::size_t k = K;

  void reset_state() { hits_.reset(); }

  void update_state(const MetricBatch<std::int32_t>& batch) {
    detail::require_k_within_width("SparseTopKCategoricalAccuracy", k, batch.width);
    for (std::size_t r = 0; r < batch.rows; ++r)
      hits_.add(
          detail::label_in_top_k(batch.y_pred + r * batch.width, batch.width, batch.y_true[r], k));
  }

  /// The fraction of rows seen since reset_state() that were hits; 0 before any row.
  double result() const { return hits_.rate(); }

  /// The hits and the rows (SummableMetric).
  std::span<double> state() { return hits_.state(); }

 private:
  detail::HitRate hits_;
};

}  // namespace memopt::metrics
