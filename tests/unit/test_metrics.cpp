// The streaming metrics against Keras 3: values worked by hand from Keras's formulas, values
// printed by Keras 3.15.1 (TensorFlow 2.21 backend) on the same inputs, batches streamed in
// uneven pieces against one update over their concatenation, reset_state(), and the width
// checks.

#include <doctest/doctest.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <random>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "memopt/core/error.hpp"
#include "memopt/train/metric.hpp"
#include "memopt/train/metrics.hpp"

namespace mo = memopt;
namespace metrics = memopt::metrics;

static_assert(mo::Metric<metrics::SparseTopKCategoricalAccuracy<>>);
static_assert(mo::Metric<metrics::SparseTopKCategoricalAccuracy<1>>);
static_assert(mo::Metric<metrics::TopKCategoricalAccuracy<>>);
static_assert(mo::Metric<metrics::Precision>);
static_assert(mo::Metric<metrics::Recall>);
static_assert(mo::Metric<metrics::AUC>);
static_assert(mo::Metric<metrics::MeanSquaredError>);
static_assert(mo::Metric<metrics::MeanAbsoluteError>);
static_assert(!mo::Metric<int>);
static_assert(mo::SummableMetric<metrics::AUC> && mo::SummableMetric<metrics::Precision>);

namespace {

using Labels = std::vector<std::int32_t>;
using Floats = std::vector<float>;

mo::MetricBatch<std::int32_t> sparse_batch(const Floats& y_pred, std::size_t width,
                                           const Labels& y_true) {
  return {.y_pred = y_pred.data(),
          .rows = y_true.size(),
          .width = width,
          .y_true = y_true.data(),
          .target_width = 1};
}

mo::MetricBatch<float> dense_batch(const Floats& y_pred, std::size_t width, const Floats& y_true,
                                   std::size_t target_width) {
  return {.y_pred = y_pred.data(),
          .rows = y_pred.size() / width,
          .width = width,
          .y_true = y_true.data(),
          .target_width = target_width};
}

// Rows [first, first + count) of a row-major batch, as the next batch of a stream.
template <class Target>
mo::MetricBatch<Target> rows_of(const mo::MetricBatch<Target>& all, std::size_t first,
                                std::size_t count) {
  mo::MetricBatch<Target> part = all;
  part.y_pred = all.y_pred + first * all.width;
  part.y_true = all.y_true + first * all.target_width;
  part.rows = count;
  return part;
}

// Feeds `all` to one metric in one update and to another as 7 + 1 + 12 rows; the results must
// agree bit for bit (the sums are added in the same order), and must not be the trivial 0.
// Then as two ranks of data-parallel fit see it: rows 0-7 and 8-19 in two metrics, whose
// states summed give the whole's result (within the rounding of the sums' other order).
template <class M, class Target>
void check_stream_equals_concatenation(M one_update, const mo::MetricBatch<Target>& all) {
  static_assert(mo::SummableMetric<M>);
  REQUIRE(all.rows == 20);
  M streamed = one_update, rank0 = one_update, rank1 = one_update;
  one_update.update_state(all);
  streamed.update_state(rows_of(all, 0, 7));
  streamed.update_state(rows_of(all, 7, 1));
  streamed.update_state(rows_of(all, 8, 12));
  CHECK(one_update.result() != 0.0);
  CHECK(streamed.result() == one_update.result());

  rank0.update_state(rows_of(all, 0, 8));
  rank1.update_state(rows_of(all, 8, 12));
  const std::span<double> sum = rank0.state(), other = rank1.state();
  REQUIRE(sum.size() == other.size());
  for (std::size_t i = 0; i < sum.size(); ++i) sum[i] += other[i];
  const std::span<double> whole = one_update.state();
  for (std::size_t i = 0; i < sum.size(); ++i)
    CHECK(sum[i] == doctest::Approx(whole[i]).epsilon(1e-12));
  CHECK(rank0.result() == doctest::Approx(one_update.result()).epsilon(1e-12));
}

// update, reset_state(), update again: the second result must be the first, not a sum of both.
template <class M, class Target>
void check_reset_forgets(M metric, const mo::MetricBatch<Target>& first,
                         const mo::MetricBatch<Target>& second) {
  M fresh = metric;
  fresh.update_state(second);
  metric.update_state(first);
  const double after_first = metric.result();
  metric.reset_state();
  CHECK(metric.result() == 0.0);
  metric.update_state(second);
  CHECK(metric.result() == fresh.result());
  CHECK(metric.result() != after_first);
}

// Runs `update` and requires a memopt::error whose message contains each of `parts`.
template <class F>
void check_error_names(F update, const std::vector<std::string>& parts) {
  try {
    update();
    FAIL("expected memopt::error");
  } catch (const mo::error& e) {
    const std::string message = e.what();
    for (const std::string& part : parts) {
      INFO("message: " << message << "; missing: " << part);
      CHECK(message.find(part) != std::string::npos);
    }
  }
}

struct RandomData {
  std::mt19937 engine{20261203};
  Floats uniform(std::size_t n, float lo, float hi) {
    std::uniform_real_distribution<float> dist(lo, hi);
    Floats out(n);
    for (float& x : out) x = dist(engine);
    return out;
  }
  Labels labels(std::size_t n, std::int32_t classes) {
    std::uniform_int_distribution<std::int32_t> dist(0, classes - 1);
    Labels out(n);
    for (auto& x : out) x = dist(engine);
    return out;
  }
  Floats bits(std::size_t n) {
    std::bernoulli_distribution dist(0.4);
    Floats out(n);
    for (float& x : out) x = dist(engine) ? 1.0f : 0.0f;
    return out;
  }
};

const float kNaN = std::numeric_limits<float>::quiet_NaN();
const float kInf = std::numeric_limits<float>::infinity();

}  // namespace

