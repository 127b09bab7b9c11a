// Resume equals uninterrupted: training 4 epochs gives the same bits as training 2, saving,
// loading into a fresh model and training 2 more from initial_epoch = 2.

#include <doctest/doctest.h>

#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <limits>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "memopt/backend/cpu.hpp"
#include "memopt/core/error.hpp"
#include "memopt/core/random.hpp"
#include "memopt/data/batch.hpp"
#include "memopt/data/dataset.hpp"
#include "memopt/io/safetensors.hpp"
#include "memopt/layers/activation.hpp"
#include "memopt/layers/batch_normalization.hpp"
#include "memopt/layers/conv2d.hpp"
#include "memopt/layers/dense.hpp"
#include "memopt/layers/flatten.hpp"
#include "memopt/model/input.hpp"
#include "memopt/model/model.hpp"
#include "memopt/model/sequential.hpp"
#include "memopt/train/callbacks/model_checkpoint.hpp"
#include "memopt/train/checkpoint.hpp"
#include "memopt/train/optimizers.hpp"

#include "temp_dir.hpp"

#include "blobs.hpp"

namespace mo = memopt;
namespace fs = std::filesystem;

namespace {

using memopt::testing::TempDir;

mo::data::Dataset blobs(std::size_t n, std::uint64_t seed) {
  return memopt::testing::blobs(n, seed, 1.0f, 1.5f);
}

using Net =
    mo::Sequential<mo::Dense<16, mo::ReLU>, mo::Dense<12, mo::Tanh>, mo::Dense<4, mo::Softmax>>;

template <class Policy, class Opt>
void resume_equals_uninterrupted(Opt opt) {
  TempDir dir;
  const auto train = blobs(300, 7);  // 9 batches of 32 and one of 12
  const auto val = blobs(64, 8);
  // Under mixed_float16, a scale that overflows at first and grows every 3 steps, so that
  // skipped steps and the scale's history are part of what must resume exactly.
  const auto setup = [&](auto& m) {
    m.compile(opt, mo::SparseCategoricalCrossentropy{}, mo::metrics::Accuracy{});
    if constexpr (Policy::loss_scaling) m.set_loss_scale({.scale = 1 << 22, .growth_interval = 3});
  };
  const auto options = [&](int epochs, int initial, std::vector<mo::Callback*> cbs = {}) {
    return mo::FitOptions{.epochs = epochs,
                          .initial_epoch = initial,
                          .validation_data = val | mo::data::batch(32),
                          .callbacks = std::move(cbs),
                          .verbose = 0};
  };

  mo::Model<Net, mo::Input<8>, Policy> straight{42};
  setup(straight);
  const auto h_straight = straight.fit(train | mo::data::batch(32), options(4, 0));

  mo::Model<Net, mo::Input<8>, Policy> first{42};
  setup(first);
  first.fit(train | mo::data::batch(32), options(2, 0));
  CHECK(first.completed_epochs() == 2);
  first.save(dir / "run.safetensors");

  // A fresh model with other initial weights: everything must come from the file.
  mo::Model<Net, mo::Input<8>, Policy> resumed{7};
  setup(resumed);
  resumed.load(dir / "run.safetensors");
  CHECK(resumed.completed_epochs() == 2);
  CHECK(resumed.iterations() == first.iterations());
  const auto h_resumed =
      resumed.fit(train | mo::data::batch(32), options(4, resumed.completed_epochs()));

  CHECK(h_resumed.epoch == std::vector<int>{2, 3});
  CHECK(resumed.iterations() == straight.iterations());
  CHECK(resumed.get_weights() == straight.get_weights());  // bit for bit
  CHECK(resumed.get_optimizer_state() == straight.get_optimizer_state());
  CHECK(resumed.loss_scale().value() == straight.loss_scale().value());
  if constexpr (Policy::loss_scaling) {
    CHECK(straight.loss_scale().value() != 32768.0f);  // the scale moved during training
  }
  CHECK(h_resumed.history.at("loss")[0] == h_straight.history.at("loss")[2]);
  CHECK(h_resumed.history.at("val_loss")[1] == h_straight.history.at("val_loss")[3]);
  CHECK(h_straight.history.at("loss")[3] < h_straight.history.at("loss")[0]);  // it trained

  // The same through ModelCheckpoint: the file of epoch 2 resumes to the same bits.
  mo::Model<Net, mo::Input<8>, Policy> checkpointed{42};
  setup(checkpointed);
  mo::callbacks::ModelCheckpoint ckpt{
      {.filepath = (dir.path / "ep{epoch}.safetensors").string(), .save_weights_only = false}};
  checkpointed.fit(train | mo::data::batch(32), options(3, 0, {&ckpt}));
  REQUIRE(ckpt.saved().size() == 3);
  mo::Model<Net, mo::Input<8>, Policy> from_callback{3};
  setup(from_callback);
  from_callback.load(dir / "ep2.safetensors");
  from_callback.fit(train | mo::data::batch(32), options(4, from_callback.completed_epochs()));
  CHECK(from_callback.get_weights() == straight.get_weights());
}

}  // namespace

