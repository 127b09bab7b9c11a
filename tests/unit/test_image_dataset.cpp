// data::ImageDataset and fashion_mnist_uint8: 8-bit images in memory, shuffled as views and
// batched into ImageBatch; the same pixels as the float Fashion-MNIST, times 255.

#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <numeric>
#include <ranges>
#include <vector>

#include "memopt/core/error.hpp"
#include "memopt/data/batch.hpp"
#include "memopt/data/fashion_mnist.hpp"
#include "memopt/data/image_dataset.hpp"
#include "memopt/data/shuffle.hpp"

namespace data = memopt::data;

namespace {

const std::filesystem::path kFashion = "/usr/share/datasets/fashion-mnist";

bool fashion_installed() {
  return std::filesystem::exists(kFashion / "train-images-idx3-ubyte.gz") ||
         std::filesystem::exists(kFashion / "train-images-idx3-ubyte");
}

}  // namespace

TEST_CASE("ImageDataset: a random-access range of views, batched into ImageBatch") {
  static_assert(std::ranges::random_access_range<data::ImageDataset>);
  static_assert(std::ranges::sized_range<data::ImageDataset>);
  const std::size_t n = 10, h = 3, w = 2, c = 2;
  std::vector<std::uint8_t> px(n * h * w * c);
  std::iota(px.begin(), px.end(), std::uint8_t{0});
  std::vector<std::int32_t> labels(n);
  std::iota(labels.begin(), labels.end(), 100);
  const data::ImageDataset ds(px, labels, h, w, c);
  CHECK(ds.size() == n);
  CHECK(ds[3].label == 103);
  CHECK(ds[3].pixels[0] == 3 * 12);

  std::size_t rows = 0;
  for (const data::ImageBatch& b : ds | data::batch(4)) {
    CHECK(b.shape()[1] == h);
    CHECK(b.shape()[3] == c);
    for (std::size_t i = 0; i < b.size(); ++i) {
      const auto img = b.image(i);
      CHECK(std::equal(img.begin(), img.end(), ds[rows + i].pixels.begin()));
      CHECK(b.labels()[i] == labels[rows + i]);
    }
    rows += b.size();
  }
  CHECK(rows == n);

  // Shuffled views: each image with its own label, every image once.
  std::vector<std::int32_t> seen;
  for (const data::ImageBatch& b : ds | data::shuffle(10, 5) | data::batch(3)) {
    for (std::size_t i = 0; i < b.size(); ++i) {
      const std::int32_t label = b.labels()[i];
      CHECK(b.image(i)[0] == static_cast<std::uint8_t>((label - 100) * 12));
      seen.push_back(label);
    }
  }
  CHECK(seen != labels);
  std::sort(seen.begin(), seen.end());
  CHECK(seen == labels);

  CHECK_THROWS_AS(data::ImageDataset(px, std::vector<std::int32_t>(9), h, w, c), memopt::error);
}

TEST_CASE("fashion_mnist_uint8: the float dataset's pixels as bytes" *
          doctest::skip(!fashion_installed())) {
  const auto [train, test] = data::fashion_mnist_uint8(kFashion);
  CHECK(train.size() == 60'000);
  CHECK(test.size() == 10'000);
  CHECK(train.pixels().size() == 60'000u * 784u);  // 47 MB, a quarter of the floats
  const auto floats = data::fashion_mnist(kFashion);
  const auto f = floats.test.features();
  double worst = 0;
  for (std::size_t i = 0; i < test.pixels().size(); ++i) {
    worst = std::max(worst, std::abs(f[i] * 255.0 - test.pixels()[i]));
  }
  CHECK(worst < 1e-3);
  CHECK(std::ranges::equal(test.labels(), floats.test.labels()));
  std::size_t batches = 0;
  for (const data::ImageBatch& b : train | data::batch(32)) {
    CHECK(b.shape() == std::array<std::size_t, 4>{b.size(), 28, 28, 1});
    ++batches;
  }
  CHECK(batches == 1875);
}
