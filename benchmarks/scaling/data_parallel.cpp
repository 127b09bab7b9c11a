// The scaling benchmark of data parallelism (issue 14): samples per second of fit at 1 and 2
// ranks, and how much of the gradients' all-reduce time backward hides. benchmarks/scaling/
// run.sh runs every configuration; one run is
//
//   mpirun --allow-run-as-root -np 2 -x OMP_NUM_THREADS=1
//     build/benchmarks/scaling/bench_data_parallel --model cnn --caps small --mode overlap
//
// (one command line)
//
//   --model mlp|cnn      example 01's 784-128-10 MLP, or example 02's convnet (8-bit images)
//   --caps ddp|small     PyTorch DDP's bucket caps (1 MiB, then 25 MiB: one bucket for both
//                        models), or 16 KiB then 64 KiB (the MLP 2 buckets, the convnet 3)
//   --mode overlap|blocking|alone
//       overlap:  the buckets' all-reduces start as backward fills them (what fit does)
//       blocking: the same all-reduces, each run blocking at finish_step, after backward:
//                 nothing overlaps, so the time in them is the all-reduce time to hide
//       alone:    no communicator at all (the 1-rank baseline; run it with -np 1)
//   --batch N (local rows, default 32)  --steps N (timed steps per rank, default 400)
//   --data DIR (Fashion-MNIST; synthetic images of its shape when it is missing; steps past
//              its 60,000 images are not run, so keep steps * batch * ranks below that)
//
// Rank 0 prints one line of key=value pairs. exposed_s is the time the ranks spent in the
// communicator's test and wait calls for gradients (the all-reduce time that backward did not
// hide), per rank, averaged over ranks. hidden = 1 - exposed(overlap) / exposed(blocking),
// computed by run.sh from the two runs' lines.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <ratio>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <memopt/core/random.hpp>
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
using SmallCaps = mo::BucketCaps<16 << 10, 64 << 10>;

struct Options {
  std::string model = "cnn";
  std::string caps = "small";
  std::string mode = "overlap";
  std::size_t batch = 32;
  std::size_t steps = 400;
  std::string data = "/usr/share/datasets/fashion-mnist";
};

[[noreturn]] void usage(const char* why) {
  std::fprintf(stderr,
               "%s\nusage: bench_data_parallel [--model mlp|cnn] [--caps ddp|small] "
               "[--mode overlap|blocking|alone] [--batch N] [--steps N] [--data DIR]\n",
               why);
  std::exit(2);
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; i += 2) {
    const std::string_view flag = argv[i];
    if (i + 1 >= argc) usage("missing value after a flag");
    const char* value = argv[i + 1];
    if (flag == "--model")
      o.model = value;
    else if (flag == "--caps")
      o.caps = value;
    else if (flag == "--mode")
      o.mode = value;
    else if (flag == "--batch")
      o.batch = static_cast<std::size_t>(std::atoll(value));
    else if (flag == "--steps")
      o.steps = static_cast<std::size_t>(std::atoll(value));
    else if (flag == "--data")
      o.data = value;
    else
      usage("unknown flag");
  }
  if (o.model != "mlp" && o.model != "cnn") usage("unknown --model");
  if (o.caps != "ddp" && o.caps != "small") usage("unknown --caps");
  if (o.mode != "overlap" && o.mode != "blocking" && o.mode != "alone") usage("unknown --mode");
  if (o.batch == 0 || o.steps == 0) usage("--batch, --steps: positive");
  return o;
}

// The MPI communicator, timing the gradients' all-reduces. In blocking mode a started sum is
// only noted, and runs blocking when finish_step waits for it: no overlap at all.
class TimedCommunicator {
 public:
  TimedCommunicator(mo::distributed::MpiCommunicator& mpi, bool blocking)
      : mpi_(mpi), blocking_(blocking) {}

  int rank() const { return mpi_.rank(); }
  int size() const { return mpi_.size(); }
  void all_reduce_sum(std::span<float> v) { mpi_.all_reduce_sum(v); }
  void all_reduce_sum(std::span<double> v) { mpi_.all_reduce_sum(v); }
  void broadcast(std::span<float> v, int root) { mpi_.broadcast(v, root); }
  void barrier() { mpi_.barrier(); }
  void notify_failure(std::string_view cause) { mpi_.notify_failure(cause); }

  mo::distributed::Request start_all_reduce_sum(std::span<float> v) {
    const auto t = clock::now();
    ++sums_;
    bytes_ += v.size_bytes();
    if (blocking_) {
      deferred_.push_back(v);
      return deferred_.size() - 1;
    }
    const mo::distributed::Request r = mpi_.start_all_reduce_sum(v);
    exposed_ += clock::now() - t;
    return r;
  }
  bool test(mo::distributed::Request r) {
    if (blocking_) return false;
    const auto t = clock::now();
    const bool done = mpi_.test(r);
    exposed_ += clock::now() - t;
    return done;
  }
  void wait(mo::distributed::Request r) {
    const auto t = clock::now();
    if (blocking_) {
      mpi_.all_reduce_sum(deferred_[r]);
      if (r + 1 == deferred_.size()) deferred_.clear();
    } else {
      mpi_.wait(r);
    }
    exposed_ += clock::now() - t;
  }

