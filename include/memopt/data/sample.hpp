#pragma once
// The labelled sample and batch shapes that fit(), evaluate() and predict() consume.

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <span>

namespace memopt::data {

/// One labelled example: a view of `width` float features and a class index.
struct Sample {
  std::span<const float> features;
  std::int32_t label = 0;
};

/// What a training loop reads from a batch: `size()` rows of `width()` features, stored
/// sample after sample (row-major rows × width), and one label per row.
///
/// ```cpp
/// for (const auto& b : train | mo::data::batch(32)) use(b.features(), b.labels());
/// ```
template <class B>
concept LabeledBatch = requires(const B& b) {
  { b.features() } -> std::convertible_to<std::span<const float>>;
  { b.labels() } -> std::convertible_to<std::span<const std::int32_t>>;
  { b.size() } -> std::convertible_to<std::size_t>;
  { b.width() } -> std::convertible_to<std::size_t>;
};

/// What `predict` reads from a batch: `LabeledBatch` without the labels (a labelled batch is
/// one too, so `model.predict(test | mo::data::batch(256))` ignores its labels, as Keras does).
///
/// ```cpp
/// std::vector<float> p = model.predict(test | mo::data::batch(256));
/// ```
template <class B>
concept FeatureBatch = requires(const B& b) {
  { b.features() } -> std::convertible_to<std::span<const float>>;
  { b.size() } -> std::convertible_to<std::size_t>;
  { b.width() } -> std::convertible_to<std::size_t>;
};

}  // namespace memopt::data
