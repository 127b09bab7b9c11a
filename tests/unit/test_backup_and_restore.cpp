// callbacks::BackupAndRestore against Keras's rules: an interrupted fit, run again, resumes
// to the bits of a run never interrupted; the backup goes when fit ends normally; save_freq
// in batches; a backup that cannot be read names its file.

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "memopt/backend/cpu.hpp"
#include "memopt/core/error.hpp"
#include "memopt/data/batch.hpp"
#include "memopt/data/dataset.hpp"
#include "memopt/data/prefetch.hpp"
#include "memopt/data/shuffle.hpp"
#include "memopt/data/take.hpp"
#include "memopt/io/safetensors.hpp"
#include "memopt/layers/activation.hpp"
#include "memopt/layers/dense.hpp"
#include "memopt/model/input.hpp"
#include "memopt/model/model.hpp"
#include "memopt/model/sequential.hpp"
#include "memopt/train/callback.hpp"
#include "memopt/train/callbacks/backup_and_restore.hpp"
#include "memopt/train/optimizers.hpp"

#include "temp_dir.hpp"

#include "blobs.hpp"

namespace mo = memopt;
namespace fs = std::filesystem;

namespace {

using memopt::testing::TempDir;

using Net =
    mo::Sequential<mo::Dense<16, mo::ReLU>, mo::Dense<12, mo::Tanh>, mo::Dense<4, mo::Softmax>>;
template <class Policy = mo::float32>
using Mlp = mo::Model<Net, mo::Input<8>, Policy>;

// 300 rows: 9 batches of 32 and one of 12 per epoch.
const mo::data::Dataset& train_data() {
  static const mo::data::Dataset d = memopt::testing::blobs(300, 7, 1.0f, 1.5f);
  return d;
}
const mo::data::Dataset& val_data() {
  static const mo::data::Dataset d = memopt::testing::blobs(64, 8, 1.0f, 1.5f);
  return d;
}

template <class M>
mo::History fit(M& m, int epochs, std::vector<mo::Callback*> cbs) {
  return m.fit(train_data() | mo::data::batch(32),
               {.epochs = epochs,
                .validation_data = val_data() | mo::data::batch(32),
                .callbacks = std::move(cbs),
                .verbose = 0});
}

// What a crash looks like to fit: an exception that is not memopt's.
struct Interrupted {};

// Throws at the end of epoch `at_epoch`, or at the start of batch `at_batch` of that epoch.
struct Crash : mo::Callback {
  int at_epoch = 0;
  int at_batch = -1;
  int epoch = 0;
  Crash(int e, int b = -1) : at_epoch(e), at_batch(b) {}
  void on_epoch_begin(int e, const mo::Logs&) override { epoch = e; }
  void on_train_batch_begin(int b) override {
    if (epoch == at_epoch && b == at_batch) throw Interrupted{};
  }
  void on_epoch_end(int e, const mo::Logs&) override {
    if (e == at_epoch && at_batch < 0) throw Interrupted{};
  }
};

// Sets stop_training after batch `at_batch` of epoch `at_epoch` (or at that epoch's end).
struct Stop : mo::Callback {
  int at_epoch = 0;
  int at_batch = -1;
  int epoch = 0;
  Stop(int e, int b = -1) : at_epoch(e), at_batch(b) {}
  void on_epoch_begin(int e, const mo::Logs&) override { epoch = e; }
  void on_train_batch_end(int b, const mo::BatchLogs&) override {
    if (epoch == at_epoch && b == at_batch) model_->stop_training = true;
  }
  void on_epoch_end(int e, const mo::Logs&) override {
    if (e == at_epoch && at_batch < 0) model_->stop_training = true;
  }
};

template <class Policy>
void compile(Mlp<Policy>& m) {
  m.compile(mo::Adam{{.learning_rate = 1e-2}}, mo::SparseCategoricalCrossentropy{},
            mo::metrics::Accuracy{});
  // Under mixed_float16, a scale that overflows at first and grows every 3 steps, so that
  // the scale's history is part of what must come back.
  if constexpr (Policy::loss_scaling) m.set_loss_scale({.scale = 1 << 22, .growth_interval = 3});
}

void write_text(const fs::path& p, const std::string& s) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << s;
}

