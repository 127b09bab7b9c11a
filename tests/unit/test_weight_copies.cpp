// Every copy of "the model's weights" carries the non-trainable ones too, as Keras's
// `model.weights` does (issue 35, item 3): BatchNormalization's moving mean and variance go
// with get_weights/set_weights, EarlyStopping's restore_best_weights, BackupAndRestore's
// resume and weights-only checkpoints. (The data-parallel broadcast between replicas is
// checked in test_data_parallel_threads.cpp.) Each test copies at a moment whose moving
// statistics visibly differ from those at the end, and compares them, or evaluate's loss.

#include <doctest/doctest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "memopt/backend/cpu.hpp"
#include "memopt/core/error.hpp"
#include "memopt/core/random.hpp"
#include "memopt/data/batch.hpp"
#include "memopt/data/target_dataset.hpp"
#include "memopt/layers/activation.hpp"
#include "memopt/layers/batch_normalization.hpp"
#include "memopt/layers/dense.hpp"
#include "memopt/model/input.hpp"
#include "memopt/model/model.hpp"
#include "memopt/model/sequential.hpp"
#include "memopt/train/callback.hpp"
#include "memopt/train/callbacks/backup_and_restore.hpp"
#include "memopt/train/callbacks/early_stopping.hpp"
#include "memopt/train/callbacks/model_checkpoint.hpp"
#include "memopt/train/checkpoint.hpp"
#include "memopt/train/losses.hpp"
#include "memopt/train/optimizers.hpp"

#include "temp_dir.hpp"

namespace mo = memopt;

namespace {

using memopt::testing::TempDir;

// Dense -> BatchNormalization -> Dense: 8 channels of moving statistics.
using Net = mo::Sequential<mo::Dense<8, mo::ReLU>, mo::BatchNormalization, mo::Dense<1>>;
using Bn = mo::Model<Net, mo::Input<4>>;
constexpr std::size_t parameters = Bn::spec::parameter_count;  // 4*8+8, 8+8, 8+1
constexpr std::size_t moving = Bn::spec::state_count;          // 8 + 8
static_assert(parameters == 65 && moving == 16);

// Features around 3 (not 0), so that the moving mean walks far from its start; the target a
// fixed mix of them.
mo::data::TargetDataset rows(std::size_t n, std::uint64_t seed) {
  mo::Rng rng(seed);
  std::vector<float> x(n * 4), y(n);
  for (std::size_t r = 0; r < n; ++r) {
    for (std::size_t c = 0; c < 4; ++c) x[r * 4 + c] = 3.0f + rng.uniform(-1.0f, 1.0f);
    y[r] = 0.5f * x[r * 4] - 0.25f * x[r * 4 + 1] + 0.1f * x[r * 4 + 2] * x[r * 4 + 3];
  }
  return mo::data::from(std::move(x), std::move(y), 4, 1);
}
const mo::data::TargetDataset& train_rows() {
  static const mo::data::TargetDataset d = rows(256, 1);
  return d;
}
const mo::data::TargetDataset& val_rows() {
  static const mo::data::TargetDataset d = rows(64, 2);
  return d;
}

Bn compiled(std::uint64_t seed = 3) {
  Bn m{seed};
  m.compile(mo::Adam{{.learning_rate = 0.01}}, mo::MeanSquaredError{});
  return m;
}

mo::History fit(Bn& m, int epochs, std::vector<mo::Callback*> cbs = {}, int initial = 0) {
  return m.fit(train_rows() | mo::data::batch(32),
               {.epochs = epochs,
                .initial_epoch = initial,
                .validation_data = val_rows() | mo::data::batch(32),
                .callbacks = std::move(cbs),
                .verbose = 0});
}

double val_loss(Bn& m) {
  return m.evaluate(val_rows() | mo::data::batch(32)).loss;
}

// A model trained `epochs` epochs from seed 3: the reference every copy is compared with.
Bn trained(int epochs) {
  Bn m = compiled();
  fit(m, epochs);
  return m;
}

// The moving statistics of one epoch and of four must differ, or a test could not fail.
void require_moved(const Bn& one, const Bn& four) {
  const std::vector<float> a = one.get_state_weights(), b = four.get_state_weights();
  REQUIRE(a.size() == moving);
  REQUIRE(std::ranges::any_of(a, [](float v) { return v != 0.0f && v != 1.0f; }));
  std::size_t differ = 0;
  for (std::size_t c = 0; c < moving; ++c) differ += a[c] != b[c];
  REQUIRE(differ >= moving / 2);  // a ReLU unit that never fires keeps its mean at 0
}

}  // namespace

TEST_CASE("get_weights holds every weight in Keras's order, moving statistics included") {
  const Bn model = trained(2);
  const std::vector<float> w = model.get_weights();
  const std::vector<float> state = model.get_state_weights();
  // Keras: dense/kernel, dense/bias, then gamma, beta, moving_mean, moving_variance, then
  // dense_1/kernel, dense_1/bias.
  REQUIRE(w.size() == parameters + moving);
  const auto slice = [&](std::size_t at, std::size_t n) {
    return std::vector<float>(w.begin() + static_cast<std::ptrdiff_t>(at),
                              w.begin() + static_cast<std::ptrdiff_t>(at + n));
  };
  CHECK(slice(40 + 16, 8) == std::vector<float>(state.begin(), state.begin() + 8));  // mean
  CHECK(slice(40 + 24, 8) == std::vector<float>(state.begin() + 8, state.end()));    // variance
  CHECK(slice(40, 8) != std::vector<float>(8, 1.0f));  // gamma trained
  CHECK(slice(72, 8) != std::vector<float>(8, 0.0f));  // dense_1/kernel, after the statistics

  // set_weights puts all of it back: the copy evaluates as the original does.
  Bn copy = compiled(9);
  copy.set_weights(w);
  CHECK(copy.get_state_weights() == state);
  CHECK(copy.get_weights() == w);
  Bn original = trained(2);
  CHECK(val_loss(copy) == val_loss(original));

  // The trainable ones alone are refused, not half-copied.
  CHECK_THROWS_WITH_AS(copy.set_weights(std::vector<float>(parameters)),
                       doctest::Contains("expected 81 values"), mo::error);
}

