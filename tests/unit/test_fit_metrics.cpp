// Metrics compiled into a model: fit and evaluate stream them over the batches, History and
// the validation logs name them as Keras does, and each equals the metric computed directly
// over predict()'s outputs. Random, non-zero data throughout.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string_view>
#include <vector>

#include <memopt/memopt.hpp>

namespace mo = memopt;

namespace {

// Rows of 6 features; for classes, a label that depends on them (so training moves metrics).
struct Data {
  std::vector<float> x, bits;
  std::vector<std::int32_t> labels;
};
Data make_data(std::size_t rows, std::uint64_t seed) {
  mo::Rng rng(seed);
  Data d{std::vector<float>(rows * 6), std::vector<float>(rows), std::vector<std::int32_t>(rows)};
  for (float& v : d.x) v = rng.uniform(-1.0f, 1.0f);
  for (std::size_t r = 0; r < rows; ++r) {
    const float s = d.x[r * 6] + 0.5f * d.x[r * 6 + 1] - d.x[r * 6 + 2];
    d.bits[r] = s > 0.0f ? 1.0f : 0.0f;
    d.labels[r] = s < -0.4f ? 0 : s < 0.0f ? 1 : s < 0.4f ? 2 : 3;
  }
  return d;
}

template <class M, class Target>
double direct(M metric, const std::vector<float>& pred, std::size_t width,
              const std::vector<Target>& y, std::size_t target_width) {
  metric.update_state(
      mo::MetricBatch<Target>{pred.data(), y.size() / target_width, width, y.data(), target_width});
  return metric.result();
}

}  // namespace

TEST_CASE("fit and evaluate stream AUC, Precision and Recall beside BinaryCrossentropy") {
  const Data train = make_data(96, 1), val = make_data(40, 2);
  using Net = mo::Sequential<mo::Dense<8, mo::ReLU>, mo::Dense<1, mo::Sigmoid>>;
  mo::Model<Net, mo::Input<6>> model{5};
  model.compile(mo::Adam{{.learning_rate = 0.02}}, mo::BinaryCrossentropy{},
                mo::metrics::Accuracy{}, mo::metrics::AUC{}, mo::metrics::Precision{},
                mo::metrics::Recall{});
  auto rows =
      mo::data::from(std::span<const float>(train.x), std::span<const float>(train.bits), 6, 1);
  auto val_rows =
      mo::data::from(std::span<const float>(val.x), std::span<const float>(val.bits), 6, 1);
  const mo::History h =
      model.fit(rows | mo::data::batch(16),
                {.epochs = 6, .validation_data = val_rows | mo::data::batch(7), .verbose = 0});
  for (const char* key : {"loss", "accuracy", "auc", "precision", "recall", "val_loss",
                          "val_accuracy", "val_auc", "val_precision", "val_recall"}) {
    CAPTURE(key);
    REQUIRE(h.history.count(key) == 1);
    CHECK(h.history.at(key).size() == 6);
  }
  CHECK(h.history.at("auc").back() > h.history.at("auc").front());

  // Uneven batches of 7 stream to the metric over the whole set.
  const std::vector<float> p = model.predict(val.x);
  const mo::Evaluation e = model.evaluate(val_rows | mo::data::batch(7));
  CHECK(e.metrics.at("auc") == doctest::Approx(direct(mo::metrics::AUC{}, p, 1, val.bits, 1)));
  CHECK(e.metrics.at("precision") ==
        doctest::Approx(direct(mo::metrics::Precision{}, p, 1, val.bits, 1)));
  CHECK(e.metrics.at("recall") ==
        doctest::Approx(direct(mo::metrics::Recall{}, p, 1, val.bits, 1)));
  CHECK(e.metrics.at("auc") > 0.5);
  // The last epoch's validation figures are evaluate's: the weights have not moved since.
  CHECK(h.history.at("val_auc").back() == doctest::Approx(e.metrics.at("auc")));
  CHECK(h.history.at("val_loss").back() == doctest::Approx(e.loss));
}

