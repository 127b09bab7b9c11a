#pragma once
// data::Batch: contiguous rows of features and their labels, reused from batch to batch.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "memopt/core/error.hpp"
#include "memopt/data/sample.hpp"

namespace memopt::data {

/// `size()` samples of `width()` features each, stored contiguously: features row-major
/// (rows × width) and one label per row. It models `LabeledBatch`, what `fit()` reads.
///
/// Adaptors fill a `Batch` with `clear()` and `push_back()`; once `reserve()` has made room
/// for a full batch, refilling it allocates nothing.
///
/// ```cpp
/// mo::data::Batch b;
/// b.reserve(32, 784);
/// for (auto s : train | std::views::take(32)) b.push_back(s);
/// use(b.features().data(), b.size(), b.width());
/// ```
class Batch {
 public:
  /// Features of every row, row-major: `size() * width()` values.
  std::span<const float> features() const noexcept { return features_; }
  /// One label per row.
  std::span<const std::int32_t> labels() const noexcept { return labels_; }
  /// The number of rows (samples).
  std::size_t size() const noexcept { return labels_.size(); }
  /// The number of features per row.
  std::size_t width() const noexcept { return width_; }
  bool empty() const noexcept { return labels_.empty(); }

  /// Row `i` as a `Sample` (unchecked).
  ///
  /// ```cpp
  /// const mo::data::Batch& b = *batches.begin();
  /// for (std::size_t i = 0; i < b.size(); ++i) use(b[i].label);
  /// ```
  Sample operator[](std::size_t i) const noexcept {
    return Sample{features().subspan(i * width_, width_), labels_[i]};
  }

  /// Makes room for `rows` rows of `width` features, so that filling allocates nothing.
  void reserve(std::size_t rows, std::size_t width) {
    features_.reserve(rows * width);
    labels_.reserve(rows);
  }

  /// Removes every row and keeps the storage.
  void clear() noexcept {
    features_.clear();
    labels_.clear();
    width_ = 0;
  }

  /// Appends `sample` as a row. The first row sets the width; a later row of another width
  /// raises `memopt::error`, since rows of a batch must line up.
  ///
  /// ```cpp
  /// mo::data::Batch b;
  /// std::vector<float> pixels(784);
  /// b.push_back(mo::data::Sample{pixels, 3});
  /// ```
  void push_back(const Sample& sample) {
    if (labels_.empty()) {
      width_ = sample.features.size();
    } else if (sample.features.size() != width_) {
      throw error("data::Batch: expected every sample to have " + std::to_string(width_) +
                  " features (as the batch's first row), found " +
                  std::to_string(sample.features.size()) + " in row " +
                  std::to_string(labels_.size()));
    }
    features_.insert(features_.end(), sample.features.begin(), sample.features.end());
    labels_.push_back(sample.label);
  }

 private:
  std::vector<float> features_;
  std::vector<std::int32_t> labels_;
  std::size_t width_ = 0;
};

static_assert(LabeledBatch<Batch>);

}  // namespace memopt::data
