// Gradient accumulation (Keras 3's gradient_accumulation_steps): N batches of b rows give the
// update one batch of N*b rows gives, within float rounding; clipping sees the mean,
// schedules and Adam's bias correction count updates; a non-finite batch is skipped without
// counting; a checkpoint taken mid-accumulation resumes bit for bit; the arena stays one
// batch's.

#include <doctest/doctest.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <ratio>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "memopt/backend/cpu.hpp"
#include "memopt/core/error.hpp"
#include "memopt/data/batch.hpp"
#include "memopt/data/dataset.hpp"
#include "memopt/data/shard.hpp"
#include "memopt/data/take.hpp"
#include "memopt/distributed/communicator.hpp"
#include "memopt/distributed/local_communicator.hpp"
#include "memopt/distributed/thread_communicator.hpp"
#include "memopt/io/safetensors.hpp"
#include "memopt/layers/activation.hpp"
#include "memopt/layers/conv2d.hpp"
#include "memopt/layers/dense.hpp"
#include "memopt/layers/dropout.hpp"
#include "memopt/layers/flatten.hpp"
#include "memopt/layers/pooling2d.hpp"
#include "memopt/model/input.hpp"
#include "memopt/model/model.hpp"
#include "memopt/model/sequential.hpp"
#include "memopt/train/gradient_accumulation.hpp"
#include "memopt/train/optimizers.hpp"
#include "memopt/train/schedules.hpp"
#include "memopt/train/step.hpp"

#include "blobs.hpp"
#include "temp_dir.hpp"

namespace mo = memopt;

namespace {

using Mlp =
    mo::Sequential<mo::Dense<16, mo::ReLU>, mo::Dense<12, mo::Tanh>, mo::Dense<4, mo::Softmax>>;
using Cnn = mo::Sequential<mo::Conv2D<4, 3, mo::Same, mo::ReLU>, mo::MaxPooling2D<2>, mo::Flatten,
                           mo::Dense<4, mo::Softmax>>;

// ||a - b|| / ||b||, in double.
double relative_error(std::span<const float> a, std::span<const float> b) {
  double num = 0, den = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    num += (double(a[i]) - double(b[i])) * (double(a[i]) - double(b[i]));
    den += double(b[i]) * double(b[i]);
  }
  return std::sqrt(num / den);
}
// How far training moved the weights from `start`: the error of the change, not of the
// weights (which barely move in a few updates and would hide any difference).
double change_error(const std::vector<float>& a, const std::vector<float>& b,
                    const std::vector<float>& start) {
  std::vector<float> da(a.size()), db(b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    da[i] = a[i] - start[i];
    db[i] = b[i] - start[i];
  }
  return relative_error(da, db);
}

// Trains `Net` for `epochs` on `data` in batches of `batch`, compiled with `opt`; the weights.
template <class Net, class In, class Opt>
std::vector<float> trained(const mo::data::Dataset& data, std::size_t batch, Opt opt, int epochs,
                           std::int64_t* iterations = nullptr) {
  mo::Model<Net, In> model{42};
  model.compile(opt, mo::SparseCategoricalCrossentropy{});
  model.fit(data | mo::data::batch(batch), {.epochs = epochs, .verbose = 0});
  if (iterations) *iterations = model.iterations();
  return model.get_parameters();
}
template <class Net, class In>
std::vector<float> initial() {
  return mo::Model<Net, In>{42}.get_parameters();
}

}  // namespace

TEST_CASE("GradientAccumulation: the mean over rows of the batches, then cleared") {
  mo::GradientAccumulation acc(3);
  CHECK(acc.enabled());
  std::vector<float> sums(2, 123.0f);  // stale values: the first batch overwrites them
  std::vector<float> g{1.0f, -2.0f};
  CHECK_FALSE(acc.add(g, 4, sums));
  CHECK(g == std::vector<float>{1.0f, -2.0f});
  CHECK(acc.batches() == 1);
  g = {0.5f, 3.0f};
  CHECK_FALSE(acc.add(g, 4, sums));
  g = {-1.0f, 0.25f};
  CHECK(acc.add(g, 2, sums));  // a shorter last batch weighs by its rows
  const double expected[2] = {(4 * 1.0 + 4 * 0.5 + 2 * -1.0) / 10,
                              (4 * -2.0 + 4 * 3.0 + 2 * 0.25) / 10};
  for (int j = 0; j < 2; ++j) CHECK(g[j] == doctest::Approx(expected[j]).epsilon(1e-6));
  CHECK(sums == std::vector<float>{0.0f, 0.0f});
  CHECK(acc.batches() == 0);
  CHECK(acc.rows() == 0);

  CHECK_FALSE(mo::GradientAccumulation(1).enabled());
  CHECK_THROWS_WITH_AS(mo::GradientAccumulation(0),
                       "GradientAccumulation: gradient_accumulation_steps must be >= 1 (1: an "
                       "update every batch); found 0",
                       mo::error);
  CHECK_THROWS_WITH_AS(mo::Adam({.gradient_accumulation_steps = -2}),
                       "Adam: gradient_accumulation_steps must be >= 1 (1: an update every "
                       "batch); found -2",
                       mo::error);
  CHECK_THROWS_AS(acc.restore(3, 30), mo::error);  // batches must be below steps
  CHECK_THROWS_AS(acc.restore(1, 0), mo::error);   // batches without rows
  acc.restore(2, 20);
  CHECK(acc.batches() == 2);
}

