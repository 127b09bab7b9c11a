// Callbacks that act on the optimizer or stop on a bad loss, with Keras's meaning:
// ReduceLROnPlateau (keras/src/callbacks/reduce_lr_on_plateau.py), LearningRateScheduler
// (learning_rate_scheduler.py) and TerminateOnNaN (terminate_on_nan.py).

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "memopt/backend/cpu.hpp"
#include "memopt/core/error.hpp"
#include "memopt/data/batch.hpp"
#include "memopt/data/dataset.hpp"
#include "memopt/layers/activation.hpp"
#include "memopt/layers/dense.hpp"
#include "memopt/model/input.hpp"
#include "memopt/model/model.hpp"
#include "memopt/model/sequential.hpp"
#include "memopt/train/callbacks/learning_rate_scheduler.hpp"
#include "memopt/train/callbacks/reduce_lr_on_plateau.hpp"
#include "memopt/train/callbacks/terminate_on_nan.hpp"
#include "memopt/train/optimizers.hpp"

#include "blobs.hpp"

namespace mo = memopt;

namespace {

// A model stand-in with a settable learning rate.
struct FakeModel : mo::TrainingContext {
  double lr = 1.0;
  std::vector<float> get_weights() const override { return {}; }
  void set_weights(std::span<const float>) override {}
  void save_weights(const std::filesystem::path&) const override {}
  void save(const std::filesystem::path&) const override {}
  double learning_rate() const override { return lr; }
  void set_learning_rate(double v) override { lr = v; }
};

using Net = mo::Sequential<mo::Dense<16, mo::ReLU>, mo::Dense<4, mo::Softmax>>;
using Model = mo::Model<Net, mo::Input<8>>;

}  // namespace

TEST_CASE("ReduceLROnPlateau: factor after patience, cooldown, never below min_lr") {
  FakeModel m;
  mo::callbacks::ReduceLROnPlateau reduce{
      {.factor = 0.5, .patience = 2, .cooldown = 1, .min_lr = 0.2}};
  reduce.set_context(&m);
  reduce.on_train_begin({});
  const std::vector<double> val_loss{1.0, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9};
  // e0, e1 improve; e2, e3 wait -> 0.5 and a cooldown; e4 cools down, e5 waits -> 0.25;
  // e6 cools, e7 -> max(0.125, 0.2) = 0.2; then the rate is at min_lr and stays.
  const std::vector<double> expected{1.0, 1.0, 1.0, 0.5, 0.5, 0.25, 0.25, 0.2, 0.2, 0.2};
  for (std::size_t e = 0; e < val_loss.size(); ++e) {
    reduce.on_epoch_end(int(e), {{"val_loss", val_loss[e]}, {"loss", 1.0}});
    CAPTURE(e);
    CHECK(m.lr == doctest::Approx(expected[e]));
  }
}

TEST_CASE("ReduceLROnPlateau: an improvement must beat the best by more than min_delta") {
  FakeModel m;
  mo::callbacks::ReduceLROnPlateau reduce{{.monitor = "val_accuracy", .patience = 1}};
  reduce.set_context(&m);
  reduce.on_train_begin({});
  reduce.on_epoch_end(0, {{"val_accuracy", 0.5}});
  reduce.on_epoch_end(1, {{"val_accuracy", 0.50005}});  // + 5e-5: not above min_delta 1e-4
  CHECK(m.lr == doctest::Approx(0.1));
  reduce.on_epoch_end(2, {{"val_accuracy", 0.6}});  // "auto": accuracy is maximised
  CHECK(m.lr == doctest::Approx(0.1));
  CHECK(reduce.best() == 0.6);
  CHECK_THROWS_WITH_AS(mo::callbacks::ReduceLROnPlateau({.factor = 1.0}),
                       doctest::Contains("factor >= 1.0"), mo::error);
}

