// The guide's closing case: an image classifier trained from a folder of JPEGs too large to sit
// in memory. Files are listed once (Keras's image_dataset_from_directory, 10% held out for
// validation), shuffled by name every epoch, decoded and resized to 64x64 on worker threads as
// training pulls them, batched as 8-bit pixels and prefetched. The model is the small Xception
// of Keras's "Image classification from scratch" tutorial at a quarter of its widths: it
// augments the bytes itself (RandomFlip, RandomRotation), scales them (Rescaling) and trains
// under float32 or mixed_bfloat16 on the CPU with Adam on a cosine schedule, saving a
// checkpoint every epoch and keeping the best epoch's weights (EarlyStopping); then it
// classifies one image file.
//
//   image_folder DIR [--epochs N] [--policy float32|mixed_bfloat16] [--limit N] [--batch N]
//                    [--learning-rate X] [--patience N] [--threads N] [--seed N]
//                    [--checkpoint PATTERN] [--resume PATH]
//
// --epochs N (default 20) is also the length of the cosine from --learning-rate (1e-3) to 0;
// --patience N (default 5) epochs without a better val_accuracy stop training; --limit N
// trains on the first N training files of the (seeded) listing; --threads sets the decoding
// workers (default 2); --checkpoint is a ModelCheckpoint filepath pattern (default
// `image_folder-{epoch:02d}.safetensors`); --resume PATH continues from a checkpoint it wrote.
// The last line printed is `val_accuracy=0.XXXX`.

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <ranges>
#include <ratio>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <memopt/data/image_directory.hpp>
#include <memopt/memopt.hpp>

namespace mo = memopt;

namespace {

// Keras's tutorial model (keras.io/examples/vision/image_classification_from_scratch) layer
// for layer, at widths 16, 32, 64, 96 and 128 where the tutorial has 128, 256, 512, 728 and
// 1024, and with ten softmax outputs: an entry convolution, three residual blocks whose
// shortcut is a strided 1x1 convolution, a last separable convolution, global pooling.
template <std::size_t Filters>
using XceptionBlock =
    mo::Residual<mo::Sequential<mo::Activation<mo::ReLU>, mo::SeparableConv2D<Filters, 3, mo::Same>,
                                mo::BatchNormalization, mo::Activation<mo::ReLU>,
                                mo::SeparableConv2D<Filters, 3, mo::Same>, mo::BatchNormalization,
                                mo::MaxPooling2D<3, mo::Strides<2>, mo::Same>>,
                 mo::Conv2D<Filters, 1, mo::Strides<2>, mo::Same>>;
using SmallXception =
    mo::Sequential<mo::RandomFlip<mo::Horizontal>, mo::RandomRotation<std::ratio<1, 10>>,
                   mo::Rescaling<std::ratio<1, 255>>, mo::Conv2D<16, 3, mo::Strides<2>, mo::Same>,
                   mo::BatchNormalization, mo::Activation<mo::ReLU>, XceptionBlock<32>,
                   XceptionBlock<64>, XceptionBlock<96>, mo::SeparableConv2D<128, 3, mo::Same>,
                   mo::BatchNormalization, mo::Activation<mo::ReLU>, mo::GlobalAveragePooling2D,
                   mo::Dropout<std::ratio<1, 4>>, mo::Dense<10, mo::Softmax>>;
template <class Policy>
using ImageModel = mo::Model<SmallXception, mo::Input<64, 64, 3>, Policy, mo::cpu>;

struct Options {
  std::string dir;
  int epochs = 20;
  std::string policy = "float32";
  std::size_t limit = 0;  // 0: every training file
  std::size_t batch = 32;
  std::size_t threads = 2;
  std::uint32_t seed = 1337;
  std::string checkpoint = "image_folder-{epoch:02d}.safetensors";
  std::string resume;
  double learning_rate = 1e-3;
  int patience = 5;
};

[[noreturn]] void usage(const char* why) {
  std::fprintf(
      stderr,
      "%s\nusage: image_folder DIR [--epochs N] [--policy float32|mixed_bfloat16] [--limit N] "
      "[--batch N] [--learning-rate X] [--patience N] [--threads N] [--seed N] "
      "[--checkpoint PATTERN] [--resume PATH]\n",
      why);
  std::exit(2);
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string_view flag = argv[i];
    if (!flag.starts_with("--")) {
      if (!o.dir.empty()) usage("more than one DIR");
      o.dir = flag;
      continue;
    }
    if (i + 1 >= argc) usage("missing value");
    const std::string value = argv[++i];
    const auto number = [&] { return std::strtoull(value.c_str(), nullptr, 10); };
    if (flag == "--epochs")
      o.epochs = static_cast<int>(number());
    else if (flag == "--limit")
      o.limit = number();
    else if (flag == "--batch")
      o.batch = number();
    else if (flag == "--threads")
      o.threads = number();
    else if (flag == "--seed")
      o.seed = static_cast<std::uint32_t>(number());
    else if (flag == "--checkpoint")
      o.checkpoint = value;
    else if (flag == "--resume")
      o.resume = value;
    else if (flag == "--policy")
      o.policy = value;
    else if (flag == "--learning-rate")
      o.learning_rate = std::strtod(value.c_str(), nullptr);
    else if (flag == "--patience")
      o.patience = static_cast<int>(number());
    else
      usage("unknown flag");
  }
  if (o.dir.empty()) usage("missing DIR (make one with make_dataset.py)");
  if (o.epochs < 1 || o.batch < 1 || o.threads < 1 || !(o.learning_rate > 0.0))
    usage("--epochs, --batch, --threads and --learning-rate must be positive");
  if (o.policy != "float32" && o.policy != "mixed_bfloat16")
    usage("--policy: float32 or mixed_bfloat16");
  return o;
}

