#pragma once
// CosineDecay: Keras 3's keras.optimizers.schedules.CosineDecay, with its linear warmup.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numbers>
#include <optional>
#include <string>

#include "memopt/core/error.hpp"

namespace memopt {

/// Without a warmup target: `initial * ((1 - alpha) * 0.5 (1 + cos(pi min(step, decay_steps) /
/// decay_steps)) + alpha)`. With one: a line from initial_learning_rate to warmup_target over
/// warmup_steps, then the same cosine from warmup_target over decay_steps
/// (keras/src/optimizers/schedules/learning_rate_schedule.py, CosineDecay).
///
/// ```cpp
/// mo::CosineDecay lr{{.initial_learning_rate = 0.0, .decay_steps = 1000,
///                     .warmup_target = 1e-3, .warmup_steps = 100}};
/// model.compile(mo::AdamW{{.learning_rate = lr}}, mo::SparseCategoricalCrossentropy{});
/// ```
struct CosineDecay {
  struct Options {
    double initial_learning_rate = 0.001;
    std::int64_t decay_steps = 1;
    double alpha = 0.0;
    std::optional<double> warmup_target{};
    std::int64_t warmup_steps = 0;
  };
  Options options;

  CosineDecay() : CosineDecay(Options{}) {}
  explicit CosineDecay(Options o) : options(o) {
    if (options.decay_steps <= 0)
      throw error("CosineDecay: expected decay_steps > 0, found " +
                  std::to_string(options.decay_steps));
    if (options.warmup_steps < 0)
      throw error("CosineDecay: expected warmup_steps >= 0, found " +
                  std::to_string(options.warmup_steps));
  }

  double operator()(std::int64_t step) const {
    const double decay_steps = static_cast<double>(options.decay_steps);
    double s = static_cast<double>(step);
    if (!options.warmup_target)
      return decay(std::min(s, decay_steps), options.initial_learning_rate);
    const double warmup_steps = static_cast<double>(options.warmup_steps);
    s = std::min(s, decay_steps + warmup_steps);
    if (s < warmup_steps)
      return (*options.warmup_target - options.initial_learning_rate) * (s / warmup_steps) +
             options.initial_learning_rate;
    return decay(s - warmup_steps, *options.warmup_target);
  }

 private:
  double decay(double step, double from) const {
    const double completed = step / static_cast<double>(options.decay_steps);
    const double cosine = 0.5 * (1.0 + std::cos(std::numbers::pi * completed));
    return from * ((1.0 - options.alpha) * cosine + options.alpha);
  }
};

}  // namespace memopt
