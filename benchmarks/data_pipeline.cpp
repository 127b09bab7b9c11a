// The data pipeline's two measurable claims, as a plain program (timings, never assertions):
//
//   (a) overlap: a source that takes t_load per batch and a consumer that takes t_step per
//       batch; with prefetch an epoch should take max(t_load, t_step) x steps, not the sum.
//       Prints epoch / (max x steps), which the design asks to be <= 1.05.
//   (b) throughput of shuffle | batch over Fashion-MNIST in memory, in elements/s and GB/s of
//       batch data produced, beside memcpy of the same bytes (sequential, and gathered in a
//       shuffled order) on the same machine.
//
//   bench_data_pipeline [--part overlap|throughput|all] [--data DIR] [--epochs N]
//                       [--steps N] [--batch N]
//
// benchmarks/compare/tfdata_pipeline.py runs (b) in tf.data and this program's (b) side by
// side. The source's load and the step are both simulated by waiting until a deadline
// (sleeping, then spinning the last 200 us): the source like a read from disk, the step like a
// host waiting for its GPU step. Deadlines keep the measure honest on a loaded machine: a
// thread preempted while it sleeps loses nothing, where a spinning step would be stretched.

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <memopt/core/random.hpp>
#include <memopt/data/batch.hpp>
#include <memopt/data/dataset.hpp>
#include <memopt/data/fashion_mnist.hpp>
#include <memopt/data/map.hpp>
#include <memopt/data/prefetch.hpp>
#include <memopt/data/shuffle.hpp>

namespace mo = memopt;
using Clock = std::chrono::steady_clock;
using Seconds = std::chrono::duration<double>;