TEST_CASE("every metric carries its Keras name") {
  CHECK(metrics::SparseTopKCategoricalAccuracy<3>::name == "sparse_top_k_categorical_accuracy");
  CHECK(metrics::TopKCategoricalAccuracy<3>::name == "top_k_categorical_accuracy");
  CHECK(metrics::Precision::name == "precision");
  CHECK(metrics::Recall::name == "recall");
  CHECK(metrics::AUC::name == "auc");
  CHECK(metrics::MeanSquaredError::name == "mean_squared_error");
  CHECK(metrics::MeanAbsoluteError::name == "mean_absolute_error");
}

TEST_CASE("every metric reads 0 before its first batch, as Keras's divide_no_nan gives") {
  CHECK(metrics::SparseTopKCategoricalAccuracy<>{}.result() == 0.0);
  CHECK(metrics::TopKCategoricalAccuracy<>{}.result() == 0.0);
  CHECK(metrics::Precision{}.result() == 0.0);
  CHECK(metrics::Recall{}.result() == 0.0);
  CHECK(metrics::AUC{}.result() == 0.0);
  CHECK(metrics::MeanSquaredError{}.result() == 0.0);
  CHECK(metrics::MeanAbsoluteError{}.result() == 0.0);
}

// --- SparseTopKCategoricalAccuracy -----------------------------------------------------------

TEST_CASE("sparse top-k: a label is a hit when fewer than K outputs exceed its output") {
  // tf.math.in_top_k, which keras/src/backend/tensorflow/math.py in_top_k calls: a label is in
  // the top k unless k or more outputs are strictly larger. Each row alone, K = 2:
  struct Row {
    Floats outputs;
    std::int32_t label;
    bool hit;
  };
  const std::vector<Row> rows = {
      {{0.1f, 0.4f, 0.4f, 0.1f}, 2, true},    // tied for first: nothing larger
      {{0.1f, 0.4f, 0.4f, 0.1f}, 0, false},   // two larger
      {{0.5f, 0.2f, 0.2f, 0.2f}, 3, true},    // tied with the 2nd largest: all three count
      {{kNaN, 0.9f, 0.1f, 0.0f}, 1, false},   // a NaN anywhere in the row: TF's kernel says no
      {{0.1f, 0.9f, -kInf, 0.0f}, 1, false},  // likewise an infinity
      {{0.3f, 0.9f, 0.1f, 0.0f}, 4, false},   // label past the last class
      {{0.3f, 0.9f, 0.1f, 0.0f}, -1, false},  // negative label
      {{0.3f, 0.9f, 0.1f, 0.0f}, 0, true},    // second largest
  };
  for (const Row& row : rows) {
    metrics::SparseTopKCategoricalAccuracy<2> top2;
    const Labels label{row.label};
    top2.update_state(sparse_batch(row.outputs, 4, label));
    INFO("label " << row.label);
    CHECK(top2.result() == (row.hit ? 1.0 : 0.0));
  }
}

