#pragma once
// io::read_idx: reads a whole IDX file (the MNIST and Fashion-MNIST format), plain or gzip.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "memopt/io/idx_reader.hpp"

namespace memopt::io {

/// An n-dimensional array read from an IDX file: its dimensions, outermost first, and its
/// elements in row-major order.
///
/// ```cpp
/// mo::io::IdxArray<std::uint8_t> images = mo::io::read_idx_images("train-images-idx3-ubyte.gz");
/// std::size_t n = images.dims[0], rows = images.dims[1], cols = images.dims[2];
/// std::uint8_t first_pixel = images.data[0];
/// ```
template <class T>
struct IdxArray {
  std::vector<std::size_t> dims;
  std::vector<T> data;

  std::size_t rank() const noexcept { return dims.size(); }
  std::size_t size() const noexcept { return data.size(); }
};

namespace detail {

// Cold (here and in the other once-per-file functions): GCC optimizes it for size, which
// takes less compile time in every program that includes it; zlib does the work.
[[gnu::cold]] inline IdxArray<std::uint8_t> read_idx(const std::filesystem::path& path,
                                                     std::optional<std::size_t> expected_rank,
                                                     std::string_view who) {
  IdxReader reader(path, expected_rank, who);
  IdxArray<std::uint8_t> array{reader.dims(), {}};
  // The payload in as few reads as possible: one for Fashion-MNIST. The buffer grows in
  // doubling steps rather than all at once, so a corrupt .gz header that promises terabytes
  // fails as a truncated file, not as a failed allocation.
  constexpr std::size_t kFirstRead = std::size_t{64} << 20;
  for (std::size_t step = std::min(reader.size(), kFirstRead); reader.remaining() > 0; step *= 2) {
    const std::size_t done = array.data.size();
    array.data.resize(done + std::min(step, reader.remaining()));
    reader.read(std::span(array.data).subspan(done));
  }
  reader.expect_end();
  return array;
}

}  // namespace detail

/// Reads a whole IDX file of unsigned bytes of any rank, plain or gzip-compressed. Raises
/// `memopt::error` naming the file when it is missing, is not IDX, holds another element type,
/// is truncated or has trailing data (see `IdxReader`).
///
/// ```cpp
/// auto labels = mo::io::read_idx("/usr/share/datasets/fashion-mnist/t10k-labels-idx1-ubyte.gz");
/// assert(labels.rank() == 1 && labels.dims[0] == 10'000);
/// ```
inline IdxArray<std::uint8_t> read_idx(const std::filesystem::path& path) {
  return detail::read_idx(path, std::nullopt, "io::read_idx");
}

/// Reads an IDX file of images: unsigned bytes in 3 dimensions (count, rows, columns), magic
/// number 0x00000803. Raises `memopt::error` as `read_idx` does, and for any other magic.
///
/// ```cpp
/// const std::filesystem::path dir = "/usr/share/datasets/fashion-mnist";
/// auto images = mo::io::read_idx_images(dir / "train-images-idx3-ubyte.gz");
/// std::size_t width = images.dims[1] * images.dims[2];  // 784
/// ```
inline IdxArray<std::uint8_t> read_idx_images(const std::filesystem::path& path) {
  return detail::read_idx(path, 3, "io::read_idx_images");
}

/// Reads an IDX file of labels: unsigned bytes in 1 dimension (count), magic number
/// 0x00000801. Raises `memopt::error` as `read_idx` does, and for any other magic.
///
/// ```cpp
/// const std::filesystem::path dir = "/usr/share/datasets/fashion-mnist";
/// auto labels = mo::io::read_idx_labels(dir / "train-labels-idx1-ubyte.gz");
/// std::uint8_t first_class = labels.data[0];
/// ```
inline IdxArray<std::uint8_t> read_idx_labels(const std::filesystem::path& path) {
  return detail::read_idx(path, 1, "io::read_idx_labels");
}

}  // namespace memopt::io
