#pragma once
// PiecewiseConstantDecay: Keras's keras.optimizers.schedules.PiecewiseConstantDecay.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "memopt/core/error.hpp"

namespace memopt {

/// `values[0]` while step <= boundaries[0], `values[i]` while boundaries[i-1] < step <=
/// boundaries[i], `values.back()` after the last boundary
/// (keras/src/optimizers/schedules/learning_rate_schedule.py, PiecewiseConstantDecay).
///
/// ```cpp
/// // 1.0 for the first 100001 steps, 0.5 for the next 10000, then 0.1
/// mo::PiecewiseConstantDecay lr{{.boundaries = {100000, 110000}, .values = {1.0, 0.5, 0.1}}};
/// ```
struct PiecewiseConstantDecay {
  struct Options {
    std::vector<std::int64_t> boundaries;
    std::vector<double> values;
  };
  Options options;

  explicit PiecewiseConstantDecay(Options o) : options(std::move(o)) {
    if (options.boundaries.size() + 1 != options.values.size())
      throw error(
          "PiecewiseConstantDecay: the length of boundaries should be 1 less than the length "
          "of values; found " +
          std::to_string(options.boundaries.size()) + " boundaries and " +
          std::to_string(options.values.size()) + " values");
    for (std::size_t i = 1; i < options.boundaries.size(); ++i)
      if (options.boundaries[i] <= options.boundaries[i - 1])
        throw error("PiecewiseConstantDecay: expected strictly increasing boundaries, found " +
                    std::to_string(options.boundaries[i - 1]) + " then " +
                    std::to_string(options.boundaries[i]));
  }

  double operator()(std::int64_t step) const {
    for (std::size_t i = 0; i < options.boundaries.size(); ++i)
      if (step <= options.boundaries[i]) return options.values[i];
    return options.values.back();
  }
};

}  // namespace memopt
