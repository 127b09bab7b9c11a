#pragma once
// ExponentialDecay: Keras's keras.optimizers.schedules.ExponentialDecay.

#include <cmath>
#include <cstdint>
#include <string>

#include "memopt/core/error.hpp"

namespace memopt {

/// `initial_learning_rate * decay_rate ^ (step / decay_steps)`, the exponent floored when
/// `staircase` (keras/src/optimizers/schedules/learning_rate_schedule.py, ExponentialDecay).
///
/// ```cpp
/// mo::ExponentialDecay lr{{.initial_learning_rate = 0.1, .decay_steps = 1000,
///                          .decay_rate = 0.96, .staircase = true}};
/// model.compile(mo::SGD{{.learning_rate = lr}}, mo::SparseCategoricalCrossentropy{});
/// ```
struct ExponentialDecay {
  struct Options {
    double initial_learning_rate = 0.01;
    std::int64_t decay_steps = 1;
    double decay_rate = 1.0;
    bool staircase = false;
  };
  Options options;

  ExponentialDecay() : ExponentialDecay(Options{}) {}
  explicit ExponentialDecay(Options o) : options(o) {
    if (options.decay_steps <= 0)
      throw error("ExponentialDecay: expected decay_steps > 0, found " +
                  std::to_string(options.decay_steps));
  }

  double operator()(std::int64_t step) const {
    double p = static_cast<double>(step) / static_cast<double>(options.decay_steps);
    if (options.staircase) p = std::floor(p);
    return options.initial_learning_rate * std::pow(options.decay_rate, p);
  }
};

}  // namespace memopt
