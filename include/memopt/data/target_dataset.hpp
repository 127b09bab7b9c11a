#pragma once
// data::TargetDataset and from(features, targets, width, target_width): rows of features with
// float target vectors, owned or viewed, as a random-access range of TargetSample.

#include <compare>
#include <cstddef>
#include <iterator>
#include <ranges>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "memopt/core/error.hpp"
#include "memopt/data/sample.hpp"

namespace memopt::data {
namespace detail {

// Raises memopt::error unless `features` and `targets` hold the same number of rows of
// `width` and `target_width` values; returns that number.
inline std::size_t check_target_rows(const char* who, std::size_t features, std::size_t targets,
                                     std::size_t width, std::size_t target_width) {
  if (width == 0 || target_width == 0) {
    throw error(std::string(who) + ": expected a width > 0 and a target width > 0, found " +
                std::to_string(width) + " and " + std::to_string(target_width));
  }
  // Divide rather than multiply, so that huge sizes cannot overflow the check.
  const std::size_t rows = features / width;
  if (features % width != 0 || targets % target_width != 0 || targets / target_width != rows) {
    throw error(std::string(who) + ": expected features and targets of the same number of rows (" +
                std::to_string(width) + " features and " + std::to_string(target_width) +
                " targets a row), found " + std::to_string(features) + " features (" +
                std::to_string(rows) + " rows and " + std::to_string(features % width) +
                " values over) and " + std::to_string(targets) + " targets (" +
                std::to_string(targets / target_width) + " rows and " +
                std::to_string(targets % target_width) + " values over)");
  }
  return rows;
}

/// A random-access iterator over rows of features and targets held elsewhere: its reference is
/// a `TargetSample` value that views row `i` of each. It keeps the two base pointers itself,
/// not a pointer to its range, so it stays valid when a range that views the data is a
/// temporary.
class TargetRowIterator {
 public:
  using iterator_concept = std::random_access_iterator_tag;
  using iterator_category = std::input_iterator_tag;  // its reference is a value, not a T&
  using value_type = TargetSample;
  using reference = TargetSample;
  using difference_type = std::ptrdiff_t;

  TargetRowIterator() = default;
  TargetRowIterator(const float* features, const float* targets, std::size_t width,
                    std::size_t target_width, difference_type index) noexcept
      : features_(features),
        targets_(targets),
        width_(width),
        target_width_(target_width),
        index_(index) {}

  TargetSample operator*() const noexcept {
    const auto i = static_cast<std::size_t>(index_);
    return TargetSample{std::span<const float>(features_ + i * width_, width_),
                        std::span<const float>(targets_ + i * target_width_, target_width_)};
  }
  TargetSample operator[](difference_type n) const noexcept { return *(*this + n); }

  TargetRowIterator& operator++() noexcept {
    ++index_;
    return *this;
  }
  TargetRowIterator operator++(int) noexcept {
    auto old = *this;
    ++index_;
    return old;
  }
  TargetRowIterator& operator--() noexcept {
    --index_;
    return *this;
  }
  TargetRowIterator operator--(int) noexcept {
    auto old = *this;
    --index_;
    return old;
  }
  TargetRowIterator& operator+=(difference_type n) noexcept {
    index_ += n;
    return *this;
  }
  TargetRowIterator& operator-=(difference_type n) noexcept {
    index_ -= n;
    return *this;
  }

  friend TargetRowIterator operator+(TargetRowIterator it, difference_type n) noexcept {
    return it += n;
  }
  friend TargetRowIterator operator+(difference_type n, TargetRowIterator it) noexcept {
    return it += n;
  }
  friend TargetRowIterator operator-(TargetRowIterator it, difference_type n) noexcept {
    return it -= n;
  }
  friend difference_type operator-(const TargetRowIterator& a,
                                   const TargetRowIterator& b) noexcept {
    return a.index_ - b.index_;
  }
  // Iterators over one set of rows compare by position alone.
  friend bool operator==(const TargetRowIterator& a, const TargetRowIterator& b) noexcept {
    return a.index_ == b.index_;
  }
  friend std::strong_ordering operator<=>(const TargetRowIterator& a,
                                          const TargetRowIterator& b) noexcept {
    return a.index_ <=> b.index_;
  }

 private:
  const float* features_ = nullptr;
  const float* targets_ = nullptr;
  std::size_t width_ = 0;
  std::size_t target_width_ = 0;
  difference_type index_ = 0;
};

}  // namespace detail

/// `size()` samples of `width()` float features and `target_width()` float targets each, held
/// in two flat row-major buffers: the owning source behind `from(features, targets, width,
/// target_width)` and `from_csv`. A random-access, sized range whose elements are
/// `TargetSample` values viewing its rows; adaptors take an lvalue by reference and move an
/// rvalue in, as with `Dataset`.
///
/// ```cpp
/// auto ds = mo::data::from(std::vector<float>{1, 2, 3, 4}, std::vector<float>{0.5f, 1.5f}, 2, 1);
/// for (const auto& b : ds | mo::data::shuffle(ds.size(), 1) | mo::data::batch(32)) step(b);
/// ```
class TargetDataset {
 public:
  using iterator = detail::TargetRowIterator;