  double exposed_seconds() const { return std::chrono::duration<double>(exposed_).count(); }
  std::size_t sums() const { return sums_; }
  std::size_t bytes() const { return bytes_; }
  void reset() {
    exposed_ = {};
    sums_ = bytes_ = 0;
  }

 private:
  using clock = std::chrono::steady_clock;
  mo::distributed::MpiCommunicator& mpi_;
  bool blocking_;
  std::vector<std::span<float>> deferred_;
  clock::duration exposed_{};
  std::size_t sums_ = 0;
  std::size_t bytes_ = 0;
};
static_assert(mo::distributed::Communicator<TimedCommunicator>);

bool have_fashion_mnist(const Options& o) {
  return std::filesystem::exists(std::filesystem::path(o.data) / "train-images-idx3-ubyte.gz");
}

// Synthetic images of Fashion-MNIST's shape, when its files are missing: non-zero and
// learnable (the label sets a bright band), pixels 0..255 (`scale` 1) or 0..1.
mo::data::Dataset synthetic_images(std::size_t rows, float scale) {
  mo::Rng rng(7);
  std::vector<float> x(rows * 784);
  std::vector<std::int32_t> y(rows);
  for (std::size_t r = 0; r < rows; ++r) {
    y[r] = static_cast<std::int32_t>(rng.below(10));
    for (std::size_t p = 0; p < 784; ++p) {
      const bool band = p / 28 / 3 == static_cast<std::size_t>(y[r]);
      x[r * 784 + p] = scale * ((band ? 200.0f : 30.0f) + rng.uniform(0.0f, 50.0f));
    }
  }
  return mo::data::from(std::move(x), std::move(y), 784);
}

template <class Net, class In, class Caps, class Data>
int run(mo::distributed::MpiCommunicator& mpi, const Options& o, const Data& data) {
  const bool alone = o.mode == "alone";
  TimedCommunicator timed(mpi, o.mode == "blocking");
  const std::size_t ranks = alone ? 1 : static_cast<std::size_t>(mpi.size());

  auto model = mo::Model<Net, In, mo::float32, mo::cpu, Caps>{42};
  model.compile(mo::Adam{{.learning_rate = 1e-3}}, mo::SparseCategoricalCrossentropy{},
                mo::metrics::Accuracy{});
  const mo::distributed::CommunicatorRef comm =
      alone ? mo::distributed::CommunicatorRef{} : mo::distributed::CommunicatorRef{&timed};
  const auto batches = [&](std::size_t steps) {
    return data | mo::data::take(static_cast<std::ptrdiff_t>(steps * o.batch * ranks)) |
           mo::data::shard(static_cast<int>(ranks), alone ? 0 : mpi.rank()) |
           mo::data::batch(o.batch);
  };
  // Warm-up: the arena, the kernels' primitives, MPI's connections.
  (void)model.fit(batches(20), {.epochs = 1, .verbose = 0, .communicator = comm});
  timed.reset();
  mpi.barrier();
  const auto start = std::chrono::steady_clock::now();
  (void)model.fit(batches(o.steps), {.epochs = 1, .verbose = 0, .communicator = comm});
  mpi.barrier();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  std::vector<double> exposed{timed.exposed_seconds()};
  mpi.all_reduce_sum(std::span<double>(exposed));
  if (mpi.rank() == 0)
    std::printf(
        "model=%s caps=%s mode=%s ranks=%zu batch=%zu steps=%zu buckets=%zu "
        "bucket_bytes_per_step=%zu seconds=%.3f samples_per_second=%.0f exposed_s=%.4f "
        "exposed_ms_per_step=%.4f\n",
        o.model.c_str(), o.caps.c_str(), o.mode.c_str(), ranks, o.batch, o.steps,
        decltype(model)::gradient_buckets.count, decltype(model)::parameter_count * sizeof(float),
        seconds, static_cast<double>(o.steps * o.batch * ranks) / seconds, exposed[0] / mpi.size(),
        1e3 * exposed[0] / mpi.size() / static_cast<double>(o.steps));
  return 0;
}

template <class Net, class In, class Data>
int run_caps(mo::distributed::MpiCommunicator& mpi, const Options& o, const Data& data) {
  if (o.caps == "ddp") return run<Net, In, mo::BucketCaps<>>(mpi, o, data);
  return run<Net, In, SmallCaps>(mpi, o, data);
}

}  // namespace

int main(int argc, char** argv) {
  mo::distributed::MpiCommunicator mpi(argc, argv);
  const Options o = parse(argc, argv);
  try {
    const std::size_t rows = (o.steps + 20) * o.batch * static_cast<std::size_t>(mpi.size());
    if (o.model == "cnn") {
      if (have_fashion_mnist(o))
        return run_caps<Convnet, mo::Input<28, 28, 1>>(mpi, o,
                                                       mo::data::fashion_mnist_uint8(o.data).train);
      return run_caps<Convnet, mo::Input<28, 28, 1>>(mpi, o, synthetic_images(rows, 1.0f));
    }
    if (have_fashion_mnist(o))
      return run_caps<Mlp, mo::Input<784>>(mpi, o, mo::data::fashion_mnist(o.data).train);
    return run_caps<Mlp, mo::Input<784>>(mpi, o, synthetic_images(rows, 1.0f / 255));
  } catch (const mo::error& e) {
    std::fprintf(stderr, "error on rank %d: %s\n", mpi.rank(), e.what());
    mpi.abort(1);
  }
}
