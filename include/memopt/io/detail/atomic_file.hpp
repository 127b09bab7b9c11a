#pragma once
// detail::AtomicFile: writes a file under a temporary name in the target's folder, then
// renames it over the target, so that a reader sees the old file or the new one, never half
// of either.
//
// The steps, each checked: create the temporary file (O_EXCL), write every byte, fsync it,
// close it, rename it over the target, fsync the folder so that the rename itself survives a
// crash. Any failure before the rename removes the temporary file, leaves the target as it
// was and raises memopt::error naming the file, the step and the system's reason.
//
// A process killed mid-save (kill -9, a preempted job) leaves its temporary file behind. The
// next AtomicFile of the same target removes such leftovers first, but only those whose
// writer is gone: see remove_stale_temporaries().

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <charconv>
#include <climits>
#include <csignal>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
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

/// The writer's PID when `file` is ".NAME.tmp-PID-N" for this `name`, else 0.
inline long long temporary_writer(std::string_view file, std::string_view name) {
  if (file.size() < name.size() + 6 || file[0] != '.' || file.substr(1, name.size()) != name ||
      file.substr(1 + name.size(), 5) != ".tmp-")
    return 0;
  const std::string_view rest = file.substr(name.size() + 6);  // "PID-N"
  const auto dash = rest.find('-');
  if (dash == std::string_view::npos || dash == 0 || dash + 1 == rest.size()) return 0;
  const auto digits = [](std::string_view d) {
    return d.find_first_not_of("0123456789") == std::string_view::npos;
  };
  if (!digits(rest.substr(0, dash)) || !digits(rest.substr(dash + 1))) return 0;
  long long pid = 0;
  const auto [end, ec] = std::from_chars(rest.data(), rest.data() + dash, pid);
  if (ec != std::errc{} || end != rest.data() + dash || pid <= 0 || pid > INT_MAX) return 0;
  return pid;
}

/// Removes the temporary files that writers of `folder / name` left when they were killed:
/// regular files named ".NAME.tmp-PID-N" whose process PID no longer exists. Keeps this
/// process's own (another thread may be writing it), any whose process is alive or may be
/// (kill(PID, 0) fails with anything but ESRCH), and every other name. Best effort: returns
/// how many it removed and never throws.
///
/// A PID means something only on this machine and in this PID namespace: a folder that
/// writers on other machines or in other containers share may lose a temporary file that is
/// still being written. That writer's rename then fails and its save raises memopt::error;
/// its target is never harmed.
///
/// ```cpp
/// mo::io::detail::remove_stale_temporaries("runs", "ckpt.safetensors");  // after a kill -9
/// ```
inline std::size_t remove_stale_temporaries(const std::filesystem::path& folder,
                                            std::string_view name) noexcept {
  std::size_t removed = 0;
  try {
    std::error_code ec;
    const long long self = ::getpid();
    for (std::filesystem::directory_iterator it(folder, ec), end; !ec && it != end;
         it.increment(ec)) {
      const long long pid = temporary_writer(it->path().filename().native(), name);
      if (pid == 0 || pid == self) continue;
      if (::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;
      std::error_code type_ec;
      if (!it->is_regular_file(type_ec) || it->is_symlink(type_ec)) continue;
      if (::unlink(it->path().c_str()) == 0) ++removed;
    }
  } catch (...) {
    // An allocation failure while listing: leftovers stay until the next save.
  }
  return removed;
}

/// A file written in full or not at all.
///
/// ```cpp
/// std::vector<std::byte> header(8), data(4096);
/// mo::io::detail::AtomicFile f("ckpt.safetensors");
/// f.write(header);
/// f.write(data);
/// f.commit();  // until here, ckpt.safetensors is whatever it was before
/// ```
class AtomicFile {
 public:
  /// Creates the temporary file next to `target`; raises memopt::error when it cannot.
  [[gnu::cold]] explicit AtomicFile(std::filesystem::path target) : target_(std::move(target)) {
    if (target_.filename().empty())
      throw error("write " + target_.string() + ": expected a file name, found a folder path");
    folder_ = target_.parent_path();
    if (folder_.empty()) folder_ = ".";
    // Before writing, so that a disk that leftovers filled has room for this save.
    remove_stale_temporaries(folder_, target_.filename().native());
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
