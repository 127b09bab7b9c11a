// Data parallelism in one process: LocalCommunicator, CommunicatorRef, and fit's protocol
// (distributed/fit_sync.hpp) against a fake second rank that mirrors this one. The real
// multi-process runs are tests/mpi/.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <memopt/memopt.hpp>

#include "blobs.hpp"
#include "temp_dir.hpp"

namespace mo = memopt;

namespace {

using Net = mo::Sequential<mo::Dense<16, mo::ReLU>, mo::Dense<4, mo::Softmax>>;
using Mlp = mo::Model<Net, mo::Input<8>>;

// Rank `rank` of two whose other rank holds the same data, weights and state as this one:
// every sum is twice the value. With `other_model`, rank 0 broadcasts something else (as a
// rank 0 that built another model type would).
struct MirrorCommunicator {
  int rank_ = 0;
  bool other_model = false;
  int rank() const { return rank_; }
  int size() const { return 2; }
  void all_reduce_sum(std::span<float> v) {
    for (float& x : v) x *= 2;
  }
  void all_reduce_sum(std::span<double> v) {
    for (double& x : v) x *= 2;
  }
  void broadcast(std::span<float> v, int /*root*/) {
    if (other_model && rank_ != 0) v[0] += 1;
  }
  void barrier() {}
  mo::distributed::Request start_all_reduce_sum(std::span<float> v) {
    all_reduce_sum(v);
    return 0;
  }
  bool test(mo::distributed::Request /*request*/) { return true; }
  void wait(mo::distributed::Request /*request*/) {}
  void notify_failure(std::string_view cause) { notices.emplace_back(cause); }
  std::vector<std::string> notices = std::vector<std::string>();  // what it told the other
};
static_assert(mo::distributed::Communicator<MirrorCommunicator>);

Mlp trained(mo::distributed::CommunicatorRef comm, const std::vector<mo::Callback*>& callbacks = {},
            mo::History* history = nullptr) {
  Mlp model(7);
  model.compile(mo::Adam{}, mo::SparseCategoricalCrossentropy{}, mo::metrics::Accuracy{},
                mo::metrics::SparseTopKCategoricalAccuracy<2>{});
  const auto data = mo::testing::blobs(100, 3);
  const mo::History h =
      model.fit(data | mo::data::batch(16),
                {.epochs = 2, .callbacks = callbacks, .verbose = 0, .communicator = comm});
  if (history) *history = h;
  return model;
}

// A running maximum: a metric, but not one whose state sums across ranks.
struct LargestOutput {
  static constexpr std::string_view name = "largest_output";
  double largest = 0;
  void reset_state() { largest = 0; }
  void update_state(const mo::MetricBatch<std::int32_t>& b) {
    for (std::size_t i = 0; i < b.rows * b.width; ++i)
      largest = std::max(largest, static_cast<double>(b.y_pred[i]));
  }
  double result() const { return largest; }
};
static_assert(mo::Metric<LargestOutput> && !mo::SummableMetric<LargestOutput>);

}  // namespace

TEST_CASE("LocalCommunicator: one rank, sums and broadcasts leave values alone") {
  mo::distributed::LocalCommunicator comm;
  CHECK(comm.rank() == 0);
  CHECK(comm.size() == 1);
  std::vector<float> f{1.5f, -2};
  std::vector<double> d{3.25};
  comm.all_reduce_sum(std::span<float>(f));
  comm.all_reduce_sum(std::span<double>(d));
  comm.broadcast(f, 0);
  comm.barrier();
  CHECK(f == std::vector<float>{1.5f, -2});
  CHECK(d == std::vector<double>{3.25});
  CHECK_THROWS_WITH_AS(comm.broadcast(f, 1),
                       "LocalCommunicator::broadcast: expected root 0 (the only rank), found 1",
                       mo::error);
}

TEST_CASE("CommunicatorRef: none is one rank; a bound one forwards every call") {
  const mo::distributed::CommunicatorRef none;
  CHECK(!none);
  CHECK(none.rank() == 0);
  CHECK(none.size() == 1);
  MirrorCommunicator mirror{.rank_ = 1};
  const mo::distributed::CommunicatorRef ref = &mirror;
  CHECK(static_cast<bool>(ref));
  CHECK(ref.rank() == 1);
  CHECK(ref.size() == 2);
  std::vector<float> f{1, 2};
  ref.all_reduce_sum(std::span<float>(f));
  CHECK(f == std::vector<float>{2, 4});
}

