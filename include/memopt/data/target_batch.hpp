#pragma once
// data::TargetBatch: contiguous rows of features and their float target vectors, reused from
// batch to batch.

#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "memopt/core/error.hpp"
#include "memopt/data/sample.hpp"

namespace memopt::data {

/// `size()` samples of `width()` features and `target_width()` targets each, stored
/// contiguously: features row-major (rows × width) and targets row-major (rows ×
/// target_width). It models `FloatTargetBatch`; `batch(n)` over `TargetSample`s fills one.
///
/// Adaptors fill a `TargetBatch` with `clear()` and `push_back()`; once `reserve()` has made
/// room for a full batch, refilling it allocates nothing.
///
/// ```cpp
/// auto rows = mo::data::from_csv("houses.csv", {.target_columns = {8}});
/// for (const mo::data::TargetBatch& b : rows | mo::data::batch(32))
///   step(b.features(), b.targets());  // b.size() x b.width(), b.size() x b.target_width()
/// ```
class TargetBatch {
 public:
  /// Features of every row, row-major: `size() * width()` values.
  std::span<const float> features() const noexcept { return features_; }
  /// Targets of every row, row-major: `size() * target_width()` values.
  std::span<const float> targets() const noexcept { return targets_; }
  /// The number of rows (samples).
  std::size_t size() const noexcept { return rows_; }
  /// The number of features per row.
  std::size_t width() const noexcept { return width_; }
  /// The number of targets per row.
  std::size_t target_width() const noexcept { return target_width_; }
  bool empty() const noexcept { return rows_ == 0; }
  /// Bytes held, for memory bounds (prefetch's autotune).
  std::size_t byte_size() const noexcept {
    return sizeof(*this) + (features_.capacity() + targets_.capacity()) * sizeof(float);
  }

  /// Row `i` as a `TargetSample` viewing this batch (unchecked).
  ///
  /// ```cpp
  /// mo::data::TargetBatch b;
  /// for (std::size_t i = 0; i < b.size(); ++i) use(b[i].targets);
  /// ```
  TargetSample operator[](std::size_t i) const noexcept {
    return TargetSample{features().subspan(i * width_, width_),
                        targets().subspan(i * target_width_, target_width_)};
  }

  /// Makes room for `rows` rows shaped like `like`, so that filling allocates nothing. (This
  /// is the form `batch(n)` calls with the first row of each batch.)
  void reserve(std::size_t rows, const TargetSample& like) {
    reserve(rows, like.features.size(), like.targets.size());
  }
  /// Makes room for `rows` rows of `width` features and `target_width` targets.
  void reserve(std::size_t rows, std::size_t width, std::size_t target_width) {
    features_.reserve(rows * width);
    targets_.reserve(rows * target_width);
  }

  /// Removes every row and keeps the storage.
  void clear() noexcept {
    features_.clear();
    targets_.clear();
    rows_ = width_ = target_width_ = 0;
  }

  /// Appends `sample` as a row. The first row sets the width and the target width; a later
  /// row of another width or target width raises `memopt::error`, since rows of a batch must
  /// line up.
  ///
  /// ```cpp
  /// mo::data::TargetBatch b;
  /// std::vector<float> features(8), targets(1);
  /// b.push_back(mo::data::TargetSample{features, targets});
  /// ```
  void push_back(const TargetSample& sample) {
    if (rows_ == 0) {
      width_ = sample.features.size();
      target_width_ = sample.targets.size();
    } else if (sample.features.size() != width_ || sample.targets.size() != target_width_) {
      throw error("data::TargetBatch: expected every sample to have " + std::to_string(width_) +
                  " features and " + std::to_string(target_width_) +
                  " targets (as the batch's first row), found " +
                  std::to_string(sample.features.size()) + " features and " +
                  std::to_string(sample.targets.size()) + " targets in row " +
                  std::to_string(rows_));
    }
    features_.insert(features_.end(), sample.features.begin(), sample.features.end());
    targets_.insert(targets_.end(), sample.targets.begin(), sample.targets.end());
    ++rows_;
  }

 private:
  std::vector<float> features_;
  std::vector<float> targets_;
  // Counted apart from the vectors: a row may have no features or no targets.
  std::size_t rows_ = 0;
  std::size_t width_ = 0;
  std::size_t target_width_ = 0;
};

static_assert(FloatTargetBatch<TargetBatch>);
static_assert(!LabeledBatch<TargetBatch>);

}  // namespace memopt::data
