// Data parallelism between threads of one process: distributed::ThreadGroup's collectives,
// run_in_threads' errors, fit over two threads against fit alone on the same rows (an MLP and
// a convnet), replicas with BatchNormalization and Dropout, and onednn::set_threads. Built
// into memopt_data_tests too, so that CI's ThreadSanitizer pass runs it.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstddef>
#include <mutex>
#include <ratio>
#include <span>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <memopt/backend/cpu/dnnl/threads.hpp>
#include <memopt/distributed/thread_communicator.hpp>
#include <memopt/memopt.hpp>

#include "blobs.hpp"
#include "reference_mlp.hpp"
#include "temp_dir.hpp"

namespace mo = memopt;
using mo::distributed::ThreadCommunicator;

TEST_CASE("ThreadGroup: a sum adds the ranks' values in rank order, the same bits on every rank") {
  constexpr int ranks = 3;
  constexpr std::size_t n = 7;  // not a multiple of the ranks: the parts differ in length
  constexpr int rounds = 50;    // the barriers are reused
  std::vector<std::vector<float>> floats(ranks);
  std::vector<std::vector<double>> doubles(ranks);
  auto value = [](int rank, std::size_t i, int round) {
    return 0.1 * (rank + 1) + 0.37 * static_cast<double>(i) + round;
  };
  mo::distributed::run_in_threads(ranks, [&](ThreadCommunicator& comm) {
    CHECK(comm.size() == ranks);
    for (int round = 0; round < rounds; ++round) {
      std::vector<float> f(n);
      std::vector<double> d(n);
      for (std::size_t i = 0; i < n; ++i) {
        f[i] = static_cast<float>(value(comm.rank(), i, round));
        d[i] = value(comm.rank(), i, round) * 1e-3;
      }
      comm.all_reduce_sum(std::span<float>(f));
      comm.all_reduce_sum(std::span<double>(d));
      floats[static_cast<std::size_t>(comm.rank())] = f;  // each rank its own element
      doubles[static_cast<std::size_t>(comm.rank())] = d;
    }
  });
  for (int r = 0; r < ranks; ++r) {
    CAPTURE(r);
    for (std::size_t i = 0; i < n; ++i) {
      float f = 0;
      double d = 0;
      for (int k = 0; k < ranks; ++k) {
        f += static_cast<float>(value(k, i, rounds - 1));
        d += value(k, i, rounds - 1) * 1e-3;
      }
      CHECK(floats[static_cast<std::size_t>(r)][i] == f);
      CHECK(doubles[static_cast<std::size_t>(r)][i] == d);
    }
  }
}

TEST_CASE("ThreadGroup: broadcast gives every rank the root's values; barrier waits for all") {
  constexpr int ranks = 3;
  std::vector<std::vector<float>> got(ranks);
  std::vector<int> arrived_before_barrier(ranks, -1);
  std::mutex mutex;
  int arrived = 0;
  mo::distributed::run_in_threads(ranks, [&](ThreadCommunicator& comm) {
    std::vector<float> v{float(comm.rank()) + 0.5f, -1.0f * float(comm.rank()), 3.0f};
    comm.broadcast(std::span<float>(v), 2);
    got[static_cast<std::size_t>(comm.rank())] = v;
    {
      std::lock_guard lock(mutex);
      ++arrived;
    }
    comm.barrier();
    std::lock_guard lock(mutex);
    arrived_before_barrier[static_cast<std::size_t>(comm.rank())] = arrived;
  });
  for (int r = 0; r < ranks; ++r) {
    CHECK(got[static_cast<std::size_t>(r)] == std::vector<float>{2.5f, -2.0f, 3.0f});
    CHECK(arrived_before_barrier[static_cast<std::size_t>(r)] == ranks);
  }
}