TEST_CASE("sparse top-k matches Keras on ties, NaN and out-of-range labels") {
  // keras.metrics.SparseTopKCategoricalAccuracy(k=2).update_state(y_true, y_pred) on these
  // rows printed 0.4285714328289032 (per row: 1, 0, 1, 0, 0, 0, 1).
  const Floats y_pred = {0.1f, 0.4f, 0.4f, 0.1f,  //
                         0.1f, 0.4f, 0.4f, 0.1f,  //
                         0.5f, 0.2f, 0.2f, 0.2f,  //
                         kNaN, 0.9f, 0.1f, 0.0f,  //
                         0.3f, 0.9f, 0.1f, 0.0f,  //
                         0.3f, 0.9f, 0.1f, 0.0f,  //
                         0.3f, 0.9f, 0.1f, 0.0f};
  const Labels y_true = {2, 0, 3, 1, 4, -1, 0};
  metrics::SparseTopKCategoricalAccuracy<2> top2;
  top2.update_state(sparse_batch(y_pred, 4, y_true));
  CHECK(top2.result() == doctest::Approx(0.4285714328289032).epsilon(1e-7));
  CHECK(top2.result() == 3.0 / 7.0);
}

TEST_CASE("sparse top-k streamed in uneven batches equals one update over all rows") {
  RandomData random;
  const Floats y_pred = random.uniform(20 * 10, 0.0f, 1.0f);
  const Labels y_true = random.labels(20, 10);
  check_stream_equals_concatenation(metrics::SparseTopKCategoricalAccuracy<3>{},
                                    sparse_batch(y_pred, 10, y_true));
}

TEST_CASE("sparse top-k forgets earlier batches on reset_state") {
  const Floats y_pred = {0.7f, 0.2f, 0.1f, 0.1f, 0.2f, 0.7f};
  const Labels hits = {0, 2}, misses = {2, 0};
  check_reset_forgets(metrics::SparseTopKCategoricalAccuracy<1>{}, sparse_batch(y_pred, 3, hits),
                      sparse_batch(y_pred, 3, misses));
}

TEST_CASE("sparse top-k refuses rows narrower than K, naming K and the width") {
  const Floats y_pred(8, 0.25f);
  const Labels y_true = {0, 1};
  metrics::SparseTopKCategoricalAccuracy<5> top5;
  check_error_names([&] { top5.update_state(sparse_batch(y_pred, 4, y_true)); },
                    {"SparseTopKCategoricalAccuracy", "K = 5", "found 4"});
}

// --- TopKCategoricalAccuracy -----------------------------------------------------------------

TEST_CASE("top-k on one-hot targets matches Keras's docstring example") {
  // keras/src/metrics/accuracy_metrics.py, TopKCategoricalAccuracy docstring: k=1 gives 0.5.
  const Floats y_pred = {0.1f, 0.9f, 0.8f, 0.05f, 0.95f, 0.0f};
  const Floats y_true = {0, 0, 1, 0, 1, 0};
  metrics::TopKCategoricalAccuracy<1> top1;
  top1.update_state(dense_batch(y_pred, 3, y_true, 3));
  CHECK(top1.result() == 0.5);
}

TEST_CASE("top-k with K = 5 matches Keras, ties at the K-th place counting as hits") {
  // keras.metrics.TopKCategoricalAccuracy().update_state(y_true, y_pred) printed 0.5 (per row:
  // 0, 0, 1, 1). Row 3's target class (0.1) has three larger outputs and ties with three
  // more; in_top_k counts only the larger ones, so it is a hit.
  const Floats y_pred = {0.30f, 0.05f, 0.10f, 0.20f, 0.15f, 0.12f, 0.08f,  //
                         0.01f, 0.02f, 0.03f, 0.04f, 0.05f, 0.06f, 0.79f,  //
                         0.20f, 0.20f, 0.20f, 0.10f, 0.10f, 0.10f, 0.10f,  //
                         0.10f, 0.10f, 0.10f, 0.10f, 0.10f, 0.10f, 0.40f};
  Floats y_true(4 * 7, 0.0f);
  y_true[0 * 7 + 1] = y_true[1 * 7 + 0] = y_true[2 * 7 + 4] = y_true[3 * 7 + 5] = 1.0f;
  metrics::TopKCategoricalAccuracy<> top5;
  top5.update_state(dense_batch(y_pred, 7, y_true, 7));
  CHECK(top5.result() == 0.5);
}

TEST_CASE("top-k takes the first of equal target maxima as the class, as argmax does") {
  // Keras's top_k_categorical_accuracy calls ops.argmax(y_true); printed 0 for this row with
  // k=1: the class is 1 (output 0.2), not 2 (output 0.9).
  const Floats y_pred = {0.1f, 0.2f, 0.9f};
  const Floats y_true = {0, 1, 1};
  metrics::TopKCategoricalAccuracy<1> top1;
  top1.update_state(dense_batch(y_pred, 3, y_true, 3));
  CHECK(top1.result() == 0.0);
}