TEST_CASE("top-k accuracy reads class indices beside SparseCategoricalCrossentropy") {
  const Data d = make_data(50, 3);
  using Net = mo::Sequential<mo::Dense<8, mo::Tanh>, mo::Dense<4, mo::Softmax>>;
  mo::Model<Net, mo::Input<6>> model{2};
  model.compile(mo::Adam{}, mo::SparseCategoricalCrossentropy{},
                mo::metrics::SparseTopKCategoricalAccuracy<2>{});
  auto rows = mo::data::from(d.x, d.labels, 6);
  const mo::Evaluation e = model.evaluate(rows | mo::data::batch(9));
  const double want =
      direct(mo::metrics::SparseTopKCategoricalAccuracy<2>{}, model.predict(d.x), 4, d.labels, 1);
  CHECK(e.metrics.at("sparse_top_k_categorical_accuracy") == doctest::Approx(want));
  CHECK(want > 0.0);
  CHECK(want < 1.0);
}

TEST_CASE("mean absolute error beside MeanSquaredError, after a one-hot source") {
  const Data d = make_data(30, 4);
  using Net = mo::Sequential<mo::Dense<8, mo::Tanh>, mo::Dense<4>>;
  mo::Model<Net, mo::Input<6>> model{4};
  model.compile(mo::SGD{}, mo::MeanSquaredError{}, mo::metrics::MeanAbsoluteError{},
                mo::metrics::MeanSquaredError{});
  const mo::Evaluation e =
      model.evaluate(mo::data::from(d.x, d.labels, 6) | mo::data::one_hot(4) | mo::data::batch(8));
  std::vector<float> onehot(30 * 4, 0.0f);
  for (std::size_t r = 0; r < 30; ++r) onehot[r * 4 + static_cast<std::size_t>(d.labels[r])] = 1;
  const std::vector<float> p = model.predict(d.x);
  CHECK(e.metrics.at("mean_absolute_error") ==
        doctest::Approx(direct(mo::metrics::MeanAbsoluteError{}, p, 4, onehot, 4)));
  // The loss and the metric of the same name agree.
  CHECK(e.metrics.at("mean_squared_error") == doctest::Approx(e.loss));
}

namespace {

// A metric of the user's own: the largest absolute error seen.
struct MaxAbsoluteError {
  static constexpr std::string_view name = "max_absolute_error";
  double worst = 0;
  void reset_state() { worst = 0; }
  void update_state(const mo::MetricBatch<float>& b) {
    for (std::size_t i = 0; i < b.rows * b.width; ++i)
      worst = std::max(worst, static_cast<double>(std::abs(b.y_pred[i] - b.y_true[i])));
  }
  double result() const { return worst; }
};
static_assert(mo::Metric<MaxAbsoluteError>);

}  // namespace

TEST_CASE("a metric of the user's own is streamed and named like memopt's") {
  const Data d = make_data(20, 6);
  using Net = mo::Sequential<mo::Dense<4, mo::Tanh>, mo::Dense<1>>;
  mo::Model<Net, mo::Input<6>> model{8};
  model.compile(mo::SGD{{.learning_rate = 0.0}}, mo::MeanSquaredError{}, MaxAbsoluteError{});
  auto rows = mo::data::from(std::span<const float>(d.x), std::span<const float>(d.bits), 6, 1);
  const mo::History h = model.fit(rows | mo::data::batch(6), {.epochs = 2, .verbose = 0});
  const std::vector<float> p = model.predict(d.x);
  double worst = 0;
  for (std::size_t r = 0; r < 20; ++r)
    worst = std::max(worst, static_cast<double>(std::abs(p[r] - d.bits[r])));
  REQUIRE(worst > 0.0);
  // Learning rate 0: every epoch sees the same predictions, and the state restarts each epoch.
  CHECK(h.history.at("max_absolute_error") == std::vector<double>{worst, worst});
}

TEST_CASE("callbacks' mode \"auto\" maximises accuracies, auc, precision and recall") {
  using mo::callbacks::Monitor;
  for (const char* up : {"val_auc", "precision", "val_recall", "sparse_top_k_categorical_accuracy"})
    CHECK(Monitor(up, "auto", 0.0, "test").is_improvement(0.9, 0.8));
  for (const char* down : {"val_mean_absolute_error", "mean_squared_error", "val_loss"})
    CHECK(Monitor(down, "auto", 0.0, "test").is_improvement(0.8, 0.9));
  CHECK_THROWS_WITH_AS(Monitor("val_widgets", "auto", 0.0, "test"), doctest::Contains("pass .mode"),
                       mo::error);
}
