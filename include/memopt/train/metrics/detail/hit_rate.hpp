#pragma once
// The running fraction of hits Keras's top-k metrics keep: hits and rows, summable across
// ranks.

#include <array>
#include <cstddef>
#include <span>

namespace memopt::metrics::detail {

class HitRate {
 public:
  /// Counts one row, a hit or not.
  void add(bool hit) {
    if (hit) hits_and_rows_[0] += 1.0;
    hits_and_rows_[1] += 1.0;
  }

  void reset() { hits_and_rows_ = {}; }

  /// The fraction of rows that were hits; 0 before any row.
  double rate() const {
    const auto [hits, rows] = hits_and_rows_;
    return rows == 0.0 ? 0.0 : hits / rows;
  }

  /// The hits and the rows.
  std::span<double> state() { return hits_and_rows_; }

 private:
  std::array<double, 2> hits_and_rows_{};
};

}  // namespace memopt::metrics::detail
