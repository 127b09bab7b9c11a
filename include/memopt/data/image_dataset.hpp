#pragma once
// data::ImageDataset: an owning, in-memory set of 8-bit images and their labels, a
// random-access range of ImageView; and data::fashion_mnist_uint8, Fashion-MNIST kept as bytes.

#include <compare>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <iterator>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "memopt/core/error.hpp"
#include "memopt/data/fashion_mnist.hpp"
#include "memopt/data/image_batch.hpp"
#include "memopt/io/idx.hpp"

namespace memopt::data {

/// `size()` images of `height() x width() x channels()` 8-bit values, stored contiguously
/// (`[n, height, width, channels]`, 1 byte a value: a quarter of a float32 `Dataset`), and one
/// label each. It is a sized, random-access range of `ImageView` values that view its images,
/// so `shuffle` keeps views (no pixels copied) and `batch(n)` makes `ImageBatch`es.
///
/// ```cpp
/// auto [train, test] = mo::data::fashion_mnist_uint8();
/// for (const mo::data::ImageBatch& b : train | mo::data::shuffle(60'000, 1)
///                                            | mo::data::batch(32))
///   step(b.pixels(), b.labels());  // [32, 28, 28, 1] bytes
/// ```
class ImageDataset {
 public:
  class Iterator;

  ImageDataset() = default;

  /// Takes ownership of `pixels` (`labels.size()` images of `height x width x channels`
  /// values) and `labels`; raises `memopt::error` when a dimension is 0 or the sizes disagree.
  ImageDataset(std::vector<std::uint8_t> pixels, std::vector<std::int32_t> labels,
               std::size_t height, std::size_t width, std::size_t channels)
      : pixels_(std::move(pixels)),
        labels_(std::move(labels)),
        height_(height),
        width_(width),
        channels_(channels) {
    const std::size_t image = height * width * channels;
    if (image == 0) {
      throw error(
          fmt::format("data::ImageDataset: expected images of positive size, found {} x "
                      "{} x {}",
                      height, width, channels));
    }
    if (pixels_.size() % image != 0 || pixels_.size() / image != labels_.size()) {
      throw error(
          fmt::format("data::ImageDataset: expected {} labels x {} values = {} pixels, "
                      "found {} pixels",
                      labels_.size(), image, labels_.size() * image, pixels_.size()));
    }
  }

  std::size_t size() const noexcept { return labels_.size(); }
  bool empty() const noexcept { return labels_.empty(); }
  std::size_t height() const noexcept { return height_; }
  std::size_t width() const noexcept { return width_; }
  std::size_t channels() const noexcept { return channels_; }
  /// Values per image.
  std::size_t image_size() const noexcept { return height_ * width_ * channels_; }
  /// Every image's values, `[size, height, width, channels]`.
  std::span<const std::uint8_t> pixels() const noexcept { return pixels_; }
  std::span<const std::int32_t> labels() const noexcept { return labels_; }

  /// Image `i` (unchecked).
  ImageView operator[](std::size_t i) const noexcept {
    return ImageView{std::span<const std::uint8_t>(pixels_).subspan(i * image_size(), image_size()),
                     labels_[i], static_cast<std::uint32_t>(height_),
                     static_cast<std::uint32_t>(width_), static_cast<std::uint32_t>(channels_)};
  }

  Iterator begin() const noexcept;
  Iterator end() const noexcept;

 private:
  std::vector<std::uint8_t> pixels_;
  std::vector<std::int32_t> labels_;
  std::size_t height_ = 0;
  std::size_t width_ = 0;
  std::size_t channels_ = 0;
};

/// Random-access iterator over an `ImageDataset`; its reference is an `ImageView` value.
///
/// ```cpp
/// auto [ds, test] = mo::data::fashion_mnist_uint8();
/// auto it = ds.begin() + 10;
/// std::int32_t label = (*it).label;
/// ```
class ImageDataset::Iterator {
 public:
  using iterator_concept = std::random_access_iterator_tag;
  using iterator_category = std::input_iterator_tag;
  using value_type = ImageView;
  using reference = ImageView;
  using difference_type = std::ptrdiff_t;

  Iterator() = default;
  Iterator(const ImageDataset* set, difference_type index) noexcept : set_(set), index_(index) {}

  ImageView operator*() const noexcept { return (*set_)[static_cast<std::size_t>(index_)]; }
  ImageView operator[](difference_type n) const noexcept { return *(*this + n); }

