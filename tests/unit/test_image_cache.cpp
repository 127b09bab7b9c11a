// data::image_cache(path): written once from the decoded images, memory-mapped afterwards
// (also by a new pipeline, as a later run would), shuffled after without copies, refused when
// the file is not a complete cache, never left half-written.

#include <doctest/doctest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

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
  auto cached = dir | dir.decode({.threads = 2}) | data::image_cache(file);
  CHECK_FALSE(fs::exists(file));

  const Pass first = collect(cached | data::batch(4));
  CHECK(first.labels.size() == 11);
  CHECK(dir.decoder().attempted() == 11);
  CHECK(fs::exists(file));
  CHECK(fs::file_size(file) == 11 * (4 + 12 * 16 * 3) + 32);

  // Against decoding without a cache.
  const Pass direct = collect(dir | dir.decode() | data::batch(4));
  CHECK(first.labels == direct.labels);
  CHECK(first.images == direct.images);

  const std::size_t decoded = dir.decoder().attempted();
  const Pass second = collect(cached | data::batch(4));
  CHECK(second.images == first.images);
  // A new pipeline finds the file, as a later run would: nothing decoded.
  auto again = dir | dir.decode() | data::image_cache(file);
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
  auto cached = dir | dir.decode() | data::image_cache(file);
  CHECK_THROWS_WITH_AS(cached.begin(), doctest::Contains(file.string().c_str()), memopt::error);

  // A decoding error during the first pass: raised, and no cache file appears.
  fs::remove(file);
  auto failing = dir | dir.decode() | data::image_cache(file);
  CHECK_THROWS_WITH_AS(failing.begin(), doctest::Contains("zz.png"), memopt::error);
  CHECK_FALSE(fs::exists(file));
  std::size_t leftovers = 0;
  for (const auto& e : fs::directory_iterator(tmp.path)) leftovers += e.is_regular_file();
  CHECK(leftovers == 0);
}