TEST_CASE("N batches of b rows equal one batch of N*b: Dense, SGD with momentum") {
  const auto data = mo::testing::blobs(128, 3);  // 4 updates an epoch either way
  const mo::SGD::Options o{.learning_rate = 0.1, .momentum = 0.9};
  mo::SGD::Options accumulated = o;
  accumulated.gradient_accumulation_steps = 4;
  std::int64_t small_updates = 0, big_updates = 0;
  const auto small = trained<Mlp, mo::Input<8>>(data, 8, mo::SGD(accumulated), 3, &small_updates);
  const auto big = trained<Mlp, mo::Input<8>>(data, 32, mo::SGD(o), 3, &big_updates);
  const auto plain = trained<Mlp, mo::Input<8>>(data, 8, mo::SGD(o), 3);
  const auto start = initial<Mlp, mo::Input<8>>();
  CHECK(small_updates == 12);  // Keras's optimizer.iterations: updates, not batches
  CHECK(big_updates == 12);
  const double err = change_error(small, big, start);
  MESSAGE("Dense, SGD: relative error of the weight change vs batch 32: " << err);
  CHECK(err < 1e-5);
  // The check can fail: batches of 8 without accumulation train quite differently.
  CHECK(change_error(plain, big, start) > 0.1);
}

TEST_CASE("a convnet with Adam, a schedule and global clipping: the same as the big batch") {
  const auto data = mo::testing::image_blobs(96, 5);
  // The schedule halves the rate every update and the clip binds: counting batches, or
  // clipping each batch rather than the mean, would give other weights.
  const mo::ExponentialDecay lr{
      {.initial_learning_rate = 0.02, .decay_steps = 1, .decay_rate = 0.5}};
  const mo::Adam::Options o{.learning_rate = lr, .global_clipnorm = 0.05};
  mo::Adam::Options accumulated = o;
  accumulated.gradient_accumulation_steps = 3;
  std::int64_t updates = 0;
  const auto small = trained<Cnn, mo::Input<8, 8, 1>>(data, 8, mo::Adam(accumulated), 2, &updates);
  const auto big = trained<Cnn, mo::Input<8, 8, 1>>(data, 24, mo::Adam(o), 2);
  const auto start = initial<Cnn, mo::Input<8, 8, 1>>();
  CHECK(updates == 8);
  const double err = change_error(small, big, start);
  MESSAGE("Conv2D, Adam + schedule + global_clipnorm: relative error vs batch 24: " << err);
  CHECK(err < 1e-4);

  // What counting batches would give: the schedule 3 times further on (decay_steps 1/3).
  mo::Adam::Options per_batch = accumulated;
  per_batch.learning_rate =
      mo::ExponentialDecay{{.initial_learning_rate = 0.02, .decay_steps = 1, .decay_rate = 0.125}};
  per_batch.gradient_accumulation_steps = 3;
  const auto wrong = trained<Cnn, mo::Input<8, 8, 1>>(data, 8, mo::Adam(per_batch), 2);
  CHECK(change_error(wrong, big, start) > 100 * err);
  // And clipping each batch's gradient (no accumulation, batches of 8, 3x the updates) is far.
  const auto clipped_per_batch = trained<Cnn, mo::Input<8, 8, 1>>(data, 8, mo::Adam(o), 2);
  CHECK(change_error(clipped_per_batch, big, start) > 100 * err);
}

