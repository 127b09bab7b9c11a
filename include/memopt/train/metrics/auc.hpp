#pragma once
// AUC: Keras's keras.metrics.AUC (keras/src/metrics/confusion_metrics.py) with its defaults:
// ROC curve, 'interpolation' summation, 200 evenly spaced thresholds, counted per threshold
// over a stream of batches.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "memopt/core/error.hpp"
#include "memopt/train/metric.hpp"
#include "memopt/train/metrics/detail/binary_outcomes.hpp"

namespace memopt::metrics {

/// Keras's `auc`: the area under the ROC curve, approximated on `num_thresholds` thresholds
/// laid out as Keras lays them: -1e-7, 1/(n-1), 2/(n-1), ..., (n-2)/(n-1), 1 + 1e-7 (the
/// epsilon endpoints put an output of exactly 0 above the first threshold and 1 below the
/// last). Each output is sorted into its threshold bucket as Keras's evenly-spaced fast path
/// does it (metrics_utils._update_confusion_matrix_variables_optimized): clipped to [0, 1], it
/// is above threshold i exactly when `float(output * (n-1)) > i`, so an output that lands on a
/// threshold counts as below it. A NaN output, where Keras's result depends on the backend,
/// counts as 0. The result sums trapezoids over (false positive rate, true positive rate)
/// between neighbouring thresholds (AUC.result); it is 0 while either class is missing.
/// Every element is one binary decision (float targets shaped like the outputs, any nonzero
/// target positive), or one output per row with int32 labels.
///
/// ```cpp
/// mo::metrics::AUC auc;
/// struct Predicted { const float* probs; const std::int32_t* labels; std::size_t n; };
/// std::vector<Predicted> validation;  // per batch: probabilities, 0/1 labels, rows
/// for (const auto& [probs, labels, n] : validation)
///   auc.update_state(mo::MetricBatch<std::int32_t>{.y_pred = probs, .rows = n, .width = 1,
///                                                  .y_true = labels});
/// double roc_auc = auc.result();
/// ```
class AUC {
 public:
  /// Keras's `num_thresholds`; the curve stays ROC and the summation 'interpolation'.
  struct Options {
    std::size_t num_thresholds = 200;
  };

  static constexpr std::string_view name = "auc";

  AUC() : AUC(Options{}) {}
  explicit AUC(Options options) : counts_(2 * checked(options.num_thresholds)) {}

  std::size_t num_thresholds() const { return counts_.size() / 2; }

  /// The thresholds as Keras builds them (in double, then stored as float32). The counts use
  /// buckets, not these values, exactly as Keras's fast path does.
  std::vector<float> thresholds() const {
    const std::size_t n = num_thresholds();
    std::vector<float> out(n);
    out.front() = static_cast<float>(0.0 - kEpsilon);
    for (std::size_t i = 1; i + 1 < n; ++i)
      out[i] = static_cast<float>(static_cast<double>(i) / static_cast<double>(n - 1));
    out.back() = static_cast<float>(1.0 + kEpsilon);
    return out;
  }

  void reset_state() { std::fill(counts_.begin(), counts_.end(), 0.0); }

  void update_state(const MetricBatch<float>& batch) { count(batch); }
  void update_state(const MetricBatch<std::int32_t>& batch) { count(batch); }

  /// Per threshold: positives whose output lies above it.
  std::vector<double> true_positives() const { return above(positives_in_bucket()); }
  /// Per threshold: negatives whose output lies above it.
  std::vector<double> false_positives() const { return above(negatives_in_bucket()); }
  /// Per threshold: negatives whose output lies at or below it.
  std::vector<double> true_negatives() const { return at_or_below(negatives_in_bucket()); }
  /// Per threshold: positives whose output lies at or below it.
  std::vector<double> false_negatives() const { return at_or_below(positives_in_bucket()); }

  double result() const {
    const std::vector<double> tp = true_positives();
    const std::vector<double> fp = false_positives();
    const double positives = total(positives_in_bucket());
    const double negatives = total(negatives_in_bucket());
    // Keras divides tp by tp + fn and fp by fp + tn per threshold with divide_no_nan; both
    // sums are the class totals, so a missing class gives a rate of 0 everywhere.
    auto rate = [](double count, double of) { return of == 0.0 ? 0.0 : count / of; };
    double area = 0.0;
    for (std::size_t i = 0; i + 1 < tp.size(); ++i) {
      const double width = rate(fp[i], negatives) - rate(fp[i + 1], negatives);
      const double mean_height = (rate(tp[i], positives) + rate(tp[i + 1], positives)) / 2.0;
      area += width * mean_height;
    }
    return area;
  }

  /// The positives, then the negatives, counted in each bucket between consecutive
  /// thresholds (SummableMetric).
  std::span<double> state() { return counts_; }

 private:
  // keras.backend.epsilon(), added at both ends of the threshold list.
  static constexpr double kEpsilon = 1e-7;

  static std::size_t checked(std::size_t num_thresholds) {
    if (num_thresholds > 1) return num_thresholds;
    throw error("AUC: expected num_thresholds > 1, found " + std::to_string(num_thresholds));
  }

  // Bucket b holds the outputs above thresholds 0..b and at or below thresholds b+1...
  std::size_t bucket(float output) const {
    if (std::isnan(output)) output = 0.0f;
    output = output < 0.0f ? 0.0f : (output > 1.0f ? 1.0f : output);
    // In float, as Keras multiplies float32 tensors: this product decides the outputs that lie
    // on a threshold, e.g. float(100/199) * 199 == 100 exactly, so it stays below threshold 100.
    const float scaled = output * static_cast<float>(num_thresholds() - 1);
    const float above = std::ceil(scaled) - 1.0f;
    // Keras's relu on the bucket index: an output of 0 is still above the -epsilon threshold.
    return above < 0.0f ? 0 : static_cast<std::size_t>(above);
  }

  template <class Target>
  void count(const MetricBatch<Target>& batch) {
    detail::for_each_binary_outcome("AUC", batch, [&](float output, bool positive) {
      counts_[(positive ? 0 : num_thresholds()) + bucket(output)] += 1.0;
    });
  }

  std::span<const double> positives_in_bucket() const {
    return std::span<const double>(counts_).first(num_thresholds());
  }
  std::span<const double> negatives_in_bucket() const {
    return std::span<const double>(counts_).last(num_thresholds());
  }

  static double total(std::span<const double> in_bucket) {
    double sum = 0.0;
    for (double c : in_bucket) sum += c;
    return sum;
  }

  // Above threshold i: every bucket from i up (Keras's reversed cumulative sum).
  static std::vector<double> above(std::span<const double> in_bucket) {
    std::vector<double> out(in_bucket.size());
    double running = 0.0;
    for (std::size_t i = in_bucket.size(); i-- > 0;) out[i] = running += in_bucket[i];
    return out;
  }

  static std::vector<double> at_or_below(std::span<const double> in_bucket) {
    std::vector<double> out = above(in_bucket);
    const double sum = total(in_bucket);
    for (double& c : out) c = sum - c;
    return out;
  }

  std::vector<double> counts_;  // the positives' buckets, then the negatives'
};

}  // namespace memopt::metrics
