// Trains the guide's model, Sequential<Dense<128,ReLU>,Dense<10,Softmax>>, on Fashion-MNIST.
//
//   fashion_mnist [--epochs N] [--policy float32|mixed_float16|mixed_bfloat16]
//                 [--backend cpu|cuda] [--data DIR] [--batch N] [--seed N]
//
// The last line printed is `test_accuracy=0.XXXX`.

#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include <memopt/memopt.hpp>

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
};

[[noreturn]] void usage(const char* why) {
  std::fprintf(stderr,
               "%s\nusage: fashion_mnist [--epochs N] [--policy float32|mixed_float16|"
               "mixed_bfloat16] [--backend cpu|cuda] [--data DIR] [--batch N] [--seed N]\n",
               why);
  std::exit(2);
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string_view flag = argv[i];
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
    else
      usage("unknown flag");
  }
  if (o.epochs < 1 || o.batch < 1) usage("--epochs and --batch must be positive");
  return o;
}

template <class Policy, class Backend>
int run(const Options& o) {
  auto model = mo::Model<Net, mo::Input<784>, Policy, Backend>{o.seed};
  model.compile(mo::Adam{{.learning_rate = 1e-3}}, mo::SparseCategoricalCrossentropy{},
                mo::metrics::Accuracy{});
  model.summary(o.batch);

  auto [train, test] = mo::data::fashion_mnist(o.data);
  auto batches = train | mo::data::batch(o.batch);
  model.fit(batches, {.epochs = o.epochs, .validation_data = test | mo::data::batch(256)});

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
    if (o.backend == "cuda") usage("--backend cuda: this build has no CUDA backend");
    usage("unknown --backend");
  } catch (const mo::error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