// Progress: a line every few seconds with the images per second since the epoch began, and
// one per epoch with the training rate (decoding included, validation not) and the logs.
class ImagesPerSecond final : public mo::Callback {
 public:
  ImagesPerSecond(std::size_t steps, std::size_t images) : steps_(steps), images_(images) {}

  void on_epoch_begin(int epoch, const mo::Logs&) override {
    epoch_ = epoch;
    start_ = last_ = trained_ = Clock::now();
  }
  void on_train_batch_end(int batch, const mo::BatchLogs& logs) override {
    const auto now = trained_ = Clock::now();
    if (now - last_ < std::chrono::seconds(5)) return;
    last_ = now;
    std::printf("epoch %d step %d/%zu: %.0f images/s, loss %.4f, accuracy %.4f\n", epoch_ + 1,
                batch + 1, steps_, static_cast<double>(logs.samples) / seconds(now), logs.loss,
                logs.accuracy);
    std::fflush(stdout);
  }
  void on_epoch_end(int epoch, const mo::Logs& logs) override {
    const double training = seconds(trained_), total = seconds(Clock::now());
    std::printf(
        "epoch %d: %.1f s training (%.0f images/s) + %.1f s validation; loss %.4f, "
        "accuracy %.4f, val_loss %.4f, val_accuracy %.4f\n",
        epoch + 1, training, static_cast<double>(images_) / training, total - training,
        logs.at("loss"), logs.at("accuracy"), logs.at("val_loss"), logs.at("val_accuracy"));
    std::fflush(stdout);
  }

 private:
  using Clock = std::chrono::steady_clock;
  double seconds(Clock::time_point now) const {
    return std::chrono::duration<double>(now - start_).count();
  }
  std::size_t steps_;
  std::size_t images_;
  int epoch_ = 0;
  Clock::time_point start_{}, last_{}, trained_{};
};