TEST_CASE("top-k streamed in uneven batches equals one update over all rows") {
  RandomData random;
  const Floats y_pred = random.uniform(20 * 8, 0.0f, 1.0f);
  const Labels classes = random.labels(20, 8);
  Floats y_true(20 * 8, 0.0f);
  for (std::size_t r = 0; r < 20; ++r) y_true[r * 8 + static_cast<std::size_t>(classes[r])] = 1;
  check_stream_equals_concatenation(metrics::TopKCategoricalAccuracy<2>{},
                                    dense_batch(y_pred, 8, y_true, 8));
}

TEST_CASE("top-k forgets earlier batches on reset_state") {
  const Floats y_pred = {0.7f, 0.2f, 0.1f};
  const Floats hit = {1, 0, 0}, miss = {0, 0, 1};
  check_reset_forgets(metrics::TopKCategoricalAccuracy<1>{}, dense_batch(y_pred, 3, hit, 3),
                      dense_batch(y_pred, 3, miss, 3));
}

TEST_CASE("top-k refuses targets narrower than the outputs and rows narrower than K") {
  const Floats y_pred(12, 0.25f);
  const Floats y_true(8, 0.0f);
  metrics::TopKCategoricalAccuracy<2> top2;
  check_error_names([&] { top2.update_state(dense_batch(y_pred, 3, y_true, 2)); },
                    {"TopKCategoricalAccuracy", "3", "found 2"});
  metrics::TopKCategoricalAccuracy<5> top5;
  check_error_names([&] { top5.update_state(dense_batch(y_pred, 3, y_pred, 3)); },
                    {"TopKCategoricalAccuracy", "K = 5", "found 3"});
}

// --- Precision and Recall --------------------------------------------------------------------

namespace {

// Four rows of three labels. Targets are cast to bool (metrics_utils.py,
// update_confusion_matrix_variables), so 0.3 is a positive; outputs are positive when strictly
// above the threshold, so 0.5 is a negative at 0.5.
const Floats kMultiLabelOutputs = {0.5f,  0.9f, 0.2f, 0.7f, 0.51f, 0.0f,
                                   0.49f, 0.6f, 1.0f, 0.8f, 0.1f,  0.95f};
const Floats kMultiLabelTargets = {1, 1, 0, 0, 0.3f, 0, 1, 0, 1, 0, 1, 1};

}  // namespace

TEST_CASE("precision counts every element: tp / (tp + fp) at the threshold") {
  // At 0.5 the outputs above it are 0.9 0.7 0.51 0.6 1.0 0.8 0.95; their targets are
  // 1 0 0.3 0 1 0 1, so tp = 4 and fp = 3 (confusion_metrics.py, Precision.result).
  metrics::Precision precision;
  CHECK(precision.threshold() == 0.5f);
  precision.update_state(dense_batch(kMultiLabelOutputs, 3, kMultiLabelTargets, 3));
  CHECK(precision.true_positives() == 4.0);
  CHECK(precision.false_positives() == 3.0);
  CHECK(precision.result() == 4.0 / 7.0);
  // keras.metrics.Precision(thresholds=0.5) and (thresholds=0.75) printed these.
  CHECK(precision.result() == doctest::Approx(0.5714285969734192).epsilon(1e-7));
  metrics::Precision strict{{.thresholds = 0.75f}};
  strict.update_state(dense_batch(kMultiLabelOutputs, 3, kMultiLabelTargets, 3));
  CHECK(strict.result() == 0.75);
}

TEST_CASE("recall counts every element: tp / (tp + fn) at the threshold") {
  // The seven positives have outputs 0.5 0.9 0.51 0.49 1.0 0.1 0.95: four above 0.5, three
  // above 0.75 (confusion_metrics.py, Recall.result).
  metrics::Recall recall;
  recall.update_state(dense_batch(kMultiLabelOutputs, 3, kMultiLabelTargets, 3));
  CHECK(recall.true_positives() == 4.0);
  CHECK(recall.false_negatives() == 3.0);
  // keras.metrics.Recall(thresholds=0.5) printed 0.5714285969734192, (thresholds=0.75)
  // printed 0.4285714328289032.
  CHECK(recall.result() == doctest::Approx(0.5714285969734192).epsilon(1e-7));
  metrics::Recall strict{{.thresholds = 0.75f}};
  strict.update_state(dense_batch(kMultiLabelOutputs, 3, kMultiLabelTargets, 3));
  CHECK(strict.result() == doctest::Approx(0.4285714328289032).epsilon(1e-7));
}