TEST_CASE("resume equals uninterrupted, bit for bit: float32, Adam") {
  resume_equals_uninterrupted<mo::float32>(mo::Adam{{.learning_rate = 1e-2}});
}

TEST_CASE("resume equals uninterrupted, bit for bit: mixed_float16 (loss scale), Adam") {
  resume_equals_uninterrupted<mo::mixed_float16>(mo::Adam{{.learning_rate = 1e-2}});
}

TEST_CASE("resume equals uninterrupted, bit for bit: mixed_bfloat16, SGD with momentum") {
  resume_equals_uninterrupted<mo::mixed_bfloat16>(
      mo::SGD{{.learning_rate = 0.05, .momentum = 0.9, .nesterov = true}});
}

TEST_CASE("a full checkpoint records the optimizer and what resuming needs") {
  TempDir dir;
  mo::Model<Net, mo::Input<8>, mo::mixed_float16> model{1};
  model.compile(mo::Adam{}, mo::SparseCategoricalCrossentropy{}, mo::metrics::Accuracy{});
  const auto train = blobs(96, 2);
  model.fit(train | mo::data::batch(32), {.epochs = 2, .verbose = 0});
  model.save(dir / "full.safetensors");
  const auto f = mo::io::SafetensorsFile::read(dir / "full.safetensors");
  CHECK(f.metadata().at("epoch") == "2");
  CHECK(f.metadata().at("step") == "6");
  CHECK(f.metadata().at("policy") == "mixed_float16");
  CHECK(f.metadata().at("optimizer") == "adam");
  CHECK(f.metadata().at("loss_scale") == "32768");
  CHECK(f.metadata().at("loss_scale_good_steps") == "6");
  CHECK(f.metadata().at("model_hash").size() == 16);
  CHECK(f.int64s("optimizer/iterations") == std::vector<std::int64_t>{6});
  CHECK(f.at("optimizer/dense/kernel/momentum").shape == std::vector<std::uint64_t>{8, 16});
  CHECK(f.at("optimizer/dense_2/bias/velocity").shape == std::vector<std::uint64_t>{4});
  CHECK(f.tensors().size() == 6 + 1 + 12);
  // Weights-only readers take it too, ignoring optimizer/...
  mo::Model<Net, mo::Input<8>> reader{5};
  reader.load_weights(dir / "full.safetensors");
  CHECK(reader.get_weights() == model.get_weights());
}