TEST_CASE("ThreadGroup: collectives that do not pair up raise on every rank") {
  std::vector<std::string> errors(2);
  CHECK_THROWS_WITH_AS(
      mo::distributed::run_in_threads(2,
                                      [&](ThreadCommunicator& comm) {
                                        std::vector<float> v(comm.rank() == 0 ? 4 : 5, 1.0f);
                                        try {
                                          comm.all_reduce_sum(std::span<float>(v));
                                        } catch (const mo::error& e) {
                                          errors[static_cast<std::size_t>(comm.rank())] = e.what();
                                          throw;
                                        }
                                      }),
      doctest::Contains("the ranks' collectives do not pair up: rank 0 called "
                        "all_reduce_sum(float) of 4 values, rank 1 all_reduce_sum(float) of 5 "
                        "values"),
      mo::error);
  CHECK(errors[0] == errors[1]);
  CHECK(!errors[0].empty());
}

TEST_CASE("ThreadGroup: a rank that raises makes the others' collectives raise, naming it") {
  std::vector<std::string> others(3);
  CHECK_THROWS_WITH_AS(
      mo::distributed::run_in_threads(3,
                                      [&](ThreadCommunicator& comm) {
                                        if (comm.rank() == 1) throw mo::error("shard unreadable");
                                        std::vector<float> v(3, 1.0f);
                                        try {
                                          comm.all_reduce_sum(std::span<float>(v));
                                        } catch (const mo::error& e) {
                                          others[static_cast<std::size_t>(comm.rank())] = e.what();
                                          throw;
                                        }
                                      }),
      "shard unreadable", mo::error);  // rank 1's own error, not the others'
  for (int r : {0, 2})
    CHECK(others[static_cast<std::size_t>(r)] ==
          "ThreadCommunicator: rank 1 of 3 stopped with an error: shard unreadable (rank " +
              std::to_string(r) + " stops with it)");
  // Not only memopt::error: any exception ends the run, and is raised again as it was.
  CHECK_THROWS_AS(mo::distributed::run_in_threads(2,
                                                  [](ThreadCommunicator& comm) {
                                                    if (comm.rank() == 0)
                                                      throw std::out_of_range("rank 0");
                                                    comm.barrier();
                                                  }),
                  std::out_of_range);
}

TEST_CASE("ThreadGroup: ranks and roots out of range are refused") {
  CHECK_THROWS_WITH_AS(mo::distributed::ThreadGroup(0),
                       "ThreadGroup: expected at least one rank, found 0", mo::error);
  mo::distributed::ThreadGroup group(2);
  CHECK(group.size() == 2);
  CHECK(group.failed_rank() == -1);
  CHECK_THROWS_WITH_AS((void)group.communicator(2),
                       "ThreadGroup::communicator: expected a rank in [0, 2), found 2", mo::error);
  mo::distributed::ThreadGroup one(1);
  ThreadCommunicator alone = one.communicator(0);
  std::vector<float> v{1.5f, 2.5f};
  alone.all_reduce_sum(std::span<float>(v));  // one rank: the sum is its own values
  CHECK(v == std::vector<float>{1.5f, 2.5f});
  CHECK_THROWS_WITH_AS(alone.broadcast(std::span<float>(v), 1),
                       "ThreadCommunicator::broadcast: expected a root rank in [0, 1), found 1",
                       mo::error);
}

