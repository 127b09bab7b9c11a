// Synchronous data-parallel training on Fashion-MNIST across processes, with MPI:
//
//   mpirun --allow-run-as-root -np 2 build/examples/05_data_parallel/data_parallel
//   data_parallel [--model mlp|cnn] [--epochs N] [--batch N] [--limit N] [--data DIR]
//                 [--seed N]
//
// Each rank reads its own shard of the training set (data::shard before the shuffle, so the
// shards are disjoint and cover it), trains on batches of --batch rows, and every step all
// ranks apply the same update: the mean gradient over all ranks' rows (Keras's
// MirroredStrategy). Rank 0 prints; the others are silent. --model mlp is example 01's MLP,
// --model cnn example 02's convnet (on 8-bit images). --limit N trains on the first N
// images only. Run without mpirun it is one rank.
//
// The last lines printed (rank 0) are `samples_per_second=...` and `test_accuracy=0.XXXX`.

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ratio>
#include <string>
#include <string_view>

#include <memopt/data/image_dataset.hpp>
#include <memopt/distributed/mpi_communicator.hpp>
#include <memopt/memopt.hpp>

namespace mo = memopt;

namespace {

using Mlp = mo::Sequential<mo::Dense<128, mo::ReLU>, mo::Dense<10, mo::Softmax>>;
using Convnet =
    mo::Sequential<mo::Rescaling<std::ratio<1, 255>>, mo::Conv2D<32, 3, mo::ReLU>,
                   mo::MaxPooling2D<2>, mo::Conv2D<64, 3, mo::ReLU>, mo::MaxPooling2D<2>,
                   mo::Flatten, mo::Dropout<std::ratio<1, 2>>, mo::Dense<10, mo::Softmax>>;

struct Options {
  std::string model = "mlp";
  int epochs = 5;
  std::size_t batch = 32;
  std::ptrdiff_t limit = 60'000;
  std::string data = "/usr/share/datasets/fashion-mnist";
  std::uint64_t seed = 42;
};

[[noreturn]] void usage(const char* why) {
  std::fprintf(stderr,
               "%s\nusage: data_parallel [--model mlp|cnn] [--epochs N] [--batch N] [--limit N] "
               "[--data DIR] [--seed N]\n",
               why);
  std::exit(2);
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string_view flag = argv[i];
    if (i + 1 >= argc) usage("missing value after a flag");
    const char* value = argv[++i];
    if (flag == "--model")
      o.model = value;
    else if (flag == "--epochs")
      o.epochs = std::atoi(value);
    else if (flag == "--batch")
      o.batch = static_cast<std::size_t>(std::atoll(value));
    else if (flag == "--limit")
      o.limit = std::atoll(value);
    else if (flag == "--data")
      o.data = value;
    else if (flag == "--seed")
      o.seed = static_cast<std::uint64_t>(std::atoll(value));
    else
      usage("unknown flag");
  }
  if (o.epochs < 1 || o.batch < 1 || o.limit < 1) usage("--epochs, --batch, --limit: positive");
  if (o.model != "mlp" && o.model != "cnn") usage("unknown --model");
  return o;
}

// `Net` on `train` and `test` (float rows for the MLP, 8-bit images for the convnet).
template <class Net, class In, class Data>
int run(mo::distributed::MpiCommunicator& comm, const Options& o, const Data& train,
        const Data& test) {
  // Each rank its own seed: different Dropout masks. The weights are rank 0's anyway (fit
  // broadcasts them).
  auto model = mo::Model<Net, In>{o.seed + static_cast<std::uint64_t>(comm.rank())};
  model.compile(mo::Adam{{.learning_rate = 1e-3}}, mo::SparseCategoricalCrossentropy{},
                mo::metrics::Accuracy{});
  if (comm.rank() == 0) {
    model.summary(o.batch);
    std::printf("%d rank(s), local batch %zu (global %zu)\n", comm.size(), o.batch,
                o.batch * static_cast<std::size_t>(comm.size()));
  }
  const std::ptrdiff_t mine = (o.limit - comm.rank() + comm.size() - 1) / comm.size();
  auto batches = train | mo::data::take(o.limit) | mo::data::shard(comm.size(), comm.rank()) |
                 mo::data::shuffle(static_cast<std::size_t>(mine), o.seed) |
                 mo::data::batch(o.batch) | mo::data::prefetch(mo::data::autotune);

  const auto start = std::chrono::steady_clock::now();
  // Validation on each rank's shard of the test set: fit sums it over the ranks.
  model.fit(batches, {.epochs = o.epochs,
                      .validation_data =
                          test | mo::data::shard(comm.size(), comm.rank()) | mo::data::batch(256),
                      .communicator = &comm});
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  if (comm.rank() == 0) {
    // Validation included, as a user's fit would run it.
    const double samples = static_cast<double>(o.limit) * o.epochs;
    const mo::Evaluation result = model.evaluate(test | mo::data::batch(256));
    std::printf("samples_per_second=%.0f\ntest_accuracy=%.4f\n", samples / seconds,
                result.accuracy);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  mo::distributed::MpiCommunicator comm(argc, argv);
  const Options o = parse(argc, argv);
  try {
    if (o.model == "cnn") {
      auto [train, test] = mo::data::fashion_mnist_uint8(o.data);
      return run<Convnet, mo::Input<28, 28, 1>>(comm, o, train, test);
    }
    auto [train, test] = mo::data::fashion_mnist(o.data);
    return run<Mlp, mo::Input<784>>(comm, o, train, test);
  } catch (const mo::error& e) {
    std::fprintf(stderr, "error on rank %d: %s\n", comm.rank(), e.what());
    // fit tells every rank of an error on one; any other error may be this rank's alone:
    // end every rank then, rather than leave them waiting.
    if (!comm.stopped()) comm.abort(1);
    return 1;
  }
}
