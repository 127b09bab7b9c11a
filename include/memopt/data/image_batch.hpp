#pragma once
// data::LabeledImage and data::ImageBatch: 8-bit images with their class, one and batched.

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "memopt/core/error.hpp"

namespace memopt::data {

class ImageBatch;

/// One decoded image and its class: `height` x `width` x `channels` 8-bit values, row-major
/// with channels interleaved, as `image_directory`'s decoding stage yields them. An image
/// skipped under `OnError::skip` has no pixels (`empty()`). `batch(n)` groups these into an
/// `ImageBatch` (`batch_type`).
///
/// ```cpp
/// for (mo::data::LabeledImage& img : dir | dir.decode()) use(img.pixels, img.label);
/// ```
struct LabeledImage {
  using batch_type = ImageBatch;

  std::vector<std::uint8_t> pixels = {};
  std::int32_t label = 0;
  std::uint32_t height = 0;
  std::uint32_t width = 0;
  std::uint32_t channels = 0;

  bool empty() const noexcept { return pixels.empty(); }
  /// Bytes held, for memory bounds (prefetch's autotune).
  std::size_t byte_size() const noexcept { return sizeof(*this) + pixels.capacity(); }
};

/// A view of one image and its class, as `image_cache` hands them out from its file: the
/// pixels live in the cache's memory map. `batch(n)` groups these into an `ImageBatch` too.
///
/// ```cpp
/// for (const mo::data::ImageView& img : dir | dir.decode() | mo::data::image_cache("c.bin", dir))
///   use(img);
/// ```
struct ImageView {
  using batch_type = ImageBatch;

  std::span<const std::uint8_t> pixels = {};
  std::int32_t label = 0;
  std::uint32_t height = 0;
  std::uint32_t width = 0;
  std::uint32_t channels = 0;

  bool empty() const noexcept { return pixels.empty(); }
};

/// An image element: `LabeledImage` or `ImageView`, what `ImageBatch::push_back` takes.
template <class T>
concept ImageElement = requires(const T& t) {
  std::span<const std::uint8_t>(t.pixels);
  std::int32_t(t.label);
  std::size_t(t.height) * std::size_t(t.width) * std::size_t(t.channels);
};

/// `size()` images of one shape, `[rows, height, width, channels]` 8-bit values stored
/// contiguously (NHWC, as Keras's `image_dataset_from_directory` yields before any cast), and
/// one label per row: 1 byte a value where float32 batches take 4. `batch(n)` over
/// `LabeledImage`s fills one and reuses it from batch to batch, so once warm, batching
/// allocates nothing.
///
/// ```cpp
/// for (const mo::data::ImageBatch& b : dir | dir.decode() | mo::data::batch(32)) {
///   auto [rows, h, w, c] = b.shape();
///   step(b.pixels(), b.labels());
/// }
/// ```
class ImageBatch {
 public:
  /// Every value of every image: `size() * height() * width() * channels()` bytes.
  std::span<const std::uint8_t> pixels() const noexcept { return pixels_; }
  /// One class index per image.
  std::span<const std::int32_t> labels() const noexcept { return labels_; }
  /// The number of images (rows).
  std::size_t size() const noexcept { return labels_.size(); }
  bool empty() const noexcept { return labels_.empty(); }
  std::size_t height() const noexcept { return height_; }
  std::size_t width() const noexcept { return width_; }
  std::size_t channels() const noexcept { return channels_; }
  /// Values per image: height x width x channels.
  std::size_t image_size() const noexcept { return height_ * width_ * channels_; }
  /// `{rows, height, width, channels}`.
  std::array<std::size_t, 4> shape() const noexcept { return {size(), height_, width_, channels_}; }
  /// Image `i`'s values (unchecked).
  std::span<const std::uint8_t> image(std::size_t i) const noexcept {
    return std::span<const std::uint8_t>(pixels_).subspan(i * image_size(), image_size());
  }
  /// Bytes held, for memory bounds (prefetch's autotune).
  std::size_t byte_size() const noexcept {
    return sizeof(*this) + pixels_.capacity() + labels_.capacity() * sizeof(std::int32_t);
  }

  /// Makes room for `rows` images shaped like `like`, so that filling allocates nothing.
  template <ImageElement Image>
  void reserve(std::size_t rows, const Image& like) {
    pixels_.reserve(rows * like.pixels.size());
    labels_.reserve(rows);
  }

  /// Removes every image and keeps the storage.
  void clear() noexcept {
    pixels_.clear();
    labels_.clear();
    height_ = width_ = channels_ = 0;
  }

  /// Appends `image`. The first image sets the shape; an image of another shape, or one with
  /// no pixels (skipped), raises `memopt::error`.
  ///
  /// ```cpp
  /// mo::data::ImageBatch batch;
  /// for (const mo::data::LabeledImage& img : dir | dir.decode()) batch.push_back(img);
  /// ```
  template <ImageElement Image>
  void push_back(const Image& image) {
    const std::size_t expect =
        static_cast<std::size_t>(image.height) * image.width * image.channels;
    if (image.pixels.empty() || image.pixels.size() != expect) {
      throw error("data::ImageBatch: expected an image of " + std::to_string(expect) + " values (" +
                  std::to_string(image.height) + " x " + std::to_string(image.width) + " x " +
                  std::to_string(image.channels) + "), found " +
                  std::to_string(image.pixels.size()));
    }
    if (labels_.empty()) {
      height_ = image.height;
      width_ = image.width;
      channels_ = image.channels;
    } else if (image.height != height_ || image.width != width_ || image.channels != channels_) {
      throw error("data::ImageBatch: expected every image to be " + std::to_string(height_) +
                  " x " + std::to_string(width_) + " x " + std::to_string(channels_) +
                  " (as the batch's first), found " + std::to_string(image.height) + " x " +
                  std::to_string(image.width) + " x " + std::to_string(image.channels) +
                  " in row " + std::to_string(labels_.size()));
    }
    pixels_.insert(pixels_.end(), image.pixels.begin(), image.pixels.end());
    labels_.push_back(image.label);
  }

 private:
  std::vector<std::uint8_t> pixels_;
  std::vector<std::int32_t> labels_;
  std::size_t height_ = 0;
  std::size_t width_ = 0;
  std::size_t channels_ = 0;
};

}  // namespace memopt::data
