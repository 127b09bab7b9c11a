// Data-parallel fit across processes, run by CTest under `mpirun -np 2` and `-np 3` (see
// CMakeLists.txt): every rank runs every test case, in the same order, so that their
// collectives pair up. Only CHECKs: a REQUIRE failing on one rank alone would leave the
// others waiting in a collective (CTest's timeout would then end the run).
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include <memopt/distributed/mpi_communicator.hpp>
#include <memopt/memopt.hpp>

#include "../unit/blobs.hpp"
#include "../unit/reference_mlp.hpp"

namespace mo = memopt;

namespace {

mo::distributed::MpiCommunicator* world = nullptr;

template <int Hidden = 16>
using Mlp =
    mo::Model<mo::Sequential<mo::Dense<Hidden, mo::ReLU>, mo::Dense<4, mo::Softmax>>, mo::Input<8>>;

// Four layers of 576, 4160, 4160 and 260 parameters: under caps of 1 KiB, then 16 KiB,
// each layer is its own bucket (4 all-reduces a step, started as backward goes down).
using DeepMlp = mo::Model<mo::Sequential<mo::Dense<64, mo::ReLU>, mo::Dense<64, mo::ReLU>,
                                         mo::Dense<64, mo::ReLU>, mo::Dense<4, mo::Softmax>>,
                          mo::Input<8>, mo::float32, mo::cpu, mo::BucketCaps<1024, 16384>>;
static_assert(DeepMlp::gradient_buckets.count == 4);

// A convnet on 8x8 images whose 8x8 blocks hold the blobs' 8 features once per row; its three
// layers (40, 296 and 516 parameters) are three buckets under caps of 256 bytes.
using SmallCnn = mo::Model<
    mo::Sequential<mo::Conv2D<4, 3, mo::Same, mo::ReLU>, mo::MaxPooling2D<2>,
                   mo::Conv2D<8, 3, mo::Same, mo::ReLU>, mo::Flatten, mo::Dense<4, mo::Softmax>>,
    mo::Input<8, 8, 1>, mo::float32, mo::cpu, mo::BucketCaps<256, 256>>;
static_assert(SmallCnn::gradient_buckets.count == 3);

// Whether every rank holds rank 0's `values`, bit for bit.
bool same_on_every_rank(std::vector<float> values) {
  std::vector<float> chief = values;
  world->broadcast(chief, 0);
  std::vector<double> differs{chief == values ? 0.0 : 1.0};
  world->all_reduce_sum(std::span<double>(differs));
  return differs[0] == 0;
}

// A folder all ranks share, one per number of ranks (the 2- and 3-rank runs may overlap).
std::filesystem::path shared_dir(const std::string& name) {
  const auto dir =
      std::filesystem::path(MEMOPT_MPI_TEST_DIR) / (name + "-np" + std::to_string(world->size()));
  if (world->rank() == 0) {
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
  }
  world->barrier();
  return dir;
}

// S ranks with local batch B against one process with batch S*B over the same samples.
// Shard k of element i is i % S, so rank r's batch j holds elements (j*B + b)*S + r: the
// union over ranks of batch j is elements j*S*B .. (j+1)*S*B - 1, the one process's batch j.
// The 2S - 1 elements past the full batches give every rank a short last batch (2 rows,
// 1 on the last rank): the same step count everywhere, and a last step whose row weights
// differ across ranks. Rank r starts from another seed: fit must broadcast rank 0's weights.
template <class M = Mlp<>, class Opt>
void check_parity(Opt optimizer) {
  const int S = world->size(), B = 4;
  const auto n = static_cast<std::size_t>(5 * S * B + 2 * S - 1);
  const auto data =
      M::spec::inputs == 8 ? mo::testing::blobs(n, 11) : mo::testing::image_blobs(n, 11);

  // Validation: each rank its shard of 7 * S elements, the one process all of them.
  const auto validation = M::spec::inputs == 8 ? mo::testing::blobs(7 * std::size_t(S), 12)
                                               : mo::testing::image_blobs(7 * std::size_t(S), 12);
  const mo::metrics::SparseTopKCategoricalAccuracy<1> top1;  // accuracy, through a metric's state

  M distributed(7 + static_cast<std::uint64_t>(world->rank()));
  distributed.compile(optimizer, mo::SparseCategoricalCrossentropy{}, mo::metrics::Accuracy{},
                      top1);
  const mo::History d = distributed.fit(
      data | mo::data::shard(S, world->rank()) | mo::data::batch(B),
      {.epochs = 2,
       .validation_data = validation | mo::data::shard(S, world->rank()) | mo::data::batch(5),
       .verbose = 0,
       .communicator = world});

  M alone(7);
  alone.compile(optimizer, mo::SparseCategoricalCrossentropy{}, mo::metrics::Accuracy{}, top1);
  const mo::History a =
      alone.fit(data | mo::data::batch(S * B),
                {.epochs = 2, .validation_data = validation | mo::data::batch(5), .verbose = 0});

  // 12 steps, each a mean over at most 3*4 rows summed in another order (per rank, then
  // across ranks, vs one sum): a few float32 roundings (2^-24 ~ 6e-8 each) per gradient
  // element and step; through 12 updates of a well-conditioned MLP that stays far below
  // 1e-5 of the weights' norm (measured: 2e-8 to 4e-7 on 2 and 3 ranks, in one bucket or
  // several: a bucket's sum is the same arithmetic per element as one sum). Weighting every
  // rank equally instead of by its rows (wrong on the short last batches) gives 4e-3 to 8e-3.
  CHECK(distributed.iterations() == alone.iterations());
  const double error = mo::testing::relative_error(distributed.get_weights(), alone.get_weights());
  if (world->rank() == 0) MESSAGE("relative error of the weights: ", error);
  CHECK(error < 1e-5);
  // Not trivially equal: the ranks did move the weights (from rank 0's seed).
  CHECK(mo::testing::relative_error(distributed.get_weights(), M(7).get_weights()) > 1e-3);
  CHECK(same_on_every_rank(distributed.get_weights()));
  CHECK(same_on_every_rank(distributed.get_optimizer_state()));
  // The logs are global: the loss and accuracy over all ranks' samples, as the one process.
  CHECK(d.history.at("loss").back() == doctest::Approx(a.history.at("loss").back()).epsilon(1e-5));
  CHECK(d.history.at("accuracy").back() == doctest::Approx(a.history.at("accuracy").back()));
  // And every other metric, training and validation: each rank's state summed. (Each rank's
  // own top-1 accuracy, over a third or half of the samples, would differ from these.)
  for (const std::string key : {"sparse_top_k_categorical_accuracy", "val_loss", "val_accuracy",
                                "val_sparse_top_k_categorical_accuracy"}) {
    CAPTURE(key);
    CHECK(d.history.at(key).back() == doctest::Approx(a.history.at(key).back()).epsilon(1e-5));
  }
}

}  // namespace

