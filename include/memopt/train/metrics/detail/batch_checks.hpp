#pragma once
// Shape checks the metrics share: each names the metric, the width it expected and the one it
// found, so a miswired model fails on its first batch rather than scoring garbage.

#include <cstddef>
#include <string>
#include <string_view>

#include "memopt/core/error.hpp"

namespace memopt::metrics::detail {

/// Throws `error("<metric>: expected <what> <expected><note>, found <found>")` unless
/// `expected == found`.
inline void require_width(std::string_view metric, std::string_view what, std::size_t expected,
                          std::size_t found, std::string_view note = {}) {
  if (expected == found) return;
  throw error(std::string(metric) + ": expected " + std::string(what) + " " +
              std::to_string(expected) + std::string(note) + ", found " + std::to_string(found));
}

}  // namespace memopt::metrics::detail
