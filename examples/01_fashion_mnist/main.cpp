// Trains the guide's model, Sequential<Dense<128,ReLU>,Dense<10,Softmax>>, on Fashion-MNIST.
//
//   fashion_mnist [--epochs N] [--policy float32|mixed_float16|mixed_bfloat16]
//                 [--backend cpu|cuda] [--data DIR] [--batch N] [--seed N]
//                 [--checkpoint PATH [--resume]] [--log-dir DIR]
//
// --checkpoint PATH saves everything needed to resume (weights, optimizer state, epoch, step,
// loss scale) to PATH at the end of every epoch, atomically, through ModelCheckpoint.
// --resume loads PATH first, when it exists, and continues from the epoch it records: the
// run ends with the same weights as one that was never interrupted.
// --log-dir DIR writes TensorBoard event files there (callbacks::TensorBoard, every 50 batches
// and every epoch): `tensorboard --logdir DIR`.
//
// The last line printed is `test_accuracy=0.XXXX`.

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include <memopt/memopt.hpp>
// Built by nvcc as main.cu into fashion_mnist_cuda when memopt::cuda exists (see
// CMakeLists.txt): --backend cuda. fashion_mnist itself is host-only.
#if defined(__CUDACC__) && defined(MEMOPT_WITH_CUDA)
#include <memopt/backend/cuda.hpp>
#define MEMOPT_EXAMPLE_CUDA 1
#endif

namespace mo = memopt;

namespace {

using Net = mo::Sequential<mo::Dense<128, mo::ReLU>, mo::Dense<10, mo::Softmax>>;

struct Options {
  int epochs = 5;
  std::string policy = "float32";
  std::string backend = "cpu";
  std::string data = "/usr/share/datasets/fashion-mnist";
  std::size_t batch = 32;
  std::uint64_t seed = 42;
  std::string checkpoint;
  bool resume = false;
  std::string log_dir;
};

[[noreturn]] void usage(const char* why) {
  std::fprintf(stderr,
               "%s\nusage: fashion_mnist [--epochs N] [--policy float32|mixed_float16|"
               "mixed_bfloat16] [--backend cpu|cuda] [--data DIR] [--batch N] [--seed N]\n"
               "                     [--checkpoint PATH [--resume]] [--log-dir DIR]\n",
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
    if (i + 1 >= argc) usage("missing value after a flag");
    const char* value = argv[++i];
    if (flag == "--epochs")
      o.epochs = std::atoi(value);
    else if (flag == "--policy")
      o.policy = value;
    else if (flag == "--backend")
      o.backend = value;
    else if (flag == "--data")
      o.data = value;
    else if (flag == "--batch")
      o.batch = static_cast<std::size_t>(std::atoll(value));
    else if (flag == "--seed")
      o.seed = static_cast<std::uint64_t>(std::atoll(value));
    else if (flag == "--checkpoint")
      o.checkpoint = value;
    else if (flag == "--log-dir")
      o.log_dir = value;
    else
      usage("unknown flag");
  }
  if (o.epochs < 1 || o.batch < 1) usage("--epochs and --batch must be positive");
  if (o.resume && o.checkpoint.empty()) usage("--resume needs --checkpoint PATH");
  return o;
}

template <class Policy, class Backend>
int run(const Options& o) {
  auto model = mo::Model<Net, mo::Input<784>, Policy, Backend>{o.seed};
  model.compile(mo::Adam{{.learning_rate = 1e-3}}, mo::SparseCategoricalCrossentropy{},
                mo::metrics::Accuracy{});
  model.summary(o.batch);

  auto [train, test] = mo::data::fashion_mnist(o.data);
  // The guide's tf.data pipeline: a full shuffle, reshuffled every epoch; batches built on a
  // worker thread while the model trains on the previous one.
  auto batches = train | mo::data::shuffle(60'000, o.seed) | mo::data::batch(o.batch) |
                 mo::data::prefetch(mo::data::autotune);

  std::vector<mo::Callback*> callbacks;
  // Every epoch, not only the best: resuming continues from the latest state.
  mo::callbacks::ModelCheckpoint checkpoint{
      {.filepath = o.checkpoint.empty() ? "unused" : o.checkpoint, .save_weights_only = false}};
  if (!o.checkpoint.empty()) callbacks.push_back(&checkpoint);
  mo::callbacks::TensorBoard tensorboard{
      {.log_dir = o.log_dir.empty() ? "logs" : o.log_dir, .update_freq = 50}};
  if (!o.log_dir.empty()) callbacks.push_back(&tensorboard);
  if (o.resume && std::filesystem::exists(o.checkpoint)) {
    model.load(o.checkpoint);
    std::printf("resumed from %s: %d epochs done, step %lld\n", o.checkpoint.c_str(),
                model.completed_epochs(), static_cast<long long>(model.iterations()));
  } else if (o.resume) {
    std::printf("no checkpoint at %s yet: starting from epoch 1\n", o.checkpoint.c_str());
  }
  model.fit(batches, {.epochs = o.epochs,
                      .initial_epoch = model.completed_epochs(),
                      .validation_data = test | mo::data::batch(256),
                      .callbacks = callbacks});

  const mo::Evaluation result = model.evaluate(test | mo::data::batch(256));
  std::printf("test_loss=%.4f\ntest_accuracy=%.4f\n", result.loss, result.accuracy);
  return 0;
}

template <class Backend>
int run_on(const Options& o) {
  if (o.policy == "float32") return run<mo::float32, Backend>(o);
  if (o.policy == "mixed_float16") return run<mo::mixed_float16, Backend>(o);
  if (o.policy == "mixed_bfloat16") return run<mo::mixed_bfloat16, Backend>(o);
  usage("unknown --policy");
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  try {
    if (o.backend == "cpu") return run_on<mo::cpu>(o);
#if defined(MEMOPT_EXAMPLE_CUDA)
    if (o.backend == "cuda") return run_on<mo::cuda>(o);
#else
    if (o.backend == "cuda")
      usage(
          "--backend cuda: this is the host-only build; run fashion_mnist_cuda (built next "
          "to it when CMake finds nvcc)");
#endif
    usage("unknown --backend");
  } catch (const mo::error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