std::string metadata(const fs::path& p, const std::string& key) {
  return mo::io::SafetensorsFile::read(p).metadata().at(key);
}

template <class Policy>
void interrupted_then_resumed() {
  TempDir dir;
  Mlp<Policy> straight{42};
  compile(straight);
  const mo::History h_straight = fit(straight, 5, {});

  // Crashes after the backup of epoch 2 (callbacks run in order): 3 epochs are backed up.
  Mlp<Policy> crashed{42};
  compile(crashed);
  mo::callbacks::BackupAndRestore backup{{.backup_dir = dir / "backup"}};
  Crash crash{2};
  CHECK_THROWS_AS(fit(crashed, 5, {&backup, &crash}), Interrupted);
  CHECK(backup.backups_written() == 3);
  REQUIRE(fs::exists(backup.backup_path()));  // an exception is no normal end: the file stays
  CHECK(metadata(backup.backup_path(), "epoch") == "3");

  // A new process: a fresh callback and a model with other initial weights, the same fit.
  Mlp<Policy> resumed{7};
  compile(resumed);
  mo::callbacks::BackupAndRestore again{{.backup_dir = dir / "backup"}};
  const mo::History h = fit(resumed, 5, {&again});
  CHECK(again.restored_epoch() == 3);
  CHECK(resumed.completed_epochs() == 5);
  CHECK(resumed.iterations() == straight.iterations());
  CHECK(resumed.get_weights() == straight.get_weights());  // bit for bit
  CHECK(resumed.get_optimizer_state() == straight.get_optimizer_state());
  CHECK(resumed.loss_scale().value() == straight.loss_scale().value());

  // Keras's History is the resumed fit's own: the remaining epochs only, numbered as such.
  CHECK(h.epoch == std::vector<int>{3, 4});
  REQUIRE(h.history.at("loss").size() == 2);
  CHECK(h.history.at("loss")[0] == h_straight.history.at("loss")[3]);
  CHECK(h.history.at("val_loss")[1] == h_straight.history.at("val_loss")[4]);
  CHECK(h_straight.history.at("loss")[4] < h_straight.history.at("loss")[0]);  // it trained
  CHECK_FALSE(fs::exists(again.backup_path()));  // this fit ended normally
}

}  // namespace

TEST_CASE("BackupAndRestore: an interrupted fit run again resumes bit for bit (float32)") {
  interrupted_then_resumed<mo::float32>();
}

TEST_CASE("BackupAndRestore: an interrupted fit run again resumes bit for bit (mixed_float16)") {
  interrupted_then_resumed<mo::mixed_float16>();
}

TEST_CASE("BackupAndRestore: a backup of every epoch asked for leaves nothing to train") {
  TempDir dir;
  Mlp<> model{42};
  compile(model);
  mo::callbacks::BackupAndRestore keep{{.backup_dir = dir.path, .delete_checkpoint = false}};
  fit(model, 3, {&keep});
  const std::vector<float> trained = model.get_weights();

  Mlp<> again{7};
  compile(again);
  const mo::History h = fit(again, 3, {&keep});
  CHECK(keep.restored_epoch() == 3);
  CHECK(h.epoch.empty());  // Keras: range(3, 3)
  CHECK(again.get_weights() == trained);
  CHECK(again.completed_epochs() == 3);
}

TEST_CASE("fit without a restoring callback starts at initial_epoch, whatever ran before") {
  Mlp<> model{42};
  compile(model);
  fit(model, 2, {});
  CHECK(model.completed_epochs() == 2);
  CHECK(fit(model, 2, {}).epoch == std::vector<int>{0, 1});  // as Keras: not 2 epochs fewer
  TempDir dir;
  mo::callbacks::BackupAndRestore none{{.backup_dir = dir / "absent"}};
  CHECK(fit(model, 2, {&none}).epoch == std::vector<int>{0, 1});
  CHECK_FALSE(none.restored_epoch().has_value());
}