namespace {

struct Options {
  std::string part = "all";
  std::string data = "/usr/share/datasets/fashion-mnist";
  int epochs = 5;
  int steps = 200;
  std::size_t batch = 32;
};

// Waits until `deadline` without burning a core for all of it: sleep, then spin the last
// 200 us (sleeps overshoot by tens of microseconds).
void wait_until(Clock::time_point deadline) {
  const auto margin = std::chrono::microseconds(200);
  if (deadline - Clock::now() > margin) std::this_thread::sleep_until(deadline - margin);
  while (Clock::now() < deadline) {
  }
}

void wait_for(Seconds d) {
  wait_until(Clock::now() + std::chrono::duration_cast<Clock::duration>(d));
}

// A synthetic dataset the size of `steps` batches of Fashion-MNIST-like samples.
mo::data::Dataset synthetic(std::size_t samples, std::size_t width) {
  std::vector<float> features(samples * width);
  std::vector<std::int32_t> labels(samples);
  mo::Rng rng{1};
  for (float& f : features) f = rng.uniform(0.0f, 1.0f);
  for (std::size_t i = 0; i < samples; ++i) labels[i] = static_cast<std::int32_t>(i % 10);
  return mo::data::from(std::move(features), std::move(labels), width);
}

// One epoch over `batches`, with a step of `t_step` per batch; returns seconds.
template <class R>
double epoch(R& batches, Seconds t_step, std::int64_t& checksum) {
  const auto start = Clock::now();
  for (const auto& b : batches) {
    checksum += b.labels()[0];
    wait_for(t_step);
  }
  return Seconds(Clock::now() - start).count();
}

void overlap(const Options& o) {
  std::printf(
      "(a) overlap: %d steps of batch %zu; the source waits t_load per batch, the step "
      "t_step\n",
      o.steps, o.batch);
  std::printf("%8s %8s | %10s %10s | %10s %8s | %s\n", "t_load", "t_step", "serial s", "sum x n",
              "prefetch s", "depth", "prefetch / (max x steps)");
  const auto ds = synthetic(static_cast<std::size_t>(o.steps) * o.batch, 784);
  struct Case {
    double load_ms, step_ms;
  };
  for (const Case c : {Case{2.0, 1.0}, Case{1.0, 2.0}, Case{2.0, 2.0}, Case{10.0, 5.0},
                       Case{5.0, 10.0}, Case{10.0, 10.0}}) {
    const Seconds t_load(c.load_ms / 1e3), t_step(c.step_ms / 1e3);
    // The load: each batch is ready t_load after the source was asked for it.
    auto slow = [t_load](const mo::data::Batch& b) -> const mo::data::Batch& {
      wait_for(t_load);
      return b;
    };
    std::int64_t checksum = 0;
    auto serial = ds | mo::data::batch(o.batch) | mo::data::map(slow);
    const double serial_s = epoch(serial, t_step, checksum);
    auto ahead = ds | mo::data::batch(o.batch) | mo::data::map(slow) |
                 mo::data::prefetch(mo::data::autotune);
    double best = 1e30;
    for (int e = 0; e < 3; ++e) best = std::min(best, epoch(ahead, t_step, checksum));
    const double ideal = std::max(t_load, t_step).count() * o.steps;
    std::printf("%6.2fms %6.2fms | %10.4f %10.4f | %10.4f %8zu | %.4f%s\n", c.load_ms, c.step_ms,
                serial_s, (t_load + t_step).count() * o.steps, best, ahead.depth(), best / ideal,
                checksum < 0 ? "!" : "");
  }
}

void throughput(const Options& o) {
  const auto loaded_at = Clock::now();
  auto [train, test] = mo::data::fashion_mnist(o.data);
  std::printf(
      "\n(b) throughput over Fashion-MNIST in memory: %zu samples of %zu floats (%.1f MB), "
      "loaded in %.2f s; best of %d epochs\n",
      train.size(), train.width(), double(train.features().size_bytes()) / 1e6,
      Seconds(Clock::now() - loaded_at).count(), o.epochs);
  const std::size_t n = train.size(), width = train.width();
  const double bytes = double(n) * double(width * sizeof(float) + sizeof(std::int32_t));
  auto report = [&](const char* name, double seconds) {
    std::printf("  %-52s %8.4f s  %12.0f elements/s  %7.2f GB/s\n", name, seconds,
                double(n) / seconds, bytes / seconds / 1e9);
  };
  auto best_of = [&](auto&& run) {
    double best = 1e30;
    for (int e = 0; e < o.epochs; ++e) {
      const auto start = Clock::now();
      run();
      best = std::min(best, Seconds(Clock::now() - start).count());
    }
    return best;
  };

  std::vector<float> dst(n * width);
  std::vector<std::int32_t> dst_labels(n);
  const double seq = best_of([&] {
    std::memcpy(dst.data(), train.features().data(), train.features().size_bytes());
    std::memcpy(dst_labels.data(), train.labels().data(), train.labels().size_bytes());
  });
  report("memcpy, sequential (the same bytes)", seq);

  // What batching writes: the same bytes, in order, a batch at a time into one reused buffer.
  std::vector<float> batch_buf(o.batch * width);
  std::vector<std::int32_t> batch_labels(o.batch);
  std::int64_t checksum = 0;
  report("memcpy, in order, batch by batch into one buffer", best_of([&] {
           for (std::size_t start = 0; start < n; start += o.batch) {
             const std::size_t rows = std::min(o.batch, n - start);
             std::memcpy(batch_buf.data(), train.features().data() + start * width,
                         rows * width * sizeof(float));
             std::memcpy(batch_labels.data(), train.labels().data() + start,
                         rows * sizeof(std::int32_t));
             checksum += batch_labels[0];
           }
         }));

  // The floor for a shuffled batching: rows gathered in a random order into a batch buffer.
  std::vector<std::uint32_t> order(n);
  std::iota(order.begin(), order.end(), 0u);
  mo::Rng rng{2};
  for (std::size_t i = n - 1; i > 0; --i) std::swap(order[i], order[rng.below(i + 1)]);
  const double gather = best_of([&] {
    for (std::size_t start = 0; start < n; start += o.batch) {
      const std::size_t rows = std::min(o.batch, n - start);
      for (std::size_t r = 0; r < rows; ++r) {
        const std::size_t src = order[start + r];
        std::memcpy(batch_buf.data() + r * width, train.features().data() + src * width,
                    width * sizeof(float));
        batch_labels[r] = train.labels()[src];
      }
      checksum += batch_labels[0];
    }
  });
  report("memcpy, rows gathered in shuffled order, by batch", gather);

  auto batched = train | mo::data::batch(o.batch);
  report("memopt batch", best_of([&] {
           for (const auto& b : batched) checksum += b.labels()[0];
         }));
  auto shuffled = train | mo::data::shuffle(60'000, 1) | mo::data::batch(o.batch);
  const double memopt_s = best_of([&] {
    for (const auto& b : shuffled) checksum += b.labels()[0];
  });
  report("memopt shuffle(60000) | batch", memopt_s);
  auto prefetched = train | mo::data::shuffle(60'000, 1) | mo::data::batch(o.batch) |
                    mo::data::prefetch(mo::data::autotune);
  report("memopt shuffle(60000) | batch | prefetch(autotune)", best_of([&] {
           for (const auto& b : prefetched) checksum += b.labels()[0];
         }));
  std::printf("  memopt shuffle | batch vs memcpy: %.2fx the sequential time, %.2fx the gather's\n",
              memopt_s / seq, memopt_s / gather);
  // One line for benchmarks/compare/tfdata_pipeline.py to read.
  std::printf("RESULT memopt_shuffle_batch_elements_per_s=%.0f batch=%zu checksum=%lld\n",
              double(n) / memopt_s, o.batch, static_cast<long long>(checksum));
}

[[noreturn]] void usage(const char* why) {
  std::fprintf(stderr,
               "%s\nusage: bench_data_pipeline [--part overlap|throughput|all] [--data DIR] "
               "[--epochs N] [--steps N] [--batch N]\n",
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
    if (flag == "--part")
      o.part = value;
    else if (flag == "--data")
      o.data = value;
    else if (flag == "--epochs")
      o.epochs = std::atoi(value);
    else if (flag == "--steps")
      o.steps = std::atoi(value);
    else if (flag == "--batch")
      o.batch = static_cast<std::size_t>(std::atoll(value));
    else
      usage("unknown flag");
  }
  if (o.epochs < 1 || o.steps < 1 || o.batch < 1) usage("--epochs, --steps, --batch must be > 0");
  try {
    if (o.part == "overlap" || o.part == "all") overlap(o);
    if (o.part == "throughput" || o.part == "all") throughput(o);
  } catch (const mo::error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