TEST_CASE("shards of 10 elements over the ranks are disjoint and complete") {
  std::vector<double> seen(10, 0.0);
  for (int i : mo::data::range(10) | mo::data::shard(world->size(), world->rank()))
    seen[static_cast<std::size_t>(i)] += 1;
  world->all_reduce_sum(std::span<double>(seen));
  CHECK(seen == std::vector<double>(10, 1.0));
}

TEST_CASE("S ranks with batch B train as one process with batch S*B: SGD with momentum") {
  check_parity(mo::SGD{{.learning_rate = 0.05, .momentum = 0.9}});
}

TEST_CASE("S ranks with batch B train as one process with batch S*B: Adam") {
  check_parity(mo::Adam{{.learning_rate = 0.01}});
}

TEST_CASE("S ranks with batch B train as one process with batch S*B: 4 gradient buckets") {
  check_parity<DeepMlp>(mo::SGD{{.learning_rate = 0.05, .momentum = 0.9}});
  check_parity<DeepMlp>(mo::Adam{{.learning_rate = 0.01}});
}

TEST_CASE("S ranks with batch B train as one process with batch S*B: a convnet, 3 buckets") {
  check_parity<SmallCnn>(mo::Adam{{.learning_rate = 0.01}});
}

// Accumulating 2 batches on both sides: each update is the mean over the 2*S*B rows of two
// batches on every rank (the last two a full and a short one), all-reduced once per update
// across processes, as the one process's mean over its two batches of S*B.
TEST_CASE("S ranks accumulating 2 batches of B train as one process accumulating 2 of S*B") {
  mo::SGD::Options sgd{.learning_rate = 0.05, .momentum = 0.9};
  sgd.gradient_accumulation_steps = 2;
  check_parity(mo::SGD(sgd));
  mo::Adam::Options adam{.learning_rate = 0.01};
  adam.gradient_accumulation_steps = 2;
  check_parity<DeepMlp>(mo::Adam(adam));
}

