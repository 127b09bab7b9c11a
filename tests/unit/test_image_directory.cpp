// data::image_directory: Keras's listing (classes, order, labels), its seeded shuffle and split
// bit for bit (numpy's RandomState, fixture from tests/data/images/make_fixtures.py), lazy
// decoding on threads with a bound on bytes in flight, errors and skips, ImageBatch.

#include <doctest/doctest.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include "child_process.hpp"
#include "image_files.hpp"
#include "memopt/core/error.hpp"
#include "memopt/data/batch.hpp"
#include "memopt/data/image_batch.hpp"
#include "memopt/data/image_directory.hpp"
#include "memopt/data/prefetch.hpp"
#include "memopt/data/shuffle.hpp"
#include "memopt/io/image/load.hpp"
#include "temp_dir.hpp"

namespace data = memopt::data;
namespace fs = std::filesystem;
using memopt::testing::TempDir;

namespace {

// A tree of 37 files in 3 classes (+ things that are not listed), in the order Keras lists
// them when not shuffling; `broken` adds a truncated JPEG as dogs/d12.jpg.
struct Tree {
  TempDir tmp;
  std::vector<std::string> sorted;  // paths in Keras's unshuffled order
  std::vector<std::int32_t> labels;

  explicit Tree(bool broken) {
    using namespace memopt::testing;
    const fs::path root = tmp.path;
    for (const char* d : {"birds", "cats/sub/deeper", "dogs", ".hidden"}) {
      fs::create_directories(root / d);
    }
    auto add = [&](const std::string& rel, std::int32_t label, int kind, int h, int w, int seed) {
      const fs::path p = root / rel;
      if (kind == 0) write_jpeg(p, pattern(h, w, 3, seed), h, w, 3);
      if (kind == 1) write_png(p, pattern(h, w, 3, seed), h, w, 3);
      if (kind == 2) write_bmp(p, pattern(h, w, 3, seed), h, w);
      if (kind == 3) write_jpeg(p, pattern(h, w, 1, seed), h, w, 1);
      if (kind == 4) write_png(p, pattern(h, w, 1, seed), h, w, 1);
      sorted.push_back(p.string());
      labels.push_back(label);
    };
    // birds: 5
    for (int i = 0; i < 5; ++i)
      add("birds/b" + std::to_string(i) + ".png", 0, i % 2 ? 1 : 4, 30 + i, 40, i);
    // cats: 7; upper case sorts first (byte order); then sub/, then sub/deeper/
    add("cats/Z.JPG", 1, 0, 64, 48, 10);
    add("cats/a.jpg", 1, 3, 48, 64, 11);
    add("cats/b.bmp", 1, 2, 33, 27, 12);
    add("cats/c.png", 1, 1, 20, 90, 13);
    add("cats/sub/a.jpeg", 1, 0, 100, 120, 14);
    add("cats/sub/b.png", 1, 4, 25, 25, 15);
    add("cats/sub/deeper/a.bmp", 1, 2, 40, 41, 16);
    // dogs: 25
    for (int i = 10; i < 35; ++i) {
      const std::string rel = "dogs/d" + std::to_string(i) + ".jpg";
      if (broken && i == 12) {
        write_jpeg(root / rel, pattern(50, 50, 3, i), 50, 50, 3);
        std::vector<char> bytes;
        {
          std::ifstream in(root / rel, std::ios::binary);
          bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
        }
        write_bytes(root / rel, bytes.data(), bytes.size() / 3);
        sorted.push_back((root / rel).string());
        labels.push_back(2);
      } else {
        add(rel, 2, i % 3 == 0 ? 3 : 0, 40 + i, 60 - i, i);
      }
    }
    // Not listed: a hidden class folder, a file at the top, files with other extensions.
    write_png(root / ".hidden/h.png", pattern(8, 8, 3), 8, 8, 3);
    write_png(root / "stray.png", pattern(8, 8, 3), 8, 8, 3);
    write_bytes(root / "cats/notes.txt", "hello", 5);
    write_bytes(root / "dogs/anim.gif", "GIF89a", 6);
  }
};

std::vector<int> numpy_order() {
  std::ifstream in(fs::path(MEMOPT_TEST_DATA_DIR) / "images" / "numpy_shuffle_seed1337_n37.txt");
  REQUIRE_MESSAGE(in.good(), "missing fixture numpy_shuffle_seed1337_n37.txt");
  std::vector<int> order{std::istream_iterator<int>(in), std::istream_iterator<int>()};
  REQUIRE(order.size() == 37);
  return order;
}

std::vector<std::string> paths_of(const data::ImageDirectory& dir) {
  std::vector<std::string> out;
  for (const data::ImageFile f : dir) out.push_back(f.path());
  return out;
}

}  // namespace

