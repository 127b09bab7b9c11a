#pragma once
// data::StaticBatch<N>: a labelled batch whose number of rows is a compile-time constant.

#include <cstddef>
#include <cstdint>
#include <span>

#include "memopt/data/labeled_batch.hpp"
#include "memopt/data/sample.hpp"

namespace memopt::data {

/// Exactly `N` samples stored contiguously, as `Batch` stores them, with `N` in the type:
/// `size()` is `constexpr` and `labels()` is a `std::span<const std::int32_t, N>`, so code
/// planned for a batch of `N` (a static arena) can check it at compile time. `batch<N>()`
/// produces these, dropping a partial last batch. It models `LabeledBatch`.
///
/// ```cpp
/// for (const mo::data::StaticBatch<32>& b : train | mo::data::batch<32>()) {
///   static_assert(mo::data::StaticBatch<32>::size() == 32);
///   step(b.features().data(), b.labels().data());
/// }
/// ```
template <std::size_t N>
class StaticBatch {
  static_assert(N > 0, "data::StaticBatch: the batch size must be > 0");

 public:
  /// The number of rows, `N`.
  static constexpr std::size_t batch_size = N;

  /// Features of every row, row-major: `N * width()` values.
  std::span<const float> features() const noexcept { return rows_.features(); }
  /// One label per row.
  std::span<const std::int32_t, N> labels() const noexcept {
    return std::span<const std::int32_t, N>(rows_.labels().data(), N);
  }
  /// `N`.
  static constexpr std::size_t size() noexcept { return N; }
  /// The number of features per row.
  std::size_t width() const noexcept { return rows_.width(); }

  /// Row `i` as a `Sample` (unchecked).
  ///
  /// ```cpp
  /// for (const mo::data::StaticBatch<32>& b : train | mo::data::batch<32>()) {
  ///   std::int32_t last = b[31].label;
  /// }
  /// ```
  Sample operator[](std::size_t i) const noexcept { return rows_[i]; }

  // Filling, for the batch adaptor: a StaticBatch is only handed out once it holds N rows.
  void reserve(std::size_t rows, std::size_t width) { rows_.reserve(rows, width); }
  void clear() noexcept { rows_.clear(); }
  void push_back(const Sample& sample) { rows_.push_back(sample); }
  std::size_t rows() const noexcept { return rows_.size(); }
  bool empty() const noexcept { return rows_.empty(); }

 private:
  Batch rows_;
};

static_assert(LabeledBatch<StaticBatch<1>>);

}  // namespace memopt::data
