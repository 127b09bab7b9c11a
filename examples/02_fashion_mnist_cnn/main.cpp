// Trains Keras's "Simple MNIST convnet" on Fashion-MNIST on the CPU: two convolutions with
// max pooling, Dropout, and a softmax layer; 34,826 parameters. The pixels stay 8-bit all the
// way to the model (47 MB for the training set where floats take 188 MB): the batches are
// data::ImageBatch, and a Rescaling layer first scales 0..255 to [0, 1], as in Keras. Peak RSS
// of `OMP_NUM_THREADS=1 fashion_mnist_cnn --epochs 1`: 148 MB, where float batches took 314 MB.
//
//   fashion_mnist_cnn [--epochs N] [--policy float32|mixed_bfloat16] [--replicas N]
//                     [--data DIR] [--batch N] [--seed N] [--checkpoint PATH [--resume]]
//
// --replicas N trains N copies of the model on N threads, each with one oneDNN thread
// (Keras's MirroredStrategy within one process): every step, each replica runs --batch / N
// rows of the batch and all apply the mean gradient over the --batch rows. On a few cores
// this beats one model whose kernels share the cores, because the convolutions of one small
// batch leave OpenMP's threads waiting at barriers. With N = 1 (the default) the model runs
// alone, on memopt's default threads: the cores other work leaves free (summary()'s last
// line says how many; OMP_NUM_THREADS chooses).
//
// mixed_float16 is left out of this program: Debian's oneDNN 2.6.3 creates no float16
// convolution (not even on a Sapphire Rapids, which has AVX-512 FP16), so memopt converts to
// float32 and back around every convolution, slower than float32 for no gain (bench_cnn_steps
// --profile 16 mixed_float16: 2.5 ms a step, against 1.8 ms in float32); and each policy built
// in is one more model to compile (about 10% of this file's code). mo::mixed_float16 works on
// the CPU backend like the others (tests/unit/test_cnn_layers.cpp).
//
// --checkpoint PATH saves weights, moving statistics, optimizer state and position at the end
// of every epoch (ModelCheckpoint); --resume continues from it. The last line printed is
// `test_accuracy=0.XXXX`.

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <ratio>
#include <string>
#include <string_view>
#include <vector>

#include <memopt/backend/cpu/dnnl/threads.hpp>
#include <memopt/data/image_dataset.hpp>
#include <memopt/distributed/thread_communicator.hpp>
#include <memopt/memopt.hpp>

namespace mo = memopt;

namespace {

// Keras's example, layer for layer (keras.io/examples/vision/mnist_convnet), with Keras's
// Rescaling(1/255) first: the model reads the bytes as they are.
using Convnet =
    mo::Sequential<mo::Rescaling<std::ratio<1, 255>>, mo::Conv2D<32, 3, mo::ReLU>,
                   mo::MaxPooling2D<2>, mo::Conv2D<64, 3, mo::ReLU>, mo::MaxPooling2D<2>,
                   mo::Flatten, mo::Dropout<std::ratio<1, 2>>, mo::Dense<10, mo::Softmax>>;

struct Options {
  int epochs = 15;
  std::string policy = "float32";
  std::string data = "/usr/share/datasets/fashion-mnist";
  std::size_t batch = 32;
  int replicas = 1;
  std::uint64_t seed = 42;
  std::string checkpoint;
  bool resume = false;
};

[[noreturn]] void usage(const char* why) {
  std::fprintf(stderr,
               "%s\nusage: fashion_mnist_cnn [--epochs N] [--policy float32|mixed_bfloat16] "
               "[--replicas N] [--data DIR] [--batch N] [--seed N] "
               "[--checkpoint PATH [--resume]]\n",
               why);
  std::exit(2);
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string_view flag = argv[i];
    if (flag == "--resume") {
      o.resume = true;
      continue;
    }
    if (i + 1 >= argc) usage("missing value");
    const std::string value = argv[++i];
    if (flag == "--epochs")
      o.epochs = std::atoi(value.c_str());
    else if (flag == "--policy")
      o.policy = value;
    else if (flag == "--data")
      o.data = value;
    else if (flag == "--batch")
      o.batch = static_cast<std::size_t>(std::atol(value.c_str()));
    else if (flag == "--replicas")
      o.replicas = std::atoi(value.c_str());
    else if (flag == "--seed")
      o.seed = std::strtoull(value.c_str(), nullptr, 10);
    else if (flag == "--checkpoint")
      o.checkpoint = value;
    else
      usage("unknown flag");
  }
  if (o.epochs < 1 || o.batch < 1 || o.replicas < 1)
    usage("--epochs, --batch and --replicas must be positive");
  if (o.batch % static_cast<std::size_t>(o.replicas) != 0)
    usage("--batch must be a multiple of --replicas (each replica runs --batch / N rows)");
  if (o.resume && o.checkpoint.empty()) usage("--resume needs --checkpoint PATH");
  return o;
}