TEST_CASE("image_directory lists classes, files and labels as Keras does") {
  Tree tree(false);
  const auto dir = data::image_directory(tree.tmp.path, {.shuffle = false});
  CHECK(dir.class_names() == std::vector<std::string>{"birds", "cats", "dogs"});
  REQUIRE(dir.size() == 37);
  CHECK(paths_of(dir) == tree.sorted);
  for (std::size_t i = 0; i < dir.size(); ++i) CHECK(dir[i].label == tree.labels[i]);
}

TEST_CASE("image_directory takes explicit class_names in their order") {
  Tree tree(false);
  const auto dir =
      data::image_directory(tree.tmp.path, {.class_names = {"dogs", "birds"}, .shuffle = false});
  CHECK(dir.class_names() == std::vector<std::string>{"dogs", "birds"});
  REQUIRE(dir.size() == 30);
  // dogs (label 0) first, then birds (label 1), each in Keras's order.
  const std::vector<std::string> dogs(tree.sorted.begin() + 12, tree.sorted.end());
  const std::vector<std::string> birds(tree.sorted.begin(), tree.sorted.begin() + 5);
  auto paths = paths_of(dir);
  CHECK(std::vector<std::string>(paths.begin(), paths.begin() + 25) == dogs);
  CHECK(std::vector<std::string>(paths.begin() + 25, paths.end()) == birds);
  CHECK(dir[0].label == 0);
  CHECK(dir[29].label == 1);
  CHECK_THROWS_WITH_AS(data::image_directory(tree.tmp.path, {.class_names = {"cats", "cows"}}),
                       doctest::Contains("found \"cows\""), memopt::error);
}

TEST_CASE("image_directory shuffles and splits exactly as Keras for a seed") {
  Tree tree(false);
  const auto order = numpy_order();
  std::vector<std::string> keras;
  for (int i : order) keras.push_back(tree.sorted[static_cast<std::size_t>(i)]);

  const auto all = data::image_directory(tree.tmp.path, {.seed = 1337});
  CHECK(paths_of(all) == keras);

  // int(0.2 * 37) = 7 validation files: the last 7 of the shuffled list.
  const auto train = data::image_directory(
      tree.tmp.path, {.seed = 1337, .validation_split = 0.2, .subset = data::Subset::training});
  const auto val = data::image_directory(
      tree.tmp.path, {.seed = 1337, .validation_split = 0.2, .subset = data::Subset::validation});
  CHECK(paths_of(train) == std::vector<std::string>(keras.begin(), keras.begin() + 30));
  CHECK(paths_of(val) == std::vector<std::string>(keras.begin() + 30, keras.end()));

  auto [t2, v2] =
      data::image_directory_split(tree.tmp.path, {.seed = 1337, .validation_split = 0.2});
  CHECK(paths_of(t2) == paths_of(train));
  CHECK(paths_of(v2) == paths_of(val));
  CHECK(v2.class_names() == std::vector<std::string>{"birds", "cats", "dogs"});
  // Labels travel with their files.
  for (const data::ImageFile f : val) {
    const auto at = std::find(tree.sorted.begin(), tree.sorted.end(), f.path());
    REQUIRE(at != tree.sorted.end());
    CHECK(f.label == tree.labels[static_cast<std::size_t>(at - tree.sorted.begin())]);
  }
}