TEST_CASE("load refuses a checkpoint that cannot resume this model exactly") {
  TempDir dir;
  mo::Model<Net, mo::Input<8>> model{1};
  model.compile(mo::Adam{}, mo::SparseCategoricalCrossentropy{});
  model.save(dir / "full.safetensors");
  model.save_weights(dir / "weights.safetensors");

  mo::Model<Net, mo::Input<8>> uncompiled{2};
  CHECK_THROWS_WITH_AS(uncompiled.load(dir / "full.safetensors"), doctest::Contains("call compile"),
                       mo::error);

  mo::Model<Net, mo::Input<8>> same{2};
  same.compile(mo::Adam{}, mo::SparseCategoricalCrossentropy{});
  CHECK_THROWS_WITH_AS(same.load(dir / "weights.safetensors"),
                       doctest::Contains("expected a full checkpoint"), mo::error);
  CHECK_NOTHROW(same.load(dir / "full.safetensors"));

  mo::Model<Net, mo::Input<8>> sgd{2};
  sgd.compile(mo::SGD{{.momentum = 0.9}}, mo::SparseCategoricalCrossentropy{});
  CHECK_THROWS_WITH_AS(
      sgd.load(dir / "full.safetensors"),
      doctest::Contains("expected optimizer \"sgd\" (as compiled), found \"adam\""), mo::error);

  mo::Model<Net, mo::Input<8>, mo::mixed_float16> half{2};
  half.compile(mo::Adam{}, mo::SparseCategoricalCrossentropy{});
  CHECK_THROWS_WITH_AS(half.load(dir / "full.safetensors"),
                       doctest::Contains("expected policy mixed_float16, found float32"),
                       mo::error);

  mo::Model<
      mo::Sequential<mo::Dense<16, mo::ReLU>, mo::Dense<12, mo::ReLU>, mo::Dense<4, mo::Softmax>>,
      mo::Input<8>>
      other{2};
  other.compile(mo::Adam{}, mo::SparseCategoricalCrossentropy{});
  CHECK_THROWS_WITH_AS(other.load(dir / "full.safetensors"), doctest::Contains("dense_1(12, relu)"),
                       mo::error);
}

TEST_CASE("load validates every restored scalar: loss scale, iterations, epoch, good steps") {
  TempDir dir;
  using Half = mo::Model<Net, mo::Input<8>, mo::mixed_float16>;
  Half model{1};
  model.compile(mo::Adam{}, mo::SparseCategoricalCrossentropy{});
  model.set_loss_scale({.scale = 1024.0f, .growth_interval = 10});
  const auto good_state = [&] {
    mo::checkpoint::TrainingState s;
    s.weights = model.get_weights();
    s.optimizer_state = model.get_optimizer_state();
    s.optimizer = "adam";
    s.iterations = 4;
    s.epoch = 2;
    s.loss_scale = 512.0f;
    s.loss_scale_good_steps = 9;
    return s;
  };
  const auto load_error = [&](const mo::checkpoint::TrainingState& s) -> std::string {
    mo::checkpoint::save<Half::spec>(dir / "ckpt.safetensors", s);
    try {
      model.load(dir / "ckpt.safetensors");
    } catch (const mo::error& e) {
      return e.what();
    }
    return "no error";
  };
  // A valid state loads, at the edge of each interval.
  CHECK(load_error(good_state()) == "no error");
  CHECK(model.loss_scale().scale == 512.0f);
  CHECK(model.loss_scale().good_steps == 9);

  const float inf = std::numeric_limits<float>::infinity();
  for (const float bad : {std::numeric_limits<float>::quiet_NaN(), 0.0f, inf, -inf, -2.0f}) {
    CAPTURE(bad);
    auto s = good_state();
    s.loss_scale = bad;
    const std::string what = load_error(s);
    CAPTURE(what);
    CHECK(what.find("loss scale (__metadata__ \"loss_scale\"): expected a positive finite "
                    "number, found") != std::string::npos);
  }
  {
    auto s = good_state();
    s.loss_scale = 0.0f;
    CHECK(load_error(s).ends_with("found 0"));
    s.loss_scale = std::numeric_limits<float>::quiet_NaN();
    CHECK(load_error(s).ends_with("found nan"));
  }
  {
    auto s = good_state();
    s.iterations = -3;
    CHECK(load_error(s).find("\"optimizer/iterations\"): expected >= 0, found -3") !=
          std::string::npos);
  }
  {
    auto s = good_state();
    s.epoch = -1;
    CHECK(load_error(s).find("\"epoch\"): expected 0 to 1000000000, found -1") !=
          std::string::npos);
  }
  {
    auto s = good_state();
    s.loss_scale_good_steps = -1;
    CHECK(load_error(s).find("\"loss_scale_good_steps\"): expected 0 to 2147483647, found -1") !=
          std::string::npos);
    s.loss_scale_good_steps = 10;  // the scale would have grown at 10
    CHECK(load_error(s).find("\"loss_scale_good_steps\"): expected 0 to 9 (below the growth "
                             "interval 10), found 10") != std::string::npos);
  }
}

