// data::image_cache(path, source): written once from the decoded images, memory-mapped
// afterwards (also by a new pipeline, as a later run would), shuffled after without copies,
// never left half-written; a file that is not a complete cache of this format, is corrupt, or
// was made with other options or files is refused with an error naming it, never replayed.

#include <doctest/doctest.h>
#include <sys/stat.h>
#include <zlib.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "child_process.hpp"
#include "image_files.hpp"
#include "memopt/core/error.hpp"
#include "memopt/data/batch.hpp"
#include "memopt/data/image_cache.hpp"
#include "memopt/data/image_directory.hpp"
#include "memopt/data/shuffle.hpp"
#include "temp_dir.hpp"

namespace data = memopt::data;
namespace fs = std::filesystem;
using memopt::testing::TempDir;

namespace {

// 11 images in 2 classes; with `broken`, one more file that is not an image.
fs::path make_tree(const TempDir& tmp, bool broken = false) {
  const fs::path root = tmp / "tree";
  fs::create_directories(root / "a");
  fs::create_directories(root / "b");
  for (int i = 0; i < 11; ++i) {
    const int h = 20 + 3 * i, w = 30 - i;
    const auto px = memopt::testing::pattern(h, w, 3, i);
    memopt::testing::write_png(root / (i % 2 ? "a" : "b") / ("i" + std::to_string(i) + ".png"), px,
                               h, w, 3);
  }
  if (broken) memopt::testing::write_bytes(root / "b" / "zz.png", "garbage", 7);
  return root;
}

struct Pass {
  std::vector<std::int32_t> labels;
  std::vector<std::vector<std::uint8_t>> images;
};

template <class R>
Pass collect(R&& batches) {
  Pass p;
  for (const data::ImageBatch& b : batches) {
    for (std::size_t i = 0; i < b.size(); ++i) {
      p.labels.push_back(b.labels()[i]);
      p.images.emplace_back(b.image(i).begin(), b.image(i).end());
    }
  }
  return p;
}

}  // namespace

TEST_CASE("image_cache decodes once and replays the file") {
  TempDir tmp;
  const auto dir =
      data::image_directory(make_tree(tmp), {.image_size = {12, 16}, .shuffle = false});
  const fs::path file = tmp / "train.cache";
  auto cached = dir | dir.decode({.threads = 2}) | data::image_cache(file, dir);
  CHECK_FALSE(fs::exists(file));

  const Pass first = collect(cached | data::batch(4));
  CHECK(first.labels.size() == 11);
  CHECK(dir.decoder().attempted() == 11);
  CHECK(fs::exists(file));
  // Each record: its checksum, its label, its pixels; then the trailer.
  CHECK(fs::file_size(file) == 11 * (8 + 12 * 16 * 3) + 96);

  // Against decoding without a cache.
  const Pass direct = collect(dir | dir.decode() | data::batch(4));
  CHECK(first.labels == direct.labels);
  CHECK(first.images == direct.images);

  const std::size_t decoded = dir.decoder().attempted();
  const Pass second = collect(cached | data::batch(4));
  CHECK(second.images == first.images);
  // A new pipeline finds the file, as a later run would: nothing decoded.
  auto again = dir | dir.decode() | data::image_cache(file, dir);
  const Pass third = collect(again | data::batch(5));
  CHECK(third.labels == first.labels);
  CHECK(third.images == first.images);
  CHECK(dir.decoder().attempted() == decoded);

  // Shuffled after the cache: the same images, in another order.
  const Pass shuffled = collect(cached | data::shuffle(11, 3) | data::batch(4));
  CHECK(shuffled.labels != first.labels);
  for (std::size_t i = 0; i < shuffled.images.size(); ++i) {
    const auto at = std::find(first.images.begin(), first.images.end(), shuffled.images[i]);
    REQUIRE(at != first.images.end());
    CHECK(shuffled.labels[i] == first.labels[static_cast<std::size_t>(at - first.images.begin())]);
  }
}

