#pragma once
// callbacks::LearningRateScheduler: sets the learning rate at the start of each epoch from a
// function of the epoch, as Keras's (keras/src/callbacks/learning_rate_scheduler.py).

#include <cmath>
#include <cstdio>
#include <functional>
#include <string>
#include <utility>

#include "memopt/core/error.hpp"
#include "memopt/train/callback.hpp"
#include "memopt/train/history.hpp"

namespace memopt::callbacks {

/// Keras's `LearningRateScheduler`: before each epoch (0-based), sets the optimizer's learning
/// rate to `schedule(epoch, current_learning_rate)` (or `schedule(epoch)`, Keras's older
/// form). The optimizer's learning rate must be a number, not a schedule.
///
/// ```cpp
/// mo::callbacks::LearningRateScheduler lrs{[](int epoch, double lr) {
///   return epoch < 10 ? lr : lr * std::exp(-0.1);
/// }};
/// model.fit(batches, {.epochs = 20, .callbacks = {&lrs}});
/// ```
class LearningRateScheduler : public Callback {
 public:
  explicit LearningRateScheduler(std::function<double(int, double)> schedule, int verbose = 0)
      : schedule_(std::move(schedule)), verbose_(verbose) {
    if (!schedule_) throw error("LearningRateScheduler: expected a schedule, found none");
  }
  explicit LearningRateScheduler(std::function<double(int)> schedule, int verbose = 0)
      : LearningRateScheduler(
            [s = std::move(schedule)](int epoch, double) {
              if (!s) throw error("LearningRateScheduler: expected a schedule, found none");
              return s(epoch);
            },
            verbose) {}

  void on_epoch_begin(int epoch, const Logs& /*logs*/) override {
    if (!model_) throw error("LearningRateScheduler: no model; pass it in fit's callbacks");
    const double lr = schedule_(epoch, model_->learning_rate());
    if (!std::isfinite(lr))
      throw error(
          "LearningRateScheduler: the schedule's output should be a finite number; "
          "found " +
          std::to_string(lr) + " at epoch " + std::to_string(epoch));
    model_->set_learning_rate(lr);
    if (verbose_ > 0)
      std::printf("\nEpoch %d: LearningRateScheduler setting learning rate to %g.\n", epoch + 1,
                  lr);
  }

 private:
  std::function<double(int, double)> schedule_;
  int verbose_ = 0;
};

}  // namespace memopt::callbacks