TEST_CASE("fit on two threads, half of each batch each, trains as fit alone on whole batches") {
  using Mlp =
      mo::Model<mo::Sequential<mo::Dense<16, mo::ReLU>, mo::Dense<4, mo::Softmax>>, mo::Input<8>>;
  const auto data = mo::testing::blobs(96, 3);
  auto train = [](Mlp& model) {
    model.compile(mo::Adam{}, mo::SparseCategoricalCrossentropy{}, mo::metrics::Accuracy{});
  };

  Mlp alone(7);
  train(alone);
  const mo::History expected = alone.fit(data | mo::data::batch(16), {.epochs = 3, .verbose = 0});

  // shard(2, r) takes rows r, r + 2, ...: batch i of 8 rows on each rank is, together, batch
  // i of 16 rows alone. Rank 1's own seed is overwritten by rank 0's weights.
  std::vector<std::vector<float>> weights(2);
  std::vector<mo::History> histories(2);
  mo::distributed::run_in_threads(2, [&](ThreadCommunicator& comm) {
    Mlp replica(comm.rank() == 0 ? 7 : 99);
    train(replica);
    const auto r = static_cast<std::size_t>(comm.rank());
    histories[r] = replica.fit(data | mo::data::shard(2, comm.rank()) | mo::data::batch(8),
                               {.epochs = 3, .verbose = 0, .communicator = &comm});
    weights[r] = replica.get_weights();
  });

  CHECK(weights[0] == weights[1]);  // the same update on both ranks, bit for bit
  // Only the order of the gradient's sums differs from fit alone.
  CHECK(mo::testing::relative_error(weights[0], alone.get_weights()) < 1e-5);
  const std::vector<double>& loss = histories[0].history.at("loss");
  const std::vector<double>& loss_alone = expected.history.at("loss");
  REQUIRE(loss.size() == 3);
  for (std::size_t e = 0; e < 3; ++e)
    CHECK(loss[e] == doctest::Approx(loss_alone[e]).epsilon(1e-5));
  CHECK(histories[0].history.at("accuracy") == expected.history.at("accuracy"));
  CHECK(loss.back() < loss.front());  // it learned
}

// A convnet on 8x8 images: both replicas run oneDNN's convolutions at once, each on its thread.
template <class... Extra>
using SmallCnn = mo::Model<
    mo::Sequential<mo::Conv2D<4, 3, mo::Same, mo::ReLU>, Extra..., mo::MaxPooling2D<2>,
                   mo::Conv2D<8, 3, mo::Same, mo::ReLU>, mo::Flatten, mo::Dense<4, mo::Softmax>>,
    mo::Input<8, 8, 1>>;

TEST_CASE("a convnet on two threads, half of each batch each, trains as fit alone") {
  const auto data = mo::testing::image_blobs(64, 5);
  SmallCnn<> alone(7);
  alone.compile(mo::Adam{{.learning_rate = 0.01}}, mo::SparseCategoricalCrossentropy{});
  alone.fit(data | mo::data::batch(16), {.epochs = 2, .verbose = 0});

  std::vector<std::vector<float>> weights(2);
  mo::distributed::run_in_threads(2, [&](ThreadCommunicator& comm) {
    SmallCnn<> replica(comm.rank() == 0 ? 7 : 99);
    replica.compile(mo::Adam{{.learning_rate = 0.01}}, mo::SparseCategoricalCrossentropy{});
    replica.fit(data | mo::data::shard(2, comm.rank()) | mo::data::batch(8),
                {.epochs = 2, .verbose = 0, .communicator = &comm});
    weights[static_cast<std::size_t>(comm.rank())] = replica.get_weights();
  });

  CHECK(weights[0] == weights[1]);
  CHECK(mo::testing::relative_error(weights[0], alone.get_weights()) < 1e-5);
  CHECK(mo::testing::relative_error(weights[0], SmallCnn<>(7).get_weights()) > 1e-3);  // it moved
}

TEST_CASE(
    "replicas with BatchNormalization and Dropout end with the same weights and moving "
    "statistics") {
  // Each replica normalizes by its own rows' statistics and draws its own Dropout masks (as
  // Keras's MirroredStrategy does), so only the replicas are compared with each other: the
  // same updates, and the moving statistics averaged over them at the end of every epoch.
  using Cnn = SmallCnn<mo::BatchNormalization, mo::Dropout<std::ratio<1, 4>>>;
  const auto data = mo::testing::image_blobs(96, 6);
  std::vector<std::vector<float>> weights(2), moving(2);
  std::vector<double> first_loss(2), last_loss(2);
  mo::distributed::run_in_threads(2, [&](ThreadCommunicator& comm) {
    Cnn replica(11 + static_cast<std::uint64_t>(comm.rank()));
    replica.compile(mo::Adam{{.learning_rate = 0.01}}, mo::SparseCategoricalCrossentropy{});
    const mo::History h = replica.fit(data | mo::data::shard(2, comm.rank()) | mo::data::batch(8),
                                      {.epochs = 3, .verbose = 0, .communicator = &comm});
    const auto r = static_cast<std::size_t>(comm.rank());
    weights[r] = replica.get_weights();
    moving[r] = replica.get_state_weights();
    first_loss[r] = h.history.at("loss").front();
    last_loss[r] = h.history.at("loss").back();
  });

  CHECK(weights[0] == weights[1]);
  CHECK(moving[0] == moving[1]);
  // moving_mean then moving_variance of 4 channels, from 0 and 1: the statistics moved.
  REQUIRE(moving[0].size() == 8);
  CHECK(std::any_of(moving[0].begin(), moving[0].begin() + 4, [](float m) { return m != 0; }));
  CHECK(std::any_of(moving[0].begin() + 4, moving[0].end(), [](float v) { return v != 1; }));
  CHECK(first_loss[0] == first_loss[1]);  // the logged loss is the global one
  CHECK(last_loss[0] < first_loss[0]);
}