TEST_CASE("a shorter last batch weighs by its rows: the mean over samples") {
  const auto data = mo::testing::blobs(60, 9);  // batches of 16: 16, 16, 16, 12
  mo::SGD::Options accumulated{.learning_rate = 0.5};
  accumulated.gradient_accumulation_steps = 4;
  const auto small = trained<Mlp, mo::Input<8>>(data, 16, mo::SGD(accumulated), 1);
  const auto big = trained<Mlp, mo::Input<8>>(data, 64, mo::SGD({.learning_rate = 0.5}), 1);
  const auto start = initial<Mlp, mo::Input<8>>();
  const double err = change_error(small, big, start);
  MESSAGE("partial last batch: relative error vs one batch of 60: " << err);
  CHECK(err < 1e-5);
  CHECK(small != start);
}

namespace {

// Batch k of `data` in batches of 8 as flat features and labels.
struct Batches {
  std::vector<std::vector<float>> x;
  std::vector<std::vector<std::int32_t>> y;
};
Batches batches_of(const mo::data::Dataset& data, std::size_t rows) {
  Batches b;
  for (const auto& batch : data | mo::data::batch(rows)) {
    const std::span<const float> f = batch.features();
    const std::span<const std::int32_t> l = batch.labels();
    b.x.emplace_back(f.begin(), f.end());
    b.y.emplace_back(l.begin(), l.end());
  }
  return b;
}

template <class Policy>
struct Stepper {
  mo::Model<Mlp, mo::Input<8>, Policy> model{42};
  mo::Adam adam;
  std::int64_t iterations = 0;
  typename mo::Model<Mlp, mo::Input<8>, Policy>::loss_scale_type scale{};
  explicit Stepper(const mo::Adam& a) : adam(a) {
    model.compile(adam, mo::SparseCategoricalCrossentropy{});
    model.executor().prepare(8, model.get_optimizer_state().size());
  }
  void step(const std::vector<float>& x, const std::vector<std::int32_t>& y) {
    mo::train::training_step(model.executor(), x.data(), y.data(), y.size(), adam, iterations,
                             scale);
  }
};

}  // namespace

TEST_CASE("a non-finite batch is skipped and does not count toward the update") {
  const Batches b = batches_of(mo::testing::blobs(40, 11), 8);
  std::vector<float> poisoned = b.x[1];
  poisoned[3] = std::numeric_limits<float>::quiet_NaN();
  mo::Adam::Options o{.learning_rate = 1e-2};
  o.gradient_accumulation_steps = 2;

  SUBCASE("float32: the same bits as the run without that batch") {
    Stepper<mo::float32> with_nan{mo::Adam(o)}, without{mo::Adam(o)};
    for (std::size_t k = 0; k < 5; ++k) with_nan.step(k == 1 ? poisoned : b.x[k], b.y[k]);
    for (std::size_t k = 0; k < 5; ++k)
      if (k != 1) without.step(b.x[k], b.y[k]);
    CHECK(with_nan.iterations == 2);  // batches 0+2 and 3+4; batch 1 never counted
    CHECK(with_nan.model.executor().gradient_accumulation().batches() == 0);
    CHECK(with_nan.model.executor().take_totals().skipped_steps == 1);
    CHECK(without.iterations == 2);
    CHECK(with_nan.model.get_parameters() == without.model.get_parameters());
    CHECK(with_nan.model.get_optimizer_state() == without.model.get_optimizer_state());
    CHECK(with_nan.model.get_parameters() !=
          Stepper<mo::float32>{mo::Adam(o)}.model.get_parameters());
  }
  SUBCASE("mixed_float16: the loss scale halves, the accumulated batch stays") {
    Stepper<mo::mixed_float16> s{mo::Adam(o)};
    s.step(b.x[0], b.y[0]);
    const float scale = s.scale.value();
    const std::vector<float> sums_before = s.model.get_optimizer_state();
    s.step(poisoned, b.y[1]);
    CHECK(s.scale.value() == scale / 2);
    CHECK(s.iterations == 0);
    CHECK(s.model.executor().gradient_accumulation().batches() == 1);
    CHECK(s.model.get_optimizer_state() == sums_before);
    s.step(b.x[2], b.y[2]);
    CHECK(s.iterations == 1);
    CHECK(s.model.executor().gradient_accumulation().batches() == 0);
  }
}

