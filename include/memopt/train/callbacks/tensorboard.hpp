#pragma once
// callbacks::TensorBoard: training curves, weight histograms, the model's summary and memopt's
// memory figures as TensorBoard event files, in Keras's layout.

#include <sys/resource.h>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "memopt/core/error.hpp"
#include "memopt/io/tfevents.hpp"
#include "memopt/plan/timeline_image.hpp"
#include "memopt/train/callback.hpp"
#include "memopt/train/history.hpp"

namespace memopt::callbacks {

/// Keras's `TensorBoard`: event files under `log_dir/train` and `log_dir/validation` that
/// `tensorboard --logdir <log_dir>` shows as two runs.
///
/// - Scalars per epoch (step: the epoch, 0-based), named as Keras 3 names them: in `train`,
///   `epoch_loss`, `epoch_accuracy`, ... and `epoch_learning_rate`; in `validation`, the
///   `val_` logs without their prefix (`epoch_loss`, `epoch_accuracy`).
/// - With `update_freq = N`, `batch_loss` (and `batch_accuracy`) every N batches, the running
///   means over the epoch so far, at step = batches trained in this fit (1-based), as Keras.
/// - With `histogram_freq = N`, every weight's histogram every N epochs, tagged
///   `dense/kernel/histogram` (Keras's weight name plus `/histogram`).
/// - With `write_graph`, the model's summary table as text (tag `model_summary`, step 0,
///   written after the first batch): memopt's stand-in for Keras's graph, listing the layers,
///   the fused kernels and the arena this fit prepared.
/// - memopt's memory per epoch: `memory/arena_bytes`, `memory/workspace_bytes` (the
///   kernels' scratch) and `memory/peak_rss_bytes` (the process's peak resident set); and once,
///   with the summary, the arena's timeline as a PNG in the Images dashboard (tag
///   `memory/timeline`, step 0; plan::memory_timeline_image's picture): the plan is fixed for
///   the fit, so one picture serves every epoch.
///
/// Files are flushed after every epoch, so a run killed later still shows every finished
/// epoch. In a data-parallel fit rank 0 alone writes.
///
/// ```cpp
/// mo::callbacks::TensorBoard tb{{.log_dir = "logs/run1", .histogram_freq = 1}};
/// model.fit(batches, {.epochs = 10, .validation_data = val, .callbacks = {&tb}});
/// // then: tensorboard --logdir logs
/// ```
class TensorBoard : public Callback {
 public:
  struct Options {
    std::filesystem::path log_dir = "logs";
    /// Weight histograms every this many epochs; 0: none.
    int histogram_freq = 0;
    /// The model's summary as text.
    bool write_graph = true;
    /// 0: scalars per epoch only (Keras's "epoch"); N: also per-batch scalars every N
    /// batches (1: Keras's "batch").
    int update_freq = 0;
    /// memopt's memory figures per epoch.
    bool write_memory = true;
  };

  explicit TensorBoard(Options o) : o_(std::move(o)) {
    if (o_.log_dir.empty()) throw error("TensorBoard: expected a log_dir, found \"\"");
    if (o_.histogram_freq < 0)
      throw error("TensorBoard: expected histogram_freq >= 0, found " +
                  std::to_string(o_.histogram_freq));
    if (o_.update_freq < 0)
      throw error("TensorBoard: expected update_freq >= 0 (0: per epoch), found " +
                  std::to_string(o_.update_freq));
  }

  /// The files written so far in this fit (empty before; the validation one once it has logs).
  std::filesystem::path train_file() const {
    return train_ ? train_->path() : std::filesystem::path{};
  }
  std::filesystem::path validation_file() const {
    return validation_ ? validation_->path() : std::filesystem::path{};
  }

  void on_train_begin(const Logs& /*logs*/) override {
    close();
    global_batch_ = 0;
    if (model_ && !model_->is_chief()) return;  // data parallelism: rank 0 alone writes
    train_ = std::make_unique<io::EventFileWriter>(o_.log_dir / "train");
    summary_pending_ = o_.write_graph && model_;
    timeline_pending_ = o_.write_memory && model_;
  }