TEST_CASE("a listed file costs its name and 8 bytes, whatever its folder's path") {
  // The listing grows with the dataset (issue 11: 100,000 files must cost under 10% of an
  // epoch's peak), so each file keeps its name and an 8-byte record; its folder's path, here
  // over 100 characters, is stored once per folder.
  static_assert(sizeof(data::detail::ListedFile) == 8);
  TempDir tmp;
  const fs::path deep = tmp.path / std::string(100, 'p');
  constexpr int per_class = 400;
  for (const char* c : {"a", "b", "c"}) {
    fs::create_directories(deep / c);
    // Listing opens no file: empty ones are listed (and would fail only when decoded).
    for (int i = 0; i < per_class; ++i) {
      std::ofstream(deep / c / ("img_" + std::to_string(10000 + i) + ".jpg"));
    }
  }
  const std::size_t name = std::string("img_10000.jpg").size() + 1;  // with its '\0'
  const auto all = data::image_directory(deep, {.seed = 3});
  REQUIRE(all.size() == 3 * per_class);
  const double per_file = static_cast<double>(all.listing_bytes()) / 1200.0;
  MESSAGE("listing bytes per file: ", per_file, " (path ", all[0].path().size(), " chars)");
  CHECK(per_file >= 8 + name);  // the records and names are all counted
  // 8 + 14 bytes a file, plus 3 folder paths shared by 400 files each: at most 1 byte a file.
  CHECK(per_file <= 8 + name + 1);
  // A std::string per path would take its 32 bytes and a heap block for the 120 characters.
  CHECK(per_file * 3 < static_cast<double>(sizeof(std::string) + all[0].path().size()));

  // A split shares the listing: the subsets' records add up to the whole's, and no name is
  // stored twice.
  auto [train, val] = data::image_directory_split(deep, {.seed = 3, .validation_split = 0.25});
  CHECK(train.size() == 900);
  CHECK(val.size() == 300);
  CHECK(train.listing_bytes() - 900 * 8 == all.listing_bytes() - 1200 * 8);
  CHECK(val.listing_bytes() - 300 * 8 == all.listing_bytes() - 1200 * 8);
  // take(n) keeps n records of the same listing; labels and paths come from it.
  const auto first = train.take(10);
  REQUIRE(first.size() == 10);
  CHECK(first.listing_bytes() - 10 * 8 == all.listing_bytes() - 1200 * 8);
  for (std::size_t i = 0; i < 10; ++i) {
    CHECK(first[i].path() == train[i].path());
    CHECK(first[i].label == train[i].label);
    const std::string& cls = first.class_names()[static_cast<std::size_t>(first[i].label)];
    CHECK(first[i].path() == (deep / cls / first[i].name).string());
  }
  CHECK(train.take(5000).size() == 900);
}

TEST_CASE("image_directory refuses bad options and folders") {
  Tree tree(false);
  const auto root = tree.tmp.path;
  CHECK_THROWS_WITH_AS(
      data::image_directory(root, {.validation_split = 0.2, .subset = data::Subset::training}),
      doctest::Contains("expected a seed"), memopt::error);
  CHECK_THROWS_WITH_AS(data::image_directory(root, {.seed = 1, .validation_split = 0.2}),
                       doctest::Contains("set together"), memopt::error);
  CHECK_THROWS_WITH_AS(
      data::image_directory(root,
                            {.seed = 1, .validation_split = 1.5, .subset = data::Subset::training}),
      doctest::Contains("(0, 1)"), memopt::error);
  CHECK_THROWS_AS(data::image_directory(root / "nope"), memopt::error);
  CHECK_THROWS_WITH_AS(data::image_directory(root / "birds"),
                       doctest::Contains("one subfolder per class"), memopt::error);
}

TEST_CASE("decoding is lazy, ordered, and batches into ImageBatch") {
  Tree tree(false);
  const auto dir = data::image_directory(tree.tmp.path, {.image_size = {24, 32}, .shuffle = false});
  CHECK(dir.decoder().attempted() == 0);  // listing decodes nothing

  std::vector<std::int32_t> labels;
  std::size_t rows = 0, batches = 0;
  const memopt::io::image::LoadOptions load = data::ImageDirectory::load_options(dir.options());
  std::vector<std::uint8_t> expect(load.bytes());
  for (const data::ImageBatch& b : dir | dir.decode({.threads = 2}) | data::batch(8)) {
    const auto shape = b.shape();
    CHECK(shape[1] == 24);
    CHECK(shape[2] == 32);
    CHECK(shape[3] == 3);
    CHECK(b.pixels().size() == b.size() * 24 * 32 * 3);
    for (std::size_t i = 0; i < b.size(); ++i) {
      // Each row is that file loaded on its own.
      memopt::io::image::load_into(dir[rows + i].path(), load, expect);
      CHECK(std::equal(expect.begin(), expect.end(), b.image(i).begin()));
      labels.push_back(b.labels()[i]);
    }
    rows += b.size();
    ++batches;
  }
  CHECK(rows == 37);
  CHECK(batches == 5);
  CHECK(labels == tree.labels);

  // Shuffling names before decoding: every file once, in another order.
  std::vector<std::int32_t> shuffled;
  for (const data::LabeledImage& img :
       dir | data::shuffle(dir.size(), 7) | dir.decode({.threads = 2})) {
    CHECK(img.height == 24);
    shuffled.push_back(img.label);
  }
  CHECK(shuffled != tree.labels);
  std::sort(shuffled.begin(), shuffled.end());
  CHECK(shuffled == tree.labels);  // tree.labels is sorted by class already
}

