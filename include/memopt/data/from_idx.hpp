#pragma once
// data::from_idx: a Dataset from an IDX pair of images and labels, pixels scaled to [0, 1].

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "memopt/core/error.hpp"
#include "memopt/data/dataset.hpp"
#include "memopt/io/idx_reader.hpp"

namespace memopt::data {
namespace detail {

// Reads the rest of `reader`'s payload, appending `convert(byte)` for each byte to `out`.
// It goes a cache-sized piece at a time, so the raw bytes are converted while still in
// cache and never held whole.
template <class T, class Convert>
void append_idx_payload(io::IdxReader& reader, std::vector<T>& out, Convert convert) {
  constexpr std::size_t kPiece = std::size_t{1} << 20;
  // Reserve no more than a sane first amount, so a corrupt .gz header that promises
  // terabytes fails as truncated instead of failing to allocate; beyond it the vector grows.
  constexpr std::size_t kFirstReserve = std::size_t{64} << 20;
  out.reserve(out.size() + std::min(reader.remaining(), kFirstReserve));
  std::vector<std::uint8_t> piece(std::min(reader.remaining(), kPiece));
  while (reader.remaining() > 0) {
    const std::size_t n = reader.read(piece);
    const std::size_t done = out.size();
    // Appended, not assigned into a zero-filled vector: writing each page once is the cost.
    out.insert(out.end(), piece.begin(), piece.begin() + static_cast<std::ptrdiff_t>(n));
    T* fresh = out.data() + done;
    for (std::size_t i = 0; i < n; ++i) fresh[i] = convert(fresh[i]);
  }
  reader.expect_end();
}

}  // namespace detail

/// Loads an IDX images file (count × rows × columns unsigned bytes) and its IDX labels file
/// (count unsigned bytes), plain or `.gz`, as one `Dataset`: each image becomes a sample of
/// rows × columns features scaled from [0, 255] to [0, 1]. Raises `memopt::error` for a bad
/// file (see `io::IdxReader`) and when the two counts differ, naming both files.
///
/// ```cpp
/// const std::filesystem::path dir = "/usr/share/datasets/fashion-mnist";
/// auto test = mo::data::from_idx(dir / "t10k-images-idx3-ubyte.gz",
///                                dir / "t10k-labels-idx1-ubyte.gz");
/// assert(test.size() == 10'000 && test.width() == 784);
/// ```
inline Dataset from_idx(const std::filesystem::path& images_path,
                        const std::filesystem::path& labels_path) {
  constexpr const char* kWho = "data::from_idx";
  io::IdxReader images(images_path, 3, kWho);
  io::IdxReader labels(labels_path, 1, kWho);
  // Both headers are in: a mismatch fails before any payload is read.
  if (images.dims()[0] != labels.dims()[0]) {
    throw error(fmt::format(
        "{}: expected as many labels as images, found {} images in '{}' and {} labels in '{}'",
        kWho, images.dims()[0], images.name(), labels.dims()[0], labels.name()));
  }

  std::vector<float> features;
  // Division, not multiplication by 1/255, so that 255 maps to exactly 1.0f.
  detail::append_idx_payload(images, features, [](float pixel) { return pixel / 255.0f; });
  std::vector<std::int32_t> classes;
  detail::append_idx_payload(labels, classes, [](std::int32_t label) { return label; });
  return Dataset(std::move(features), std::move(classes), images.dims()[1] * images.dims()[2]);
}

}  // namespace memopt::data
