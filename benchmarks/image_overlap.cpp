// Overlap of image loading and training (issue 11; timings, never assertions): on the first
// --limit files of DIR, at 128x128 rgb, with examples/03_image_folder's model and policy,
//
//   load     the pipeline alone, drained: files | decode(threads) | batch(n);
//   compute  one training epoch (fit) over the same images already decoded into memory;
//   both     one training epoch over the pipeline with prefetch(2): what image_folder runs.
//
// The three see the same batches; rounds are interleaved (load, compute, both) so that the
// machine's other load falls on each alike, and medians are printed with
// both / max(load, compute): 1.00 is perfect overlap, load + compute over max is none.
//
//   OMP_NUM_THREADS=1 bench_image_overlap --dir DIR [--limit 2000] [--batch 32]
//       [--threads 1] [--rounds 3]
//
// Each phase also reports the cores it kept busy (the process's CPU time over its wall time):
// overlap needs a second core free, which a shared machine may not give; "both" at about one
// core busy means the phases ran one after the other for want of a core, not of overlap.
//
// The files are read once first, so the page cache holds them, and one untimed epoch over
// memory warms the model (kernels chosen, scratch allocated).

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <ratio>
#include <string>
#include <string_view>
#include <vector>

#include <memopt/data/image_dataset.hpp>
#include <memopt/data/image_directory.hpp>
#include <memopt/memopt.hpp>

namespace mo = memopt;
using Clock = std::chrono::steady_clock;

namespace {

// examples/03_image_folder's model, policy and backend.
using SmallCnn = mo::Sequential<
    mo::Rescaling<std::ratio<1, 255>>, mo::Conv2D<16, 3, mo::Strides<2>, mo::Same, mo::ReLU>,
    mo::MaxPooling2D<2>, mo::Conv2D<32, 3, mo::Same, mo::ReLU>, mo::MaxPooling2D<2>,
    mo::Conv2D<64, 3, mo::Same, mo::ReLU>, mo::GlobalAveragePooling2D, mo::Dense<10, mo::Softmax>>;
using Model = mo::Model<SmallCnn, mo::Input<128, 128, 3>, mo::mixed_bfloat16, mo::cpu>;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// CPU seconds (user + system) of every thread of this process so far.
double cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  const auto s = [](const timeval& t) { return static_cast<double>(t.tv_sec) + 1e-6 * t.tv_usec; };
  return s(u.ru_utime) + s(u.ru_stime);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// The first line of /proc/loadavg, or "?\n".
std::string loadavg() {
  std::ifstream in("/proc/loadavg");
  std::string line;
  return std::getline(in, line) ? line + "\n" : "?\n";
}

}  // namespace

int main(int argc, char** argv) {
  std::string dir;
  std::size_t limit = 2000, batch = 32, threads = 1;
  int rounds = 3;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string_view flag = argv[i];
    if (flag == "--dir") dir = argv[i + 1];
    if (flag == "--limit") limit = std::stoul(argv[i + 1]);
    if (flag == "--batch") batch = std::stoul(argv[i + 1]);
    if (flag == "--threads") threads = std::stoul(argv[i + 1]);
    if (flag == "--rounds") rounds = std::atoi(argv[i + 1]);
  }
  if (dir.empty() || rounds < 1) {
    std::fprintf(stderr,
                 "usage: bench_image_overlap --dir DIR [--limit 2000] [--batch 32] "
                 "[--threads 1] [--rounds 3]\n");
    return 2;
  }
  const auto all = mo::data::image_directory(dir, {.image_size = {128, 128}, .shuffle = false});
  const mo::data::ImageDirectory files = all.take(limit);
  for (const mo::data::ImageFile f : files) {  // into the page cache
    std::ifstream in(f.path(), std::ios::binary);
    in.ignore(std::numeric_limits<std::streamsize>::max());
  }
  const mo::data::DecodeOptions decoding{.threads = threads};
  const auto rows = static_cast<std::ptrdiff_t>(batch);

  // The same images in memory, for the compute-only epochs.
  std::vector<std::uint8_t> pixels;
  std::vector<std::int32_t> labels;
  for (const mo::data::LabeledImage& img : files | files.decode(decoding)) {
    pixels.insert(pixels.end(), img.pixels.begin(), img.pixels.end());
    labels.push_back(img.label);
  }
  const mo::data::ImageDataset memory(std::move(pixels), std::move(labels), 128, 128, 3);

  Model model{1337};
  model.compile(mo::Adam{{.learning_rate = 1e-3}}, mo::SparseCategoricalCrossentropy{},
                mo::metrics::Accuracy{});
  model.fit(memory | mo::data::batch(rows), {.epochs = 1, .verbose = 0});  // warm-up

  std::vector<double> load, compute, both, busy_load, busy_compute, busy_both;
  // Times `phase`, appending its wall seconds to `wall` and the cores it kept busy to `busy`.
  const auto timed = [](auto&& phase, std::vector<double>& wall, std::vector<double>& busy) {
    const double cpu0 = cpu_seconds();
    const auto t0 = Clock::now();
    phase();
    wall.push_back(seconds_since(t0));
    busy.push_back((cpu_seconds() - cpu0) / wall.back());
  };
  for (int r = 0; r < rounds; ++r) {
    std::size_t images = 0;
    timed(
        [&] {
          for (const mo::data::ImageBatch& b :
               files | files.decode(decoding) | mo::data::batch(rows))
            images += b.size();
        },
        load, busy_load);
    timed([&] { model.fit(memory | mo::data::batch(rows), {.epochs = 1, .verbose = 0}); }, compute,
          busy_compute);
    timed(
        [&] {
          model.fit(files | files.decode(decoding) | mo::data::batch(rows) | mo::data::prefetch(2),
                    {.epochs = 1, .verbose = 0});
        },
        both, busy_both);
    std::printf(
        "round %d: %zu images; load %.3f s (%.2f cores busy), compute %.3f s (%.2f), both %.3f s "
        "(%.2f); load average %s",
        r + 1, images, load.back(), busy_load.back(), compute.back(), busy_compute.back(),
        both.back(), busy_both.back(), loadavg().c_str());
    std::fflush(stdout);
  }
  const double l = median(load), c = median(compute), b = median(both);
  const double bound = std::max(l, c);
  std::printf("cores busy (medians): load %.2f, compute %.2f, both %.2f\n", median(busy_load),
              median(busy_compute), median(busy_both));
  std::printf(
      "medians of %d rounds, %zu images, batch %zu, %zu decoding thread(s): load %.3f s, "
      "compute %.3f s, both %.3f s; both / max(load, compute) = %.3f (target <= 1.05); "
      "(load + compute) / max = %.3f\n",
      rounds, memory.size(), batch, threads, l, c, b, b / bound, (l + c) / bound);
  std::printf(
      "{\"load_s\": %.4f, \"compute_s\": %.4f, \"both_s\": %.4f, \"images\": %zu, "
      "\"batch\": %zu, \"threads\": %zu, \"rounds\": %d}\n",
      l, c, b, memory.size(), batch, threads, rounds);
  return 0;
}
