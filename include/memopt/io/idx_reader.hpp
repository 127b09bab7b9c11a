#pragma once
// io::IdxReader: reads an IDX file's header, then its payload in pieces, checking both.

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "memopt/core/error.hpp"
#include "memopt/io/detail/gz_file.hpp"

namespace memopt::io {
namespace detail {

inline constexpr std::uint8_t kIdxUnsignedByte = 0x08;

inline std::string_view idx_type_name(std::uint8_t code) noexcept {
  switch (code) {
    case 0x08:
      return "unsigned byte";
    case 0x09:
      return "signed byte";
    case 0x0B:
      return "16-bit integer";
    case 0x0C:
      return "32-bit integer";
    case 0x0D:
      return "float";
    case 0x0E:
      return "double";
    default:
      return "not an IDX type";
  }
}

inline std::uint32_t load_big_endian_u32(const unsigned char* bytes) noexcept {
  return static_cast<std::uint32_t>(bytes[0]) << 24 | static_cast<std::uint32_t>(bytes[1]) << 16 |
         static_cast<std::uint32_t>(bytes[2]) << 8 | static_cast<std::uint32_t>(bytes[3]);
}

// "10x28x28": dimensions as a message shows them.
inline std::string format_dims(const std::vector<std::size_t>& dims) {
  return dims.empty() ? std::string("none (a scalar)") : fmt::format("{}", fmt::join(dims, "x"));
}

// The magic of an unsigned-byte array of `rank` dimensions, with what it usually holds.
inline std::string idx_magic_description(std::size_t rank) {
  const std::size_t magic = std::size_t{kIdxUnsignedByte} << 8 | rank;
  switch (rank) {
    case 1:
      return fmt::format("0x{:08X} (unsigned bytes, 1 dimension: labels)", magic);
    case 3:
      return fmt::format("0x{:08X} (unsigned bytes, 3 dimensions: images)", magic);
    default:
      return fmt::format("0x{:08X} (unsigned bytes, {} dimensions)", magic, rank);
  }
}

}  // namespace detail

/// An open IDX file (the MNIST and Fashion-MNIST format), plain or gzip-compressed (told
/// apart by the gzip magic bytes 0x1f 0x8b, not by the name). The constructor reads and checks
/// the header; `read()` then hands out the payload, unsigned bytes in row-major order, in
/// pieces of the caller's choosing, so a loader can convert as it goes without holding the
/// raw bytes. Only unsigned-byte files (type code 0x08) are supported.
///
/// Every problem raises `memopt::error` with `who` (the public function the user called), the
/// file's name, and what was expected and found: a missing file, a wrong magic number (or,
/// given `expected_rank`, another rank), another element type, a truncated header or payload,
/// and, from `expect_end()`, trailing bytes; for a gzip file also a missing CRC-32/length
/// trailer and bytes after the stream.
///
/// ```cpp
/// mo::io::IdxReader images("train-images-idx3-ubyte.gz", /*expected_rank=*/3);
/// std::vector<std::uint8_t> row(images.dims()[1] * images.dims()[2]);
/// while (images.remaining() > 0) use(row.data(), images.read(row));
/// images.expect_end();
/// ```
class IdxReader {
 public:
  explicit IdxReader(const std::filesystem::path& path,
                     std::optional<std::size_t> expected_rank = std::nullopt,
                     std::string_view who = "io::IdxReader")
      : file_(path, who), name_(path.string()) {
    read_header(expected_rank);
  }

  /// The dimensions, outermost first: {count, rows, columns} for images, {count} for labels.
  const std::vector<std::size_t>& dims() const noexcept { return dims_; }
  std::size_t rank() const noexcept { return dims_.size(); }
  /// The number of elements (here also bytes) in the payload: the product of `dims()`.
  std::size_t size() const noexcept { return size_; }
  /// The number of payload elements not read yet.
  std::size_t remaining() const noexcept { return size_ - consumed_; }

  /// Reads the next `min(out.size(), remaining())` payload elements into `out` and returns
  /// that count. Raises `memopt::error` when the file ends before the payload does.
  ///
  /// ```cpp
  /// mo::io::IdxReader reader("train-labels-idx1-ubyte.gz", /*expected_rank=*/1);
  /// std::vector<std::uint8_t> labels(reader.size());
  /// reader.read(labels);
  /// ```
  std::size_t read(std::span<std::uint8_t> out) {
    const std::size_t want = std::min(out.size(), remaining());
    const std::size_t got = file_.read(out.data(), want);
    consumed_ += got;
    if (got < want) throw truncated_payload(consumed_);
    return got;
  }

