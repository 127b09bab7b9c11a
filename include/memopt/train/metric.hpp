#pragma once
// memopt::Metric: what a streaming metric offers (Keras's keras.metrics.Metric), and the batch
// it reads.

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

namespace memopt {

/// One batch as a metric sees it: the model's outputs after its last activation
/// (probabilities after Softmax/Sigmoid, raw values after Linear), `rows x width` row-major,
/// and the targets: class indices (`Target = std::int32_t`, one per row) or float vectors
/// (`Target = float`, `rows x target_width`).
///
/// ```cpp
/// std::vector<float> probs(32 * 10);
/// std::vector<std::int32_t> labels(32);
/// mo::MetricBatch<std::int32_t> batch{.y_pred = probs.data(), .rows = 32, .width = 10,
///                                     .y_true = labels.data()};
/// ```
template <class Target>
struct MetricBatch {
  const float* y_pred = nullptr;
  std::size_t rows = 0;
  std::size_t width = 0;
  const Target* y_true = nullptr;
  std::size_t target_width = 1;
};

/// A streaming metric: reset_state() at each epoch's start, update_state(batch) per batch,
/// result() whenever logs are written; `name` is the Keras name (History and callbacks see
/// it, validation prefixes "val_").
///
/// ```cpp
/// static_assert(mo::Metric<mo::metrics::AUC>);
/// ```
template <class M>
concept Metric = std::copy_constructible<M> && requires(M& m, const M& cm) {
  { M::name } -> std::convertible_to<std::string_view>;
  m.reset_state();
  { cm.result() } -> std::convertible_to<double>;
} &&(
    requires(M& m, const MetricBatch<std::int32_t>& b) { m.update_state(b); } ||
    requires(M & m, const MetricBatch<float>& b) { m.update_state(b); });

/// A metric whose state is a vector of sums: `state()` is every number result() reads, and
/// adding two metrics' states element by element gives the metric over both their batches
/// (counts, totals, histograms). Data-parallel fit sums it across ranks before it logs the
/// result, so the logged value is the metric over the global batch (Keras sums a metric's
/// variables across replicas the same way). Every metric of memopt's is one; a metric without
/// `state()` (a running maximum, say) trains on one process only.
///
/// ```cpp
/// static_assert(mo::SummableMetric<mo::metrics::Precision>);
/// ```
template <class M>
concept SummableMetric = Metric<M> && requires(M& m) {
  { m.state() } -> std::same_as<std::span<double>>;
};

}  // namespace memopt