TEST_CASE("EarlyStopping's restore_best_weights restores the moving statistics too") {
  // mode "max" on the training loss makes the first epoch the best: the restored model must
  // be the model of one epoch, moving statistics included.
  const Bn one = trained(1);
  Bn model = compiled();
  mo::callbacks::EarlyStopping stop{
      {.monitor = "loss", .patience = 3, .mode = "max", .restore_best_weights = true}};
  const mo::History h = fit(model, 4, {&stop});
  REQUIRE(stop.best_epoch() == 0);
  REQUIRE(h.history.at("loss").size() == 4);
  require_moved(one, trained(4));

  CHECK(model.get_state_weights() == one.get_state_weights());
  CHECK(model.get_weights() == one.get_weights());
  // What the issue saw: evaluate after fit gives the best epoch's val_loss again.
  CHECK(val_loss(model) == doctest::Approx(h.history.at("val_loss").front()).epsilon(1e-6));
}

TEST_CASE("BackupAndRestore resumes with the backed-up moving statistics") {
  TempDir dir;
  struct Interrupted {};
  // Throws when epoch 2 begins, after epoch 1's backup: the moving statistics of a fresh
  // model are 0 and 1, those of the backup are not.
  struct Crash : mo::Callback {
    void on_epoch_begin(int epoch, const mo::Logs&) override {
      if (epoch == 2) throw Interrupted{};
    }
  };
  {
    Bn first = compiled();
    mo::callbacks::BackupAndRestore backup{{.backup_dir = dir.path / "backup"}};
    Crash crash;
    CHECK_THROWS_AS(fit(first, 4, {&backup, &crash}), Interrupted);
  }
  Bn resumed = compiled(11);
  mo::callbacks::BackupAndRestore backup{{.backup_dir = dir.path / "backup"}};
  fit(resumed, 4, {&backup});
  REQUIRE(backup.restored_epoch() == 2);

  const Bn straight = trained(4);
  require_moved(trained(2), straight);
  CHECK(resumed.get_state_weights() == straight.get_state_weights());
  CHECK(resumed.get_weights() == straight.get_weights());
}

TEST_CASE("weights-only checkpoints carry the moving statistics, as written and as reloaded") {
  TempDir dir;
  const Bn one = trained(1);
  require_moved(one, trained(4));

  SUBCASE("ModelCheckpoint(save_weights_only, save_best_only), then load_weights") {
    // The best epoch under mode "max" is the first: the file holds epoch 1's model.
    Bn model = compiled();
    mo::callbacks::ModelCheckpoint ckpt{{.filepath = (dir.path / "best.safetensors").string(),
                                         .monitor = "loss",
                                         .save_best_only = true,
                                         .save_weights_only = true,
                                         .mode = "max"}};
    fit(model, 4, {&ckpt});
    REQUIRE(ckpt.saved().size() == 1);
    Bn reloaded = compiled(9);
    reloaded.load_weights(dir.path / "best.safetensors");
    CHECK(reloaded.get_state_weights() == one.get_state_weights());
    CHECK(reloaded.get_weights() == one.get_weights());
  }
  SUBCASE("checkpoint::save_weights and load_weights of get_weights, as documented") {
    mo::checkpoint::save_weights<Bn::spec>(dir.path / "w.safetensors", one.get_weights());
    const mo::io::SafetensorsFile f = mo::io::SafetensorsFile::read(dir.path / "w.safetensors");
    REQUIRE(f.find("batch_normalization/moving_mean"));
    Bn reloaded = compiled(9);
    reloaded.set_weights(mo::checkpoint::load_weights<Bn::spec>(dir.path / "w.safetensors"));
    CHECK(reloaded.get_state_weights() == one.get_state_weights());
    CHECK(reloaded.get_weights() == one.get_weights());
  }
  SUBCASE("Model::save_weights, then load_weights into a model trained further") {
    one.save_weights(dir.path / "one.safetensors");
    Bn later = trained(4);
    later.load_weights(dir.path / "one.safetensors");
    CHECK(later.get_state_weights() == one.get_state_weights());
    CHECK(later.get_weights() == one.get_weights());
  }
}

TEST_CASE("named_weights (TensorBoard's histograms, ModelCheckpoint's ONNX) names each value") {
  const Bn model = trained(2);
  const std::vector<mo::NamedWeights> named = model.named_weights();
  const std::vector<float> p = model.get_parameters();
  const std::vector<float> state = model.get_state_weights();
  const auto at = [&](std::string_view name) -> const std::vector<float>& {
    const auto it =
        std::ranges::find_if(named, [&](const mo::NamedWeights& n) { return n.name == name; });
    REQUIRE(it != named.end());
    return it->values;
  };
  // Trainable ones from the parameters (dense_1 after BatchNormalization's gamma and beta),
  // the moving statistics from the state.
  CHECK(at("dense_1/bias") == std::vector<float>(p.end() - 1, p.end()));
  CHECK(at("dense_1/kernel") == std::vector<float>(p.end() - 9, p.end() - 1));
  CHECK(at("batch_normalization/moving_mean") ==
        std::vector<float>(state.begin(), state.begin() + 8));
  CHECK(at("batch_normalization/moving_variance") ==
        std::vector<float>(state.begin() + 8, state.end()));
}
