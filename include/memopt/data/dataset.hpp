#pragma once
// data::Dataset: an owning, in-memory labelled dataset, a random-access range of Sample.

#include <compare>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "memopt/core/error.hpp"
#include "memopt/data/sample.hpp"

namespace memopt::data {

/// `size()` labelled samples of `width()` float features each, held in two flat buffers:
/// features row-major (sample after sample) and one label per sample.
///
/// A `Dataset` is a random-access, sized range whose elements are `Sample` values that view
/// its rows, so it works with `std::views` and with memopt's adaptors. Adaptors take an lvalue
/// `Dataset` by reference (through `std::views::all`), so piping never copies the data; an
/// rvalue is moved into the pipeline.
///
/// ```cpp
/// auto ds = mo::data::from({0.f, 1.f, 2.f, 3.f, 4.f, 5.f}, {7, 9}, /*width=*/3);
/// for (mo::data::Sample s : ds)
///   std::printf("%zu features, label %d\n", s.features.size(), s.label);
/// for (const auto& b : ds | mo::data::batch(32)) use(b);
/// ```
class Dataset {
 public:
  class Iterator;

  /// An empty dataset of width 0.
  Dataset() = default;

  /// Takes ownership of `features` (`labels.size()` rows of `width` values) and `labels`.
  /// Raises `memopt::error` when `width` is 0 or the sizes disagree.
  ///
  /// ```cpp
  /// const std::size_t n = 100;
  /// mo::data::Dataset ds{std::vector<float>(784 * n), std::vector<std::int32_t>(n), 784};
  /// ```
  Dataset(std::vector<float> features, std::vector<std::int32_t> labels, std::size_t width)
      : features_(std::move(features)), labels_(std::move(labels)), width_(width) {
    if (width_ == 0) {
      throw error("data::Dataset: expected a sample width > 0, found 0");
    }
    // Divide rather than multiply, so that a huge label count cannot overflow the check.
    if (features_.size() % width_ != 0 || features_.size() / width_ != labels_.size()) {
      throw error("data::Dataset: expected " + std::to_string(labels_.size()) + " labels x " +
                  std::to_string(width_) +
                  " features per sample = " + std::to_string(labels_.size() * width_) +
                  " features, found " + std::to_string(features_.size()) + " features");
    }
  }

  /// The number of samples.
  std::size_t size() const noexcept { return labels_.size(); }
  /// The number of features per sample.
  std::size_t width() const noexcept { return width_; }
  bool empty() const noexcept { return labels_.empty(); }

  /// Sample `i` (unchecked): a view of row `i` of the features and its label.
  ///
  /// ```cpp
  /// auto [pixels, label] = train[0];
  /// ```
  Sample operator[](std::size_t i) const noexcept {
    return Sample{std::span<const float>(features_.data() + i * width_, width_), labels_[i]};
  }

  Iterator begin() const noexcept;
  Iterator end() const noexcept;

  /// All features, row-major: `size()` rows of `width()` values.
  std::span<const float> features() const noexcept { return features_; }
  /// All labels, one per sample.
  std::span<const std::int32_t> labels() const noexcept { return labels_; }

 private:
  std::vector<float> features_;
  std::vector<std::int32_t> labels_;
  std::size_t width_ = 0;
};

/// Random-access iterator over a `Dataset`. Its reference type is a `Sample` value (a proxy
/// that views one row), so it models `std::random_access_iterator`, though as a C++17
/// iterator it is only an input iterator.
///
/// ```cpp
/// auto it = train.begin() + 10;
/// std::int32_t label = (*it).label;
/// ```
class Dataset::Iterator {
 public:
  using iterator_concept = std::random_access_iterator_tag;
  using iterator_category = std::input_iterator_tag;
  using value_type = Sample;
  using reference = Sample;
  using difference_type = std::ptrdiff_t;

  Iterator() = default;
  Iterator(const Dataset* dataset, difference_type index) noexcept
      : dataset_(dataset), index_(index) {}

  Sample operator*() const noexcept { return (*dataset_)[static_cast<std::size_t>(index_)]; }
  Sample operator[](difference_type n) const noexcept { return *(*this + n); }

  Iterator& operator++() noexcept {
    ++index_;
    return *this;
  }
  Iterator operator++(int) noexcept {
    auto old = *this;
    ++index_;
    return old;
  }
  Iterator& operator--() noexcept {
    --index_;
    return *this;
  }
  Iterator operator--(int) noexcept {
    auto old = *this;
    --index_;
    return old;
  }
  Iterator& operator+=(difference_type n) noexcept {
    index_ += n;
    return *this;
  }
  Iterator& operator-=(difference_type n) noexcept {
    index_ -= n;
    return *this;
  }

  friend Iterator operator+(Iterator it, difference_type n) noexcept { return it += n; }
  friend Iterator operator+(difference_type n, Iterator it) noexcept { return it += n; }
  friend Iterator operator-(Iterator it, difference_type n) noexcept { return it -= n; }
  friend difference_type operator-(const Iterator& a, const Iterator& b) noexcept {
    return a.index_ - b.index_;
  }
  // Iterators of one dataset compare by position alone.
  friend bool operator==(const Iterator& a, const Iterator& b) noexcept {
    return a.index_ == b.index_;
  }
  friend std::strong_ordering operator<=>(const Iterator& a, const Iterator& b) noexcept {
    return a.index_ <=> b.index_;
  }

 private:
  const Dataset* dataset_ = nullptr;
  difference_type index_ = 0;
};

inline Dataset::Iterator Dataset::begin() const noexcept {
  return Iterator(this, 0);
}
inline Dataset::Iterator Dataset::end() const noexcept {
  return Iterator(this, static_cast<std::ptrdiff_t>(size()));
}

/// Builds a `Dataset` from flat features (`labels.size()` rows of `width` values, row-major)
/// and labels, taking ownership of both. Raises `memopt::error` when the sizes disagree.
///
/// ```cpp
/// std::vector<float> pixels(784 * 100);
/// std::vector<std::int32_t> classes(100);
/// auto ds = mo::data::from(std::move(pixels), std::move(classes), 784);
/// ```
inline Dataset from(std::vector<float> features, std::vector<std::int32_t> labels,
                    std::size_t width) {
  return Dataset(std::move(features), std::move(labels), width);
}

}  // namespace memopt::data
