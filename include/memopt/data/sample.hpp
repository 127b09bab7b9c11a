#pragma once
// The labelled sample and batch shapes that fit(), evaluate() and predict() consume: rows of
// float features with a class index or a float target vector, or 8-bit images that the model
// scales itself (a Rescaling layer).

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

class TargetBatch;

/// One example whose target is a vector of floats rather than a class index: a one-hot row
/// (`one_hot`), multi-label 0/1 values, or regression values (`from_csv`). Both members view
/// storage that the source keeps alive. `batch(n)` groups these into a `TargetBatch`.
///
/// ```cpp
/// for (mo::data::TargetSample s : mo::data::from_csv("houses.csv", {.target_columns = {8}}))
///   use(s.features, s.targets);
/// ```
struct TargetSample {
  using batch_type = TargetBatch;

  std::span<const float> features;
  std::span<const float> targets;
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

/// A batch whose targets are float vectors (one-hot rows, multi-label 0/1 rows, regression
/// values): `FeatureBatch` plus `size() * target_width()` targets, row after row
/// (`data::TargetBatch`). What `fit` and `evaluate` read beside `LabeledBatch`, for losses
/// that compare with a vector (CategoricalCrossentropy, MeanSquaredError).
///
/// ```cpp
/// for (const auto& b : train | mo::data::one_hot(10) | mo::data::batch(32))
///   step(b.features(), b.targets(), b.target_width());  // 32 x 10 targets
/// ```
template <class B>
concept FloatTargetBatch = FeatureBatch<B> && requires(const B& b) {
  { b.targets() } -> std::convertible_to<std::span<const float>>;
  { b.target_width() } -> std::convertible_to<std::size_t>;
};

/// A batch of 8-bit images without labels, what `predict` reads beside `FeatureBatch`:
/// `size()` images of `height() x width() x channels()` values, stored image after image
/// (`[rows, height, width, channels]`, 1 byte a value). The model receives the values as they
/// are (0..255, Keras's semantics): put `Rescaling<std::ratio<1, 255>>` first to scale them.
///
/// ```cpp
/// #include <memopt/data/image_dataset.hpp>
/// auto [train_images, test_images] = mo::data::fashion_mnist_uint8();
/// std::vector<float> p = model.predict(test_images | mo::data::batch(256));
/// ```
template <class B>
concept PixelBatch = requires(const B& b) {
  { b.pixels() } -> std::convertible_to<std::span<const std::uint8_t>>;
  { b.size() } -> std::convertible_to<std::size_t>;
  { b.height() } -> std::convertible_to<std::size_t>;
  { b.width() } -> std::convertible_to<std::size_t>;
  { b.channels() } -> std::convertible_to<std::size_t>;
};

/// A `PixelBatch` with one label per image (`data::ImageBatch`): what `fit` and `evaluate`
/// read beside `LabeledBatch`.
///
/// ```cpp
/// #include <memopt/data/image_dataset.hpp>
/// auto [train_images, test_images] = mo::data::fashion_mnist_uint8();
/// model.fit(train_images | mo::data::shuffle(60'000, 1) | mo::data::batch(32));
/// ```
template <class B>
concept LabeledPixelBatch = PixelBatch<B> && requires(const B& b) {
  { b.labels() } -> std::convertible_to<std::span<const std::int32_t>>;
};

/// What `fit` and `evaluate` read: rows of floats with class indices or with float target
/// vectors, or labelled 8-bit images.
template <class B>
concept TrainingBatch = LabeledBatch<B> || LabeledPixelBatch<B> || FloatTargetBatch<B>;

/// What `predict` reads: rows of floats or 8-bit images, labelled or not.
template <class B>
concept InputBatch = FeatureBatch<B> || PixelBatch<B>;

/// A batch's input values as one span: its float features, or its 8-bit pixels.
///
/// ```cpp
/// const mo::data::Batch& b = *batches.begin();
/// auto values = mo::data::input_values(b);  // std::span<const float> or <const std::uint8_t>
/// ```
template <InputBatch B>
auto input_values(const B& b) {
  if constexpr (PixelBatch<B>)
    return std::span<const std::uint8_t>(b.pixels());
  else
    return std::span<const float>(b.features());
}

}  // namespace memopt::data