TEST_CASE("ReduceLROnPlateau lowers a real model's learning rate, and refuses a schedule") {
  const auto train = memopt::testing::blobs(96, 3);
  Model model{1};
  model.compile(mo::Adam{{.learning_rate = 1e-2}}, mo::SparseCategoricalCrossentropy{});
  // A min_delta no epoch can beat: every epoch after the first is a plateau.
  mo::callbacks::ReduceLROnPlateau reduce{
      {.monitor = "loss", .factor = 0.5, .patience = 1, .min_delta = 100.0}};
  model.fit(train | mo::data::batch(32), {.epochs = 3, .callbacks = {&reduce}, .verbose = 0});
  CHECK(model.learning_rate() == doctest::Approx(1e-2 / 4));

  Model scheduled{1};
  scheduled.compile(mo::Adam{{.learning_rate = mo::CosineDecay{{.initial_learning_rate = 1e-2,
                                                                .decay_steps = 100}}}},
                    mo::SparseCategoricalCrossentropy{});
  CHECK_THROWS_WITH_AS(scheduled.fit(train | mo::data::batch(32),
                                     {.epochs = 3, .callbacks = {&reduce}, .verbose = 0}),
                       doctest::Contains("not settable"), mo::error);
}

TEST_CASE("LearningRateScheduler sets the rate before each epoch, and updates use it") {
  const auto train = memopt::testing::blobs(96, 3);
  Model model{1};
  model.compile(mo::SGD{{.learning_rate = 0.1}}, mo::SparseCategoricalCrossentropy{});
  std::vector<double> seen;
  mo::callbacks::LearningRateScheduler halve{[&](int epoch, double lr) {
    seen.push_back(lr);
    return epoch == 0 ? lr : lr * 0.5;
  }};
  model.fit(train | mo::data::batch(32), {.epochs = 3, .callbacks = {&halve}, .verbose = 0});
  CHECK(seen == std::vector<double>{0.1, 0.1, 0.05});
  CHECK(model.learning_rate() == doctest::Approx(0.025));

  // The older one-argument form; a rate of 0 freezes the weights, so the rate reaches updates.
  Model frozen{1};
  frozen.compile(mo::Adam{{.learning_rate = 1e-2}}, mo::SparseCategoricalCrossentropy{});
  const auto before = frozen.get_weights();
  mo::callbacks::LearningRateScheduler zero{[](int) { return 0.0; }};
  frozen.fit(train | mo::data::batch(32), {.epochs = 2, .callbacks = {&zero}, .verbose = 0});
  CHECK(frozen.iterations() == 6);
  CHECK(frozen.get_weights() == before);
}

TEST_CASE("TerminateOnNaN stops at the batch whose loss is not finite, or raises") {
  FakeModel m;
  mo::callbacks::TerminateOnNaN guard;
  guard.set_context(&m);
  guard.on_train_begin({});
  guard.on_train_batch_end(0, {.loss = 0.5, .samples = 32});
  CHECK(!m.stop_training);
  guard.on_train_batch_end(3, {.loss = std::numeric_limits<double>::infinity(), .samples = 128});
  CHECK(m.stop_training);
  CHECK(guard.stopped_batch() == 3);

  mo::callbacks::TerminateOnNaN raising{{.raise_error = true}};
  raising.set_context(&m);
  CHECK_THROWS_WITH_AS(raising.on_train_batch_end(2, {.loss = std::nan(""), .samples = 96}),
                       doctest::Contains("NaN or Inf loss encountered at batch 2"), mo::error);
}

TEST_CASE("TerminateOnNaN ends fit after the bad batch, where fit alone would raise") {
  // Batch 2 (rows 64..95) holds a NaN feature: its loss, and the epoch's running mean, are NaN.
  auto data = memopt::testing::blobs(160, 5);
  std::vector<float> x(data.features().begin(), data.features().end());
  x[70 * 8 + 3] = std::nanf("");
  const auto bad = mo::data::from(
      std::move(x), std::vector<std::int32_t>(data.labels().begin(), data.labels().end()), 8);
  Model model{1};
  model.compile(mo::SGD{{.learning_rate = 0.1}}, mo::SparseCategoricalCrossentropy{});
  mo::callbacks::TerminateOnNaN guard;
  const auto history =
      model.fit(bad | mo::data::batch(32), {.epochs = 3, .callbacks = {&guard}, .verbose = 0});
  CHECK(guard.stopped_batch() == 2);
  CHECK(history.epoch == std::vector<int>{0});
  CHECK(model.iterations() == 2);  // the NaN batch's update was skipped, none after it ran

  Model unguarded{1};
  unguarded.compile(mo::SGD{{.learning_rate = 0.1}}, mo::SparseCategoricalCrossentropy{});
  CHECK_THROWS_WITH_AS(unguarded.fit(bad | mo::data::batch(32), {.epochs = 1, .verbose = 0}),
                       doctest::Contains("fit: the loss is nan"), mo::error);
}
