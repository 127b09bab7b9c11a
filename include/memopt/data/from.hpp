#pragma once
// data::from(container_or_span): any container or span as the source of a pipeline.

#include <initializer_list>
#include <ranges>
#include <utility>
#include <vector>

#include "memopt/data/dataset.hpp"
#include "memopt/data/target_dataset.hpp"

namespace memopt::data {

/// A container, span or view as a pipeline's source, without copying: an lvalue is viewed by
/// reference (it must outlive the pipeline), an rvalue is moved in and owned. Elements are
/// handed out as they are stored, so every pass sees the same values. (`from(features, labels,
/// width)` in dataset.hpp builds a labelled `Dataset` instead, and `from(features, targets,
/// width, target_width)` in target_dataset.hpp rows with float targets.)
///
/// ```cpp
/// std::vector<float> xs(1000);
/// auto by_ref = mo::data::from(xs) | mo::data::shuffle(xs.size(), 1) | mo::data::batch(32);
/// auto owned = mo::data::from(std::vector<int>{1, 2, 3}) | mo::data::batch(2);
/// auto viewed = mo::data::from(std::span<const float>(xs).first(100));
/// ```
template <std::ranges::viewable_range C>
requires std::ranges::input_range<C>
constexpr auto from(C&& container) {
  return std::views::all(std::forward<C>(container));
}

/// A braced list of values, copied into an owned vector.
///
/// ```cpp
/// auto xs = mo::data::from({1.5, 2.5, 3.5});
/// ```
template <class T>
auto from(std::initializer_list<T> values) {
  return std::views::all(std::vector<T>(values));
}

}  // namespace memopt::data
