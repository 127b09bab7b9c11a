#pragma once
// io::detail::GzFile: a zlib read handle that reads gzip and plain files alike.

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <system_error>

#include <fmt/format.h>

#include "memopt/core/error.hpp"

namespace memopt::io::detail {

/// An open file read through zlib: a gzip file is inflated, a plain file passes through.
/// Errors raise `memopt::error` prefixed by `who` (the public function) and the file name.
///
/// ```cpp
/// auto file = GzFile("train-labels-idx1-ubyte.gz", "io::read_idx");
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
#if defined(_WIN32)
    file_.reset(gzopen_w(path_.c_str(), "rb"));
#else
    file_.reset(gzopen(path_.c_str(), "rb"));
#endif
    if (!file_) {
      throw error(fmt::format("{}: cannot open '{}': {}", who_, path_.string(),
                              errno != 0 ? std::strerror(errno) : "zlib could not open it"));
    }
    // A larger buffer than zlib's 8 KiB default halves the time to inflate a big file.
    gzbuffer(file_.get(), 1U << 18);
    // gzdirect() looks for the gzip magic bytes 0x1f 0x8b now: false means a gzip stream.
    gzip_ = gzdirect(file_.get()) == 0;
  }

  /// Reads up to `bytes` bytes into `out`; returns how many were read, fewer only at the end
  /// of the data. Corrupt gzip data raises `memopt::error`.
  std::size_t read(void* out, std::size_t bytes) {
    auto* dst = static_cast<unsigned char*>(out);
    std::size_t total = 0;
    while (total < bytes) {
      // gzread() takes an unsigned length and returns an int: feed it at most 1 GiB a call.
      const auto chunk = static_cast<unsigned>(std::min<std::size_t>(bytes - total, 1U << 30));
      const int got = gzread(file_.get(), dst + total, chunk);
      if (got < 0) {
        int code = Z_OK;
        const char* what = gzerror(file_.get(), &code);
        throw error(fmt::format(
            "{}: cannot read '{}': {} (zlib: {})", who_, path_.string(),
            gzip_ ? "expected valid gzip data, found corrupt data" : "read error", what));
      }
      total += static_cast<std::size_t>(got);
      if (static_cast<unsigned>(got) < chunk) break;
    }
    return total;
  }

  /// Whether the file is a gzip stream (rather than a plain file).
  bool is_gzip() const noexcept {
    return gzip_;
  }

  /// Whether reading stopped because a gzip stream was cut short (a truncated `.gz`).
  bool cut_short() const noexcept {
    int code = Z_OK;
    gzerror(file_.get(), &code);
    return gzip_ && code == Z_BUF_ERROR;
  }

  const std::filesystem::path& path() const noexcept {
    return path_;
  }
  std::string_view who() const noexcept {
    return who_;
  }

 private:
  struct Close {
    void operator()(gzFile file) const noexcept { gzclose(file); }
  };

  std::filesystem::path path_;
  std::string who_;
  std::unique_ptr<gzFile_s, Close> file_;
  bool gzip_ = false;
};

}  // namespace memopt::io::detail