// Every optimizer resumes bit for bit under every policy: its slots, its iteration count (a
// schedule's position, Nadam's product of u_t) and its learning rate all come from the file.
namespace {
template <class Opt>
void resume_under_every_policy(const Opt& opt) {
  SUBCASE("float32") {
    resume_equals_uninterrupted<mo::float32>(opt);
  }
  SUBCASE("mixed_float16") {
    resume_equals_uninterrupted<mo::mixed_float16>(opt);
  }
  SUBCASE("mixed_bfloat16") {
    resume_equals_uninterrupted<mo::mixed_bfloat16>(opt);
  }
}
}  // namespace

TEST_CASE("resume equals uninterrupted, bit for bit: AdamW, cosine decay with warmup, clipping") {
  resume_under_every_policy(
      mo::AdamW{{.learning_rate = mo::CosineDecay{{.initial_learning_rate = 0.0,
                                                   .decay_steps = 30,
                                                   .warmup_target = 1e-2,
                                                   .warmup_steps = 5}},
                 .global_clipnorm = 1.0,
                 .exclude_from_weight_decay = {"bias"}}});
}

TEST_CASE("resume equals uninterrupted, bit for bit: RMSprop, centered with momentum") {
  resume_under_every_policy(
      mo::RMSprop{{.learning_rate = 2e-3, .momentum = 0.5, .centered = true, .clipnorm = 1.0}});
}

TEST_CASE("resume equals uninterrupted, bit for bit: Adagrad, piecewise constant decay") {
  resume_under_every_policy(mo::Adagrad{
      {.learning_rate = mo::PiecewiseConstantDecay{{.boundaries = {12}, .values = {0.1, 0.05}}},
       .clipvalue = 0.5}});
}

TEST_CASE("resume equals uninterrupted, bit for bit: Nadam, exponential decay") {
  resume_under_every_policy(
      mo::Nadam{{.learning_rate = mo::ExponentialDecay{
                     {.initial_learning_rate = 1e-2, .decay_steps = 10, .decay_rate = 0.8}}}});
}

TEST_CASE("resume equals uninterrupted, bit for bit: SGD, polynomial decay, weight decay") {
  resume_under_every_policy(mo::SGD{
      {.learning_rate =
           mo::PolynomialDecay{
               {.initial_learning_rate = 0.1, .decay_steps = 25, .end_learning_rate = 0.02}},
       .momentum = 0.9,
       .weight_decay = 0.01}});
}