TEST_CASE("BackupAndRestore: the backup is deleted when fit ends normally, unless asked to keep") {
  TempDir dir;
  Mlp<> model{1};
  compile(model);

  mo::callbacks::BackupAndRestore deleting{{.backup_dir = dir / "a"}};
  fit(model, 2, {&deleting});
  CHECK(deleting.backups_written() == 2);
  CHECK_FALSE(fs::exists(deleting.backup_path()));
  CHECK_FALSE(fs::exists(dir / "a"));  // the folder it made, now empty

  // Stopped by a callback is a normal end too, as Keras's on_train_end.
  mo::callbacks::BackupAndRestore stopped{{.backup_dir = dir / "b"}};
  Stop stop{0};
  CHECK(fit(model, 3, {&stopped, &stop}).epoch == std::vector<int>{0});
  CHECK(stopped.backups_written() == 1);
  CHECK_FALSE(fs::exists(stopped.backup_path()));

  // A folder that holds other files keeps them.
  fs::create_directories(dir / "c");
  write_text(dir / "c" / "notes.txt", "mine");
  mo::callbacks::BackupAndRestore shared{{.backup_dir = dir / "c"}};
  fit(model, 1, {&shared});
  CHECK_FALSE(fs::exists(shared.backup_path()));
  CHECK(fs::exists(dir / "c" / "notes.txt"));

  mo::callbacks::BackupAndRestore keeping{{.backup_dir = dir / "d", .delete_checkpoint = false}};
  fit(model, 2, {&keeping});
  REQUIRE(fs::exists(keeping.backup_path()));
  CHECK(metadata(keeping.backup_path(), "epoch") == "2");
  CHECK(metadata(keeping.backup_path(), "step") == std::to_string(model.iterations()));
}

TEST_CASE("BackupAndRestore: save_freq in batches, counted across epochs; resumes mid-epoch") {
  TempDir dir;
  // 10 batches an epoch; every 4 batches: after batches 4, 8 and 12 (the 2nd of epoch 1).
  Mlp<> crashed{42};
  compile(crashed);
  mo::callbacks::BackupAndRestore backup{
      {.backup_dir = dir.path, .save_freq = 4, .delete_checkpoint = false}};
  Crash crash{1, 5};  // 15 batches run
  CHECK_THROWS_AS(fit(crashed, 3, {&backup, &crash}), Interrupted);
  CHECK(backup.backups_written() == 3);
  CHECK(metadata(backup.backup_path(), "step") == "12");
  CHECK(metadata(backup.backup_path(), "epoch") == "1");  // in epoch 1, none completed there

  // The backup holds the weights after exactly 12 steps.
  Mlp<> reference{42};
  compile(reference);
  Stop stop{1, 1};
  fit(reference, 3, {&stop});
  REQUIRE(reference.iterations() == 12);
  Mlp<> loaded{7};
  compile(loaded);
  loaded.load(backup.backup_path());
  CHECK(loaded.get_weights() == reference.get_weights());
  CHECK(loaded.get_optimizer_state() == reference.get_optimizer_state());

  // Resuming from mid-epoch continues at the batch after the backup (Keras trains the epoch
  // again from its first batch): 8 batches of epoch 1, then epoch 2, as never interrupted.
  Mlp<> straight{42};
  compile(straight);
  fit(straight, 3, {});
  Mlp<> resumed{7};
  compile(resumed);
  const mo::History h = fit(resumed, 3, {&backup});
  CHECK(backup.restored_epoch() == 1);
  CHECK(h.epoch == std::vector<int>{1, 2});
  CHECK(resumed.iterations() == 30);
  CHECK(resumed.get_weights() == straight.get_weights());  // bit for bit
  CHECK(resumed.get_optimizer_state() == straight.get_optimizer_state());
  CHECK(backup.backups_written() == 4);  // the counter starts again with each fit: 4, ..., 16

  CHECK_THROWS_WITH_AS(mo::callbacks::BackupAndRestore({.backup_dir = dir.path, .save_freq = 0}),
                       doctest::Contains("expected save_freq > 0 batches, found 0"), mo::error);
  CHECK_THROWS_WITH_AS(
      mo::callbacks::BackupAndRestore({.backup_dir = dir.path, .save_freq = std::string("batch")}),
      doctest::Contains("expected save_freq \"epoch\" or a number of batches, found \"batch\""),
      mo::error);
  CHECK_THROWS_WITH_AS(mo::callbacks::BackupAndRestore({.backup_dir = ""}),
                       doctest::Contains("expected a backup_dir"), mo::error);
}