TEST_CASE("precision and recall take int32 labels for a one-output binary model") {
  // keras.metrics.Precision() and Recall() on y_true [1 1 0 0 1 0], y_pred [[.9] [.2] [.6]
  // [.4] [.55] [.1]] printed 0.6666666865348816 each: tp = 2 (.9, .55), fp = 1 (.6),
  // fn = 1 (.2).
  const Floats y_pred = {0.9f, 0.2f, 0.6f, 0.4f, 0.55f, 0.1f};
  const Labels y_true = {1, 1, 0, 0, 1, 0};
  metrics::Precision precision;
  metrics::Recall recall;
  precision.update_state(sparse_batch(y_pred, 1, y_true));
  recall.update_state(sparse_batch(y_pred, 1, y_true));
  CHECK(precision.result() == 2.0 / 3.0);
  CHECK(recall.result() == 2.0 / 3.0);
  // Any nonzero label is a positive, as Keras's cast to bool makes it.
  const Labels twos = {2, 2, 0, 0, 2, 0};
  metrics::Recall recall_of_twos;
  recall_of_twos.update_state(sparse_batch(y_pred, 1, twos));
  CHECK(recall_of_twos.result() == 2.0 / 3.0);
}

TEST_CASE("precision and recall are 0 when their denominator is 0") {
  const Floats low = {0.1f, 0.2f};
  const Floats negatives = {0, 0};
  metrics::Precision precision;  // nothing predicted positive
  precision.update_state(dense_batch(low, 1, negatives, 1));
  CHECK(precision.result() == 0.0);
  metrics::Recall recall;  // no positive seen
  const Floats high = {0.9f, 0.8f};
  recall.update_state(dense_batch(high, 1, negatives, 1));
  CHECK(recall.result() == 0.0);
}

TEST_CASE("precision and recall streamed in uneven batches equal one update over all rows") {
  RandomData random;
  const Floats y_pred = random.uniform(20 * 3, 0.0f, 1.0f);
  const Floats y_true = random.bits(20 * 3);
  check_stream_equals_concatenation(metrics::Precision{}, dense_batch(y_pred, 3, y_true, 3));
  check_stream_equals_concatenation(metrics::Recall{{.thresholds = 0.3f}},
                                    dense_batch(y_pred, 3, y_true, 3));
  const Floats single = random.uniform(20, 0.0f, 1.0f);
  const Labels labels = random.labels(20, 2);
  check_stream_equals_concatenation(metrics::Precision{}, sparse_batch(single, 1, labels));
  check_stream_equals_concatenation(metrics::Recall{}, sparse_batch(single, 1, labels));
}

TEST_CASE("precision and recall forget earlier batches on reset_state") {
  const Floats y_pred = {0.9f, 0.8f, 0.2f};
  const Floats first = {1, 1, 1}, second = {1, 0, 1};
  check_reset_forgets(metrics::Precision{}, dense_batch(y_pred, 3, first, 3),
                      dense_batch(y_pred, 3, second, 3));
  check_reset_forgets(metrics::Recall{}, dense_batch(y_pred, 3, first, 3),
                      dense_batch(y_pred, 3, second, 3));
}

TEST_CASE("precision and recall refuse mismatched widths and thresholds outside [0, 1]") {
  const Floats y_pred(6, 0.5f);
  const Floats y_true(4, 1.0f);
  const Labels labels = {1, 0, 1};
  metrics::Precision precision;
  check_error_names([&] { precision.update_state(dense_batch(y_pred, 3, y_true, 2)); },
                    {"Precision", "expected", "3", "found 2"});
  check_error_names([&] { precision.update_state(sparse_batch(y_pred, 2, labels)); },
                    {"Precision", "expected", "1", "found 2"});
  metrics::Recall recall;
  check_error_names([&] { recall.update_state(dense_batch(y_pred, 2, y_true, 1)); },
                    {"Recall", "2", "found 1"});
  check_error_names([] { metrics::Precision{{.thresholds = 1.5f}}; },
                    {"Precision", "[0, 1]", "1.5"});
  check_error_names([] { metrics::Recall{{.thresholds = -0.1f}}; }, {"Recall", "[0, 1]", "-0.1"});
}