TEST_CASE("a checkpoint holds each optimizer's named slots and its settable learning rate") {
  TempDir dir;
  mo::Model<Net, mo::Input<8>> model{1};
  model.compile(mo::RMSprop{{.learning_rate = 1e-2, .momentum = 0.9, .centered = true}},
                mo::SparseCategoricalCrossentropy{});
  model.fit(blobs(64, 2) | mo::data::batch(32), {.epochs = 1, .verbose = 0});
  model.set_learning_rate(2.5e-3);  // as ReduceLROnPlateau does
  model.save(dir / "rmsprop.safetensors");
  const auto f = mo::io::SafetensorsFile::read(dir / "rmsprop.safetensors");
  CHECK(f.metadata().at("optimizer") == "rmsprop");
  CHECK(f.metadata().at("learning_rate") == "0.0025");
  CHECK(f.at("optimizer/dense/kernel/velocity").shape == std::vector<std::uint64_t>{8, 16});
  CHECK(f.at("optimizer/dense_1/bias/momentum").shape == std::vector<std::uint64_t>{12});
  CHECK(f.at("optimizer/dense_2/kernel/average_gradient").shape ==
        std::vector<std::uint64_t>{12, 4});
  CHECK(f.tensors().size() == 6 + 1 + 3 * 6);

  mo::Model<Net, mo::Input<8>> resumed{2};
  resumed.compile(mo::RMSprop{{.learning_rate = 1e-2, .momentum = 0.9, .centered = true}},
                  mo::SparseCategoricalCrossentropy{});
  resumed.load(dir / "rmsprop.safetensors");
  CHECK(resumed.learning_rate() == 2.5e-3);
  CHECK(resumed.get_optimizer_state() == model.get_optimizer_state());

  // A schedule is not settable and not saved: its position is the iteration count.
  mo::Model<Net, mo::Input<8>> scheduled{3};
  scheduled.compile(mo::Adam{{.learning_rate = mo::ExponentialDecay{{.initial_learning_rate = 0.1,
                                                                     .decay_steps = 2,
                                                                     .decay_rate = 0.5}}}},
                    mo::SparseCategoricalCrossentropy{});
  scheduled.fit(blobs(64, 2) | mo::data::batch(32), {.epochs = 1, .verbose = 0});
  CHECK(scheduled.learning_rate() == doctest::Approx(0.05));  // after 2 updates
  CHECK_THROWS_WITH_AS(scheduled.set_learning_rate(1.0), doctest::Contains("not settable"),
                       mo::error);
  scheduled.save(dir / "scheduled.safetensors");
  CHECK(mo::io::SafetensorsFile::read(dir / "scheduled.safetensors")
            .metadata()
            .count("learning_rate") == 0);

  // An Adagrad checkpoint does not load into an AdamW model.
  mo::Model<Net, mo::Input<8>> adamw{4};
  adamw.compile(mo::AdamW{}, mo::SparseCategoricalCrossentropy{});
  CHECK_THROWS_WITH_AS(adamw.load(dir / "rmsprop.safetensors"),
                       doctest::Contains("expected optimizer \"adamw\" (as compiled), found "
                                         "\"rmsprop\""),
                       mo::error);
}

namespace {
// A user's optimizer, defined here and nowhere else: w -= lr sign(g), with a velocity-like
// slot that counts updates per parameter, so that its state goes through checkpoints too.
struct SignSGD {
  static constexpr std::string_view name = "sign_sgd";
  double lr = 1e-2;
  std::size_t slots() const { return 1; }
  std::vector<std::string> slot_names() const { return {"count"}; }
  double learning_rate(std::int64_t) const { return lr; }
  void set_learning_rate(double v) { lr = v; }
  void update(std::span<float> w, std::span<float> g, std::span<float> state, std::int64_t) const {
    for (std::size_t j = 0; j < w.size(); ++j) {
      w[j] -= static_cast<float>(lr) * float((g[j] > 0) - (g[j] < 0));
      state[j] += 1.0f;
    }
  }
};
}  // namespace

TEST_CASE("a user-defined optimizer trains, saves and resumes through Model, unedited") {
  static_assert(mo::Optimizer<SignSGD>);
  resume_equals_uninterrupted<mo::float32>(SignSGD{});
  TempDir dir;
  mo::Model<Net, mo::Input<8>> model{1};
  model.compile(SignSGD{}, mo::SparseCategoricalCrossentropy{});
  model.fit(blobs(64, 2) | mo::data::batch(32), {.epochs = 1, .verbose = 0});
  CHECK(model.get_optimizer_state() == std::vector<float>(model.parameter_count, 2.0f));
  model.save(dir / "sign.safetensors");
  CHECK(mo::io::SafetensorsFile::read(dir / "sign.safetensors")
            .at("optimizer/dense/kernel/count")
            .shape == std::vector<std::uint64_t>{8, 16});
}

