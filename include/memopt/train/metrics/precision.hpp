#pragma once
// Precision: Keras's keras.metrics.Precision (keras/src/metrics/confusion_metrics.py) with one
// threshold: true positives over predicted positives, streamed over batches.

#include <array>
#include <cstdint>
#include <span>
#include <string_view>

#include "memopt/train/metric.hpp"
#include "memopt/train/metrics/detail/binary_outcomes.hpp"

namespace memopt::metrics {

/// Keras's `precision`: tp / (tp + fp), where an output strictly above the threshold is a
/// predicted positive and any nonzero target is an actual positive. Every element counts, so
/// multi-label outputs are scored as one pool of binary decisions (Keras flattens them too).
/// Takes float targets shaped like the outputs, or int32 labels for a one-output model.
/// Returns 0 while nothing was predicted positive (Keras's divide_no_nan).
///
/// ```cpp
/// const std::size_t n = 32;
/// std::vector<float> probs(n * 3), tags(n * 3);  // three independent 0/1 tags per row
/// mo::metrics::Precision precision{{.thresholds = 0.5f}};
/// precision.update_state(mo::MetricBatch<float>{.y_pred = probs.data(), .rows = n, .width = 3,
///                                               .y_true = tags.data(), .target_width = 3});
/// double p = precision.result();
/// ```
class Precision {
 public:
  struct Options {
    float thresholds = 0.5f;
  };

  static constexpr std::string_view name = "precision";

  Precision() : Precision(Options{}) {}
  explicit Precision(Options options)
      : threshold_(detail::checked_threshold("Precision", options.thresholds)) {}

  void reset_state() { counts_ = {}; }

  void update_state(const MetricBatch<float>& batch) { count(batch); }
  void update_state(const MetricBatch<std::int32_t>& batch) { count(batch); }

  double result() const {
    const double predicted_positives = true_positives() + false_positives();
    return predicted_positives == 0.0 ? 0.0 : true_positives() / predicted_positives;
  }

  /// The true and the false positives (SummableMetric).
  std::span<double> state() { return counts_; }

  float threshold() const { return threshold_; }
  double true_positives() const { return counts_[0]; }
  double false_positives() const { return counts_[1]; }

 private:
  template <class Target>
  void count(const MetricBatch<Target>& batch) {
    detail::for_each_binary_outcome("Precision", batch, [&](float output, bool positive) {
      if (!(output > threshold_)) return;
      counts_[positive ? 0 : 1] += 1.0;
    });
  }

  float threshold_;
  std::array<double, 2> counts_{};  // true positives, false positives
};

}  // namespace memopt::metrics