// --- AUC -------------------------------------------------------------------------------------

namespace {

// Outputs chosen to sit on thresholds (float(1/199), float(2/199), float(100/199)), on both
// ends (0, 1), and between; labels mixed.
const Floats kAucOutputs = {0.0f,  1.0f,  1.0f / 199, 2.0f / 199, 0.5f,   100.0f / 199, 0.25f,
                            0.75f, 0.33f, 0.66f,      0.999f,     0.001f, 0.12f,        0.87f,
                            0.5f,  0.42f, 0.58f,      0.97f,      0.03f,  0.61f};
const Floats kAucTargets = {0, 1, 1, 0, 1, 0, 0, 1, 1, 0, 1, 0, 0, 1, 0, 1, 0, 1, 0, 1};

// A per-threshold count given as the thresholds where it changes: {first index, value}, ...
std::vector<double> steps(const std::vector<std::pair<std::size_t, double>>& changes,
                          std::size_t n) {
  std::vector<double> out(n);
  for (std::size_t c = 0; c < changes.size(); ++c) {
    const std::size_t end = c + 1 < changes.size() ? changes[c + 1].first : n;
    for (std::size_t i = changes[c].first; i < end; ++i) out[i] = changes[c].second;
  }
  return out;
}

}  // namespace

TEST_CASE("AUC lays out its 200 thresholds as Keras does, epsilon beyond both ends") {
  // keras.metrics.AUC()._thresholds cast to float32: [0], [1], [99], [100], [198], [199].
  const std::vector<float> thresholds = metrics::AUC{}.thresholds();
  REQUIRE(thresholds.size() == 200);
  CHECK(thresholds[0] == -1.0000000116860974e-07f);
  CHECK(thresholds[1] == 0.005025125574320555f);
  CHECK(thresholds[99] == 0.4974874258041382f);
  CHECK(thresholds[100] == 0.5025125741958618f);
  CHECK(thresholds[198] == 0.9949748516082764f);
  CHECK(thresholds[199] == 1.0000001192092896f);
}

TEST_CASE("AUC with 3 thresholds matches Keras's docstring by the trapezoid rule") {
  // confusion_metrics.py AUC docstring: y_true [0 0 1 1], y_pred [0 .5 .3 .9], num_thresholds=3
  // give tp [2 1 0], fp [2 0 0], so (fp rate, tp rate) = (1, 1), (0, .5), (0, 0), and
  // AUC.result's trapezoids sum to (1 - 0) * (1 + .5) / 2 = 0.75.
  const Floats y_pred = {0.0f, 0.5f, 0.3f, 0.9f};
  const Floats y_true = {0, 0, 1, 1};
  metrics::AUC auc{{.num_thresholds = 3}};
  auc.update_state(dense_batch(y_pred, 1, y_true, 1));
  CHECK(auc.true_positives() == std::vector<double>{2, 1, 0});
  CHECK(auc.false_positives() == std::vector<double>{2, 0, 0});
  CHECK(auc.true_negatives() == std::vector<double>{0, 2, 2});
  CHECK(auc.false_negatives() == std::vector<double>{0, 1, 2});
  CHECK(auc.result() == 0.75);
  // keras.metrics.AUC() (200 thresholds) printed 0.75 too.
  metrics::AUC fine;
  fine.update_state(dense_batch(y_pred, 1, y_true, 1));
  CHECK(fine.result() == doctest::Approx(0.75).epsilon(1e-7));
}

TEST_CASE("AUC counts outputs on a threshold as below it, exactly as Keras's buckets do") {
  // keras.metrics.AUC().update_state(kAucTargets, kAucOutputs): its true_positives and
  // false_positives variables, written as the indices where they change, and result()
  // 0.7900000214576721. float(100/199) * 199 is exactly 100, so that output (and 0.5) leave fp
  // at threshold 100, not 101.
  metrics::AUC auc;
  auc.update_state(dense_batch(kAucOutputs, 1, kAucTargets, 1));
  CHECK(auc.true_positives() == steps({{0, 10},
                                       {1, 9},
                                       {66, 8},
                                       {84, 7},
                                       {100, 6},
                                       {122, 5},
                                       {150, 4},
                                       {174, 3},
                                       {194, 2},
                                       {199, 0}},
                                      200));
  CHECK(auc.false_positives() ==
        steps({{0, 10}, {1, 8}, {2, 7}, {6, 6}, {24, 5}, {50, 4}, {100, 2}, {116, 1}, {132, 0}},
              200));
  CHECK(auc.true_negatives() ==
        steps({{0, 0}, {1, 2}, {2, 3}, {6, 4}, {24, 5}, {50, 6}, {100, 8}, {116, 9}, {132, 10}},
              200));
  CHECK(auc.false_negatives() == steps({{0, 0},
                                        {1, 1},
                                        {66, 2},
                                        {84, 3},
                                        {100, 4},
                                        {122, 5},
                                        {150, 6},
                                        {174, 7},
                                        {194, 8},
                                        {199, 10}},
                                       200));
  CHECK(auc.result() == doctest::Approx(0.7900000214576721).epsilon(1e-6));
}

