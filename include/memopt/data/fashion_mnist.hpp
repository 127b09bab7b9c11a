#pragma once
// data::fashion_mnist: the Fashion-MNIST training and test sets from a directory of IDX files.

#include <algorithm>
#include <cstddef>
#include <filesystem>
#include <string_view>

#include <fmt/format.h>

#include "memopt/core/error.hpp"
#include "memopt/data/dataset.hpp"
#include "memopt/data/from_idx.hpp"

namespace memopt::data {

/// A dataset split into its training and test parts; structured bindings take it apart.
///
/// ```cpp
/// auto [train, test] = mo::data::fashion_mnist();
/// ```
struct TrainTest {
  Dataset train;
  Dataset test;
};

namespace detail {

// `dir/name` if it exists, else `dir/name.gz`; neither raises an error that names both.
inline std::filesystem::path find_idx_file(const std::filesystem::path& dir,
                                           std::string_view name) {
  const auto plain = dir / name;
  auto gz = plain;
  gz += ".gz";
  std::error_code ec;
  if (std::filesystem::is_regular_file(plain, ec)) return plain;
  if (std::filesystem::is_regular_file(gz, ec)) return gz;
  throw error(fmt::format(
      "data::fashion_mnist: expected '{}' or '{}', found neither (on Debian, `apt install "
      "dataset-fashion-mnist` puts them in /usr/share/datasets/fashion-mnist)",
      plain.string(), gz.string()));
}

inline Dataset load_fashion_mnist_part(const std::filesystem::path& dir, std::string_view part) {
  const auto images_path = find_idx_file(dir, fmt::format("{}-images-idx3-ubyte", part));
  auto dataset =
      from_idx(images_path, find_idx_file(dir, fmt::format("{}-labels-idx1-ubyte", part)));
  // Fashion-MNIST's shapes and classes are fixed: anything else is the wrong dataset.
  constexpr std::size_t kWidth = 28 * 28;
  constexpr std::int32_t kClasses = 10;
  if (dataset.width() != kWidth) {
    throw error(fmt::format(
        "data::fashion_mnist: expected 28x28 images ({} features) in '{}', found {} features",
        kWidth, images_path.string(), dataset.width()));
  }
  const auto labels = dataset.labels();
  if (const auto bad = std::ranges::find_if(
          labels, [](std::int32_t label) { return label < 0 || label >= kClasses; });
      bad != labels.end()) {
    throw error(fmt::format(
        "data::fashion_mnist: expected labels in [0, {}] for '{}' images, found {} at index {}",
        kClasses - 1, part, *bad, bad - labels.begin()));
  }
  return dataset;
}

}  // namespace detail

/// Loads Fashion-MNIST from `dir`: `train-{images-idx3,labels-idx1}-ubyte` and
/// `t10k-{images-idx3,labels-idx1}-ubyte`, each plain or with `.gz`. The training set has
/// 60,000 samples, the test set 10,000, each 784 pixels scaled to [0, 1] with a label in
/// [0, 9]. Raises `memopt::error` naming the file when one is missing or bad.
///
/// ```cpp
/// auto [train, test] = mo::data::fashion_mnist("/usr/share/datasets/fashion-mnist");
/// auto batches = train | mo::data::batch(32);  // 1875 batches
/// ```
inline TrainTest fashion_mnist(
    const std::filesystem::path& dir = "/usr/share/datasets/fashion-mnist") {
  return TrainTest{detail::load_fashion_mnist_part(dir, "train"),
                   detail::load_fashion_mnist_part(dir, "t10k")};
}

}  // namespace memopt::data
