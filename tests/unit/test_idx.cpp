// io::read_idx and data::from_idx / data::fashion_mnist: IDX files, good and bad.

#include <doctest/doctest.h>
#include <zlib.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "memopt/core/error.hpp"
#include "memopt/data/fashion_mnist.hpp"
#include "memopt/data/from_idx.hpp"
#include "memopt/io/idx.hpp"
#include "memopt/io/idx_reader.hpp"

namespace mo = memopt;
namespace fs = std::filesystem;

namespace {

using Bytes = std::vector<unsigned char>;

// A fresh directory under the system's temporary directory, removed with everything in it.
class TempDir {
 public:
  TempDir() {
    std::random_device random;
    path_ = fs::temp_directory_path() /
            ("memopt-test-idx-" + std::to_string(random()) + "-" + std::to_string(random()));
    fs::create_directories(path_);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  fs::path operator/(const std::string& name) const { return path_ / name; }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

void put_u32(Bytes& out, std::uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) out.push_back((v >> shift) & 0xFF);
}

// An IDX file's bytes: magic (0, 0, type, rank), big-endian dims, then `data`.
Bytes idx_bytes(std::uint8_t type, const std::vector<std::uint32_t>& dims, const Bytes& data) {
  Bytes out{0, 0, type, static_cast<unsigned char>(dims.size())};
  for (auto d : dims) put_u32(out, d);
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

Bytes images_bytes(std::uint32_t n, std::uint32_t rows, std::uint32_t cols, const Bytes& pixels) {
  return idx_bytes(0x08, {n, rows, cols}, pixels);
}
Bytes labels_bytes(const Bytes& labels) {
  return idx_bytes(0x08, {static_cast<std::uint32_t>(labels.size())}, labels);
}

fs::path write_plain(const fs::path& path, const Bytes& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
  return path;
}

fs::path write_gz(const fs::path& path, const Bytes& bytes) {
  gzFile file = gzopen(path.c_str(), "wb");
  REQUIRE(file != nullptr);
  REQUIRE(gzwrite(file, bytes.data(), static_cast<unsigned>(bytes.size())) == int(bytes.size()));
  REQUIRE(gzclose(file) == Z_OK);
  return path;
}

// Pixels that compress badly, so that a cut .gz is cut in its deflate data.
Bytes noise(std::size_t n) {
  std::mt19937 random(7);
  Bytes out(n);
  for (auto& b : out) b = static_cast<unsigned char>(random());
  return out;
}

// The message of the memopt::error that `f` raises (fails the test if it raises none).
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const mo::error& e) {
    return e.what();
  }
  FAIL("expected memopt::error, none was raised");
  return {};
}

const Bytes kPixels{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 255};  // 3 images of 2x2
const Bytes kLabels{4, 0, 9};

}  // namespace

TEST_CASE("read_idx: a plain images file gives its dims and bytes") {
  TempDir dir;
  const auto path = write_plain(dir / "images-idx3-ubyte", images_bytes(3, 2, 2, kPixels));
  const auto images = mo::io::read_idx_images(path);
  CHECK(images.dims == std::vector<std::size_t>{3, 2, 2});
  CHECK(images.rank() == 3);
  CHECK(images.size() == 12);
  CHECK(images.data == std::vector<std::uint8_t>(kPixels.begin(), kPixels.end()));

  const auto any = mo::io::read_idx(path);
  CHECK(any.dims == images.dims);
  CHECK(any.data == images.data);
}

TEST_CASE("read_idx: a .gz file reads the same as the plain one") {
  TempDir dir;
  const auto images = write_gz(dir / "images-idx3-ubyte.gz", images_bytes(3, 2, 2, kPixels));
  const auto labels = write_gz(dir / "labels-idx1-ubyte.gz", labels_bytes(kLabels));
  CHECK(mo::io::read_idx_images(images).data ==
        std::vector<std::uint8_t>(kPixels.begin(), kPixels.end()));
  const auto read = mo::io::read_idx_labels(labels);
  CHECK(read.dims == std::vector<std::size_t>{3});
  CHECK(read.data == std::vector<std::uint8_t>(kLabels.begin(), kLabels.end()));

  // Detection is by content, not by name: a gzip stream without .gz still reads.
  const auto unnamed = write_gz(dir / "labels-idx1-ubyte", labels_bytes(kLabels));
  CHECK(mo::io::read_idx_labels(unnamed).data == read.data);
}

