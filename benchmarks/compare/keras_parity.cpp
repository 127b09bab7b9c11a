// memopt's half of the Keras parity check; benchmarks/compare/keras_parity.py drives it.
//
//   memopt_keras_parity --dir DIR --steps N [--batch 32] [--label-smoothing S]
//                       [--initial-lr X] [--decay-steps N] [--warmup-target X]
//                       [--warmup-steps N] [--weight-decay X]
//
// Reads DIR/initial.weights.h5 (Keras's model.save_weights), DIR/x.f32 (steps * batch rows
// of 784 float32) and DIR/y.f32 (the same rows' one-hot targets, 10 float32 each), trains
// Input(784) -> Dense(64, relu) -> Dense(10, softmax) with AdamW + CosineDecay +
// CategoricalCrossentropy on those batches in order, one epoch, and writes DIR/memopt_losses.txt
// (one loss per step), DIR/memopt_initial.f32 (the weights as loaded) and
// DIR/memopt_weights.f32 (the final weights): get_weights(), Keras's layout.

#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <memopt/io/keras_h5.hpp>
#include <memopt/memopt.hpp>

namespace mo = memopt;
namespace fs = std::filesystem;

namespace {

constexpr std::size_t kFeatures = 784;
constexpr std::size_t kClasses = 10;
using Net = mo::Sequential<mo::Dense<64, mo::ReLU>, mo::Dense<kClasses, mo::Softmax>>;

struct Options {
  fs::path dir;
  std::size_t steps = 0;
  std::size_t batch = 32;
  float label_smoothing = 0.0f;
  double initial_lr = 1e-3;
  std::int64_t decay_steps = 50;
  std::optional<double> warmup_target{};
  std::int64_t warmup_steps = 0;
  double weight_decay = 0.004;
};

[[noreturn]] void usage(const char* why) {
  std::fprintf(stderr,
               "%s\nusage: memopt_keras_parity --dir DIR --steps N [--batch N] "
               "[--label-smoothing S] [--initial-lr X] [--decay-steps N] [--warmup-target X] "
               "[--warmup-steps N] [--weight-decay X]\n",
               why);
  std::exit(2);
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string_view flag = argv[i];
    if (i + 1 >= argc) usage("missing a value");
    const std::string value = argv[++i];
    if (flag == "--dir")
      o.dir = value;
    else if (flag == "--steps")
      o.steps = std::stoul(value);
    else if (flag == "--batch")
      o.batch = std::stoul(value);
    else if (flag == "--label-smoothing")
      o.label_smoothing = std::stof(value);
    else if (flag == "--initial-lr")
      o.initial_lr = std::stod(value);
    else if (flag == "--decay-steps")
      o.decay_steps = std::stoll(value);
    else if (flag == "--warmup-target")
      o.warmup_target = std::stod(value);
    else if (flag == "--warmup-steps")
      o.warmup_steps = std::stoll(value);
    else if (flag == "--weight-decay")
      o.weight_decay = std::stod(value);
    else
      usage("unknown flag");
  }
  if (o.dir.empty() || o.steps == 0) usage("--dir and --steps are required");
  return o;
}

std::vector<float> read_floats(const fs::path& path, std::size_t count) {
  std::vector<float> v(count);
  std::ifstream in(path, std::ios::binary);
  in.read(reinterpret_cast<char*>(v.data()), static_cast<std::streamsize>(count * sizeof(float)));
  if (!in || in.peek() != std::char_traits<char>::eof())
    throw mo::error(path.string() + ": expected exactly " + std::to_string(count) + " float32");
  return v;
}

void write_floats(const fs::path& path, const std::vector<float>& v) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(v.data()),
            static_cast<std::streamsize>(v.size() * sizeof(float)));
  if (!out) throw mo::error(path.string() + ": cannot write");
}

// Each step's own loss from the epoch's running mean: fit reports mean-so-far and samples-so-far.
struct StepLosses : mo::Callback {
  std::vector<double> losses;
  double total = 0;
  std::size_t samples = 0;
  void on_train_batch_end(int, const mo::BatchLogs& logs) override {
    const double now = logs.loss * static_cast<double>(logs.samples);
    losses.push_back((now - total) / static_cast<double>(logs.samples - samples));
    total = now;
    samples = logs.samples;
  }
};

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  const std::size_t rows = o.steps * o.batch;
  auto x = read_floats(o.dir / "x.f32", rows * kFeatures);
  auto y = read_floats(o.dir / "y.f32", rows * kClasses);

  auto model = mo::Model<Net, mo::Input<kFeatures>>{0};  // the seed is moot: Keras's weights load
  model.compile(mo::AdamW{{.learning_rate = mo::CosineDecay{{.initial_learning_rate = o.initial_lr,
                                                             .decay_steps = o.decay_steps,
                                                             .warmup_target = o.warmup_target,
                                                             .warmup_steps = o.warmup_steps}},
                           .weight_decay = o.weight_decay}},
                mo::CategoricalCrossentropy{{.label_smoothing = o.label_smoothing}});
  mo::load_keras_weights(model, o.dir / "initial.weights.h5");
  // What was loaded, so that the script can check the load itself before any step.
  write_floats(o.dir / "memopt_initial.f32", model.get_weights());

  // Batches in file order, no shuffle: the order Keras's train_on_batch saw them in.
  StepLosses record;
  model.fit(
      mo::data::from(std::move(x), std::move(y), kFeatures, kClasses) | mo::data::batch(o.batch),
      {.epochs = 1, .callbacks = {&record}, .verbose = 0});

  std::FILE* out = std::fopen((o.dir / "memopt_losses.txt").c_str(), "w");
  if (!out) throw mo::error("cannot write memopt_losses.txt");
  for (double l : record.losses) std::fprintf(out, "%.17g\n", l);
  std::fclose(out);
  const std::vector<float> w = model.get_weights();
  write_floats(o.dir / "memopt_weights.f32", w);
  std::printf("memopt: %zu steps, first loss %.6f, last loss %.6f, %zu weights\n",
              record.losses.size(), record.losses.front(), record.losses.back(), w.size());
}