template <class Policy>
int run(const Options& o) {
  using Model = ImageModel<Policy>;
  // Decoded at the model's Input (64 x 64, RGB): the size is written once, in `Model`.
  auto [all_train, val] =
      mo::data::image_directory_split<Model>(o.dir, {.seed = o.seed, .validation_split = 0.1});
  const std::size_t listed = all_train.size();
  // --limit keeps the first files' records; the listing itself is shared, never copied.
  const mo::data::ImageDirectory train =
      o.limit == 0 ? std::move(all_train) : all_train.take(o.limit);
  std::printf("%zu classes; training on %zu of %zu files, validating on %zu\n",
              train.class_names().size(), train.size(), listed, val.size());

  Model model{o.seed};
  // Keras's tutorial keeps Adam at 3e-4; a cosine from 1e-3 to 0 over the run's epochs gets
  // further in the epochs a CPU has time for.
  const auto steps = static_cast<std::int64_t>((train.size() + o.batch - 1) / o.batch);
  model.compile(
      mo::Adam{{.learning_rate = mo::CosineDecay{{.initial_learning_rate = o.learning_rate,
                                                  .decay_steps = steps * o.epochs}}}},
      mo::SparseCategoricalCrossentropy{}, mo::metrics::Accuracy{});
  model.summary(o.batch);

  // The files' 32-bit indices are shuffled (4 bytes each, where a shuffled copy of the
  // ImageFiles would take 40: memory that grows with the dataset), then decoded on `threads`
  // workers with at most 64 MB of decoded images in flight; batches of 8-bit pixels are
  // prepared one ahead of training.
  const mo::data::DecodeOptions decoding{.threads = o.threads};
  auto order = std::views::iota(std::uint32_t{0}, static_cast<std::uint32_t>(train.size())) |
               mo::data::shuffle(static_cast<std::ptrdiff_t>(train.size()), o.seed) |
               std::views::transform([&train](std::uint32_t i) { return train[i]; });
  auto batches =
      std::move(order) | train.decode(decoding) | mo::data::batch(o.batch) | mo::data::prefetch(2);
  auto validation = val | val.decode(decoding) | mo::data::batch(o.batch);

  if (!o.resume.empty()) {
    model.load(o.resume);
    std::printf("resumed from %s: %d epochs done\n", o.resume.c_str(), model.completed_epochs());
  }
  mo::callbacks::ModelCheckpoint checkpoint{{.filepath = o.checkpoint}};
  mo::callbacks::EarlyStopping early{
      {.monitor = "val_accuracy", .patience = o.patience, .restore_best_weights = true}};
  ImagesPerSecond progress((train.size() + o.batch - 1) / o.batch, train.size());
  model.fit(batches, {.epochs = o.epochs,
                      .initial_epoch = model.completed_epochs(),
                      .validation_data = std::move(validation),
                      .callbacks = {&progress, &checkpoint, &early},
                      .verbose = 0});

  // At the training batch size: a larger one would prepare the kernels (and their scratch)
  // for more rows than training needed, raising the peak memory for one pass.
  const mo::Evaluation result =
      model.evaluate(val | val.decode(decoding) | mo::data::batch(o.batch));
  // One image file, decoded as training decoded its files: the class the model gives it.
  if (!val.empty()) {
    const std::string file = val[0].path();
    const std::vector<float> p = model.predict(file, val.options());
    const auto best = static_cast<std::size_t>(std::ranges::max_element(p) - p.begin());
    std::printf("%s: %s (p = %.3f)\n", file.c_str(), val.class_names()[best].c_str(), p[best]);
  }
  std::printf("arena %zu bytes, kernel scratch %zu bytes (oneDNN %s)\n",
              model.executor().arena_bytes(), model.executor().workspace_bytes(),
              mo::cpu_backend::onednn::version_string().c_str());
  std::printf("val_loss=%.4f\nval_accuracy=%.4f\n", result.loss, result.accuracy);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  try {
    return o.policy == "mixed_bfloat16" ? run<mo::mixed_bfloat16>(o) : run<mo::float32>(o);
  } catch (const mo::error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