TEST_CASE("IdxReader: the header first, then the payload in pieces of the caller's size") {
  TempDir dir;
  const auto path = write_gz(dir / "images-idx3-ubyte.gz", images_bytes(3, 2, 2, kPixels));
  mo::io::IdxReader reader(path, 3);
  CHECK(reader.dims() == std::vector<std::size_t>{3, 2, 2});
  CHECK(reader.size() == 12);
  std::vector<std::uint8_t> piece(5), all;
  while (reader.remaining() > 0) {
    const std::size_t n = reader.read(piece);
    CHECK(n == std::min<std::size_t>(5, 12 - all.size()));
    all.insert(all.end(), piece.begin(), piece.begin() + static_cast<std::ptrdiff_t>(n));
  }
  CHECK(all == std::vector<std::uint8_t>(kPixels.begin(), kPixels.end()));
  CHECK(reader.read(piece) == 0);
  reader.expect_end();

  mo::io::IdxReader unread(path);
  CHECK_THROWS_WITH_AS(unread.expect_end(),
                       doctest::Contains("12 of the 12 payload bytes were left unread"), mo::error);
}

TEST_CASE("read_idx: a missing file raises memopt::error naming it") {
  TempDir dir;
  const auto path = dir / "no-such-idx3-ubyte.gz";
  const auto what = error_of([&] { mo::io::read_idx_images(path); });
  CHECK(what.find(path.string()) != std::string::npos);
  CHECK(what.find("no such file") != std::string::npos);

  const auto directory = error_of([&] { mo::io::read_idx(dir.path()); });
  CHECK(directory.find("expected a file, found a directory") != std::string::npos);
}

TEST_CASE("read_idx: a wrong magic number names the expected and the found magic") {
  TempDir dir;
  Bytes garbage{0x12, 0x34, 0x56, 0x78, 0, 0, 0, 1, 0};
  const auto path = write_plain(dir / "garbage-idx3-ubyte", garbage);
  const auto what = error_of([&] { mo::io::read_idx_images(path); });
  CHECK(what.find(path.string()) != std::string::npos);
  CHECK(what.find("expected magic number 0x00000803") != std::string::npos);
  CHECK(what.find("found 0x12345678") != std::string::npos);

  const auto generic = error_of([&] { mo::io::read_idx(path); });
  CHECK(generic.find("0x00000801") != std::string::npos);
  CHECK(generic.find("0x00000803") != std::string::npos);
  CHECK(generic.find("found 0x12345678") != std::string::npos);

  // A labels file where images are expected: both magics are valid IDX, the rank is wrong.
  const auto labels = write_plain(dir / "labels-idx1-ubyte", labels_bytes(kLabels));
  CHECK_THROWS_WITH_AS(mo::io::read_idx_images(labels),
                       doctest::Contains("expected 0x00000803 (unsigned bytes, 3 dimensions: "
                                         "images), found 0x00000801 (unsigned bytes, 1 "
                                         "dimension: labels)"),
                       mo::error);
  const auto images = write_plain(dir / "images-idx3-ubyte", images_bytes(3, 2, 2, kPixels));
  CHECK_THROWS_WITH_AS(mo::io::read_idx_labels(images), doctest::Contains("expected 0x00000801"),
                       mo::error);
}

TEST_CASE("read_idx: an element type other than unsigned byte is unsupported") {
  TempDir dir;
  const auto path = write_plain(dir / "floats-idx1", idx_bytes(0x0D, {2}, Bytes(8)));
  const auto what = error_of([&] { mo::io::read_idx(path); });
  CHECK(what.find(path.string()) != std::string::npos);
  CHECK(what.find("unsupported IDX type code: expected 0x08 (unsigned byte), found 0x0D "
                  "(float)") != std::string::npos);
}

