#pragma once
// PolynomialDecay: Keras's keras.optimizers.schedules.PolynomialDecay.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>

#include "memopt/core/error.hpp"

namespace memopt {

/// `(initial - end) * (1 - step / decay_steps) ^ power + end`, the step held at decay_steps,
/// or with `cycle` decay_steps stretched to the first multiple above the step
/// (keras/src/optimizers/schedules/learning_rate_schedule.py, PolynomialDecay).
///
/// ```cpp
/// mo::PolynomialDecay lr{{.initial_learning_rate = 0.1, .decay_steps = 10000,
///                         .end_learning_rate = 0.01, .power = 0.5}};
/// ```
struct PolynomialDecay {
  struct Options {
    double initial_learning_rate = 0.01;
    std::int64_t decay_steps = 1;
    double end_learning_rate = 0.0001;
    double power = 1.0;
    bool cycle = false;
  };
  Options options;

  PolynomialDecay() : PolynomialDecay(Options{}) {}
  explicit PolynomialDecay(Options o) : options(o) {
    if (options.decay_steps <= 0)
      throw error("PolynomialDecay: expected decay_steps > 0, found " +
                  std::to_string(options.decay_steps));
  }

  double operator()(std::int64_t step) const {
    double s = static_cast<double>(step);
    double decay_steps = static_cast<double>(options.decay_steps);
    if (options.cycle) {
      const double multiplier = step == 0 ? 1.0 : std::ceil(s / decay_steps);
      decay_steps *= multiplier;
    } else {
      s = std::min(s, decay_steps);
    }
    const double p = s / decay_steps;
    return (options.initial_learning_rate - options.end_learning_rate) *
               std::pow(1.0 - p, options.power) +
           options.end_learning_rate;
  }
};

}  // namespace memopt
