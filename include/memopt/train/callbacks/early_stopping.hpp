#pragma once
// callbacks::EarlyStopping: stops fit when a monitored value stops improving, as Keras's.

#include <cstdio>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "memopt/core/error.hpp"
#include "memopt/train/callback.hpp"
#include "memopt/train/callbacks/monitor.hpp"
#include "memopt/train/history.hpp"

namespace memopt::callbacks {

/// Keras's `EarlyStopping`: after `patience` epochs without an improvement of more than
/// `min_delta` in `monitor`, sets the model's stop_training; with restore_best_weights, puts
/// back the weights of the best epoch when training ends: all of them, as Keras, the
/// non-trainable ones (BatchNormalization's moving statistics) too, so that evaluate after
/// fit gives the best epoch's validation loss again.
///
/// ```cpp
/// mo::callbacks::EarlyStopping stop{{.monitor = "val_loss", .patience = 3,
///                                    .restore_best_weights = true}};
/// model.fit(batches, {.epochs = 100, .validation_data = val, .callbacks = {&stop}});
/// ```
class EarlyStopping : public Callback {
 public:
  struct Options {
    std::string monitor = "val_loss";
    double min_delta = 0;
    int patience = 0;
    int verbose = 0;
    /// "auto", "min" or "max".
    std::string mode = "auto";
    /// A value to reach: until the monitored value beats it, patience keeps running out.
    std::optional<double> baseline{};
    bool restore_best_weights = false;
    /// Epochs to train before watching (a warm-up).
    int start_from_epoch = 0;
  };

  EarlyStopping() : EarlyStopping(Options{}) {}
  explicit EarlyStopping(Options o)
      : o_(std::move(o)), monitor_(o_.monitor, o_.mode, o_.min_delta, "EarlyStopping") {
    if (o_.patience < 0)
      throw error("EarlyStopping: expected patience >= 0, found " + std::to_string(o_.patience));
  }

  /// The epoch (0-based) at which training was stopped, or 0 when it was not.
  int stopped_epoch() const { return stopped_epoch_; }
  /// The epoch (0-based) of the best monitored value.
  int best_epoch() const { return best_epoch_; }
  std::optional<double> best() const { return best_; }
  /// Epochs since the last improvement.
  int wait() const { return wait_; }

  void on_train_begin(const Logs& /*logs*/) override {
    // Reusable across fit calls, as Keras's.
    wait_ = 0;
    stopped_epoch_ = 0;
    best_.reset();
    best_weights_.clear();
    best_epoch_ = 0;
  }

  void on_epoch_end(int epoch, const Logs& logs) override {
    const auto it = logs.find(monitor_.name());
    if (it == logs.end()) {
      std::string keys;
      for (const auto& [k, v] : logs) keys += (keys.empty() ? "" : ",") + k;
      std::fprintf(stderr,
                   "EarlyStopping: conditioned on metric `%s` which is not available. "
                   "Available metrics are: %s\n",
                   monitor_.name().c_str(), keys.c_str());
      return;
    }
    if (epoch < o_.start_from_epoch) return;
    const double current = it->second;
    if (o_.restore_best_weights && best_weights_.empty()) {
      best_weights_ = context().get_weights();  // until something beats them, these are best
      best_epoch_ = epoch;
    }
    ++wait_;
    if (monitor_.is_improvement(current, best_)) {
      best_ = current;
      best_epoch_ = epoch;
      if (o_.restore_best_weights) best_weights_ = context().get_weights();
      // Restart the wait only when the baseline is beaten too.
      if (!o_.baseline || monitor_.is_improvement(current, o_.baseline)) wait_ = 0;
      return;
    }
    if (wait_ >= o_.patience && epoch > 0) {
      stopped_epoch_ = epoch;
      context().stop_training = true;
    }
  }

  void on_train_end(const Logs& /*logs*/) override {
    if (stopped_epoch_ > 0 && o_.verbose > 0)
      std::printf("Epoch %d: early stopping\n", stopped_epoch_ + 1);
    if (o_.restore_best_weights && !best_weights_.empty()) {
      if (o_.verbose > 0)
        std::printf("Restoring model weights from the end of the best epoch: %d.\n",
                    best_epoch_ + 1);
      context().set_weights(best_weights_);
    }
  }

 private:
  TrainingContext& context() const {
    if (!model_) throw error("EarlyStopping: no model; pass it in fit's callbacks");
    return *model_;
  }

  Options o_;
  Monitor monitor_;
  std::optional<double> best_;
  std::vector<float> best_weights_;
  int wait_ = 0;
  int stopped_epoch_ = 0;
  int best_epoch_ = 0;
};

}  // namespace memopt::callbacks