TEST_CASE("grayscale and crop_to_aspect_ratio give one channel and the asked size") {
  Tree tree(false);
  const auto dir = data::image_directory(tree.tmp.path, {.color_mode = data::ColorMode::grayscale,
                                                         .image_size = {16, 16},
                                                         .shuffle = false,
                                                         .interpolation = data::Interpolation::area,
                                                         .crop_to_aspect_ratio = true});
  std::size_t n = 0;
  for (const data::ImageBatch& b : dir | dir.decode() | data::batch(37)) {
    CHECK(b.shape() == std::array<std::size_t, 4>{37, 16, 16, 1});
    n += b.size();
    // Not constant: the pattern survives.
    const auto [lo, hi] = std::minmax_element(b.pixels().begin(), b.pixels().end());
    CHECK(int(*hi) - int(*lo) > 50);
  }
  CHECK(n == 37);
}

TEST_CASE("a bad file raises an error naming it, or is skipped and counted") {
  Tree tree(true);
  const std::string bad = (tree.tmp.path / "dogs" / "d12.jpg").string();
  const auto dir = data::image_directory(tree.tmp.path, {.image_size = {16, 16}, .shuffle = false});
  std::size_t seen = 0;
  auto run = [&] {
    for (const data::ImageBatch& b : dir | dir.decode({.threads = 2}) | data::batch(4)) {
      seen += b.size();
    }
  };
  CHECK_THROWS_WITH_AS(run(), doctest::Contains(bad.c_str()), memopt::error);
  // The files before it arrived first: 5 birds, 7 cats, d10, d11 -> 3 full batches of 4.
  CHECK(seen == 12);

  const auto skip = data::image_directory(
      tree.tmp.path, {.image_size = {16, 16}, .shuffle = false, .on_error = data::OnError::skip});
  std::size_t rows = 0;
  for (const data::ImageBatch& b :
       skip | skip.decode({.threads = 2}) | data::batch(8) | data::prefetch(2)) {
    rows += b.size();
  }
  CHECK(rows == 36);
  CHECK(skip.skipped() == 1);
  const auto reasons = skip.decoder().skip_reasons();
  REQUIRE(reasons.size() == 1);
  CHECK(reasons[0].find(bad) != std::string::npos);
}

TEST_CASE("decoded bytes in flight stay within max_bytes_in_flight") {
  Tree tree(false);
  const auto dir = data::image_directory(tree.tmp.path, {.image_size = {20, 20}, .shuffle = false});
  const std::size_t image = dir.decoder().image_bytes();
  CHECK(image == 20 * 20 * 3);
  // Room for 4 images: 1 worker (of the 4 asked) building one, 2 ahead, the consumer's.
  const data::DecodeOptions opts{.threads = 4, .max_bytes_in_flight = 4 * image + 10};
  const auto plan = data::detail::decode_plan(opts, image);
  CHECK(plan.threads == 1);
  CHECK(plan.depth == 2);
  for (std::size_t fit = 3; fit < 40; ++fit) {
    const auto p =
        data::detail::decode_plan({.threads = 8, .max_bytes_in_flight = fit * image}, image);
    CAPTURE(fit);
    CHECK(p.threads >= 1);
    CHECK(p.depth >= 1);
    CHECK((p.depth + 1 + p.threads) * image <= fit * image);
  }
  std::size_t consumed = 0, peak = 0;
  for (const data::LabeledImage& img : dir | dir.decode(opts)) {
    ++consumed;
    CHECK(img.pixels.size() == image);
    // Decoded so far, beyond what the consumer has taken, is what the stage holds.
    peak = std::max(peak, dir.decoder().attempted() - consumed);
    std::this_thread::sleep_for(std::chrono::milliseconds(2));  // a slow consumer
  }
  CHECK(consumed == 37);
  MESSAGE("most decoded images held ahead of the consumer: ", peak);
  CHECK(peak <= 2);
  CHECK(peak >= 1);  // the workers did run ahead while the consumer was busy

  CHECK_THROWS_WITH_AS(dir | dir.decode({.max_bytes_in_flight = 2 * image + 100}),
                       doctest::Contains("at least 3 images"), memopt::error);
}