  Iterator& operator++() noexcept {
    ++index_;
    return *this;
  }
  Iterator operator++(int) noexcept {
    auto old = *this;
    ++index_;
    return old;
  }
  Iterator& operator--() noexcept {
    --index_;
    return *this;
  }
  Iterator operator--(int) noexcept {
    auto old = *this;
    --index_;
    return old;
  }
  Iterator& operator+=(difference_type n) noexcept {
    index_ += n;
    return *this;
  }
  Iterator& operator-=(difference_type n) noexcept {
    index_ -= n;
    return *this;
  }
  friend Iterator operator+(Iterator it, difference_type n) noexcept { return it += n; }
  friend Iterator operator+(difference_type n, Iterator it) noexcept { return it += n; }
  friend Iterator operator-(Iterator it, difference_type n) noexcept { return it -= n; }
  friend difference_type operator-(const Iterator& a, const Iterator& b) noexcept {
    return a.index_ - b.index_;
  }
  friend bool operator==(const Iterator& a, const Iterator& b) noexcept {
    return a.index_ == b.index_;
  }
  friend std::strong_ordering operator<=>(const Iterator& a, const Iterator& b) noexcept {
    return a.index_ <=> b.index_;
  }

 private:
  const ImageDataset* set_ = nullptr;
  difference_type index_ = 0;
};

inline ImageDataset::Iterator ImageDataset::begin() const noexcept {
  return Iterator(this, 0);
}
inline ImageDataset::Iterator ImageDataset::end() const noexcept {
  return Iterator(this, static_cast<std::ptrdiff_t>(size()));
}

/// Loads an IDX images file (count x rows x columns bytes) and its IDX labels file, plain or
/// `.gz`, as an `ImageDataset` of rows x columns x 1 images, the bytes kept as they are.
/// Raises `memopt::error` naming the files for a bad file or differing counts.
///
/// ```cpp
/// const std::filesystem::path dir = "/usr/share/datasets/fashion-mnist";
/// auto test = mo::data::image_dataset_from_idx(dir / "t10k-images-idx3-ubyte.gz",
///                                              dir / "t10k-labels-idx1-ubyte.gz");
/// ```
inline ImageDataset image_dataset_from_idx(const std::filesystem::path& images_path,
                                           const std::filesystem::path& labels_path) {
  auto images = io::read_idx_images(images_path);
  const auto labels = io::read_idx_labels(labels_path);
  if (images.dims[0] != labels.dims[0]) {
    throw error(
        fmt::format("data::image_dataset_from_idx: expected as many labels in '{}' as "
                    "images in '{}' ({}), found {}",
                    labels_path.string(), images_path.string(), images.dims[0], labels.dims[0]));
  }
  std::vector<std::int32_t> classes(labels.data.begin(), labels.data.end());
  return ImageDataset(std::move(images.data), std::move(classes), images.dims[1], images.dims[2],
                      1);
}

/// `fashion_mnist_uint8`'s two parts; structured bindings take it apart.
struct ImageTrainTest {
  ImageDataset train;
  ImageDataset test;
};

/// Fashion-MNIST from `dir` (as `fashion_mnist`) kept as bytes: 60,000 and 10,000 images of
/// 28 x 28 x 1 values in [0, 255] (47 MB for the training set where `fashion_mnist`'s floats
/// take 188 MB), to be scaled inside the model (a `Rescaling` layer).
///
/// ```cpp
/// auto [train, test] = mo::data::fashion_mnist_uint8();
/// ```
inline ImageTrainTest fashion_mnist_uint8(
    const std::filesystem::path& dir = "/usr/share/datasets/fashion-mnist") {
  auto part = [&dir](const char* name) {
    auto set = image_dataset_from_idx(
        detail::find_idx_file(dir, fmt::format("{}-images-idx3-ubyte", name)),
        detail::find_idx_file(dir, fmt::format("{}-labels-idx1-ubyte", name)));
    if (set.height() != 28 || set.width() != 28) {
      throw error(
          fmt::format("data::fashion_mnist_uint8: expected 28x28 images in '{}', found "
                      "{}x{}",
                      (dir / name).string(), set.height(), set.width()));
    }
    for (std::size_t i = 0; i < set.size(); ++i) {
      if (set.labels()[i] < 0 || set.labels()[i] > 9) {
        throw error(
            fmt::format("data::fashion_mnist_uint8: expected labels in [0, 9] for '{}', "
                        "found {} at index {}",
                        name, set.labels()[i], i));
      }
    }
    return set;
  };
  return ImageTrainTest{part("train"), part("t10k")};
}

}  // namespace memopt::data
