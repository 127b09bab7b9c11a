#pragma once
// io::detail::GzFile: reads gzip and plain files alike, checking a gzip stream to its end.
//
// zlib's gzread() would do the inflating, but it accepts a stream whose 8-byte CRC-32/length
// trailer is cut off (it reports no error to a reader that stops at the payload's end) and it
// skips whatever follows the last gzip member. Inflating here lets the reader see both: a cut
// stream (cut_short) and bytes after the stream (trailing_bytes).

#include <sys/stat.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include <fmt/format.h>

#include "memopt/core/error.hpp"

namespace memopt::io::detail {

/// An open file read through zlib: a gzip stream (one or more members, told by the magic
/// bytes 0x1f 0x8b) is inflated and checked, a plain file passes through. Errors raise
/// `memopt::error` prefixed by `who` (the public function) and the file name.
///
/// ```cpp
/// auto file = mo::io::detail::GzFile("train-labels-idx1-ubyte.gz", "io::read_idx");
/// unsigned char magic[4];
/// std::size_t got = file.read(magic, 4);
/// ```
class GzFile {
 public:
  GzFile(const std::filesystem::path& path, std::string_view who) : path_(path), who_(who) {
    std::error_code ec;
    const auto status = std::filesystem::status(path_, ec);
    if (!std::filesystem::exists(status)) {
      throw error(fmt::format("{}: cannot open '{}': no such file", who_, path_.string()));
    }
    if (std::filesystem::is_directory(status)) {
      throw error(fmt::format("{}: cannot open '{}': expected a file, found a directory", who_,
                              path_.string()));
    }
    errno = 0;
    file_.reset(std::fopen(path_.c_str(), "rb"));
    if (!file_) {
      throw error(fmt::format("{}: cannot open '{}': {}", who_, path_.string(),
                              errno != 0 ? std::strerror(errno) : "fopen failed"));
    }
    // A 256 KiB input buffer: zlib's gz functions default to 8 KiB, which halves the speed of
    // inflating a big file.
    in_.resize(std::size_t{1} << 18);
    fill(2);
    gzip_ = avail_ >= 2 && in_[0] == 0x1f && in_[1] == 0x8b;
    if (gzip_) {
      // 16 + MAX_WBITS: a gzip wrapper, whose CRC-32 and length inflate() checks.
      if (inflateInit2(&z_, 16 + MAX_WBITS) != Z_OK)
        throw error(fmt::format("{}: cannot read '{}': zlib could not start inflating", who_,
                                path_.string()));
      inflating_ = true;
      out_.resize(std::size_t{1} << 19);
    }
  }

  GzFile(const GzFile&) = delete;
  GzFile& operator=(const GzFile&) = delete;
  ~GzFile() {
    if (inflating_) inflateEnd(&z_);
  }

  /// Reads up to `bytes` bytes into `out`; returns how many were read, fewer only at the end
  /// of the data. Corrupt gzip data (a bad CRC-32 or length included) raises `memopt::error`.
  std::size_t read(void* out, std::size_t bytes) {
    auto* dst = static_cast<unsigned char*>(out);
    if (!gzip_) return copy_into(dst, bytes);
    std::size_t total = take(dst, bytes);
    while (total < bytes && !ended_) {
      if (bytes - total >= out_.size()) {
        total += inflate_into(dst + total, bytes - total);
      } else {
        // Small reads (a header) inflate a whole buffer ahead, as gzread() does: a small
        // file's CRC-32 is then checked before its first bytes are handed out, and damage
        // shows as corrupt gzip data rather than as a nonsensical header.
        out_next_ = 0;
        out_avail_ = inflate_into(out_.data(), out_.size());
        total += take(dst + total, bytes - total);
      }
    }
    return total;
  }

  /// Whether the file is a gzip stream (rather than a plain file).
  bool is_gzip() const noexcept { return gzip_; }

  /// Whether reading stopped because a gzip stream was cut short: the file ends inside a
  /// member's data or its 8-byte CRC-32/length trailer.
  bool cut_short() const noexcept { return cut_short_; }

  /// Bytes after the last complete gzip member that do not start another member (0 for a
  /// plain file, and until the reader has reached the stream's end).
  std::uint64_t trailing_bytes() const noexcept { return trailing_; }

  const std::filesystem::path& path() const noexcept { return path_; }
  std::string_view who() const noexcept { return who_; }

 private:
  struct Close {
    void operator()(std::FILE* f) const noexcept { std::fclose(f); }
  };