namespace {

// A folder with classes a (two PNGs) and b (one PNG): 3 images of 8 x 8.
fs::path small_tree(const TempDir& tmp) {
  const fs::path root = tmp / "small";
  fs::create_directories(root / "a");
  fs::create_directories(root / "b");
  for (const char* rel : {"a/1.png", "a/2.png", "b/3.png"}) {
    memopt::testing::write_png(root / rel, memopt::testing::pattern(8, 8, 3), 8, 8, 3);
  }
  return root;
}

// Decodes every file of `dir` on 2 threads in a child process (10 s at most): the rows
// decoded, the files skipped and the first reason, or the error raised.
std::string decode_in_child(const data::ImageDirectory& dir) {
  const auto r = memopt::testing::run_in_child(
      [&dir] {
        std::size_t rows = 0;
        for (const data::ImageBatch& b : dir | dir.decode({.threads = 2}) | data::batch(2)) {
          rows += b.size();
        }
        const auto reasons = dir.decoder().skip_reasons();
        return "rows " + std::to_string(rows) + ", skipped " + std::to_string(dir.skipped()) +
               (reasons.empty() ? std::string() : ": " + reasons[0]);
      },
      std::chrono::seconds(10));
  return r.finished ? r.output : r.describe();
}

}  // namespace

TEST_CASE("a FIFO named like an image is refused at listing and at opening, never waited on") {
  // Keras lists by name alone, so a FIFO named x.jpg is listed and its read blocks forever.
  // Here listing takes regular files (or links to them) only, and opening never blocks.
  TempDir tmp;
  const fs::path root = small_tree(tmp);
  const fs::path fifo = root / "a" / "pipe.jpg";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);

  // Under raise, listing names it; under skip, it is left out.
  const std::string listed = fifo.string() + ": expected a regular file, found a FIFO";
  CHECK_THROWS_WITH_AS(data::image_directory(root, {.image_size = {8, 8}, .shuffle = false}),
                       doctest::Contains(listed.c_str()), memopt::error);
  const auto skip = data::image_directory(
      root, {.image_size = {8, 8}, .shuffle = false, .on_error = data::OnError::skip});
  CHECK(skip.size() == 3);
  CHECK(decode_in_child(skip) == "rows 3, skipped 0");

  // A file swapped for a FIFO after listing: an error naming it when opened, which skip
  // skips. (A blocking open would wait for a writer that never comes.)
  fs::remove(fifo);
  const fs::path swapped = root / "a" / "2.png";
  for (const auto on_error : {data::OnError::raise, data::OnError::skip}) {
    fs::remove(swapped);
    memopt::testing::write_png(swapped, memopt::testing::pattern(8, 8, 3), 8, 8, 3);
    const auto dir =
        data::image_directory(root, {.image_size = {8, 8}, .shuffle = false, .on_error = on_error});
    REQUIRE(dir.size() == 3);
    fs::remove(swapped);
    REQUIRE(::mkfifo(swapped.c_str(), 0600) == 0);
    const std::string why = swapped.string() + ": expected a regular file, found a FIFO";
    const std::string out = decode_in_child(dir);
    CAPTURE(out);
    CHECK(out.find(why) != std::string::npos);
    if (on_error == data::OnError::raise) {
      CHECK(out.starts_with("exception: "));
    } else {
      CHECK(out.starts_with("rows 2, skipped 1: "));
    }
  }
}