TEST_CASE("resume mid-accumulation equals uninterrupted, bit for bit") {
  mo::testing::TempDir dir;
  const auto data = mo::testing::blobs(120, 13);  // batches of 16: 7 full and one of 8
  mo::Adam::Options o{.learning_rate = 1e-2};
  o.gradient_accumulation_steps = 3;  // 8 batches an epoch: 2 updates, 2 batches left over
  const auto compile = [&](auto& m) {
    m.compile(mo::Adam(o), mo::SparseCategoricalCrossentropy{});
  };

  mo::Model<Mlp, mo::Input<8>> straight{42};
  compile(straight);
  straight.fit(data | mo::data::batch(16), {.epochs = 3, .verbose = 0});

  mo::Model<Mlp, mo::Input<8>> first{42};
  compile(first);
  first.fit(data | mo::data::batch(16), {.epochs = 1, .verbose = 0});
  CHECK(first.iterations() == 2);
  CHECK(first.executor().gradient_accumulation().batches() == 2);
  first.save(dir / "mid.safetensors");
  const auto f = mo::io::SafetensorsFile::read(dir / "mid.safetensors");
  CHECK(f.metadata().at("accumulated_batches") == "2");
  CHECK(f.metadata().at("accumulated_rows") == "24");  // 16 + 8: the epoch's last two batches
  CHECK(f.find("optimizer/dense/kernel/gradient_accumulator") != nullptr);

  mo::Model<Mlp, mo::Input<8>> resumed{7};
  compile(resumed);
  resumed.load(dir / "mid.safetensors");
  CHECK(resumed.executor().gradient_accumulation().batches() == 2);
  resumed.fit(data | mo::data::batch(16),
              {.epochs = 3, .initial_epoch = resumed.completed_epochs(), .verbose = 0});
  CHECK(resumed.iterations() == straight.iterations());
  CHECK(resumed.iterations() == 8);  // 24 batches / 3
  CHECK(resumed.get_parameters() == straight.get_parameters());
  CHECK(resumed.get_optimizer_state() == straight.get_optimizer_state());

  // Without the sums the resumed run differs: the check can fail.
  mo::Model<Mlp, mo::Input<8>> forgetful{7};
  compile(forgetful);
  forgetful.load(dir / "mid.safetensors");
  forgetful.executor().gradient_accumulation().restore(0, 0);
  forgetful.fit(data | mo::data::batch(16),
                {.epochs = 3, .initial_epoch = forgetful.completed_epochs(), .verbose = 0});
  CHECK(forgetful.get_parameters() != straight.get_parameters());

  // A checkpoint of an accumulating run does not load into a model compiled without.
  mo::Model<Mlp, mo::Input<8>> plain{7};
  plain.compile(mo::Adam({.learning_rate = 1e-2}), mo::SparseCategoricalCrossentropy{});
  CHECK_THROWS_AS(plain.load(dir / "mid.safetensors"), mo::error);
}

TEST_CASE("the arena stays one batch's; the sums sit beside the parameters") {
  const auto data = mo::testing::blobs(64, 17);
  mo::Adam::Options o{};
  o.gradient_accumulation_steps = 8;
  mo::Model<Mlp, mo::Input<8>> accumulating{1}, plain{1};
  accumulating.compile(mo::Adam(o), mo::SparseCategoricalCrossentropy{});
  plain.compile(mo::Adam{}, mo::SparseCategoricalCrossentropy{});
  accumulating.fit(data | mo::data::batch(8), {.epochs = 1, .verbose = 0});
  plain.fit(data | mo::data::batch(8), {.epochs = 1, .verbose = 0});
  CHECK(accumulating.executor().arena_bytes() == plain.executor().arena_bytes());
  CHECK(accumulating.executor().arena_bytes() == decltype(plain)::arena_bytes(8));
  CHECK(accumulating.get_optimizer_state().size() == 3 * decltype(plain)::parameter_count);
  CHECK(plain.get_optimizer_state().size() == 2 * decltype(plain)::parameter_count);
  CHECK(accumulating.iterations() == 1);
  CHECK(plain.iterations() == 8);
  const std::string s = accumulating.summary_string();
  CHECK(s.find("Gradient accumulator") != std::string::npos);
  CHECK(s.find("an update every 8 batches") != std::string::npos);
  CHECK(plain.summary_string().find("Gradient accumulator") == std::string::npos);
}

namespace {

// A ThreadCommunicator that counts the gradient all-reduces (the non-blocking ones: the
// buckets) that pass through it.
struct CountingCommunicator {
  mo::distributed::ThreadCommunicator& comm;
  int bucket_sums = 0;
  int rank() const { return comm.rank(); }
  int size() const { return comm.size(); }
  void all_reduce_sum(std::span<float> v) { comm.all_reduce_sum(v); }
  void all_reduce_sum(std::span<double> v) { comm.all_reduce_sum(v); }
  void broadcast(std::span<float> v, int root) { comm.broadcast(v, root); }
  void barrier() { comm.barrier(); }
  mo::distributed::Request start_all_reduce_sum(std::span<float> v) {
    ++bucket_sums;
    return comm.start_all_reduce_sum(v);
  }
  bool test(mo::distributed::Request r) { return comm.test(r); }
  void wait(mo::distributed::Request r) { comm.wait(r); }
  void notify_failure(std::string_view cause) { comm.notify_failure(cause); }
};
static_assert(mo::distributed::Communicator<CountingCommunicator>);

}  // namespace