TEST_CASE("BackupAndRestore: a backup that cannot be read raises memopt::error naming the file") {
  TempDir dir;
  Mlp<> model{1};
  compile(model);
  mo::callbacks::BackupAndRestore backup{{.backup_dir = dir.path, .delete_checkpoint = false}};
  fit(model, 2, {&backup});
  const std::vector<float> trained = model.get_weights();
  const std::string name = backup.backup_path().string();
  const std::string restore_error = "BackupAndRestore: cannot restore the backup " + name;

  // Truncated: half of a real backup.
  const auto size = fs::file_size(backup.backup_path());
  fs::resize_file(backup.backup_path(), size / 2);
  Mlp<> fresh{9};
  compile(fresh);
  CHECK_THROWS_WITH_AS(fit(fresh, 4, {&backup}), doctest::Contains(restore_error.c_str()),
                       mo::error);
  CHECK(fs::exists(backup.backup_path()));  // left for a look, not deleted

  // Not a safetensors file at all.
  write_text(backup.backup_path(), "not a checkpoint");
  CHECK_THROWS_WITH_AS(fit(fresh, 4, {&backup}), doctest::Contains(name.c_str()), mo::error);

  // Another model's backup.
  mo::Model<mo::Sequential<mo::Dense<4, mo::Softmax>>, mo::Input<8>> other{1};
  other.compile(mo::Adam{{.learning_rate = 1e-2}}, mo::SparseCategoricalCrossentropy{});
  other.save(backup.backup_path());
  CHECK_THROWS_WITH_AS(fit(fresh, 4, {&backup}), doctest::Contains(name.c_str()), mo::error);
  CHECK(fresh.iterations() == 0);  // nothing trained, nothing half-restored
}

TEST_CASE(
    "BackupAndRestore: double_checkpoint restores the previous backup when the latest fails") {
  TempDir dir;
  Mlp<> model{1};
  compile(model);
  mo::callbacks::BackupAndRestore backup{
      {.backup_dir = dir.path, .double_checkpoint = true, .delete_checkpoint = false}};
  fit(model, 1, {&backup});
  fit(model, 2, {&backup});  // resumes at epoch 1: the backup of epoch 0 becomes the previous
  REQUIRE(fs::exists(backup.previous_backup_path()));
  CHECK(metadata(backup.previous_backup_path(), "epoch") == "1");
  CHECK(metadata(backup.backup_path(), "epoch") == "2");

  write_text(backup.backup_path(), "corrupt");
  Mlp<> fresh{9};
  compile(fresh);
  const mo::History h = fit(fresh, 2, {&backup});
  CHECK(backup.restored_epoch() == 1);
  CHECK(h.epoch == std::vector<int>{1});
  CHECK(fresh.get_weights() == model.get_weights());  // epoch 1 trained again from epoch 0's

  // Without a previous backup, the error stands.
  fs::remove(backup.previous_backup_path());
  write_text(backup.backup_path(), "corrupt");
  const std::string name = backup.backup_path().string();
  CHECK_THROWS_WITH_AS(fit(fresh, 2, {&backup}), doctest::Contains(name.c_str()), mo::error);
}

namespace {

// A new pipeline on every call, as a new process builds: a shuffle that reshuffles each epoch,
// read ahead on a worker thread.
template <class M>
mo::History fit_shuffled(M& m, int epochs, std::vector<mo::Callback*> cbs) {
  return m.fit(
      train_data() | mo::data::shuffle(300, 5) | mo::data::batch(32) | mo::data::prefetch(2),
      {.epochs = epochs,
       .validation_data = val_data() | mo::data::batch(32),
       .callbacks = std::move(cbs),
       .verbose = 0});
}

}  // namespace