// One replica: the whole model on its thread, on its shard of the data (all of it when it
// runs alone). Replica 0 prints.
template <class Policy, class Data>
void train_replica(const Options& o, const Data& train, const Data& test,
                   mo::distributed::ThreadCommunicator& comm) {
  const int n = comm.size(), rank = comm.rank();
  const bool alone = n == 1;
  if (!alone && !mo::cpu_backend::onednn::set_threads(1))
    std::fprintf(stderr,
                 "warning: cannot give each replica one oneDNN thread (oneDNN not on "
                 "OpenMP, or memopt built without OpenMP's runtime)\n");
  // Each replica its own seed, for its own Dropout masks; fit gives every replica replica
  // 0's weights.
  auto model = mo::Model<Convnet, mo::Input<28, 28, 1>, Policy, mo::cpu>{
      o.seed + static_cast<std::uint64_t>(rank)};
  model.compile(mo::Adam{{.learning_rate = 1e-3}}, mo::SparseCategoricalCrossentropy{},
                mo::metrics::Accuracy{});
  const std::size_t rows = o.batch / static_cast<std::size_t>(n);  // per replica per step
  if (rank == 0) {
    model.summary(o.batch);
    if (!alone) std::printf("%d replicas on %d threads, %zu rows each per step\n", n, n, rows);
  }

  const std::size_t mine =
      (60'000 + static_cast<std::size_t>(n - rank - 1)) / static_cast<std::size_t>(n);
  auto batches = train | mo::data::shard(n, rank) | mo::data::shuffle(mine, o.seed) |
                 mo::data::batch(rows) | mo::data::prefetch(mo::data::autotune);

  std::vector<mo::Callback*> callbacks;
  mo::callbacks::ModelCheckpoint checkpoint{
      {.filepath = o.checkpoint.empty() ? "unused" : o.checkpoint, .save_weights_only = false}};
  if (!o.checkpoint.empty()) callbacks.push_back(&checkpoint);
  if (o.resume && std::filesystem::exists(o.checkpoint)) {
    model.load(o.checkpoint);  // every replica: fit starts them all at its epoch
    if (rank == 0)
      std::printf("resumed from %s: %d epochs done, step %lld\n", o.checkpoint.c_str(),
                  model.completed_epochs(), static_cast<long long>(model.iterations()));
  }
  // Validation over each replica's shard of the test set: fit sums it over the replicas.
  model.fit(batches, {.epochs = o.epochs,
                      .initial_epoch = model.completed_epochs(),
                      .validation_data = test | mo::data::shard(n, rank) | mo::data::batch(256),
                      .callbacks = callbacks,
                      .communicator = alone ? nullptr : &comm});
  if (rank != 0) return;

  std::printf("oneDNN %s; kernel scratch %zu bytes beside the %zu-byte arena\n",
              mo::cpu_backend::onednn::version_string().c_str(), model.executor().workspace_bytes(),
              model.executor().arena_bytes());
  const mo::Evaluation result = model.evaluate(test | mo::data::batch(256));
  std::printf("test_loss=%.4f\ntest_accuracy=%.4f\n", result.loss, result.accuracy);
}

template <class Policy>
int run(const Options& o) {
  auto [train, test] = mo::data::fashion_mnist_uint8(o.data);  // [n, 28, 28, 1] bytes, shared
  mo::distributed::run_in_threads(o.replicas, [&](mo::distributed::ThreadCommunicator& comm) {
    train_replica<Policy>(o, train, test, comm);
  });
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  try {
    if (o.policy == "float32") return run<mo::float32>(o);
    if (o.policy == "mixed_bfloat16") return run<mo::mixed_bfloat16>(o);
    if (o.policy == "mixed_float16")
      usage(
          "--policy mixed_float16: not built into this example (oneDNN 2.6.3 has no float16 "
          "convolution here, so it converts to float32 and back, slower than float32; see the "
          "top of main.cpp); use float32 or mixed_bfloat16");
    usage("unknown --policy");
  } catch (const mo::error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