  /// Checks that the file ends right after the payload; raises `memopt::error` when payload
  /// is left unread or more bytes follow it.
  [[gnu::cold]] void expect_end() {
    if (remaining() > 0) {
      throw error(fmt::format("{}: '{}': {} of the {} payload bytes were left unread", file_.who(),
                              name_, remaining(), size_));
    }
    if (unsigned char extra = 0; file_.read(&extra, 1) != 0) {
      throw error(fmt::format(
          "{}: '{}' has trailing data: expected {} bytes of data for dimensions {} and then the "
          "end of the file, found more",
          file_.who(), name_, size_, detail::format_dims(dims_)));
    }
    // A gzip stream is checked to its end, as the plain file is: reading past the payload
    // above made zlib verify the trailer's CRC-32 and length, when the trailer is there.
    if (file_.cut_short()) {
      throw error(fmt::format(
          "{}: '{}' is truncated: expected the gzip stream to end with its 8-byte CRC-32 and "
          "length trailer after the {} bytes of data, found the end of the file before it (the "
          "data cannot be verified)",
          file_.who(), name_, size_));
    }
    if (const auto extra = file_.trailing_bytes(); extra > 0) {
      throw error(fmt::format(
          "{}: '{}' has trailing data: expected the end of the file after the gzip stream, "
          "found {} more byte{} that are not a gzip member",
          file_.who(), name_, extra, extra == 1 ? "" : "s"));
    }
  }

  /// The name of the file, as messages show it.
  const std::string& name() const noexcept { return name_; }

 private:
  // Names a gzip stream that stops early: the file's copy is incomplete, not malformed.
  std::string_view cut_note() const noexcept {
    return file_.cut_short() ? " (the gzip stream ends early)" : "";
  }

  error truncated_payload(std::size_t found) const {
    return error(fmt::format(
        "{}: '{}' is truncated: expected {} bytes of data for dimensions {}, found {}{}",
        file_.who(), name_, size_, detail::format_dims(dims_), found, cut_note()));
  }

  // Header: two zero bytes, the type code, the rank, then one big-endian u32 per dimension.
  void read_header(std::optional<std::size_t> expected_rank) {
    const std::string_view who = file_.who();
    std::array<unsigned char, 4> magic_bytes{};
    if (const auto got = file_.read(magic_bytes.data(), magic_bytes.size()); got < 4) {
      throw error(fmt::format(
          "{}: '{}' is truncated: expected a 4-byte IDX magic number, found {} byte{}{}", who,
          name_, got, got == 1 ? "" : "s", cut_note()));
    }
    const std::uint32_t magic = detail::load_big_endian_u32(magic_bytes.data());
    const std::uint8_t type = magic_bytes[2];
    const std::size_t rank = magic_bytes[3];
    if (magic_bytes[0] != 0 || magic_bytes[1] != 0) {
      const std::string expected = expected_rank
                                       ? detail::idx_magic_description(*expected_rank)
                                       : "0x000008NN, such as " + detail::idx_magic_description(1) +
                                             " or " + detail::idx_magic_description(3);
      throw error(
          fmt::format("{}: '{}' is not an IDX file: expected magic number {}, found 0x{:08X}", who,
                      name_, expected, magic));
    }
    if (type != detail::kIdxUnsignedByte) {
      throw error(fmt::format(
          "{}: '{}' has an unsupported IDX type code: expected 0x{:02X} (unsigned byte), found "
          "0x{:02X} ({}) in magic number 0x{:08X}",
          who, name_, detail::kIdxUnsignedByte, type, detail::idx_type_name(type), magic));
    }
    if (expected_rank && rank != *expected_rank) {
      throw error(fmt::format("{}: '{}' has the wrong IDX magic number: expected {}, found {}", who,
                              name_, detail::idx_magic_description(*expected_rank),
                              detail::idx_magic_description(rank)));
    }

    std::vector<unsigned char> dim_bytes(4 * rank);
    if (const auto got = file_.read(dim_bytes.data(), dim_bytes.size()); got < dim_bytes.size()) {
      throw error(fmt::format(
          "{}: '{}' is truncated: expected {} dimension sizes ({} bytes) after the magic "
          "number, found {} bytes{}",
          who, name_, rank, dim_bytes.size(), got, cut_note()));
    }
    dims_.resize(rank);
    size_ = 1;
    for (std::size_t d = 0; d < rank; ++d) {
      dims_[d] = detail::load_big_endian_u32(dim_bytes.data() + 4 * d);
      if (dims_[d] != 0 && size_ > std::numeric_limits<std::size_t>::max() / dims_[d]) {
        throw error(fmt::format(
            "{}: '{}' has impossible dimensions: expected at most {} bytes of data, found "
            "dimensions {}",
            who, name_, std::numeric_limits<std::size_t>::max(), detail::format_dims(dims_)));
      }
      size_ *= dims_[d];
    }

    // A plain file's size tells a short payload before anything is allocated for it.
    if (!file_.is_gzip()) {
      std::error_code ec;
      const auto bytes = std::filesystem::file_size(file_.path(), ec);
      const std::size_t header = 4 + dim_bytes.size();
      if (!ec && bytes >= header && bytes - header < size_) {
        throw truncated_payload(static_cast<std::size_t>(bytes - header));
      }
    }
  }

  detail::GzFile file_;
  std::string name_;
  std::vector<std::size_t> dims_;
  std::size_t size_ = 0;
  std::size_t consumed_ = 0;
};

}  // namespace memopt::io