TEST_CASE("read_idx: a truncated file says how many bytes were expected and found") {
  TempDir dir;
  SUBCASE("data cut short, plain") {
    const Bytes seven(kPixels.begin(), kPixels.begin() + 7);
    const auto path = write_plain(dir / "short-idx3-ubyte", images_bytes(3, 2, 2, seven));
    const auto what = error_of([&] { mo::io::read_idx_images(path); });
    CHECK(what.find(path.string()) != std::string::npos);
    CHECK(what.find("truncated: expected 12 bytes of data for dimensions 3x2x2, found 7") !=
          std::string::npos);
  }
  SUBCASE("data cut short, gzip") {
    const Bytes seven(kPixels.begin(), kPixels.begin() + 7);
    const auto path = write_gz(dir / "short-idx3-ubyte.gz", images_bytes(3, 2, 2, seven));
    CHECK_THROWS_WITH_AS(mo::io::read_idx_images(path),
                         doctest::Contains("expected 12 bytes of data for dimensions 3x2x2, "
                                           "found 7"),
                         mo::error);
  }
  SUBCASE("a complete file whose .gz copy was cut in half") {
    const auto full = write_gz(dir / "full-idx3-ubyte.gz", images_bytes(100, 28, 28, noise(78400)));
    std::ifstream in(full, std::ios::binary);
    Bytes compressed((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    compressed.resize(compressed.size() / 2);
    const auto cut = write_plain(dir / "cut-idx3-ubyte.gz", compressed);
    const auto what = error_of([&] { mo::io::read_idx_images(cut); });
    CHECK(what.find(cut.string()) != std::string::npos);
    CHECK(what.find("is truncated: expected 78400 bytes of data") != std::string::npos);
    CHECK(what.find("the gzip stream ends early") != std::string::npos);
  }
  SUBCASE("header cut short") {
    const auto magic_only = write_plain(dir / "magic-only", Bytes{0, 0, 8});
    CHECK_THROWS_WITH_AS(mo::io::read_idx(magic_only),
                         doctest::Contains("expected a 4-byte IDX magic number, found 3 bytes"),
                         mo::error);
    const auto dims_cut = write_plain(dir / "dims-cut", Bytes{0, 0, 8, 3, 0, 0, 0, 3, 0, 0});
    CHECK_THROWS_WITH_AS(mo::io::read_idx_images(dims_cut),
                         doctest::Contains("expected 3 dimension sizes (12 bytes) after the "
                                           "magic number, found 6 bytes"),
                         mo::error);
  }
  SUBCASE("an empty file") {
    const auto empty = write_plain(dir / "empty", Bytes{});
    CHECK_THROWS_WITH_AS(mo::io::read_idx(empty), doctest::Contains("found 0 bytes"), mo::error);
  }
  SUBCASE("a header that promises far more data than there is") {
    // 2^32-1 squared bytes: fails as truncated, without trying to allocate them.
    const auto huge = write_plain(dir / "huge", idx_bytes(0x08, {0xFFFFFFFF, 0xFFFFFFFF}, {1, 2}));
    CHECK_THROWS_WITH_AS(mo::io::read_idx(huge), doctest::Contains("found 2"), mo::error);
  }
}

TEST_CASE("read_idx: bytes after the data are trailing garbage") {
  TempDir dir;
  auto bytes = labels_bytes(kLabels);
  bytes.push_back(42);
  const auto path = write_plain(dir / "long-idx1-ubyte", bytes);
  CHECK_THROWS_WITH_AS(mo::io::read_idx_labels(path),
                       doctest::Contains("trailing data: expected 3 bytes of data for "
                                         "dimensions 3 and then the end of the file, found more"),
                       mo::error);
}

TEST_CASE("read_idx: a .gz file is checked to its end: trailer present, nothing after it") {
  TempDir dir;
  const auto good = write_gz(dir / "good-idx1-ubyte.gz", labels_bytes(kLabels));
  std::ifstream in(good, std::ios::binary);
  const Bytes compressed((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  REQUIRE(compressed.size() > 18);
  CHECK(mo::io::read_idx_labels(good).data == kLabels);

  SUBCASE("the 8-byte CRC-32/length trailer cut off, in part or in full") {
    for (const std::size_t cut : {1, 4, 8}) {
      CAPTURE(cut);
      const Bytes shorter(compressed.begin(), compressed.end() - std::ptrdiff_t(cut));
      const auto path = write_plain(dir / "cut-idx1-ubyte.gz", shorter);
      const auto what = error_of([&] { mo::io::read_idx_labels(path); });
      CHECK(what.find(path.string()) != std::string::npos);
      CHECK(what.find("is truncated: expected the gzip stream to end with its 8-byte CRC-32 and "
                      "length trailer after the 3 bytes of data, found the end of the file "
                      "before it") != std::string::npos);
    }
  }
  SUBCASE("garbage after the stream") {
    for (const Bytes& tail : {Bytes{42}, Bytes{0, 0, 0, 0}, Bytes{0x1f}}) {
      CAPTURE(tail.size());
      Bytes longer = compressed;
      longer.insert(longer.end(), tail.begin(), tail.end());
      const auto path = write_plain(dir / "long-idx1-ubyte.gz", longer);
      const auto what = error_of([&] { mo::io::read_idx_labels(path); });
      CHECK(what.find(path.string()) != std::string::npos);
      CHECK(what.find(fmt::format("has trailing data: expected the end of the file after the gzip "
                                  "stream, found {} more byte{} that are not a gzip member",
                                  tail.size(), tail.size() == 1 ? "" : "s")) != std::string::npos);
    }
  }
  SUBCASE("a second gzip member is more of the stream, not garbage") {
    // gzip allows members back to back (`cat a.gz b.gz`): split the file's bytes in two.
    const Bytes all = labels_bytes(kLabels);
    const Bytes head(all.begin(), all.begin() + 5), tail(all.begin() + 5, all.end());
    const auto a = write_gz(dir / "a.gz", head);
    const auto b = write_gz(dir / "b.gz", tail);
    std::ifstream ia(a, std::ios::binary), ib(b, std::ios::binary);
    Bytes both((std::istreambuf_iterator<char>(ia)), std::istreambuf_iterator<char>());
    both.insert(both.end(), std::istreambuf_iterator<char>(ib), std::istreambuf_iterator<char>());
    const auto path = write_plain(dir / "two-idx1-ubyte.gz", both);
    CHECK(mo::io::read_idx_labels(path).data == kLabels);
  }
  SUBCASE("a wrong CRC-32 in the trailer is corrupt data") {
    Bytes bad = compressed;
    bad[bad.size() - 8] ^= 0x01;
    const auto path = write_plain(dir / "crc-idx1-ubyte.gz", bad);
    const auto what = error_of([&] { mo::io::read_idx_labels(path); });
    CHECK(what.find("expected valid gzip data, found corrupt data") != std::string::npos);
  }
}

TEST_CASE("read_idx: corrupt gzip data is reported as such") {
  TempDir dir;
  const auto good = write_gz(dir / "good.gz", images_bytes(100, 28, 28, noise(78400)));
  std::ifstream in(good, std::ios::binary);
  Bytes compressed((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // Past the 10-byte gzip header, wreck a run of the deflate stream.
  for (std::size_t i = 20; i < 60; ++i) compressed[i] = 0xFF;
  const auto bad = write_plain(dir / "bad.gz", compressed);
  const auto what = error_of([&] { mo::io::read_idx(bad); });
  CHECK(what.find(bad.string()) != std::string::npos);
  // Incompressible noise is stored, not deflated: the damage shows as a failed CRC check.
  CHECK(what.find("expected valid gzip data, found corrupt data") != std::string::npos);
}

TEST_CASE("from_idx: images and labels become a Dataset with pixels scaled to [0, 1]") {
  TempDir dir;
  const auto images = write_gz(dir / "i.gz", images_bytes(3, 2, 2, kPixels));
  const auto labels = write_plain(dir / "l", labels_bytes(kLabels));
  const auto ds = mo::data::from_idx(images, labels);
  CHECK(ds.size() == 3);
  CHECK(ds.width() == 4);
  CHECK(ds[0].label == 4);
  CHECK(ds[2].label == 9);
  CHECK(ds[0].features[1] == doctest::Approx(1.0 / 255.0));
  CHECK(ds[2].features[3] == 1.0f);  // 255 is exactly 1
  CHECK(ds[0].features[0] == 0.0f);
}

TEST_CASE("from_idx: an images/labels count mismatch names both files and both counts") {
  TempDir dir;
  const auto images = write_plain(dir / "three-images", images_bytes(3, 2, 2, kPixels));
  const auto labels = write_plain(dir / "two-labels", labels_bytes({1, 2}));
  const auto what = error_of([&] { mo::data::from_idx(images, labels); });
  CHECK(what.find("expected as many labels as images, found 3 images in '" + images.string() +
                  "' and 2 labels in '" + labels.string() + "'") != std::string::npos);
}

TEST_CASE("fashion_mnist: a directory without the files names the one expected") {
  TempDir dir;
  const auto what = error_of([&] { mo::data::fashion_mnist(dir.path()); });
  CHECK(what.find((dir / "train-images-idx3-ubyte").string()) != std::string::npos);
  CHECK(what.find((dir / "train-images-idx3-ubyte.gz").string()) != std::string::npos);
  CHECK(what.find("found neither") != std::string::npos);
}

TEST_CASE("fashion_mnist: a crafted directory loads, mixing plain and .gz files") {
  TempDir dir;
  write_gz(dir / "train-images-idx3-ubyte.gz", images_bytes(2, 28, 28, noise(2 * 784)));
  write_plain(dir / "train-labels-idx1-ubyte", labels_bytes({3, 7}));
  write_plain(dir / "t10k-images-idx3-ubyte", images_bytes(1, 28, 28, noise(784)));
  write_gz(dir / "t10k-labels-idx1-ubyte.gz", labels_bytes({9}));
  auto [train, test] = mo::data::fashion_mnist(dir.path());
  CHECK(train.size() == 2);
  CHECK(test.size() == 1);
  CHECK(train.width() == 784);
  CHECK(test[0].label == 9);

  // Out-of-range classes mean the wrong dataset.
  write_plain(dir / "train-labels-idx1-ubyte", labels_bytes({3, 10}));
  CHECK_THROWS_WITH_AS(mo::data::fashion_mnist(dir.path()),
                       doctest::Contains("expected labels in [0, 9] for 'train' images, found "
                                         "10 at index 1"),
                       mo::error);
}

namespace {

const fs::path kFashionDir = "/usr/share/datasets/fashion-mnist";

// Evaluated when the test registers: without the dataset (apt install dataset-fashion-mnist)
// doctest reports the test as skipped, not as passed.
bool fashion_mnist_installed() {
  return fs::exists(kFashionDir / "train-images-idx3-ubyte.gz") ||
         fs::exists(kFashionDir / "train-images-idx3-ubyte");
}

}  // namespace

TEST_CASE("fashion_mnist: the real dataset, when installed" *
          doctest::skip(!fashion_mnist_installed())) {
  const fs::path dir = kFashionDir;
  const auto start = std::chrono::steady_clock::now();
  auto [train, test] = mo::data::fashion_mnist(dir);
  const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
  MESSAGE("loaded Fashion-MNIST in ", took.count(), " s");
  CHECK(train.size() == 60'000);
  CHECK(test.size() == 10'000);
  CHECK(train.width() == 784);
  CHECK(test.width() == 784);
  for (const auto* ds : {&train, &test}) {
    const auto [lo, hi] = std::ranges::minmax(ds->features());
    CHECK(lo == 0.0f);
    CHECK(hi == 1.0f);
    const auto [lo_label, hi_label] = std::ranges::minmax(ds->labels());
    CHECK(lo_label == 0);
    CHECK(hi_label == 9);
  }
}