TEST_CASE(
    "BackupAndRestore: a shuffling pipeline resumes bit for bit, at an epoch's end and "
    "mid-epoch") {
  TempDir dir;
  Mlp<> straight{42};
  compile(straight);
  const mo::History h_straight = fit_shuffled(straight, 4, {});

  SUBCASE("from the backup of epoch 1's end") {
    Mlp<> crashed{42};
    compile(crashed);
    mo::callbacks::BackupAndRestore backup{{.backup_dir = dir / "epoch"}};
    Crash crash{1};
    CHECK_THROWS_AS(fit_shuffled(crashed, 4, {&backup, &crash}), Interrupted);
    Mlp<> resumed{7};
    compile(resumed);
    mo::callbacks::BackupAndRestore again{{.backup_dir = dir / "epoch"}};
    const mo::History h = fit_shuffled(resumed, 4, {&again});
    CHECK(again.restored_epoch() == 2);
    CHECK(resumed.get_weights() == straight.get_weights());  // bit for bit
    CHECK(resumed.get_optimizer_state() == straight.get_optimizer_state());
    // Whole epochs after the resume: their logs are the uninterrupted run's too.
    CHECK(h.history.at("loss") == std::vector<double>(h_straight.history.at("loss").begin() + 2,
                                                      h_straight.history.at("loss").end()));
  }
  SUBCASE("from a backup after batch 7 of epoch 2") {
    Mlp<> crashed{42};
    compile(crashed);
    // Every 3 batches, counted from the fit's start: 28 batches run before the crash, the last
    // backup after the 27th, the 7th of epoch 2 (10 batches an epoch).
    mo::callbacks::BackupAndRestore backup{{.backup_dir = dir / "batch", .save_freq = 3}};
    Crash crash{2, 8};
    CHECK_THROWS_AS(fit_shuffled(crashed, 4, {&backup, &crash}), Interrupted);
    CHECK(metadata(backup.backup_path(), "epoch_batches") == "7");
    Mlp<> resumed{7};
    compile(resumed);
    mo::callbacks::BackupAndRestore again{{.backup_dir = dir / "batch", .save_freq = 3}};
    const mo::History h = fit_shuffled(resumed, 4, {&again});
    CHECK(h.epoch == std::vector<int>{2, 3});
    CHECK(resumed.iterations() == straight.iterations());
    CHECK(resumed.get_weights() == straight.get_weights());  // bit for bit
    CHECK(resumed.get_optimizer_state() == straight.get_optimizer_state());
    CHECK(h.history.at("val_loss") ==
          std::vector<double>(h_straight.history.at("val_loss").begin() + 2,
                              h_straight.history.at("val_loss").end()));
  }
  SUBCASE("from a backup after an epoch's last batch: nothing of it left to train") {
    Mlp<> crashed{42};
    compile(crashed);
    // Every 10 batches: after the last batch of each epoch, before its end.
    mo::callbacks::BackupAndRestore backup{{.backup_dir = dir / "last", .save_freq = 10}};
    Crash crash{1, 0};  // at the first batch of epoch 1: the backup after epoch 0's last batch
    CHECK_THROWS_AS(fit_shuffled(crashed, 4, {&backup, &crash}), Interrupted);
    CHECK(metadata(backup.backup_path(), "epoch") == "0");
    CHECK(metadata(backup.backup_path(), "epoch_batches") == "10");
    Mlp<> resumed{7};
    compile(resumed);
    mo::callbacks::BackupAndRestore again{{.backup_dir = dir / "last", .save_freq = 10}};
    const mo::History h = fit_shuffled(resumed, 4, {&again});
    CHECK(h.epoch == std::vector<int>{0, 1, 2, 3});
    CHECK(std::isnan(h.history.at("loss")[0]));  // no batch of epoch 0 trained here
    CHECK(h.history.at("val_loss")[0] == h_straight.history.at("val_loss")[0]);
    CHECK(resumed.get_weights() == straight.get_weights());
  }
}

TEST_CASE("fit refuses to resume mid-epoch on data with fewer batches than the backup trained") {
  TempDir dir;
  Mlp<> crashed{42};
  compile(crashed);
  mo::callbacks::BackupAndRestore backup{{.backup_dir = dir.path, .save_freq = 8}};
  Crash crash{0, 9};
  CHECK_THROWS_AS(fit(crashed, 2, {&backup, &crash}), Interrupted);
  Mlp<> resumed{7};
  compile(resumed);
  mo::callbacks::BackupAndRestore again{{.backup_dir = dir.path, .save_freq = 8}};
  CHECK_THROWS_WITH_AS(
      resumed.fit(train_data() | mo::data::take(100) | mo::data::batch(32),
                  {.epochs = 2, .callbacks = {&again}, .verbose = 0}),
      doctest::Contains("had trained 8 batches of epoch 1, but the training data yields 4"),
      mo::error);
}
