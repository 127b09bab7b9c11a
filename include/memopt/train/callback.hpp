#pragma once
// The callback interface fit() drives, as Keras's `keras.callbacks.Callback`.

#include <cstddef>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "memopt/core/error.hpp"
#include "memopt/plan/memory_report.hpp"
#include "memopt/train/history.hpp"

namespace memopt {

/// One weight tensor under Keras's name ("dense/kernel"), values in Keras's layout.
struct NamedWeights {
  std::string name;
  std::vector<float> values;
};

/// The memory a model's training holds, as the logging callbacks report it.
struct MemoryFigures {
  std::size_t arena_bytes = 0;      // the planned arena of activations and gradients
  std::size_t workspace_bytes = 0;  // the kernels' shared scratch beside it
  std::size_t batch = 0;            // the rows the arena was prepared for
};

/// What a callback may do to the model being trained, whatever its type.
class TrainingContext {
 public:
  virtual ~TrainingContext() = default;
  /// Keras's `model.get_weights()`: every weight, the non-trainable ones (BatchNormalization's
  /// moving statistics) included, so that a copy of them is a copy of the model.
  virtual std::vector<float> get_weights() const = 0;
  /// Keras's `model.set_weights(weights)`: all of them, as get_weights gave them.
  virtual void set_weights(std::span<const float> weights) = 0;
  /// Keras's `model.save_weights(path)`: the weights as a safetensors file, written atomically.
  virtual void save_weights(const std::filesystem::path& path) const = 0;
  /// Keras's `model.save(path)`: weights, optimizer state and what resuming needs (epoch,
  /// step, loss scale), written atomically.
  virtual void save(const std::filesystem::path& path) const = 0;
  /// Keras's `model.load(path)`: restores everything save() wrote. Called from a callback's
  /// on_train_begin (BackupAndRestore), it also moves the epoch fit starts from: fit begins
  /// at completed_epochs() as it stands after every on_train_begin has run.
  virtual void load(const std::filesystem::path& /*path*/) {
    throw error("load: this model cannot restore a checkpoint");
  }
  /// Epochs completed: during fit, the epoch being trained (0-based); after load, the epochs
  /// the checkpoint had completed.
  virtual int completed_epochs() const {
    throw error("completed_epochs: this model does not count epochs");
  }
  /// Batches of epoch `completed_epochs()` already trained: during fit, the batches of the
  /// current epoch so far; after load() of a checkpoint saved mid-epoch (BackupAndRestore's
  /// `save_freq` in batches), the batches it had trained, which the next fit skips so that it
  /// continues at the batch after them.
  virtual int epoch_batches() const { return 0; }
  /// Keras's `model.optimizer.learning_rate`: the learning rate of the next update.
  virtual double learning_rate() const {
    throw error("learning_rate: this model has no optimizer learning rate to read");
  }
  /// Keras's `model.optimizer.learning_rate = value` (ReduceLROnPlateau,
  /// LearningRateScheduler); raises when the learning rate is a schedule.
  virtual void set_learning_rate(double /*value*/) {
    throw error("set_learning_rate: this model has no optimizer learning rate to set");
  }
  /// The model's summary table (Keras's `model.summary()`), for logging; empty if it has none.
  virtual std::string summary_text() const { return {}; }
  /// Every weight tensor, trainable or not, under Keras's names (TensorBoard's histograms).
  virtual std::vector<NamedWeights> named_weights() const { return {}; }
  /// The arena and scratch of training as they stand (zeros before the first fit).
  virtual MemoryFigures memory_figures() const { return {}; }
  /// The plan of the training arena as prepared (`Model::memory_report` at the rows it was
  /// prepared for), for the memory timeline picture; no buffers before the first batch.
  virtual plan::MemoryReport fit_memory_report() const { return {}; }
  /// This process's rank in a data-parallel fit (FitOptions::communicator), else 0.
  virtual int rank() const { return 0; }
  /// Whether this process is rank 0, the one that writes files (checkpoints, logs) and
  /// prints progress in a data-parallel fit, as Keras's chief worker.
  bool is_chief() const { return rank() == 0; }
  /// Keras's `model.stop_training = True`: fit stops after the current batch when set during
  /// an epoch, else after the current epoch.
  bool stop_training = false;
};

/// Running values during an epoch, passed to on_train_batch_end without allocating: the
/// mean loss and accuracy over the epoch's samples so far.
struct BatchLogs {
  double loss = 0;
  double accuracy = 0;
  std::size_t samples = 0;
  /// Whether the model was compiled with metrics::Accuracy (else `accuracy` means nothing).
  bool has_accuracy = false;
};

/// Override what you need; every hook does nothing by default.
///
/// ```cpp
/// struct PrintEpochs : mo::Callback {
///   void on_epoch_end(int epoch, const mo::Logs& logs) override {
///     std::printf("%d %f\n", epoch, logs.at("loss"));
///   }
/// };
/// ```
class Callback {
 public:
  virtual ~Callback() = default;
  virtual void set_context(TrainingContext* model) { model_ = model; }
  virtual void on_train_begin(const Logs& /*logs*/) {}
  virtual void on_train_end(const Logs& /*logs*/) {}
  virtual void on_epoch_begin(int /*epoch*/, const Logs& /*logs*/) {}
  virtual void on_epoch_end(int /*epoch*/, const Logs& /*logs*/) {}
  virtual void on_train_batch_begin(int /*batch*/) {}
  virtual void on_train_batch_end(int /*batch*/, const BatchLogs& /*logs*/) {}

 protected:
  TrainingContext* model_ = nullptr;
};

}  // namespace memopt
