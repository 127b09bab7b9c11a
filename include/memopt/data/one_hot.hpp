#pragma once
// data::one_hot(num_classes): labelled samples (a class index) as samples with a one-hot
// float target, for losses that read target vectors (CategoricalCrossentropy).

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <ranges>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "memopt/core/error.hpp"
#include "memopt/data/detail/pipe.hpp"
#include "memopt/data/sample.hpp"

namespace memopt::data {
namespace detail {

inline void check_num_classes(std::ptrdiff_t num_classes) {
  if (num_classes <= 0) {
    throw error("data::one_hot: expected a number of classes > 0, found " +
                std::to_string(num_classes));
  }
}

/// Maps a `Sample` to a `TargetSample` whose targets view a one-hot row. Every row is a window
/// of one shared table of `2n - 1` floats, zeros around a single 1 at index `n - 1`: the
/// window of `n` starting at `n - 1 - k` has its 1 at `k`. So a target costs no allocation
/// and the table grows with `n`, not `n * n`; sharing it keeps its address fixed when the view
/// is copied or moved, so samples held downstream (`cache`, `shuffle`) stay valid.
class OneHot {
 public:
  explicit OneHot(std::size_t num_classes)
      : classes_(num_classes),
        table_(std::make_shared<const std::vector<float>>(make_table(num_classes))) {}

  TargetSample operator()(const Sample& sample) const {
    if (sample.label < 0 || static_cast<std::size_t>(sample.label) >= classes_) {
      throw error("data::one_hot: expected a label in [0, " + std::to_string(classes_) +
                  "), found " + std::to_string(sample.label));
    }
    const std::size_t start = classes_ - 1 - static_cast<std::size_t>(sample.label);
    return TargetSample{sample.features, std::span<const float>(*table_).subspan(start, classes_)};
  }

  std::size_t num_classes() const noexcept { return classes_; }

 private:
  static std::vector<float> make_table(std::size_t n) {
    std::vector<float> table(2 * n - 1, 0.0f);
    table[n - 1] = 1.0f;
    return table;
  }

  std::size_t classes_;
  std::shared_ptr<const std::vector<float>> table_;
};

struct one_hot_fn {
  template <std::ranges::viewable_range R>
  auto operator()(R&& range, std::ptrdiff_t num_classes) const {
    static_assert(std::convertible_to<std::ranges::range_reference_t<R>, Sample>,
                  "data::one_hot: expected a range of data::Sample (features and a class index)");
    check_num_classes(num_classes);
    return std::views::transform(std::views::all(std::forward<R>(range)),
                                 OneHot(static_cast<std::size_t>(num_classes)));
  }

  // Checked here already, so that `one_hot(0)` fails where it is written.
  auto operator()(std::ptrdiff_t num_classes) const {
    check_num_classes(num_classes);
    return bind_back(*this, num_classes);
  }
};

}  // namespace detail

/// Replaces each sample's class index by a one-hot row of `num_classes` floats (1 at the
/// label, 0 elsewhere), lazily: a range of `Sample` becomes a range of `TargetSample` that
/// `batch(n)` groups into `TargetBatch`es, what CategoricalCrossentropy trains on (Keras's
/// `to_categorical`). It keeps the range's category and size. A label outside
/// `[0, num_classes)` raises `memopt::error` naming it when its sample is read. The features
/// are still views of upstream's storage; the targets view a small table the view shares.
///
/// ```cpp
/// auto [train, test] = mo::data::fashion_mnist();
/// auto batches = train | mo::data::one_hot(10) | mo::data::batch(32);  // targets: 32 x 10
/// ```
inline constexpr detail::one_hot_fn one_hot{};

}  // namespace memopt::data