TEST_CASE("data parallelism: one all-reduce per update, the same as one rank on the big batch") {
  using M = mo::Model<Mlp, mo::Input<8>>;
  const auto data = mo::testing::blobs(192, 19);
  mo::SGD::Options accumulated{.learning_rate = 0.1, .momentum = 0.9};
  accumulated.gradient_accumulation_steps = 3;
  // shard(2, r) takes rows r, r + 2, ...: 3 batches of 8 on each of 2 ranks are, together,
  // one batch of 48 rows alone: 4 updates an epoch.
  std::vector<std::vector<float>> weights(2);
  std::vector<int> bucket_sums(2);
  std::vector<std::int64_t> updates(2);
  mo::distributed::run_in_threads(2, [&](mo::distributed::ThreadCommunicator& thread_comm) {
    CountingCommunicator comm{thread_comm};
    M replica(thread_comm.rank() == 0 ? 42 : 99);
    replica.compile(mo::SGD(accumulated), mo::SparseCategoricalCrossentropy{});
    replica.fit(data | mo::data::shard(2, comm.rank()) | mo::data::batch(8),
                {.epochs = 2, .verbose = 0, .communicator = &comm});
    const auto r = static_cast<std::size_t>(comm.rank());
    weights[r] = replica.get_parameters();
    bucket_sums[r] = comm.bucket_sums;
    updates[r] = replica.iterations();
  });
  CHECK(weights[0] == weights[1]);
  CHECK(updates[0] == 8);
  // Once per update, not once per batch (24 batches a rank).
  CHECK(bucket_sums[0] == 8 * static_cast<int>(M::gradient_buckets.count));
  mo::SGD::Options o{.learning_rate = 0.1, .momentum = 0.9};
  const auto big = trained<Mlp, mo::Input<8>>(data, 48, mo::SGD(o), 2);
  const auto start = initial<Mlp, mo::Input<8>>();
  const double err = change_error(weights[0], big, start);
  MESSAGE("2 ranks x 3 batches of 8 vs one rank, batch 48: relative error " << err);
  CHECK(err < 1e-5);
  CHECK(change_error(trained<Mlp, mo::Input<8>>(data, 16, mo::SGD(o), 2), big, start) > 0.1);
}

TEST_CASE("data parallelism refuses to start, or save, in the middle of an update") {
  mo::distributed::LocalCommunicator comm;
  mo::Adam::Options o{};
  o.gradient_accumulation_steps = 2;
  mo::Model<Mlp, mo::Input<8>> model{1};
  model.compile(mo::Adam(o), mo::SparseCategoricalCrossentropy{});
  model.fit(mo::testing::blobs(24, 1) | mo::data::batch(8), {.verbose = 0});  // 3 batches
  REQUIRE(model.executor().gradient_accumulation().batches() == 1);
  CHECK_THROWS_WITH_AS(model.fit(mo::testing::blobs(32, 1) | mo::data::batch(8),
                                 {.verbose = 0, .communicator = &comm}),
                       doctest::Contains("fit: data parallelism starts between updates"),
                       mo::error);
}

TEST_CASE("the batches of one update draw their own Dropout masks") {
  using Dropped = mo::Sequential<mo::Dense<16, mo::ReLU>, mo::Dropout<std::ratio<1, 2>>,
                                 mo::Dense<4, mo::Softmax>>;
  const auto data = mo::testing::blobs(8, 23);
  mo::SGD::Options accumulated{.learning_rate = 0.5};
  accumulated.gradient_accumulation_steps = 2;
  // One batch, then the same batch again: with the same masks the mean of the two equal
  // gradients would be that one batch's gradient, bit for bit.
  mo::Model<Dropped, mo::Input<8>> twice{42}, once{42};
  twice.compile(mo::SGD(accumulated), mo::SparseCategoricalCrossentropy{});
  once.compile(mo::SGD({.learning_rate = 0.5}), mo::SparseCategoricalCrossentropy{});
  twice.fit(data | mo::data::batch(8), {.epochs = 2, .verbose = 0});
  once.fit(data | mo::data::batch(8), {.epochs = 1, .verbose = 0});
  REQUIRE(twice.iterations() == 1);
  REQUIRE(once.iterations() == 1);
  CHECK(twice.get_parameters() != once.get_parameters());
  CHECK(once.get_parameters() != mo::Model<Dropped, mo::Input<8>>{42}.get_parameters());
}