TEST_CASE("AUC pools every element of multi-column outputs, as Keras flattens them") {
  // keras.metrics.AUC() on the same values reshaped to 5 x 4 printed 0.7900000214576721.
  metrics::AUC auc;
  auc.update_state(dense_batch(kAucOutputs, 4, kAucTargets, 4));
  CHECK(auc.result() == doctest::Approx(0.7900000214576721).epsilon(1e-6));
}

TEST_CASE("AUC reads int32 labels of a one-output model like float targets") {
  Labels labels(kAucTargets.size());
  for (std::size_t i = 0; i < labels.size(); ++i)
    labels[i] = static_cast<std::int32_t>(kAucTargets[i]);
  metrics::AUC from_labels, from_floats;
  from_labels.update_state(sparse_batch(kAucOutputs, 1, labels));
  from_floats.update_state(dense_batch(kAucOutputs, 1, kAucTargets, 1));
  CHECK(from_labels.result() == from_floats.result());
  CHECK(from_labels.true_positives() == from_floats.true_positives());
}

TEST_CASE("AUC clips outputs outside [0, 1] before bucketing") {
  // keras.metrics.AUC() on y_true [0 1 0 1 0 1], y_pred [-.5 1.5 .3 .7 2 -1] printed
  // 0.5555555820465088 (metrics_utils._update_confusion_matrix_variables_optimized clips).
  const Floats y_pred = {-0.5f, 1.5f, 0.3f, 0.7f, 2.0f, -1.0f};
  const Floats y_true = {0, 1, 0, 1, 0, 1};
  metrics::AUC auc;
  auc.update_state(dense_batch(y_pred, 1, y_true, 1));
  CHECK(auc.result() == doctest::Approx(0.5555555820465088).epsilon(1e-6));
}

TEST_CASE("AUC counts a NaN output as an output of 0, where Keras leaves it to the backend") {
  const Floats with_nan = {kNaN, 0.9f, 0.6f, 0.3f}, with_zero = {0.0f, 0.9f, 0.6f, 0.3f};
  const Floats y_true = {1, 1, 0, 0};
  metrics::AUC nan_auc, zero_auc;
  nan_auc.update_state(dense_batch(with_nan, 1, y_true, 1));
  zero_auc.update_state(dense_batch(with_zero, 1, y_true, 1));
  CHECK(nan_auc.true_positives() == zero_auc.true_positives());
  CHECK(nan_auc.result() == zero_auc.result());
  CHECK(nan_auc.result() == 0.5);
}

TEST_CASE("AUC is 0 while one class is missing, as divide_no_nan makes a rate 0") {
  const Floats y_pred = {0.2f, 0.9f, 0.6f};
  const Floats positives = {1, 1, 1};
  metrics::AUC auc;
  auc.update_state(dense_batch(y_pred, 1, positives, 1));
  CHECK(auc.result() == 0.0);
}

TEST_CASE("AUC streamed in uneven batches equals one update over all rows") {
  RandomData random;
  const Floats y_pred = random.uniform(20 * 3, 0.0f, 1.0f);
  const Floats y_true = random.bits(20 * 3);
  check_stream_equals_concatenation(metrics::AUC{}, dense_batch(y_pred, 3, y_true, 3));
  metrics::AUC streamed, whole;
  const auto all = dense_batch(y_pred, 3, y_true, 3);
  whole.update_state(all);
  streamed.update_state(rows_of(all, 0, 7));
  streamed.update_state(rows_of(all, 7, 1));
  streamed.update_state(rows_of(all, 8, 12));
  CHECK(streamed.true_positives() == whole.true_positives());
  CHECK(streamed.false_positives() == whole.false_positives());
}