TEST_CASE_TEMPLATE("a non-finite gradient on one rank skips the step on every rank", Policy,
                   mo::float32, mo::mixed_float16) {
  const int S = world->size();
  std::vector<float> x;
  std::vector<std::int32_t> y;
  for (const mo::data::Sample& sample :
       mo::testing::blobs(static_cast<std::size_t>(4 * S * 3), 5)) {
    x.insert(x.end(), sample.features.begin(), sample.features.end());
    y.push_back(sample.label);
  }
  // The last rank's second batch holds a NaN feature.
  x[static_cast<std::size_t>(S * 4 + S - 1) * 8] = std::numeric_limits<float>::quiet_NaN();
  const auto samples = mo::data::from(std::move(x), std::move(y), 8);
  mo::Model<mo::Sequential<mo::Dense<16, mo::ReLU>, mo::Dense<4, mo::Softmax>>, mo::Input<8>,
            Policy>
      model(3);
  model.compile(mo::SGD{}, mo::SparseCategoricalCrossentropy{});
  // The epoch's global loss is NaN, so fit raises on every rank at the epoch's end.
  CHECK_THROWS_AS(model.fit(samples | mo::data::shard(S, world->rank()) | mo::data::batch(4),
                            {.epochs = 1, .verbose = 0, .communicator = world}),
                  mo::error);
  CHECK(model.iterations() == 2);  // 3 steps, the second skipped everywhere
  CHECK(same_on_every_rank(model.get_weights()));
  if constexpr (Policy::loss_scaling) {
    // Dynamic loss scaling halved the scale once, on every rank alike.
    CHECK(model.loss_scale().scale == 16384.0f);
    CHECK(same_on_every_rank({model.loss_scale().scale}));
  }
}

TEST_CASE("ranks with shards of unequal length stop the epoch together") {
  // 10 rows in batches of 3: with 3 ranks the shards hold 4, 3 and 3 rows, so rank 0 has 2
  // batches and the others 1; every rank runs the shortest's steps (distributed/fit_sync.hpp).
  const int S = world->size();
  const int shortest_rows = (10 - (S - 1) + S - 1) / S;  // the last rank's shard
  const int steps_per_epoch = (shortest_rows + 2) / 3;
  Mlp<> model(3);
  model.compile(mo::SGD{}, mo::SparseCategoricalCrossentropy{});
  const auto data = mo::testing::blobs(10, 5);
  (void)model.fit(data | mo::data::shard(S, world->rank()) | mo::data::batch(3),
                  {.epochs = 2, .verbose = 0, .communicator = world});
  CHECK(model.iterations() == 2 * steps_per_epoch);
  CHECK(same_on_every_rank(model.get_weights()));
}

