#pragma once
// callbacks::BackupAndRestore: backs the training state up as fit runs and, when an
// interrupted fit is run again, resumes it, as Keras's
// (keras/src/callbacks/backup_and_restore.py).

#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>
#include <system_error>
#include <utility>
#include <variant>

#include <fmt/format.h>

#include "memopt/core/error.hpp"
#include "memopt/train/callback.hpp"
#include "memopt/train/history.hpp"

namespace memopt::callbacks {

/// Keras's `BackupAndRestore`: saves everything resuming needs (Model::save: weights,
/// optimizer state, epoch, step, loss scale) to `backup_dir/latest.safetensors` at the end of
/// every epoch or every `save_freq` batches. When fit starts and that file exists, it is
/// loaded, and fit continues from the epoch after the last one backed up; the History it
/// returns holds those remaining epochs only, as Keras's. When fit ends (all epochs run, or
/// stopped by a callback's stop_training, but not by an exception) the backup is deleted,
/// unless `delete_checkpoint` is false.
///
/// Resuming gives the same weights, bit for bit, as a run never interrupted, from an
/// epoch-end backup or from one taken mid-epoch (save_freq in batches), also when the pipeline
/// shuffles: fit names each epoch's pass to the pipeline (`data::PassScope`), so the resumed
/// epoch draws the order it drew before, and it skips the batches the backup had trained (it
/// reads them: the pipeline must be the same). Keras instead trains an interrupted epoch again
/// from its first batch. The resumed epoch's training logs (loss, metrics) cover the batches
/// trained after the resume; when the backup followed the epoch's last batch, none are left and
/// they read NaN, while validation and the epoch-end callbacks run as usual.
///
/// Unlike Keras, which removes `backup_dir` with whatever it holds, memopt removes only the
/// files it wrote, and the folder when that leaves it empty.
///
/// ```cpp
/// mo::callbacks::BackupAndRestore backup{{.backup_dir = "/tmp/backup"}};
/// model.fit(batches, {.epochs = 10, .callbacks = {&backup}});  // killed during epoch 5
/// model.fit(batches, {.epochs = 10, .callbacks = {&backup}});  // a new process: epochs 5-9
/// ```
class BackupAndRestore : public Callback {
 public:
  struct Options {
    /// The folder of the backup; use it for nothing else (not ModelCheckpoint's files).
    std::filesystem::path backup_dir;
    /// "epoch", or a number of batches between backups (counted across epochs).
    std::variant<std::string, int> save_freq = std::string("epoch");
    /// Keep the backup before the latest too, and restore it when the latest cannot be read.
    bool double_checkpoint = false;
    /// Delete the backup when fit ends without an exception.
    bool delete_checkpoint = true;
  };

  explicit BackupAndRestore(Options o) : o_(std::move(o)) {
    if (o_.backup_dir.empty()) throw error("BackupAndRestore: expected a backup_dir, found \"\"");
    if (const auto* s = std::get_if<std::string>(&o_.save_freq)) {
      if (*s != "epoch")
        throw error(fmt::format(
            "BackupAndRestore: expected save_freq \"epoch\" or a number of batches, found \"{}\"",
            *s));
    } else if (std::get<int>(o_.save_freq) <= 0) {
      throw error(fmt::format("BackupAndRestore: expected save_freq > 0 batches, found {}",
                              std::get<int>(o_.save_freq)));
    }
  }

  /// The latest backup: `backup_dir/latest.safetensors`.
  std::filesystem::path backup_path() const { return o_.backup_dir / "latest.safetensors"; }
  /// The one before it, kept with double_checkpoint (Keras's `.bkp` suffix).
  std::filesystem::path previous_backup_path() const {
    return o_.backup_dir / "latest.safetensors.bkp";
  }
  /// The epochs completed by the backup restored when the last fit began, or none.
  std::optional<int> restored_epoch() const { return restored_epoch_; }
  /// Backups written by the last fit.
  int backups_written() const { return written_; }

  void on_train_begin(const Logs& /*logs*/) override {
    restored_epoch_.reset();
    written_ = 0;
    seen_ = 0;
    namespace fs = std::filesystem;
    if (!fs::exists(backup_path())) return;  // a first run: nothing to restore
    try {
      restore(backup_path());
    } catch (const error& e) {
      if (!o_.double_checkpoint || !fs::exists(previous_backup_path())) throw;
      fmt::print(stderr, "{}; restoring the previous backup {} instead\n", e.what(),
                 previous_backup_path().string());
      restore(previous_backup_path());
    }
  }

  void on_epoch_end(int /*epoch*/, const Logs& /*logs*/) override {
    if (std::holds_alternative<std::string>(o_.save_freq)) backup();
  }

  void on_train_batch_end(int /*batch*/, const BatchLogs& /*logs*/) override {
    const auto* every = std::get_if<int>(&o_.save_freq);
    if (!every) return;
    // fit reports every batch, so counting calls counts batches, across epochs as Keras.
    if (++seen_ < *every) return;
    seen_ = 0;
    backup();
  }

  void on_train_end(const Logs& /*logs*/) override {
    if (!o_.delete_checkpoint || (model_ && !model_->is_chief())) return;
    namespace fs = std::filesystem;
    std::error_code ec;
    for (const fs::path& p : {backup_path(), previous_backup_path()})
      if (fs::remove(p, ec); ec) fail("cannot delete the backup", p, ec);
    fs::remove(o_.backup_dir, ec);  // a folder that holds other files stays, without complaint
  }

 private:
  TrainingContext& context() const {
    if (!model_) throw error("BackupAndRestore: no model; pass it in fit's callbacks");
    return *model_;
  }

  void restore(const std::filesystem::path& path) {
    try {
      context().load(path);
    } catch (const error& e) {
      throw error(fmt::format("BackupAndRestore: cannot restore the backup {}: {}", path.string(),
                              e.what()));
    }
    restored_epoch_ = context().completed_epochs();
  }

  void backup() {
    // Data parallelism: rank 0 alone writes; every rank may restore (fit then hands all of
    // them rank 0's state).
    if (!context().is_chief()) return;
    namespace fs = std::filesystem;
    std::error_code ec;
    if (fs::create_directories(o_.backup_dir, ec); ec)
      fail("cannot create the backup folder", o_.backup_dir, ec);
    if (o_.double_checkpoint && fs::exists(backup_path())) {
      // Copied under a temporary name and renamed, so that the previous backup, like the
      // latest, is always a complete file.
      const fs::path tmp = o_.backup_dir / "latest.safetensors.bkp.tmp";
      if (fs::copy_file(backup_path(), tmp, fs::copy_options::overwrite_existing, ec); ec)
        fail("cannot copy the backup to", tmp, ec);
      if (fs::rename(tmp, previous_backup_path(), ec); ec)
        fail("cannot rename the previous backup to", previous_backup_path(), ec);
    }
    context().save(backup_path());
    ++written_;
  }

  [[noreturn]] static void fail(const char* what, const std::filesystem::path& path,
                                const std::error_code& ec) {
    throw error(fmt::format("BackupAndRestore: {} {}: {}", what, path.string(), ec.message()));
  }

  Options o_;
  std::optional<int> restored_epoch_{};
  int written_ = 0;
  int seen_ = 0;  // batches since the last backup, with save_freq in batches
};

}  // namespace memopt::callbacks