TEST_CASE("follow_links lists a folder reached by several links once, and ends on loops") {
  // os.walk(followlinks=True), which Keras uses, remembers nothing: it lists a folder once per
  // path to it and descends a link to an ancestor until the system refuses the path; two such
  // links never end. Here each folder of a class is listed once, at its path without links
  // when it has one, else at the first path in sorted order.
  TempDir tmp;
  const fs::path root = small_tree(tmp);
  const fs::path a = root / "a";
  fs::create_directories(a / "sub");
  fs::create_directories(tmp / "outside");
  memopt::testing::write_png(a / "sub" / "4.png", memopt::testing::pattern(8, 8, 3), 8, 8, 3);
  memopt::testing::write_png(tmp / "outside" / "5.png", memopt::testing::pattern(8, 8, 3), 8, 8, 3);
  fs::create_directory_symlink("sub", a / "l1");  // two links to one folder
  fs::create_directory_symlink("sub", a / "l2");
  fs::create_directory_symlink("..", a / "sub" / "up");  // two links to an ancestor
  fs::create_directory_symlink(".", a / "self");
  fs::create_directory_symlink("../../outside", a / "x1");  // a folder outside, twice
  fs::create_directory_symlink("../../outside", a / "x2");

  auto list = [&](bool follow) {
    const auto r = memopt::testing::run_in_child(
        [&] {
          std::string out;
          const auto dir = data::image_directory(
              root, {.image_size = {8, 8}, .shuffle = false, .follow_links = follow});
          for (const data::ImageFile f : dir) {
            out += fs::path(f.path()).lexically_relative(root).string() + ":" +
                   std::to_string(f.label) + " ";
          }
          return out;
        },
        std::chrono::seconds(10));
    return r.finished ? r.output : r.describe();
  };
  CHECK(list(true) == "a/1.png:0 a/2.png:0 a/sub/4.png:0 a/x1/5.png:0 b/3.png:1 ");
  CHECK(list(false) == "a/1.png:0 a/2.png:0 a/sub/4.png:0 b/3.png:1 ");
}

TEST_CASE("a folder without images is refused at listing, saying what it holds") {
  // Keras: "No images found in directory ... Allowed formats: ...". Before, memopt listed 0
  // files and failed only at fit with "the training data produced no batches".
  TempDir tmp;
  const fs::path root = tmp / "photos";
  fs::create_directories(root / "cats");
  fs::create_directories(root / "dogs" / "deep");
  memopt::testing::write_bytes(root / "cats" / "1.gif", "GIF89a", 6);
  memopt::testing::write_bytes(root / "cats" / "2.webp", "RIFF", 4);
  memopt::testing::write_bytes(root / "dogs" / "deep" / "3.gif", "GIF89a", 6);
  fs::create_directories(tmp / "elsewhere");
  fs::create_directory_symlink("../../elsewhere", root / "dogs" / "linked");
  auto message = [](const fs::path& dir) {
    try {
      (void)data::image_directory(dir, {.image_size = {8, 8}});
    } catch (const memopt::error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const std::string m = message(root);
  CHECK(m.find(root.string()) != std::string::npos);
  CHECK(m.find(".bmp, .jpeg, .jpg, .png") != std::string::npos);
  CHECK(m.find("cats, dogs") != std::string::npos);
  CHECK(m.find("3 files of other types (.gif, .webp)") != std::string::npos);
  CHECK(m.find("1 link to a folder, not followed (follow_links = false)") != std::string::npos);

  // Empty class folders.
  fs::remove_all(root / "cats");
  fs::remove_all(root / "dogs");
  fs::create_directories(root / "cats");
  const std::string empty = message(root);
  CHECK(empty.find(root.string()) != std::string::npos);
  CHECK(empty.find("found no files") != std::string::npos);

  // Images directly in the folder, without class subfolders.
  const fs::path flat = tmp / "flat";
  fs::create_directories(flat);
  for (const char* name : {"1.jpg", "2.png", "notes.txt"}) {
    memopt::testing::write_bytes(flat / name, "x", 1);
  }
  const std::string no_classes = message(flat);
  CHECK(no_classes.find(flat.string()) != std::string::npos);
  CHECK(no_classes.find("one subfolder per class") != std::string::npos);
  CHECK(no_classes.find("2 images directly in it") != std::string::npos);
}
