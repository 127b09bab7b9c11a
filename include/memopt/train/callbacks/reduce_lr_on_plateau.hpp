#pragma once
// callbacks::ReduceLROnPlateau: lowers the learning rate when a monitored value stops
// improving, as Keras's (keras/src/callbacks/reduce_lr_on_plateau.py).

#include <algorithm>
#include <cstdio>
#include <optional>
#include <string>
#include <utility>

#include "memopt/core/error.hpp"
#include "memopt/train/callback.hpp"
#include "memopt/train/callbacks/monitor.hpp"
#include "memopt/train/history.hpp"

namespace memopt::callbacks {

/// Keras's `ReduceLROnPlateau`: after `patience` epochs without an improvement of more than
/// `min_delta` in `monitor`, multiplies the optimizer's learning rate by `factor` (never below
/// `min_lr`), then waits `cooldown` epochs before watching again. The optimizer's learning
/// rate must be a number, not a schedule.
///
/// ```cpp
/// mo::callbacks::ReduceLROnPlateau reduce{{.monitor = "val_loss", .factor = 0.2,
///                                          .patience = 5, .min_lr = 1e-4}};
/// model.fit(batches, {.epochs = 50, .validation_data = val, .callbacks = {&reduce}});
/// ```
class ReduceLROnPlateau : public Callback {
 public:
  struct Options {
    std::string monitor = "val_loss";
    double factor = 0.1;
    int patience = 10;
    int verbose = 0;
    /// "auto", "min" or "max".
    std::string mode = "auto";
    double min_delta = 1e-4;
    int cooldown = 0;
    double min_lr = 0.0;
  };

  ReduceLROnPlateau() : ReduceLROnPlateau(Options{}) {}
  explicit ReduceLROnPlateau(Options o)
      : o_(std::move(o)), monitor_(o_.monitor, o_.mode, o_.min_delta, "ReduceLROnPlateau") {
    if (o_.factor >= 1.0)
      throw error("ReduceLROnPlateau: a factor >= 1.0 is not supported; found factor=" +
                  std::to_string(o_.factor));
    if (o_.patience < 0 || o_.cooldown < 0)
      throw error("ReduceLROnPlateau: expected patience >= 0 and cooldown >= 0");
  }

  /// Epochs since the last improvement, and left in the cooldown.
  int wait() const { return wait_; }
  int cooldown_counter() const { return cooldown_counter_; }
  std::optional<double> best() const { return best_; }

  void on_train_begin(const Logs& /*logs*/) override {
    best_.reset();
    cooldown_counter_ = 0;
    wait_ = 0;
  }

  void on_epoch_end(int epoch, const Logs& logs) override {
    const auto it = logs.find(monitor_.name());
    if (it == logs.end()) {
      std::fprintf(stderr, "ReduceLROnPlateau: learning rate reduction is conditioned on %s\n",
                   monitor_.missing_from(logs).c_str());
      return;
    }
    const double current = it->second;
    if (cooldown_counter_ > 0) {
      --cooldown_counter_;
      wait_ = 0;
    }
    if (monitor_.is_improvement(current, best_)) {
      best_ = current;
      wait_ = 0;
    } else if (cooldown_counter_ == 0) {
      if (++wait_ >= o_.patience) {
        const double old_lr = context().learning_rate();
        // Keras compares with the float32 min_lr: a rate already at the floor stays.
        if (old_lr > static_cast<double>(static_cast<float>(o_.min_lr))) {
          const double new_lr = std::max(old_lr * o_.factor, o_.min_lr);
          context().set_learning_rate(new_lr);
          if (o_.verbose > 0)
            std::printf("\nEpoch %d: ReduceLROnPlateau reducing learning rate to %g.\n", epoch + 1,
                        new_lr);
          cooldown_counter_ = o_.cooldown;
          wait_ = 0;
        }
      }
    }
  }

 private:
  TrainingContext& context() const {
    if (!model_) throw error("ReduceLROnPlateau: no model; pass it in fit's callbacks");
    return *model_;
  }

  Options o_;
  Monitor monitor_;
  std::optional<double> best_;
  int wait_ = 0;
  int cooldown_counter_ = 0;
};

}  // namespace memopt::callbacks
