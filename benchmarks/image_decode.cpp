// Image decoding throughput (timings, never assertions): memopt's image_directory pipeline
// over a folder of JPEGs (examples/03_image_folder/make_dataset.py makes one), in images/s
// and images/s per decoding thread, at 1 and 2 threads; and, on one thread, where the time of
// one image goes: JPEG decoding at full size, decoding with DCT-domain scaling, and the stb
// resize after each.
//
//   bench_image_decode --dir DIR [--size 128] [--limit N] [--batch 32] [--threads 1,2]
//                      [--stages 0|1] [--json 0|1]
//
// Files are read once before timing, so the page cache holds them, and the pipeline runs once
// untimed before each timed pass (the peer scripts benchmarks/compare/tfdata_images.py and
// torch_images.py do the same). Each pass reports wall time and the process's CPU time (all
// its threads, getrusage), so that images per CPU-second compare cores actually used, not
// threads asked for. --stages 0 skips the per-stage timing; --json 1 adds one JSON line per
// thread count for benchmarks/compare/run_images.py.

#include <sys/resource.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <string_view>
#include <vector>

#include <memopt/data/batch.hpp>
#include <memopt/data/image_directory.hpp>
#include <memopt/io/image/decode.hpp>
#include <memopt/io/image/load.hpp>
#include <memopt/io/image/resize.hpp>

namespace mo = memopt;
namespace img = memopt::io::image;
using Clock = std::chrono::steady_clock;

namespace {

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

// CPU seconds of the calling thread so far: the per-stage times below are measured in it, so
// that other processes on a shared machine do not inflate them.
double thread_seconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

std::vector<std::size_t> parse_list(std::string_view s) {
  std::vector<std::size_t> out;
  while (!s.empty()) {
    const auto comma = s.find(',');
    out.push_back(std::stoul(std::string(s.substr(0, comma))));
    s = comma == std::string_view::npos ? std::string_view{} : s.substr(comma + 1);
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  std::string dir;
  int size = 128;
  std::size_t limit = 2000, batch = 32;
  std::vector<std::size_t> threads = {1, 2};
  bool stages = true, json = false;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string_view flag = argv[i];
    if (flag == "--dir") dir = argv[i + 1];
    if (flag == "--size") size = std::atoi(argv[i + 1]);
    if (flag == "--limit") limit = std::stoul(argv[i + 1]);
    if (flag == "--batch") batch = std::stoul(argv[i + 1]);
    if (flag == "--threads") threads = parse_list(argv[i + 1]);
    if (flag == "--stages") stages = std::string_view(argv[i + 1]) != "0";
    if (flag == "--json") json = std::string_view(argv[i + 1]) != "0";
  }
  if (dir.empty()) {
    std::fprintf(stderr,
                 "usage: bench_image_decode --dir DIR [--size 128] [--limit N] "
                 "[--batch 32] [--threads 1,2]\n");
    return 2;
  }
  auto all = mo::data::image_directory(dir, {.image_size = {size, size}, .shuffle = false});
  std::vector<mo::data::ImageFile> files(all.begin(), all.begin() + std::min(limit, all.size()));
  const auto loaded = mo::data::ImageDirectory::load_options(all.options());

  // Warm the page cache, and keep the bytes for the per-stage measurement.
  std::vector<std::vector<std::uint8_t>> bytes;
  std::size_t total_bytes = 0;
  for (const auto& f : files) {
    std::ifstream in(f.path(), std::ios::binary);
    bytes.emplace_back(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    total_bytes += bytes.back().size();
  }
  std::printf("%zu files (%.1f MB) from %s, resized to %dx%d rgb\n", files.size(),
              total_bytes / 1e6, dir.c_str(), size, size);

  // One thread, by stage.
  if (stages) {
    std::vector<std::uint8_t> out(loaded.bytes());
    double full = 0, scaled = 0, resize_full = 0, resize_scaled = 0, eighth = 0;
    for (const auto& b : bytes) {
      double t0 = thread_seconds();
      const img::Image a = img::decode(b, img::ColorMode::rgb);
      full += thread_seconds() - t0;
      t0 = thread_seconds();
      img::resize_into(a, out, size, size);
      resize_full += thread_seconds() - t0;
      t0 = thread_seconds();
      const img::Image s = img::decode(b, img::ColorMode::rgb, size, size);
      scaled += thread_seconds() - t0;
      t0 = thread_seconds();
      img::resize_into(s, out, size, size);
      resize_scaled += thread_seconds() - t0;
      // 1/8, the least libjpeg-turbo can decode (one value per 8x8 block): every bit of the
      // file is still entropy-decoded, so this is the floor of any JPEG decode of the file.
      t0 = thread_seconds();
      const img::Image e = img::decode(b, img::ColorMode::rgb, 1, 1);
      eighth += thread_seconds() - t0;
    }
    const double n = static_cast<double>(bytes.size());
    std::printf(
        "per image, 1 thread, CPU time: decode full %.2f ms + stb resize %.2f ms = %.2f ms; "
        "decode DCT-scaled %.2f ms + stb resize %.2f ms = %.2f ms (%.1fx); "
        "floor (decode at 1/8, entropy decoding alone, nearly) %.2f ms\n",
        1e3 * full / n, 1e3 * resize_full / n, 1e3 * (full + resize_full) / n, 1e3 * scaled / n,
        1e3 * resize_scaled / n, 1e3 * (scaled + resize_scaled) / n,
        (full + resize_full) / (scaled + resize_scaled), 1e3 * eighth / n);
  }

  // The pipeline: list -> decode on threads -> batch; one untimed pass, then the timed one.
  for (std::size_t t : threads) {
    const auto pass = [&] {
      std::size_t images = 0;
      for (const mo::data::ImageBatch& b :
           files | all.decode({.threads = t}) | mo::data::batch(static_cast<std::ptrdiff_t>(batch)))
        images += b.size();
      return images;
    };
    pass();
    const double cpu0 = cpu_seconds();
    const auto t0 = Clock::now();
    const std::size_t images = pass();
    const double s = seconds_since(t0), cpu = cpu_seconds() - cpu0;
    std::printf(
        "memopt image_directory | decode(threads=%zu) | batch(%zu): %zu images in %.2f s "
        "= %.0f images/s, %.0f images/s/thread; %.2f CPU s = %.0f images per CPU-second\n",
        t, batch, images, s, images / s, images / s / static_cast<double>(t), cpu, images / cpu);
    if (json) {
      std::printf(
          "{\"system\": \"memopt\", \"threads\": %zu, \"images\": %zu, \"wall_s\": %.4f, "
          "\"cpu_s\": %.4f}\n",
          t, images, s, cpu);
    }
    std::fflush(stdout);
  }
  return 0;
}