  /// An empty dataset of width 0.
  TargetDataset() = default;

  /// Takes ownership of `features` and `targets`: as many rows of `width` features as of
  /// `target_width` targets. Raises `memopt::error` when a width is 0 or the rows disagree.
  ///
  /// ```cpp
  /// const std::size_t n = 100;
  /// mo::data::TargetDataset ds{std::vector<float>(10 * n), std::vector<float>(n), 10, 1};
  /// ```
  TargetDataset(std::vector<float> features, std::vector<float> targets, std::size_t width,
                std::size_t target_width)
      : features_(std::move(features)),
        targets_(std::move(targets)),
        width_(width),
        target_width_(target_width) {
    rows_ = detail::check_target_rows("data::TargetDataset", features_.size(), targets_.size(),
                                      width_, target_width_);
  }

  /// The number of samples.
  std::size_t size() const noexcept { return rows_; }
  /// The number of features per sample.
  std::size_t width() const noexcept { return width_; }
  /// The number of targets per sample.
  std::size_t target_width() const noexcept { return target_width_; }
  bool empty() const noexcept { return rows_ == 0; }

  /// Sample `i` (unchecked): views of row `i` of the features and of the targets.
  TargetSample operator[](std::size_t i) const noexcept {
    return *(begin() + static_cast<std::ptrdiff_t>(i));
  }

  iterator begin() const noexcept {
    return iterator(features_.data(), targets_.data(), width_, target_width_, 0);
  }
  iterator end() const noexcept {
    return iterator(features_.data(), targets_.data(), width_, target_width_,
                    static_cast<std::ptrdiff_t>(rows_));
  }

  /// All features, row-major: `size()` rows of `width()` values.
  std::span<const float> features() const noexcept { return features_; }
  /// All targets, row-major: `size()` rows of `target_width()` values.
  std::span<const float> targets() const noexcept { return targets_; }

 private:
  std::vector<float> features_;
  std::vector<float> targets_;
  std::size_t rows_ = 0;
  std::size_t width_ = 0;
  std::size_t target_width_ = 0;
};

/// The view `from(features_span, targets_span, width, target_width)` returns: rows of features
/// and targets held by the caller, as `TargetSample`s, without copying. A borrowed range: its
/// iterators and samples view the caller's data, which must outlive them.
///
/// ```cpp
/// std::vector<float> xs(8 * 100), ys(100);
/// mo::data::TargetRows rows(xs, ys, 8, 1);
/// auto batches = rows | mo::data::batch(64);
/// ```
class TargetRows : public std::ranges::view_interface<TargetRows> {
 public:
  using iterator = detail::TargetRowIterator;

  TargetRows() = default;
  /// Views `features` and `targets` as rows of `width` and `target_width` values; raises
  /// `memopt::error` when a width is 0 or the rows disagree.
  TargetRows(std::span<const float> features, std::span<const float> targets, std::size_t width,
             std::size_t target_width)
      : features_(features), targets_(targets), width_(width), target_width_(target_width) {
    rows_ = detail::check_target_rows("data::from", features.size(), targets.size(), width,
                                      target_width);
  }

  iterator begin() const noexcept {
    return iterator(features_.data(), targets_.data(), width_, target_width_, 0);
  }
  iterator end() const noexcept {
    return iterator(features_.data(), targets_.data(), width_, target_width_,
                    static_cast<std::ptrdiff_t>(rows_));
  }
  std::size_t size() const noexcept { return rows_; }
  std::size_t width() const noexcept { return width_; }
  std::size_t target_width() const noexcept { return target_width_; }

 private:
  std::span<const float> features_;
  std::span<const float> targets_;
  std::size_t rows_ = 0;
  std::size_t width_ = 0;
  std::size_t target_width_ = 0;
};

/// Owns flat `features` and `targets` (row-major; as many rows of `width` features as of
/// `target_width` targets) as a `TargetDataset`; lvalue vectors are copied. Raises
/// `memopt::error` naming both sizes when they disagree.
///
/// ```cpp
/// std::vector<float> x(10 * 100), y(100);
/// auto ds = mo::data::from(std::move(x), std::move(y), /*width=*/10, /*target_width=*/1);
/// ```
inline TargetDataset from(std::vector<float> features, std::vector<float> targets,
                          std::size_t width, std::size_t target_width) {
  return TargetDataset(std::move(features), std::move(targets), width, target_width);
}

/// Views flat `features` and `targets` held by the caller (which must outlive the pipeline) as
/// rows of `TargetSample`, without copying; see `TargetRows`.
///
/// ```cpp
/// std::vector<float> features(10 * 100), targets(100);  // e.g. a mapped file's, kept alive
/// std::span<const float> x = features, y = targets;
/// auto batches = mo::data::from(x, y, 10, 1) | mo::data::batch(32);
/// ```
inline TargetRows from(std::span<const float> features, std::span<const float> targets,
                       std::size_t width, std::size_t target_width) {
  return TargetRows(features, targets, width, target_width);
}

}  // namespace memopt::data

template <>
inline constexpr bool std::ranges::enable_borrowed_range<memopt::data::TargetRows> = true;