TEST_CASE("fit with a LocalCommunicator trains exactly as without one") {
  mo::distributed::LocalCommunicator local;
  CHECK(trained(&local).get_weights() == trained(nullptr).get_weights());
}

TEST_CASE("fit against a mirrored rank: the same weights and logs as one process") {
  // Both ranks see the same batches, so the row-weighted mean of the gradients is each
  // rank's own, and the global loss is the local one (sums and counts both double). Halving
  // and doubling are exact in binary floating point: the weights match bit for bit.
  mo::History alone, mirrored;
  const std::vector<float> expected = trained(nullptr, {}, &alone).get_weights();
  MirrorCommunicator mirror;
  const std::vector<float> found = trained(&mirror, {}, &mirrored).get_weights();
  CHECK(found == expected);
  CHECK(mirrored.history.at("loss") == alone.history.at("loss"));
  CHECK(mirrored.history.at("accuracy") == alone.history.at("accuracy"));
  // The metric's state summed across the two ranks: hits and rows both double.
  CHECK(mirrored.history.at("sparse_top_k_categorical_accuracy") ==
        alone.history.at("sparse_top_k_categorical_accuracy"));
}

TEST_CASE("fit on a rank other than 0 writes no CSVLogger file and no checkpoint") {
  mo::testing::TempDir dir;
  for (int rank : {0, 1}) {
    const std::string tag = std::to_string(rank);
    mo::callbacks::CSVLogger log{{.filename = dir / ("log" + tag + ".csv")}};
    mo::callbacks::ModelCheckpoint save{
        {.filepath = (dir / ("ckpt" + tag + ".safetensors")).string()}};
    MirrorCommunicator mirror{.rank_ = rank};
    (void)trained(&mirror, {&log, &save});
    CHECK(std::filesystem::exists(dir / ("log" + tag + ".csv")) == (rank == 0));
    CHECK(std::filesystem::exists(dir / ("ckpt" + tag + ".safetensors")) == (rank == 0));
  }
}

TEST_CASE("fit refuses a model type that differs from rank 0's") {
  MirrorCommunicator mirror{.rank_ = 1, .other_model = true};
  CHECK_THROWS_WITH_AS((void)trained(&mirror),
                       doctest::Contains("fit: the model differs between ranks: rank(s) 1 built "
                                         "another model type than rank 0"),
                       mo::error);
  // Every rank raises it at the same point: none is told of another's.
  CHECK(mirror.notices.empty());
}

TEST_CASE("an error on this rank alone is told to the other ranks before it leaves fit") {
  struct FailInSecondStep : mo::Callback {
    void on_train_batch_begin(int batch) override {
      if (batch == 1) throw mo::error("shard unreadable");
    }
  } fail;
  MirrorCommunicator mirror{.rank_ = 1};
  CHECK_THROWS_WITH_AS((void)trained(&mirror, {&fail}), "shard unreadable", mo::error);
  CHECK(mirror.notices == std::vector<std::string>{"shard unreadable"});
}

TEST_CASE("data-parallel fit refuses a metric whose state does not sum across ranks") {
  Mlp model(7);
  model.compile(mo::Adam{}, mo::SparseCategoricalCrossentropy{}, LargestOutput{});
  const auto data = mo::testing::blobs(100, 3);
  MirrorCommunicator mirror;
  CHECK_THROWS_WITH_AS(
      (void)model.fit(data | mo::data::batch(16),
                      {.epochs = 1, .verbose = 0, .communicator = &mirror}),
      doctest::Contains("fit: the metric 'largest_output' has no state() to sum across ranks"),
      mo::error);
  CHECK(mirror.notices.empty());  // refused on every rank alike
  // On one process it is a metric like any other.
  const mo::History h = model.fit(data | mo::data::batch(16), {.epochs = 1, .verbose = 0});
  CHECK(h.last("largest_output") > 0.25);
}
