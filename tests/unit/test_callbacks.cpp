// Callbacks with Keras's meaning: ModelCheckpoint, EarlyStopping, CSVLogger, the progress bar.

#include <doctest/doctest.h>

#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "memopt/backend/cpu.hpp"
#include "memopt/core/error.hpp"
#include "memopt/core/random.hpp"
#include "memopt/data/batch.hpp"
#include "memopt/data/dataset.hpp"
#include "memopt/io/safetensors.hpp"
#include "memopt/layers/activation.hpp"
#include "memopt/layers/dense.hpp"
#include "memopt/model/input.hpp"
#include "memopt/model/model.hpp"
#include "memopt/model/sequential.hpp"
#include "memopt/train/callbacks/csv_logger.hpp"
#include "memopt/train/callbacks/early_stopping.hpp"
#include "memopt/train/callbacks/model_checkpoint.hpp"
#include "memopt/train/callbacks/progress_bar.hpp"

#include "temp_dir.hpp"

#include "blobs.hpp"

namespace mo = memopt;
namespace fs = std::filesystem;

namespace {

using memopt::testing::TempDir;

std::string read_text(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// A model stand-in that records what callbacks ask of it.
struct FakeModel : mo::TrainingContext {
  std::vector<float> weights{1, 2, 3};
  mutable std::vector<std::string> saves;  // "weights:<path>" or "full:<path>"
  std::vector<float> get_weights() const override { return weights; }
  void set_weights(std::span<const float> w) override { weights.assign(w.begin(), w.end()); }
  void save_weights(const fs::path& p) const override { saves.push_back("weights:" + p.string()); }
  void save(const fs::path& p) const override { saves.push_back("full:" + p.string()); }
};

// Drives a callback through epochs whose logs hold `key` = values[i].
void run_epochs(mo::Callback& cb, FakeModel& m, const std::string& key,
                const std::vector<double>& values) {
  cb.set_context(&m);
  cb.on_train_begin({});
  for (std::size_t e = 0; e < values.size(); ++e) {
    cb.on_epoch_begin(int(e), {});
    cb.on_epoch_end(int(e), {{key, values[e]}, {"loss", 1.0}});
    if (m.stop_training) break;
  }
  cb.on_train_end({});
}

using memopt::testing::blobs;

using Net = mo::Sequential<mo::Dense<16, mo::ReLU>, mo::Dense<4, mo::Softmax>>;

}  // namespace

TEST_CASE("filepath templates: fmt syntax, 1-based epoch, any logged value") {
  using mo::callbacks::format_filepath;
  CHECK(format_filepath("ckpt-{epoch:02d}.safetensors", 3, std::nullopt, {}) ==
        "ckpt-03.safetensors");
  CHECK(format_filepath("m-{epoch:03d}-{val_loss:.2f}-{accuracy:.3f}.st", 12, std::nullopt,
                        {{"val_loss", 0.4567}, {"accuracy", 0.9}}) == "m-012-0.46-0.900.st");
  CHECK(format_filepath("b-{epoch}-{batch:04d}", 1, 250, {}) == "b-1-0250");
  CHECK(format_filepath("{{literal}}-{epoch}", 2, std::nullopt, {}) == "{literal}-2");
  CHECK_THROWS_WITH_AS(
      format_filepath("ckpt-{val_los:.2f}", 1, std::nullopt, {{"val_loss", 0.5}}),
      doctest::Contains("uses {val_los}, which is not a logged value; expected one of: epoch, "
                        "val_loss"),
      mo::error);
  CHECK_THROWS_WITH_AS(format_filepath("ckpt-{batch}", 1, std::nullopt, {}),
                       doctest::Contains("uses {batch}"), mo::error);
  CHECK_THROWS_WITH_AS(format_filepath("ckpt-{}", 1, std::nullopt, {}),
                       doctest::Contains("uses {}"), mo::error);
  CHECK_THROWS_WITH_AS(format_filepath("ckpt-{epoch:.2q}", 1, std::nullopt, {}),
                       doctest::Contains("cannot format filepath"), mo::error);
}

TEST_CASE("ModelCheckpoint: options are checked as Keras checks them") {
  CHECK_THROWS_WITH_AS(mo::callbacks::ModelCheckpoint({.filepath = "x", .save_freq = "batch"}),
                       doctest::Contains("expected save_freq \"epoch\" or a number of batches"),
                       mo::error);
  CHECK_THROWS_AS(mo::callbacks::ModelCheckpoint({.filepath = "x", .save_freq = 0}), mo::error);
  CHECK_THROWS_WITH_AS(mo::callbacks::ModelCheckpoint({.filepath = "x", .mode = "maximum"}),
                       doctest::Contains("expected mode \"auto\", \"min\" or \"max\""), mo::error);
  CHECK_THROWS_WITH_AS(mo::callbacks::ModelCheckpoint({.filepath = "x", .monitor = "lr"}),
                       doctest::Contains("pass .mode = \"min\" or \"max\""), mo::error);
  CHECK_NOTHROW(mo::callbacks::ModelCheckpoint({.filepath = "x", .monitor = "lr", .mode = "max"}));
}

TEST_CASE("ModelCheckpoint saves every epoch by default, full model unless weights only") {
  FakeModel m;
  mo::callbacks::ModelCheckpoint all{{.filepath = "e{epoch:02d}.safetensors"}};
  run_epochs(all, m, "val_loss", {0.5, 0.6, 0.4});
  CHECK(m.saves == std::vector<std::string>{"full:e01.safetensors", "full:e02.safetensors",
                                            "full:e03.safetensors"});
  m.saves.clear();
  mo::callbacks::ModelCheckpoint weights{
      {.filepath = "w{epoch}-{val_loss:.1f}.safetensors", .save_weights_only = true}};
  run_epochs(weights, m, "val_loss", {0.5, 0.3});
  CHECK(m.saves ==
        std::vector<std::string>{"weights:w1-0.5.safetensors", "weights:w2-0.3.safetensors"});
}

TEST_CASE("ModelCheckpoint save_best_only: strictly better, in the monitor's direction") {
  FakeModel m;
  mo::callbacks::ModelCheckpoint best{{.filepath = "b{epoch}", .save_best_only = true}};
  // val_loss: minimised; an equal value is not an improvement.
  run_epochs(best, m, "val_loss", {0.5, 0.6, 0.5, 0.4, 0.4, 0.39});
  CHECK(m.saves == std::vector<std::string>{"full:b1", "full:b4", "full:b6"});
  CHECK(best.best() == 0.39);

  m.saves.clear();
  mo::callbacks::ModelCheckpoint acc{
      {.filepath = "a{epoch}", .monitor = "val_accuracy", .save_best_only = true}};
  run_epochs(acc, m, "val_accuracy", {0.5, 0.4, 0.7, 0.7, 0.8});
  CHECK(m.saves == std::vector<std::string>{"full:a1", "full:a3", "full:a5"});

  m.saves.clear();
  mo::callbacks::ModelCheckpoint forced{
      {.filepath = "f{epoch}", .monitor = "val_loss", .save_best_only = true, .mode = "max"}};
  run_epochs(forced, m, "val_loss", {0.5, 0.4, 0.6});
  CHECK(m.saves == std::vector<std::string>{"full:f1", "full:f3"});

  m.saves.clear();
  mo::callbacks::ModelCheckpoint threshold{
      {.filepath = "t{epoch}", .save_best_only = true, .initial_value_threshold = 0.45}};
  run_epochs(threshold, m, "val_loss", {0.5, 0.46, 0.44, 0.45});
  CHECK(m.saves == std::vector<std::string>{"full:t3"});
}

TEST_CASE("ModelCheckpoint: a missing monitored value warns and saves, as Keras 3") {
  FakeModel m;
  mo::callbacks::ModelCheckpoint best{
      {.filepath = "m{epoch}", .monitor = "val_loss", .save_best_only = true}};
  run_epochs(best, m, "other", {1.0, 2.0});
  CHECK(m.saves == std::vector<std::string>{"full:m1", "full:m2"});
}

TEST_CASE("ModelCheckpoint: without the monitored value it says it saves every epoch instead") {
  TempDir dir;
  const fs::path err_path = dir / "stderr.txt";
  FakeModel m;
  mo::callbacks::ModelCheckpoint best{
      {.filepath = "m{epoch}", .monitor = "val_loss", .save_best_only = true}};
  // Capture stderr (fd 2) while two runs of two epochs each have no val_loss.
  std::fflush(stderr);
  const int saved = ::dup(2);
  REQUIRE(std::freopen(err_path.c_str(), "w", stderr) != nullptr);
  run_epochs(best, m, "accuracy", {0.5, 0.6});
  run_epochs(best, m, "accuracy", {0.7, 0.8});
  std::fflush(stderr);
  ::dup2(saved, 2);
  ::close(saved);
  const std::string err = read_text(err_path);
  CAPTURE(err);
  CHECK(m.saves == std::vector<std::string>{"full:m1", "full:m2", "full:m1", "full:m2"});
  CHECK(err.find("ModelCheckpoint: save_best_only cannot tell the best model: \"val_loss\" is "
                 "not in the logs (they have: accuracy, loss; val_ values exist only when fit "
                 "is given validation_data). Saving every epoch instead, as without "
                 "save_best_only (as Keras 3 does), starting with m1.") != std::string::npos);
  // Once a run, not once an epoch.
  CHECK(std::count(err.begin(), err.end(), '\n') == 2);
}

TEST_CASE("ModelCheckpoint save_freq: every N batches, counted across epochs") {
  FakeModel m;
  mo::callbacks::ModelCheckpoint every{
      {.filepath = "s{epoch}-{batch}-{loss:.1f}", .save_weights_only = true, .save_freq = 4}};
  every.set_context(&m);
  every.on_train_begin({});
  for (int epoch = 0; epoch < 2; ++epoch) {
    every.on_epoch_begin(epoch, {});
    for (int b = 0; b < 6; ++b)
      every.on_train_batch_end(b, {.loss = 0.5, .accuracy = 0.75, .samples = 10});
    every.on_epoch_end(epoch, {{"loss", 0.5}});  // no epoch-end save with save_freq N
  }
  // 12 batches: saves after the 4th (epoch 1, batch 4), 8th (epoch 2, batch 2), 12th.
  CHECK(m.saves ==
        std::vector<std::string>{"weights:s1-4-0.5", "weights:s2-2-0.5", "weights:s2-6-0.5"});
}

TEST_CASE("ModelCheckpoint in fit writes loadable files named by epoch and value") {
  TempDir dir;
  mo::Model<Net, mo::Input<8>> model{1};
  model.compile(mo::Adam{{.learning_rate = 1e-2}}, mo::SparseCategoricalCrossentropy{},
                mo::metrics::Accuracy{});
  auto train = blobs(256, 2);
  auto val = blobs(128, 3);
  const std::string pattern =
      (dir.path / "sub" / "ckpt-{epoch:02d}-{val_accuracy:.2f}.safetensors").string();
  mo::callbacks::ModelCheckpoint ckpt{{.filepath = pattern,
                                       .monitor = "val_loss",
                                       .save_best_only = true,
                                       .save_weights_only = true}};
  const auto h =
      model.fit(train | mo::data::batch(32), {.epochs = 3,
                                              .validation_data = val | mo::data::batch(64),
                                              .callbacks = {&ckpt},
                                              .verbose = 0});
  REQUIRE(!ckpt.saved().empty());
  CHECK(ckpt.saved().front().filename().string().starts_with("ckpt-01-"));
  for (const auto& p : ckpt.saved()) CHECK(fs::exists(p));
  // The last file saved holds the weights of the best epoch; val_loss fell every epoch here.
  if (h.history.at("val_loss")[2] < h.history.at("val_loss")[1] &&
      h.history.at("val_loss")[1] < h.history.at("val_loss")[0]) {
    CHECK(ckpt.saved().size() == 3);
    mo::Model<Net, mo::Input<8>> other{9};
    other.load_weights(ckpt.saved().back());
    CHECK(other.get_weights() == model.get_weights());
  }
}

TEST_CASE("EarlyStopping: patience, min_delta, baseline, warm-up") {
  FakeModel m;
  mo::callbacks::EarlyStopping p0{};
  run_epochs(p0, m, "val_loss", {1.0, 1.1, 0.5});
  CHECK(m.stop_training);
  CHECK(p0.stopped_epoch() == 1);

  m.stop_training = false;
  mo::callbacks::EarlyStopping p2{{.patience = 2}};
  run_epochs(p2, m, "val_loss", {1.0, 0.9, 0.95, 0.92, 0.91, 0.5});
  CHECK(m.stop_training);
  CHECK(p2.stopped_epoch() == 3);
  CHECK(p2.best_epoch() == 1);
  CHECK(p2.best() == 0.9);

  // min_delta: improvements of 0.05 or less do not count.
  m.stop_training = false;
  mo::callbacks::EarlyStopping delta{{.min_delta = 0.05, .patience = 1}};
  run_epochs(delta, m, "val_loss", {1.0, 0.9, 0.87, 0.5});
  CHECK(delta.stopped_epoch() == 2);

  // Accuracy is maximised under mode auto.
  m.stop_training = false;
  mo::callbacks::EarlyStopping acc{{.monitor = "val_accuracy", .patience = 1}};
  run_epochs(acc, m, "val_accuracy", {0.5, 0.6, 0.7, 0.7, 0.8});
  CHECK(acc.stopped_epoch() == 3);

  // baseline: until it is beaten, improvements do not reset the wait.
  m.stop_training = false;
  mo::callbacks::EarlyStopping base{{.patience = 2, .baseline = 0.5}};
  run_epochs(base, m, "val_loss", {1.0, 0.9, 0.95});
  CHECK(base.stopped_epoch() == 2);
  m.stop_training = false;
  mo::callbacks::EarlyStopping no_base{{.patience = 2}};
  run_epochs(no_base, m, "val_loss", {1.0, 0.9, 0.95});
  CHECK_FALSE(m.stop_training);

  // start_from_epoch: nothing is watched before it.
  m.stop_training = false;
  mo::callbacks::EarlyStopping warm{{.patience = 0, .start_from_epoch = 3}};
  run_epochs(warm, m, "val_loss", {1.0, 2.0, 3.0, 4.0, 5.0});
  CHECK(warm.stopped_epoch() == 4);

  // A missing value warns and never stops.
  m.stop_training = false;
  mo::callbacks::EarlyStopping missing{};
  run_epochs(missing, m, "val_accuracy", {1.0, 1.0, 1.0});
  CHECK_FALSE(m.stop_training);
}

TEST_CASE("EarlyStopping restore_best_weights puts back the best epoch's weights") {
  FakeModel m;
  mo::callbacks::EarlyStopping stop{{.patience = 1, .restore_best_weights = true}};
  stop.set_context(&m);
  stop.on_train_begin({});
  const std::vector<double> values{1.0, 0.5, 0.7, 0.8};
  for (std::size_t e = 0; e < values.size() && !m.stop_training; ++e) {
    m.weights = {float(e), float(e), float(e)};  // "training" changes the weights
    stop.on_epoch_end(int(e), {{"val_loss", values[e]}});
  }
  stop.on_train_end({});
  CHECK(stop.stopped_epoch() == 2);
  CHECK(m.weights == std::vector<float>{1, 1, 1});
}

TEST_CASE("EarlyStopping stops fit") {
  mo::Model<Net, mo::Input<8>> model{1};
  model.compile(mo::SGD{{.learning_rate = 0.0}}, mo::SparseCategoricalCrossentropy{},
                mo::metrics::Accuracy{});
  auto train = blobs(64, 2);
  // With a learning rate of 0 the loss never improves: patience 1 stops after epoch 2.
  mo::callbacks::EarlyStopping stop{{.monitor = "loss", .patience = 1}};
  const auto h =
      model.fit(train | mo::data::batch(32), {.epochs = 10, .callbacks = {&stop}, .verbose = 0});
  CHECK(h.epoch == std::vector<int>{0, 1});
  CHECK(stop.stopped_epoch() == 1);
}

TEST_CASE("CSVLogger writes Keras's header and rows, and appends") {
  TempDir dir;
  const fs::path csv = dir / "log.csv";
  FakeModel m;
  {
    mo::callbacks::CSVLogger log{{.filename = csv}};
    log.set_context(&m);
    log.on_train_begin({});
    log.on_epoch_end(
        0, {{"loss", 0.5}, {"accuracy", 0.75}, {"val_loss", 0.625}, {"val_accuracy", 2.0}});
    log.on_epoch_end(
        1, {{"loss", 0.25}, {"accuracy", 0.8}, {"val_loss", 0.5}, {"val_accuracy", 0.875}});
    log.on_train_end({});
  }
  CHECK(read_text(csv) ==
        "epoch,accuracy,loss,val_accuracy,val_loss\n"
        "0,0.75,0.5,2.0,0.625\n"
        "1,0.8,0.25,0.875,0.5\n");
  {
    mo::callbacks::CSVLogger log{{.filename = csv, .separator = ';', .append = true}};
    log.on_train_begin({});
    log.on_epoch_end(2, {{"loss", 0.125}, {"accuracy", 0.9}});
    log.on_train_end({});
  }
  CHECK(read_text(csv).ends_with("1,0.8,0.25,0.875,0.5\n2;0.9;0.125;NA;NA\n"));

  // Without validation, Keras adds val_ columns anyway, filled with NA.
  mo::callbacks::CSVLogger fresh{{.filename = dir / "n.csv"}};
  fresh.on_train_begin({});
  fresh.on_epoch_end(0, {{"loss", 1.5}});
  fresh.on_train_end({});
  CHECK(read_text(dir / "n.csv") == "epoch,loss,val_loss\n0,1.5,NA\n");
}

TEST_CASE("the progress bar: Keras's bar on a terminal, one line per epoch otherwise") {
  TempDir dir;
  const fs::path out_path = dir / "bar.txt";
  {
    std::FILE* out = std::fopen(out_path.c_str(), "w");
    mo::callbacks::ProgressBar bar{{.out = out, .verbose = 1, .interactive = 1, .interval = 0}};
    bar.show_accuracy(true);
    bar.on_epoch_begin(2, 10, 40);
    bar.update(10, {.loss = 0.5, .accuracy = 0.75, .samples = 320, .has_accuracy = true});
    bar.update(40, {.loss = 0.4, .accuracy = 0.8, .samples = 1280, .has_accuracy = true});
    bar.on_epoch_end(40,
                     {{"loss", 0.4}, {"accuracy", 0.8}, {"val_loss", 0.45}, {"val_accuracy", 0.7}});
    std::fclose(out);
  }
  const std::string t = read_text(out_path);
  CHECK(t.starts_with("Epoch 3/10\n\r10/40 [" + std::string(6, '=') + ">" + std::string(23, '.') +
                      "] - ETA: "));
  CHECK(t.find("s/step - loss: 0.5000 - accuracy: 0.7500") != std::string::npos);
  CHECK(t.find("\r40/40 [" + std::string(30, '=') + "] - ") != std::string::npos);
  CHECK(t.ends_with(
      " - loss: 0.4000 - accuracy: 0.8000 - val_loss: 0.4500 - val_accuracy: 0.7000\n"));

  const fs::path line_path = dir / "line.txt";
  {
    std::FILE* out = std::fopen(line_path.c_str(), "w");
    mo::callbacks::ProgressBar bar{{.out = out, .verbose = 1, .interactive = 0}};
    bar.on_epoch_begin(0, 2, 0);  // steps unknown until the epoch ends
    CHECK_FALSE(bar.due());
    bar.update(5, {});
    bar.on_epoch_end(7, {{"loss", 1.25}, {"val_loss", 1e-5}});
    std::fclose(out);
  }
  const std::string l = read_text(line_path);
  CHECK(l.starts_with("Epoch 1/2 - 7/7 - 0s - "));
  CHECK(l.ends_with("/step - loss: 1.2500 - val_loss: 1.0000e-05\n"));
  CHECK(std::count(l.begin(), l.end(), '\n') == 1);
}

TEST_CASE("fit prints one line per epoch when not on a terminal") {
  // Redirect stdout to a file for the duration of fit.
  TempDir dir;
  const fs::path out_path = dir / "fit.txt";
  std::fflush(stdout);
  const int saved = ::dup(::fileno(stdout));
  REQUIRE(std::freopen(out_path.c_str(), "w", stdout) != nullptr);
  mo::Model<Net, mo::Input<8>> model{1};
  model.compile(mo::Adam{}, mo::SparseCategoricalCrossentropy{}, mo::metrics::Accuracy{});
  auto train = blobs(96, 2);
  model.fit(train | mo::data::batch(32), {.epochs = 2});
  std::fflush(stdout);
  ::dup2(saved, ::fileno(stdout));
  ::close(saved);
  const std::string t = read_text(out_path);
  CHECK(t.starts_with("Epoch 1/2 - 3/3 - "));
  CHECK(t.find("\nEpoch 2/2 - 3/3 - ") != std::string::npos);
  CHECK(std::count(t.begin(), t.end(), '\n') == 2);
  CHECK(t.find("accuracy: ") != std::string::npos);
}