  // Makes at least `want` bytes available at in_[next_] when the file has them (moving the
  // unread rest to the front first); returns whether it could.
  bool fill(std::size_t want) {
    if (avail_ >= want) return true;
    if (avail_ > 0 && next_ > 0) std::memmove(in_.data(), in_.data() + next_, avail_);
    next_ = 0;
    while (avail_ < want && !eof_) {
      const std::size_t got = std::fread(in_.data() + avail_, 1, in_.size() - avail_, file_.get());
      avail_ += got;
      if (got == 0) {
        if (std::ferror(file_.get()))
          throw error(
              fmt::format("{}: cannot read '{}': {}", who_, path_.string(), std::strerror(errno)));
        eof_ = true;
      }
    }
    return avail_ >= want;
  }

  // Hands out what inflating ahead left in out_.
  std::size_t take(unsigned char* dst, std::size_t bytes) {
    const std::size_t n = std::min(bytes, out_avail_);
    if (n > 0) std::memcpy(dst, out_.data() + out_next_, n);
    out_next_ += n;
    out_avail_ -= n;
    return n;
  }

  std::size_t copy_into(unsigned char* dst, std::size_t bytes) {
    std::size_t total = 0;
    while (total < bytes && fill(1)) {
      const std::size_t n = std::min(bytes - total, avail_);
      std::memcpy(dst + total, in_.data() + next_, n);
      next_ += n;
      avail_ -= n;
      total += n;
    }
    return total;
  }

  std::size_t inflate_into(unsigned char* dst, std::size_t bytes) {
    std::size_t total = 0;
    while (total < bytes && !ended_) {
      if (avail_ == 0 && !fill(1)) {  // the file ends inside a member
        cut_short_ = true;
        ended_ = true;
        break;
      }
      // avail_in and avail_out are 32-bit: at most 1 GiB a call.
      const auto out_chunk = static_cast<uInt>(std::min<std::size_t>(bytes - total, 1U << 30));
      const auto in_chunk = static_cast<uInt>(std::min<std::size_t>(avail_, 1U << 30));
      z_.next_in = in_.data() + next_;
      z_.avail_in = in_chunk;
      z_.next_out = dst + total;
      z_.avail_out = out_chunk;
      const int rc = inflate(&z_, Z_NO_FLUSH);
      next_ += in_chunk - z_.avail_in;
      avail_ -= in_chunk - z_.avail_in;
      total += out_chunk - z_.avail_out;
      if (rc == Z_STREAM_END) {
        next_member();
      } else if (rc != Z_OK && rc != Z_BUF_ERROR) {
        throw error(
            fmt::format("{}: cannot read '{}': expected valid gzip data, found corrupt "
                        "data (zlib: {})",
                        who_, path_.string(), z_.msg ? z_.msg : zError(rc)));
      }
    }
    return total;
  }

  // After a member's trailer: the end of the file, another member, or trailing bytes.
  void next_member() {
    if (!fill(1)) {
      ended_ = true;
      return;
    }
    if (fill(2) && in_[next_] == 0x1f && in_[next_ + 1] == 0x8b) {
      inflateReset(&z_);
      return;
    }
    // Count what is left without reading it: what is buffered plus the rest of the file.
    std::uint64_t left = avail_;
    struct stat st {};
    const long pos = std::ftell(file_.get());
    if (!eof_ && pos >= 0 && ::fstat(::fileno(file_.get()), &st) == 0 &&
        static_cast<std::uint64_t>(st.st_size) > static_cast<std::uint64_t>(pos))
      left += static_cast<std::uint64_t>(st.st_size) - static_cast<std::uint64_t>(pos);
    trailing_ = left;
    ended_ = true;
  }

  std::filesystem::path path_;
  std::string who_;
  std::unique_ptr<std::FILE, Close> file_;
  std::vector<unsigned char> in_;
  std::size_t next_ = 0;   // the first unread byte of in_
  std::size_t avail_ = 0;  // unread bytes in in_
  bool eof_ = false;
  std::vector<unsigned char> out_;  // inflated ahead of small reads
  std::size_t out_next_ = 0;
  std::size_t out_avail_ = 0;
  z_stream z_{};
  bool inflating_ = false;
  bool gzip_ = false;
  bool ended_ = false;
  bool cut_short_ = false;
  std::uint64_t trailing_ = 0;
};

}  // namespace memopt::io::detail