TEST_CASE("a callback that stops training on one rank stops every rank at the same step") {
  // On the last rank only, after its second batch: the others learn it before their third.
  struct StopAfterSecondBatch : mo::Callback {
    void on_train_batch_end(int batch, const mo::BatchLogs& /*logs*/) override {
      if (batch == 1 && world->rank() == world->size() - 1) model_->stop_training = true;
    }
  } stop;
  Mlp<> model(3);
  model.compile(mo::SGD{}, mo::SparseCategoricalCrossentropy{});
  const auto data = mo::testing::blobs(static_cast<std::size_t>(40 * world->size()), 5);
  const mo::History h =
      model.fit(data | mo::data::shard(world->size(), world->rank()) | mo::data::batch(4),
                {.epochs = 3, .callbacks = {&stop}, .verbose = 0, .communicator = world});
  CHECK(model.iterations() == 2);
  CHECK(h.epoch.size() == 1u);
  CHECK(same_on_every_rank(model.get_weights()));
}

TEST_CASE("rank 0 alone writes checkpoints and logs") {
  const auto dir = shared_dir("chief_writes");
  const auto log = dir / ("log_rank" + std::to_string(world->rank()) + ".csv");
  mo::callbacks::CSVLogger csv{{.filename = log}};
  mo::callbacks::ModelCheckpoint checkpoint{{.filepath = (dir / "model.safetensors").string()}};
  Mlp<> model(3);
  model.compile(mo::Adam{}, mo::SparseCategoricalCrossentropy{});
  const auto data = mo::testing::blobs(40, 5);
  (void)model.fit(
      data | mo::data::shard(world->size(), world->rank()) | mo::data::batch(4),
      {.epochs = 2, .callbacks = {&csv, &checkpoint}, .verbose = 0, .communicator = world});
  world->barrier();
  CHECK(std::filesystem::exists(dir / "model.safetensors"));
  CHECK(std::filesystem::exists(log) == (world->rank() == 0));
  CHECK(checkpoint.saved().size() == (world->rank() == 0 ? 2u : 0u));
}

TEST_CASE("a model type that differs between ranks is refused on every rank") {
  const auto data = mo::testing::blobs(40, 5);
  auto batches = data | mo::data::shard(world->size(), world->rank()) | mo::data::batch(4);
  const auto fit = [&](auto model) {
    model.compile(mo::SGD{}, mo::SparseCategoricalCrossentropy{});
    (void)model.fit(batches, {.epochs = 1, .verbose = 0, .communicator = world});
  };
  // Rank 1 builds Dense<12> where the others build Dense<16>.
  const auto refused = [&] { world->rank() == 1 ? fit(Mlp<12>(1)) : fit(Mlp<16>(1)); };
  CHECK_THROWS_WITH_AS(refused(),
                       doctest::Contains("fit: the model differs between ranks: rank(s) 1 built "
                                         "another model type than rank 0"),
                       mo::error);
}

TEST_CASE("bucket caps that differ between ranks are refused on every rank") {
  // Their all-reduces would pair buckets of different lengths: fit compares the caps first.
  const auto data = mo::testing::blobs(40, 5);
  auto batches = data | mo::data::shard(world->size(), world->rank()) | mo::data::batch(4);
  using Net = mo::Sequential<mo::Dense<16, mo::ReLU>, mo::Dense<4, mo::Softmax>>;
  const auto fit = [&](auto model) {
    model.compile(mo::SGD{}, mo::SparseCategoricalCrossentropy{});
    (void)model.fit(batches, {.epochs = 1, .verbose = 0, .communicator = world});
  };
  const auto refused = [&] {
    if (world->rank() == 1)
      fit(mo::Model<Net, mo::Input<8>, mo::float32, mo::cpu, mo::BucketCaps<64, 64>>(1));
    else
      fit(Mlp<16>(1));
  };
  CHECK_THROWS_WITH_AS(refused(), doctest::Contains("fit: the model differs between ranks"),
                       mo::error);
}

int main(int argc, char** argv) {
  mo::distributed::MpiCommunicator comm(argc, argv);
  world = &comm;
  doctest::Context context(argc, argv);
  return context.run();
}