namespace {
// Records what Model::compile tells an optimizer's build() about the parameters.
std::vector<mo::ParameterRange> built_ranges;
struct RangeRecorder : SignSGD {
  static constexpr std::string_view name = "range_recorder";
  void build(std::span<const mo::ParameterRange> ranges) {
    built_ranges.assign(ranges.begin(), ranges.end());
  }
};
}  // namespace

TEST_CASE("compile builds the optimizer on each trainable tensor: Keras's name, path, range") {
  built_ranges.clear();
  mo::Model<Net, mo::Input<8>> model{1};
  model.compile(RangeRecorder{}, mo::SparseCategoricalCrossentropy{});
  REQUIRE(built_ranges.size() == 6);
  CHECK(built_ranges[0].path == "dense/kernel");
  CHECK(built_ranges[0].name == "kernel");
  CHECK(built_ranges[0].offset == 0);
  CHECK(built_ranges[0].size == 8 * 16);
  CHECK(built_ranges[1].path == "dense/bias");
  CHECK(built_ranges[1].name == "bias");
  CHECK(built_ranges[5].path == "dense_2/bias");
  CHECK(built_ranges[5].offset + built_ranges[5].size == model.parameter_count);
  std::size_t covered = 0;
  for (const auto& r : built_ranges) covered += r.size;
  CHECK(covered == model.parameter_count);
}

namespace {
using BnCnn = mo::Sequential<mo::Conv2D<4, 3, mo::Same, mo::ReLU>, mo::BatchNormalization,
                             mo::Flatten, mo::Dense<3, mo::Softmax>>;
using BnModel = mo::Model<BnCnn, mo::Input<4, 4, 2>>;

mo::data::Dataset images(std::size_t rows, std::uint64_t seed) {
  mo::Rng rng(seed);
  std::vector<float> x(rows * 32);
  std::vector<std::int32_t> y(rows);
  for (std::size_t r = 0; r < rows; ++r) {
    y[r] = static_cast<std::int32_t>(rng.below(3));
    for (std::size_t c = 0; c < 32; ++c)
      x[r * 32 + c] = (c % 3 == std::size_t(y[r]) ? 1.0f : -0.5f) + rng.uniform(-1.0f, 1.0f);
  }
  return mo::data::from(std::move(x), std::move(y), 32);
}
}  // namespace

TEST_CASE("AdamW spares normalization parameters by name; a CNN with them resumes bit for bit") {
  built_ranges.clear();
  BnModel recorded{1};
  recorded.compile(RangeRecorder{}, mo::SparseCategoricalCrossentropy{});
  std::vector<std::string> names;
  for (const auto& r : built_ranges) names.push_back(r.path);
  // Trainable tensors only: BatchNormalization's moving statistics are not the optimizer's.
  CHECK(names == std::vector<std::string>{"conv2d/kernel", "conv2d/bias",
                                          "batch_normalization/gamma", "batch_normalization/beta",
                                          "dense/kernel", "dense/bias"});

  const auto adamw = mo::AdamW{{.learning_rate = 1e-2,
                                .weight_decay = 0.1,
                                .exclude_from_weight_decay = {"bias", "gamma", "beta"}}};
  const auto train = images(96, 3);
  const auto run = [&](BnModel& m, int epochs, int initial) {
    m.fit(train | mo::data::batch(32), {.epochs = epochs, .initial_epoch = initial, .verbose = 0});
  };
  TempDir dir;
  BnModel straight{5};
  straight.compile(adamw, mo::SparseCategoricalCrossentropy{});
  run(straight, 4, 0);
  BnModel first{5};
  first.compile(adamw, mo::SparseCategoricalCrossentropy{});
  run(first, 2, 0);
  first.save(dir / "bn.safetensors");
  BnModel resumed{9};
  resumed.compile(adamw, mo::SparseCategoricalCrossentropy{});
  resumed.load(dir / "bn.safetensors");
  run(resumed, 4, resumed.completed_epochs());
  CHECK(resumed.get_weights() == straight.get_weights());
  CHECK(resumed.get_state_weights() == straight.get_state_weights());
  CHECK(resumed.get_optimizer_state() == straight.get_optimizer_state());
}