TEST_CASE("AUC forgets earlier batches on reset_state") {
  const Floats y_pred = {0.9f, 0.2f, 0.6f, 0.4f};
  const Floats good = {1, 0, 1, 0}, mixed = {1, 0, 0, 1};
  check_reset_forgets(metrics::AUC{}, dense_batch(y_pred, 1, good, 1),
                      dense_batch(y_pred, 1, mixed, 1));
  metrics::AUC auc;
  auc.update_state(dense_batch(y_pred, 1, good, 1));
  auc.reset_state();
  CHECK(auc.true_positives() == std::vector<double>(200, 0.0));
  CHECK(auc.true_negatives() == std::vector<double>(200, 0.0));
}

TEST_CASE("AUC refuses mismatched widths and fewer than 2 thresholds") {
  const Floats y_pred(6, 0.5f);
  const Floats y_true(3, 1.0f);
  const Labels labels = {1, 0, 1};
  metrics::AUC auc;
  check_error_names([&] { auc.update_state(dense_batch(y_pred, 2, y_true, 1)); },
                    {"AUC", "2", "found 1"});
  check_error_names([&] { auc.update_state(sparse_batch(y_pred, 2, labels)); },
                    {"AUC", "1", "found 2"});
  check_error_names([] { metrics::AUC{{.num_thresholds = 1}}; }, {"AUC", "> 1", "found 1"});
}

// --- MeanSquaredError and MeanAbsoluteError --------------------------------------------------

namespace {

const Floats kRegressionOutputs = {0.5f, -1.0f, 2.0f, 1.5f, 0.25f, -0.75f};
const Floats kRegressionTargets = {1.0f, 0.0f, 2.0f, -0.5f, 0.25f, 0.25f};

}  // namespace

TEST_CASE("mean squared error is the mean over rows of each row's mean squared difference") {
  // regression_metrics.py mean_squared_error: mean over the last axis, then MeanMetricWrapper
  // averages rows. Differences: row 0 (-.5, -1, 0) -> 1.25 / 3; row 1 (2, 0, -1) -> 5 / 3.
  metrics::MeanSquaredError mse;
  mse.update_state(dense_batch(kRegressionOutputs, 3, kRegressionTargets, 3));
  CHECK(mse.result() == doctest::Approx((1.25 / 3 + 5.0 / 3) / 2).epsilon(1e-12));
  // keras.metrics.MeanSquaredError() printed 1.0416666269302368.
  CHECK(mse.result() == doctest::Approx(1.0416666269302368).epsilon(1e-7));
}

TEST_CASE("mean absolute error is the mean over rows of each row's mean absolute difference") {
  // regression_metrics.py mean_absolute_error: row 0 -> 1.5 / 3, row 1 -> 3 / 3; mean 0.75.
  // keras.metrics.MeanAbsoluteError() printed 0.75.
  metrics::MeanAbsoluteError mae;
  mae.update_state(dense_batch(kRegressionOutputs, 3, kRegressionTargets, 3));
  CHECK(mae.result() == 0.75);
}

TEST_CASE("regression metrics streamed in uneven batches equal one update over all rows") {
  RandomData random;
  const Floats y_pred = random.uniform(20 * 2, -3.0f, 3.0f);
  const Floats y_true = random.uniform(20 * 2, -3.0f, 3.0f);
  check_stream_equals_concatenation(metrics::MeanSquaredError{}, dense_batch(y_pred, 2, y_true, 2));
  check_stream_equals_concatenation(metrics::MeanAbsoluteError{},
                                    dense_batch(y_pred, 2, y_true, 2));
}

TEST_CASE("regression metrics forget earlier batches on reset_state") {
  const Floats y_pred = {1.0f, 2.0f};
  const Floats near = {1.0f, 2.5f}, far = {-1.0f, 4.0f};
  check_reset_forgets(metrics::MeanSquaredError{}, dense_batch(y_pred, 2, near, 2),
                      dense_batch(y_pred, 2, far, 2));
  check_reset_forgets(metrics::MeanAbsoluteError{}, dense_batch(y_pred, 2, near, 2),
                      dense_batch(y_pred, 2, far, 2));
}

TEST_CASE("regression metrics refuse targets whose width differs from the outputs'") {
  const Floats y_pred(6, 0.5f);
  const Floats y_true(4, 1.0f);
  metrics::MeanSquaredError mse;
  check_error_names([&] { mse.update_state(dense_batch(y_pred, 3, y_true, 2)); },
                    {"MeanSquaredError", "3", "found 2"});
  metrics::MeanAbsoluteError mae;
  check_error_names([&] { mae.update_state(dense_batch(y_pred, 2, y_true, 3)); },
                    {"MeanAbsoluteError", "2", "found 3"});
}
