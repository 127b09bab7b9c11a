#pragma once
// Recall: Keras's keras.metrics.Recall (keras/src/metrics/confusion_metrics.py) with one
// threshold: true positives over actual positives, streamed over batches.

#include <array>
#include <cstdint>
#include <span>
#include <string_view>

#include "memopt/train/metric.hpp"
#include "memopt/train/metrics/detail/binary_outcomes.hpp"

namespace memopt::metrics {

/// Keras's `recall`: tp / (tp + fn), where an output strictly above the threshold is a
/// predicted positive and any nonzero target is an actual positive. Every element counts, so
/// multi-label outputs are scored as one pool of binary decisions (Keras flattens them too).
/// Takes float targets shaped like the outputs, or int32 labels for a one-output model.
/// Returns 0 while no positive was seen (Keras's divide_no_nan).
///
/// ```cpp
/// const std::size_t n = 32;
/// std::vector<float> probs(n);
/// std::vector<std::int32_t> labels(n);
/// mo::metrics::Recall recall{{.thresholds = 0.3f}};
/// recall.update_state(mo::MetricBatch<std::int32_t>{.y_pred = probs.data(), .rows = n,
///                                                   .width = 1, .y_true = labels.data()});
/// double r = recall.result();
/// ```
class Recall {
 public:
  struct Options {
    float thresholds = 0.5f;
  };

  static constexpr std::string_view name = "recall";

  Recall() : Recall(Options{}) {}
  explicit Recall(Options options)
      : threshold_(detail::checked_threshold("Recall", options.thresholds)) {}

  void reset_state() { counts_ = {}; }

  void update_state(const MetricBatch<float>& batch) { count(batch); }
  void update_state(const MetricBatch<std::int32_t>& batch) { count(batch); }

  double result() const {
    const double actual_positives = true_positives() + false_negatives();
    return actual_positives == 0.0 ? 0.0 : true_positives() / actual_positives;
  }

  /// The true positives and the false negatives (SummableMetric).
  std::span<double> state() { return counts_; }

  float threshold() const { return threshold_; }
  double true_positives() const { return counts_[0]; }
  double false_negatives() const { return counts_[1]; }

 private:
  template <class Target>
  void count(const MetricBatch<Target>& batch) {
    detail::for_each_binary_outcome("Recall", batch, [&](float output, bool positive) {
      if (!positive) return;
      // `output > threshold` is false for NaN, which Keras's ops.greater also leaves negative.
      counts_[output > threshold_ ? 0 : 1] += 1.0;
    });
  }

  float threshold_;
  std::array<double, 2> counts_{};  // true positives, false negatives
};

}  // namespace memopt::metrics
