#pragma once
// Test helper: runs a function in a forked child with a time limit, so that a regression that
// hangs (a blocking open, an endless listing) or crashes (SIGBUS, SIGSEGV) fails its test
// instead of stopping the whole run.

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <exception>
#include <string>

namespace memopt::testing {

/// How a child run ended: `output` is what the function returned (or "exception: what()"),
/// complete only when `finished`.
struct ChildResult {
  bool finished = false;   // exited on its own, status 0
  bool timed_out = false;  // killed after the time limit
  int signal = 0;          // the signal that ended it, if one did
  std::string output;

  /// One line for a failed CHECK's message.
  std::string describe() const {
    if (timed_out) return "the child did not finish in time (a hang), output so far: " + output;
    if (signal != 0) return "the child died of signal " + std::to_string(signal) + ": " + output;
    return output;
  }
};

/// Forks; the child runs `fn()` (returning a `std::string`), sends the result back through a
/// pipe and exits; the parent waits at most `limit` for it, then kills it with SIGKILL.
///
/// ```cpp
/// const auto r = run_in_child([&] { return std::to_string(image_directory(root).size()); },
///                             std::chrono::seconds(10));
/// CHECK_MESSAGE(r.finished, r.describe());
/// ```
template <class F>
ChildResult run_in_child(F fn, std::chrono::milliseconds limit) {
  ChildResult result;
  int fds[2];
  if (::pipe(fds) != 0) {
    result.output = "pipe failed";
    return result;
  }
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    result.output = "fork failed";
    return result;
  }
  if (pid == 0) {
    ::close(fds[0]);
    std::string out;
    try {
      out = fn();
    } catch (const std::exception& e) {
      out = std::string("exception: ") + e.what();
    } catch (...) {
      out = "exception of an unknown type";
    }
    for (std::size_t done = 0; done < out.size();) {
      const ssize_t n = ::write(fds[1], out.data() + done, out.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) ::_exit(2);
      done += static_cast<std::size_t>(n);
    }
    ::_exit(0);  // no atexit handlers, no doctest report from the child
  }
  ::close(fds[1]);
  const auto deadline = std::chrono::steady_clock::now() + limit;
  char buffer[4096];
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      result.timed_out = true;
      break;
    }
    pollfd p{fds[0], POLLIN, 0};
    const int ready = ::poll(&p, 1, static_cast<int>(left.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready == 0) {
      result.timed_out = true;
      break;
    }
    const ssize_t n = ::read(fds[0], buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // end of file: the child closed its end (exited)
    result.output.append(buffer, static_cast<std::size_t>(n));
  }
  ::close(fds[0]);
  if (result.timed_out) ::kill(pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFSIGNALED(status) && !result.timed_out) result.signal = WTERMSIG(status);
  result.finished = !result.timed_out && WIFEXITED(status) && WEXITSTATUS(status) == 0;
  return result;
}

}  // namespace memopt::testing