  void on_train_batch_begin(int /*batch*/) override { ++global_batch_; }

  void on_train_batch_end(int /*batch*/, const BatchLogs& logs) override {
    if (!train_) return;
    write_summary();
    write_timeline();
    if (o_.update_freq == 0 || global_batch_ % o_.update_freq != 0) return;
    train_->add_scalar("batch_loss", logs.loss, global_batch_);
    if (logs.has_accuracy) train_->add_scalar("batch_accuracy", logs.accuracy, global_batch_);
  }

  void on_epoch_end(int epoch, const Logs& logs) override {
    if (!train_) return;
    write_summary();  // an epoch of no batches
    write_timeline();
    for (const auto& [key, value] : logs) {
      if (key.starts_with("val_")) {
        if (!validation_)
          validation_ = std::make_unique<io::EventFileWriter>(o_.log_dir / "validation");
        validation_->add_scalar("epoch_" + key.substr(4), value, epoch);
      } else {
        train_->add_scalar("epoch_" + key, value, epoch);
      }
    }
    if (model_) {
      // A context without an optimizer's learning rate says so by raising; Keras too logs
      // one only when the model has an optimizer.
      double lr = 0;
      bool has_lr = true;
      try {
        lr = model_->learning_rate();
      } catch (const error&) {
        has_lr = false;
      }
      if (has_lr) train_->add_scalar("epoch_learning_rate", lr, epoch);
      if (o_.histogram_freq > 0 && epoch % o_.histogram_freq == 0)
        for (const NamedWeights& w : model_->named_weights())
          train_->add_histogram(w.name + "/histogram", w.values, epoch);
      if (o_.write_memory) {
        const MemoryFigures m = model_->memory_figures();
        train_->add_scalar("memory/arena_bytes", static_cast<double>(m.arena_bytes), epoch);
        train_->add_scalar("memory/workspace_bytes", static_cast<double>(m.workspace_bytes), epoch);
      }
    }
    if (o_.write_memory)
      train_->add_scalar("memory/peak_rss_bytes", static_cast<double>(peak_rss_bytes()), epoch);
    train_->flush();
    if (validation_) validation_->flush();
  }

  void on_train_end(const Logs& /*logs*/) override { close(); }

  /// The process's peak resident set so far, in bytes (getrusage; Linux counts KiB).
  static std::uint64_t peak_rss_bytes() {
    rusage u{};
    if (::getrusage(RUSAGE_SELF, &u) != 0) return 0;
    return static_cast<std::uint64_t>(u.ru_maxrss) * 1024u;
  }

 private:
  // After the first step, as Keras writes its train graph: the arena the summary shows is
  // then the one this fit prepared.
  void write_summary() {
    if (!std::exchange(summary_pending_, false)) return;
    const std::string summary = model_->summary_text();
    // A fenced block: the Text dashboard renders Markdown, and the table needs its columns.
    if (!summary.empty()) train_->add_text("model_summary", "```\n" + summary + "```\n", 0);
  }

  // After the first step too: fit prepares the arena for the rows of its first batch, so
  // before it there is no plan to draw. Encoded with zlib alone (io/png_writer.hpp), which
  // memopt::memopt links: a program without memopt::images still gets the picture.
  void write_timeline() {
    if (!std::exchange(timeline_pending_, false)) return;
    const plan::MemoryReport r = model_->fit_memory_report();
    if (r.buffers.empty()) return;
    const plan::TimelineImage im = plan::memory_timeline_image(r);
    train_->add_png("memory/timeline", io::encode_png(im.rgb, im.width, im.height), im.height,
                    im.width, 3, 0);
  }

  void close() {
    train_.reset();
    validation_.reset();
  }

  Options o_;
  std::unique_ptr<io::EventFileWriter> train_, validation_;
  std::int64_t global_batch_ = 0;
  bool summary_pending_ = false;
  bool timeline_pending_ = false;
};

}  // namespace memopt::callbacks
