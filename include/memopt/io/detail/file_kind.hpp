#pragma once
// io::detail::kind_of(mode): what a file that is not a regular one is, for messages.

#include <sys/stat.h>

namespace memopt::io::detail {

/// "a FIFO", "a socket", ...: what `mode` (from stat) is, for a message saying that a regular
/// file was expected. Readers of files named by others refuse anything else without blocking:
/// a FIFO's open would wait for a writer forever.
///
/// ```cpp
/// const char* path = "train.csv";
/// struct stat st {};
/// if (::stat(path, &st) != 0) throw mo::error(std::string("cannot stat ") + path);
/// if (!S_ISREG(st.st_mode)) throw mo::error(std::string("expected a regular file, found ") +
///                                           mo::io::detail::kind_of(st.st_mode));
/// ```
inline const char* kind_of(mode_t mode) noexcept {
  if (S_ISREG(mode)) return "a regular file";
  if (S_ISDIR(mode)) return "a folder";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISCHR(mode)) return "a character device";
  return "a file of unknown type";
}

}  // namespace memopt::io::detail