TEST_CASE("image_cache refuses a file that is not a complete cache, and leaves none on error") {
  TempDir tmp;
  const auto root = make_tree(tmp, true);
  const fs::path file = tmp / "c.cache";
  memopt::testing::write_bytes(file, "not a cache at all, just some bytes", 35);
  const auto dir = data::image_directory(root, {.image_size = {8, 8}, .shuffle = false});
  auto cached = dir | dir.decode() | data::image_cache(file, dir);
  CHECK_THROWS_WITH_AS(cached.begin(), doctest::Contains(file.string().c_str()), memopt::error);

  // A decoding error during the first pass: raised, and no cache file appears.
  fs::remove(file);
  auto failing = dir | dir.decode() | data::image_cache(file, dir);
  CHECK_THROWS_WITH_AS(failing.begin(), doctest::Contains("zz.png"), memopt::error);
  CHECK_FALSE(fs::exists(file));
  std::size_t leftovers = 0;
  for (const auto& e : fs::directory_iterator(tmp.path)) leftovers += e.is_regular_file();
  CHECK(leftovers == 0);
}

namespace {

std::vector<char> read_all(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// The first pass over `dir`'s images through a cache at `file`, in a child process (a crafted
// file may crash a reader that trusts it): "replayed N images", or "exception: " and the
// error's message, or how the child ended.
std::string replay(const data::ImageDirectory& dir, const fs::path& file) {
  const auto r = memopt::testing::run_in_child(
      [&] {
        auto cached = dir | dir.decode() | data::image_cache(file, dir);
        std::size_t n = 0;
        for (const data::ImageView& img : cached) n += img.pixels.size() > 0;
        return "replayed " + std::to_string(n) + " images";
      },
      std::chrono::seconds(20));
  return r.finished ? r.output : r.describe();
}

// Checks that `out` is an error naming `file` and telling to delete it, with `what` in it.
void check_refused(const std::string& out, const fs::path& file, const std::string& what) {
  CAPTURE(out);
  CHECK(out.starts_with("exception: data::image_cache: " + file.string() + ": "));
  CHECK(out.find(what) != std::string::npos);
  CHECK(out.find("delete " + file.string() + " to rebuild the cache") != std::string::npos);
}

template <class T>
void put(std::vector<char>& bytes, std::size_t at, T value) {
  std::memcpy(bytes.data() + at, &value, sizeof(value));
}

}  // namespace

TEST_CASE("image_cache refuses crafted, cut, corrupt and old-format files, naming them") {
  TempDir tmp;
  const auto root = make_tree(tmp);
  const auto dir = data::image_directory(root, {.image_size = {12, 16}, .shuffle = false});
  const fs::path file = tmp / "c.cache";

  // 32 bytes that passed the old check: 2^62 records of 8 bytes "fill" 0 bytes, since the
  // product wrapped; the old reader then ran off the map and died of SIGBUS.
  std::vector<char> crafted(32, 0);
  std::memcpy(crafted.data(), "MOIMGC1", 8);
  put(crafted, 8, std::uint64_t{1} << 62);
  put(crafted, 16, std::uint32_t{1});
  put(crafted, 20, std::uint32_t{1});
  put(crafted, 24, std::uint32_t{4});
  memopt::testing::write_bytes(file, crafted.data(), crafted.size());
  check_refused(replay(dir, file), file, "found one of version 1");

  // The same in the current format, with a valid trailer checksum: its records cannot fit.
  data::detail::ImageCacheTrailer t;
  t.count = std::uint64_t{1} << 61;
  t.height = 1u << 20;
  t.width = 1u << 20;
  t.channels = 1;
  std::memcpy(t.options, "grayscale, bilinear", 19);
  t.crc = data::detail::trailer_crc(t);
  memopt::testing::write_bytes(file, &t, sizeof(t));
  check_refused(replay(dir, file), file, "found 0 bytes of records");

  // A real cache, then damaged copies of it.
  fs::remove(file);
  CHECK(replay(dir, file) == "replayed 11 images");
  const std::vector<char> good = read_all(file);
  const std::size_t record = 8 + 12 * 16 * 3;
  REQUIRE(good.size() == 11 * record + 96);
  CHECK(replay(dir, file) == "replayed 11 images");

  // One flipped bit in image 3's pixels.
  std::vector<char> bytes = good;
  bytes[3 * record + 100] ^= 0x10;
  memopt::testing::write_bytes(file, bytes.data(), bytes.size());
  check_refused(replay(dir, file), file, "image 3 of 11 fails its checksum");

  // A label changed.
  bytes = good;
  bytes[5 * record + 4] ^= 1;
  memopt::testing::write_bytes(file, bytes.data(), bytes.size());
  check_refused(replay(dir, file), file, "image 5 of 11 fails its checksum");

  // Two records swapped: each checksum covers its index too.
  bytes = good;
  std::swap_ranges(bytes.begin() + record, bytes.begin() + 2 * record, bytes.begin() + 2 * record);
  memopt::testing::write_bytes(file, bytes.data(), bytes.size());
  check_refused(replay(dir, file), file, "image 1 of 11 fails its checksum");

  // A record cut out of the middle, the trailer kept.
  bytes = good;
  bytes.erase(bytes.begin() + 2 * record, bytes.begin() + 3 * record);
  memopt::testing::write_bytes(file, bytes.data(), bytes.size());
  check_refused(replay(dir, file), file, "expected 11 records of 584 bytes");

  // A flipped bit in the trailer (its width).
  bytes = good;
  bytes[good.size() - 96 + 36] ^= 0x01;
  memopt::testing::write_bytes(file, bytes.data(), bytes.size());
  check_refused(replay(dir, file), file, "trailer fails its checksum");

  // Garbage, and a file shorter than a trailer.
  const std::string garbage(100, 'x');
  memopt::testing::write_bytes(file, garbage.data(), garbage.size());
  check_refused(replay(dir, file), file, "found 100 bytes that do not end in one");
  memopt::testing::write_bytes(file, "short", 5);
  check_refused(replay(dir, file), file, "found 5 bytes");

  // A complete cache of the old format (one 2 x 2 RGB image and its 32-byte trailer): read
  // with the old layout today, it would be replayed as if it were current.
  std::vector<char> old(4 + 12 + 32, 0);
  std::memcpy(old.data() + 16, "MOIMGC1", 8);
  put(old, 24, std::uint64_t{1});
  put(old, 32, std::uint32_t{2});
  put(old, 36, std::uint32_t{2});
  put(old, 40, std::uint32_t{3});
  memopt::testing::write_bytes(file, old.data(), old.size());
  check_refused(replay(dir, file), file,
                "expected an image cache of format version 2, found one of version 1");

  // Not a regular file: a FIFO's open would block forever.
  fs::remove(file);
  REQUIRE(::mkfifo(file.c_str(), 0600) == 0);
  check_refused(replay(dir, file), file, "expected a regular file, found a FIFO");
}

TEST_CASE("image_cache refuses a cache made with other options or other files") {
  TempDir tmp;
  const auto root = make_tree(tmp);
  const fs::path file = tmp / "c.cache";
  const data::ImageDirectoryOptions made{.image_size = {12, 16}, .seed = 5};
  const auto dir = data::image_directory(root, made);
  CHECK(replay(dir, file) == "replayed 11 images");

  // The same files in another order (a seed drawn per run, the default): the same images.
  auto reordered = made;
  reordered.seed = 6;
  CHECK(replay(data::image_directory(root, reordered), file) == "replayed 11 images");

  const std::string found = "found a cache made with other options (12 x 16 rgb, bilinear)";
  auto with = [&](auto change) {
    auto o = made;
    change(o);
    return replay(data::image_directory(root, o), file);
  };
  // As many pixels, transposed.
  check_refused(with([](auto& o) {
                  o.image_size = {16, 12};
                }),
                file, "expected images of 16 x 12 rgb, bilinear, " + found);
  check_refused(with([](auto& o) { o.color_mode = data::ColorMode::grayscale; }), file,
                "expected images of 12 x 16 grayscale, bilinear, " + found);
  check_refused(with([](auto& o) { o.interpolation = data::Interpolation::area; }), file,
                "expected images of 12 x 16 rgb, area, " + found);
  check_refused(with([](auto& o) { o.crop_to_aspect_ratio = true; }), file,
                "expected images of 12 x 16 rgb, bilinear, crop_to_aspect_ratio, " + found);

  // Another subset of the same folder, or other class_names.
  check_refused(with([](auto& o) {
                  o.validation_split = 0.3;
                  o.subset = data::Subset::validation;
                }),
                file, "expected a cache of the 3 files listed, found one made from 11 other files");
  check_refused(with([](auto& o) {
                  o.class_names = {"b", "a"};
                }),
                file,
                "expected a cache of the 11 files listed, found one made from 11 other files");

  // A source that gives only its options: checked against those.
  auto by_options = [&](memopt::io::image::LoadOptions o) {
    const auto r = memopt::testing::run_in_child(
        [&] {
          auto cached = dir | dir.decode() | data::image_cache(file, o);
          return std::to_string(std::ranges::distance(cached)) + " images";
        },
        std::chrono::seconds(20));
    return r.finished ? r.output : r.describe();
  };
  CHECK(by_options(dir.decoder().options()) == "11 images");
  check_refused(by_options({.height = 12, .width = 12}), file,
                "expected images of 12 x 12 rgb, bilinear, " + found);
}
