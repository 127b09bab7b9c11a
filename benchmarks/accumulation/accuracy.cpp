// Gradient accumulation's accuracy (issue 39): batches of 32 accumulated over 8 steps against
// batches of 256, after the same samples in the same order, on Fashion-MNIST; and the training
// arena each takes. Batches of 32 without accumulation are the third column: the same arena,
// eight times the updates.
//
//   bench_accumulation_accuracy [--data DIR] [--epochs N] [--seeds N]
//
// Per seed s (1..N): every run starts from Model{s}'s weights and reads the first 59,904
// samples of the training set in shuffle(60000, s)'s order (234 batches of 256), with Adam(1e-3)
// and sparse categorical cross-entropy; the test accuracy after --epochs epochs (default 3) of
// each. Two models: example 01's MLP (784-128-10), whose accumulated update is the big batch's up
// to float rounding, and the same with Dropout(0.2) after the hidden layer, whose masks are drawn
// per batch of 32 in one run and per batch of 256 in the other. Prints one line per seed and model,
// then the means and the largest |accumulated - big batch| difference in points.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ratio>
#include <string>
#include <string_view>
#include <vector>

#include <memopt/memopt.hpp>

namespace mo = memopt;

namespace {

using Mlp = mo::Sequential<mo::Dense<128, mo::ReLU>, mo::Dense<10, mo::Softmax>>;
using DropoutMlp = mo::Sequential<mo::Dense<128, mo::ReLU>, mo::Dropout<std::ratio<1, 5>>,
                                  mo::Dense<10, mo::Softmax>>;

constexpr std::size_t kSamples = 234 * 256;

struct Options {
  std::string data = "/usr/share/datasets/fashion-mnist";
  int epochs = 3;
  int seeds = 3;
};

// Test accuracy after `epochs` of batches of `batch`, the update every `steps` of them.
template <class Net>
double accuracy(const mo::data::TrainTest& d, std::uint64_t seed, std::size_t batch, int steps,
                int epochs) {
  mo::Model<Net, mo::Input<784>> model{seed};
  mo::Adam::Options adam{.learning_rate = 1e-3};
  adam.gradient_accumulation_steps = steps;
  model.compile(mo::Adam(adam), mo::SparseCategoricalCrossentropy{}, mo::metrics::Accuracy{});
  // 234 batches of 256 an epoch (59,904 of the 60,000 samples): the accumulated run's sums
  // carry over from one epoch to the next (as Keras's do), so with a shorter last batch its
  // updates would group other samples than the big batch's from the second epoch on.
  model.fit(
      d.train | mo::data::shuffle(60'000, seed) | mo::data::take(kSamples) | mo::data::batch(batch),
      {.epochs = epochs, .verbose = 0});
  return 100.0 * model.evaluate(d.test | mo::data::batch(256)).accuracy;
}

template <class Net>
void compare(const char* name, const mo::data::TrainTest& d, const Options& o) {
  using M = mo::Model<Net, mo::Input<784>>;
  std::printf("%s: training arena %zu bytes at batch 32 (accumulated or not), %zu at 256\n", name,
              M::arena_bytes(32), M::arena_bytes(256));
  double big_sum = 0, acc_sum = 0, small_sum = 0, worst = 0;
  for (int s = 1; s <= o.seeds; ++s) {
    const auto seed = static_cast<std::uint64_t>(s);
    const double big = accuracy<Net>(d, seed, 256, 1, o.epochs);
    const double accumulated = accuracy<Net>(d, seed, 32, 8, o.epochs);
    const double small = accuracy<Net>(d, seed, 32, 1, o.epochs);
    std::printf(
        "  seed %d: batch 256 %.2f%%, 32 x 8 accumulated %.2f%% (%+.2f points), "
        "batch 32 %.2f%%\n",
        s, big, accumulated, accumulated - big, small);
    std::fflush(stdout);
    big_sum += big, acc_sum += accumulated, small_sum += small;
    worst = std::max(worst, std::abs(accumulated - big));
  }
  const double n = o.seeds;
  std::printf(
      "  mean over %d seeds: batch 256 %.2f%%, 32 x 8 accumulated %.2f%%, batch 32 %.2f%%; "
      "largest |accumulated - 256| %.2f points\n",
      o.seeds, big_sum / n, acc_sum / n, small_sum / n, worst);
}

[[noreturn]] void usage(const char* why) {
  std::fprintf(stderr,
               "%s\nusage: bench_accumulation_accuracy [--data DIR] [--epochs N] [--seeds N]\n",
               why);
  std::exit(2);
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string_view flag = argv[i];
    if (i + 1 >= argc) usage("missing value after a flag");
    const char* value = argv[++i];
    if (flag == "--data")
      o.data = value;
    else if (flag == "--epochs")
      o.epochs = std::atoi(value);
    else if (flag == "--seeds")
      o.seeds = std::atoi(value);
    else
      usage("unknown flag");
  }
  if (o.epochs < 1 || o.seeds < 1) usage("--epochs and --seeds must be positive");
  try {
    const mo::data::TrainTest d = mo::data::fashion_mnist(o.data);
    std::printf("Fashion-MNIST from %s; Adam(1e-3); %d epochs; seeds 1..%d\n", o.data.c_str(),
                o.epochs, o.seeds);
    compare<Mlp>("784-128-10", d, o);
    compare<DropoutMlp>("784-128-Dropout(0.2)-10", d, o);
  } catch (const mo::error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
