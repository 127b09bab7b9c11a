#pragma once
// callbacks::TerminateOnNaN: stops training at the first batch whose loss is NaN or infinite,
// as Keras's (keras/src/callbacks/terminate_on_nan.py).

#include <cmath>
#include <cstdio>
#include <string>

#include <fmt/format.h>

#include "memopt/core/error.hpp"
#include "memopt/train/callback.hpp"

namespace memopt::callbacks {

/// Keras's `TerminateOnNaN`: when a batch ends with a NaN or infinite loss, sets the model's
/// stop_training (fit stops after that batch, without raising), or with `raise_error` raises
/// memopt::error at once. It reads the running loss that fit reports per batch; on a backend
/// that keeps the loss on its device until the epoch ends (CUDA), fit's own check at the end
/// of the epoch raises instead.
///
/// ```cpp
/// mo::callbacks::TerminateOnNaN nan_guard;
/// model.fit(batches, {.epochs = 10, .callbacks = {&nan_guard}});
/// ```
class TerminateOnNaN : public Callback {
 public:
  struct Options {
    bool raise_error = false;
  };

  TerminateOnNaN() : TerminateOnNaN(Options{}) {}
  explicit TerminateOnNaN(Options o) : o_(o) {}

  /// The batch (0-based, within its epoch) at which training was stopped, or -1.
  int stopped_batch() const { return stopped_batch_; }

  void on_train_begin(const Logs& /*logs*/) override { stopped_batch_ = -1; }

  void on_train_batch_end(int batch, const BatchLogs& logs) override {
    if (logs.samples == 0 || std::isfinite(logs.loss)) return;
    if (o_.raise_error)
      throw error(
          fmt::format("TerminateOnNaN: NaN or Inf loss encountered at batch {}; loss value: {}. "
                      "Terminating training immediately.",
                      batch, logs.loss));
    std::printf("Batch %d: Invalid loss, terminating training\n", batch);
    stopped_batch_ = batch;
    if (!model_) throw error("TerminateOnNaN: no model; pass it in fit's callbacks");
    model_->stop_training = true;
  }

 private:
  Options o_;
  int stopped_batch_ = -1;
};

}  // namespace memopt::callbacks
