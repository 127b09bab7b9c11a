#pragma once
// detail::AtomicFile: writes a file under a temporary name in the target's folder, then
// renames it over the target, so that a reader sees the old file or the new one, never half
// of either.
//
// The steps, each checked: create the temporary file (O_EXCL), write every byte, fsync it,
// close it, rename it over the target, fsync the folder so that the rename itself survives a
// crash. Any failure before the rename removes the temporary file, leaves the target as it
// was and raises memopt::error naming the file, the step and the system's reason.

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <system_error>
#include <utility>

#include "memopt/core/error.hpp"

namespace memopt::io::detail {

/// Called with the temporary file's path after it is written, synced and closed, just before
/// the rename. Tests point it at a function that throws, to prove that a failure there leaves
/// the previous file intact; it is null otherwise. (A plain pointer, not an environment
/// variable: nothing outside the program can trigger it.)
inline void (*before_rename_hook)(const std::filesystem::path& temporary) = nullptr;

/// The system's words for errno value `code`.
inline std::string errno_message(int code) {
  return std::error_code(code, std::generic_category()).message();
}

/// ".NAME.tmp-PID-N": the hidden name under which process PID writes NAME for the Nth time.
///
/// Built by appending to one string: GCC 12 at -O3 misreads `"." + name + ...` (a prepend
/// into a temporary) as an overlapping memcpy and fails -Werror=restrict.
inline std::string temporary_name(const std::string& name, long long pid, std::uint64_t n) {
  std::string s;
  s.reserve(name.size() + 48);
  s += '.';
  s += name;
  s += ".tmp-";
  s += std::to_string(pid);
  s += '-';
  s += std::to_string(n);
  return s;
}

/// A file written in full or not at all.
///
/// ```cpp
/// io::detail::AtomicFile f("ckpt.safetensors");
/// f.write(header);
/// f.write(data);
/// f.commit();  // until here, ckpt.safetensors is whatever it was before
/// ```
class AtomicFile {
 public:
  /// Creates the temporary file next to `target`; raises memopt::error when it cannot.
  explicit AtomicFile(std::filesystem::path target) : target_(std::move(target)) {
    if (target_.filename().empty())
      throw error("write " + target_.string() + ": expected a file name, found a folder path");
    folder_ = target_.parent_path();
    if (folder_.empty()) folder_ = ".";
    // Unique per process and per call, and hidden: a crash leaves a dot file, never a file
    // that a glob for checkpoints would pick up.
    static std::atomic<std::uint64_t> counter{0};
    temporary_ = folder_ / temporary_name(target_.filename().string(), ::getpid(), counter++);
    do {
      fd_ = ::open(temporary_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    } while (fd_ < 0 && errno == EINTR);
    if (fd_ < 0) {
      const int code = errno;
      const std::string name = std::exchange(temporary_, {}).string();  // not ours to remove
      fail("create the temporary file " + name, code);
    }
  }

  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  /// Removes the temporary file unless commit() succeeded.
  ~AtomicFile() { discard(); }

  /// Appends `bytes`; raises memopt::error on a short or failed write (a full disk, a file
  /// size limit), after removing the temporary file.
  void write(std::span<const std::byte> bytes) {
    require_open("write");
    const std::byte* p = bytes.data();
    std::size_t left = bytes.size();
    while (left > 0) {
      const ::ssize_t n = ::write(fd_, p, left);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        const int code = n < 0 ? errno : ENOSPC;
        fail("write " + std::to_string(left) + " more bytes after " + std::to_string(written_),
             code);
      }
      p += n;
      left -= static_cast<std::size_t>(n);
      written_ += static_cast<std::size_t>(n);
    }
  }

  /// Bytes written so far.
  std::size_t size() const { return written_; }

  /// Makes the new file the target: fsync, close, rename over the target, fsync the folder.
  void commit() {
    require_open("commit");
    if (::fsync(fd_) != 0) fail("fsync the temporary file", errno);
    const int fd = std::exchange(fd_, -1);
    if (::close(fd) != 0) fail("close the temporary file", errno);
    try {
      if (before_rename_hook) before_rename_hook(temporary_);
    } catch (...) {
      discard();
      throw;
    }
    if (::rename(temporary_.c_str(), target_.c_str()) != 0) fail("rename over the target", errno);
    committed_ = true;
    sync_folder();
  }

 private:
  void require_open(const char* what) const {
    if (fd_ < 0 || committed_)
      throw error("write " + target_.string() + ": " + what +
                  " after the file was committed or abandoned");
  }

  // Some file systems cannot fsync a folder (EINVAL): the rename is then as durable as that
  // file system makes it, which is all anyone can do there.
  void sync_folder() const {
    const int dir = ::open(folder_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir < 0) return;
    const int rc = ::fsync(dir);
    const int code = errno;
    ::close(dir);
    if (rc != 0 && code != EINVAL && code != ENOTSUP && code != EBADF)
      throw error("write " + target_.string() + ": the file was renamed into place but fsync of " +
                  folder_.string() + " failed: " + errno_message(code));
  }

  void discard() noexcept {
    if (fd_ >= 0) ::close(std::exchange(fd_, -1));
    if (!committed_ && !temporary_.empty()) {
      ::unlink(temporary_.c_str());
      temporary_.clear();
    }
  }

  [[noreturn]] void fail(const std::string& step, int code) {
    discard();
    throw error("write " + target_.string() + ": could not " + step + ": " + errno_message(code) +
                " (expected success; the previous file, if any, is unchanged)");
  }

  std::filesystem::path target_;
  std::filesystem::path folder_;
  std::filesystem::path temporary_;
  int fd_ = -1;
  std::size_t written_ = 0;
  bool committed_ = false;
};

}  // namespace memopt::io::detail