TEST_CASE("fit hands every replica rank 0's moving statistics with its weights") {
  // Rank 0 holds a model trained alone (its moving statistics far from their start, 0 and
  // 1), rank 1 a fresh one; a fit of no epochs does nothing but the broadcast of rank 0's
  // state, which must carry BatchNormalization's moving mean and variance too.
  using Bn = mo::Model<
      mo::Sequential<mo::Dense<8, mo::ReLU>, mo::BatchNormalization, mo::Dense<4, mo::Softmax>>,
      mo::Input<8>>;
  const auto data = mo::testing::blobs(96, 4);
  const auto compile = [](Bn& m) {
    m.compile(mo::Adam{{.learning_rate = 0.01}}, mo::SparseCategoricalCrossentropy{});
  };
  Bn chief(5);
  compile(chief);
  chief.fit(data | mo::data::batch(16), {.epochs = 3, .verbose = 0});
  const std::vector<float> moving = chief.get_state_weights();
  REQUIRE(moving.size() == 16);
  REQUIRE(moving != Bn(6).get_state_weights());
  const mo::testing::TempDir dir;
  chief.save_weights(dir / "chief.safetensors");

  std::vector<std::vector<float>> weights(2), state(2);
  mo::distributed::run_in_threads(2, [&](ThreadCommunicator& comm) {
    Bn replica(6);
    compile(replica);
    if (comm.rank() == 0) replica.load_weights(dir / "chief.safetensors");
    replica.fit(data | mo::data::shard(2, comm.rank()) | mo::data::batch(8),
                {.epochs = 3, .initial_epoch = 3, .verbose = 0, .communicator = &comm});
    const auto r = static_cast<std::size_t>(comm.rank());
    weights[r] = replica.get_weights();
    state[r] = replica.get_state_weights();
  });
  CHECK(state[1] == moving);
  CHECK(state[0] == moving);
  CHECK(weights[1] == chief.get_weights());
  CHECK(weights[0] == chief.get_weights());
}

#if defined(MEMOPT_OPENMP_RUNTIME)
TEST_CASE("onednn::set_threads sets the kernel threads of the calling thread only") {
  const int before = mo::cpu_backend::onednn::threads();
  REQUIRE(before >= 1);
  REQUIRE(mo::cpu_backend::onednn::set_threads(before + 1));
  int on_other_thread = 0;
  bool set_there = false;
  std::thread([&] {
    set_there = mo::cpu_backend::onednn::set_threads(1);
    on_other_thread = mo::cpu_backend::onednn::threads();
  }).join();
  CHECK(set_there);
  CHECK(on_other_thread == 1);
  CHECK(mo::cpu_backend::onednn::threads() == before + 1);  // this thread's own, unchanged
  CHECK(!mo::cpu_backend::onednn::set_threads(0));
  CHECK(mo::cpu_backend::onednn::set_threads(before));
}
#else
TEST_CASE("onednn::set_threads sets the kernel threads of the calling thread only" *
          doctest::skip()) {  // built without OpenMP's runtime (MEMOPT_OPENMP_RUNTIME)
  CHECK(!mo::cpu_backend::onednn::set_threads(1));
}
#endif
