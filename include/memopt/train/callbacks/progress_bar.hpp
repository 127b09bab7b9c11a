#pragma once
// ProgressBar: what fit prints, as Keras's progress bar (its ProgbarLogger).
//
// On a terminal, per epoch:
//   Epoch 3/10
//    512/1875 [=======>......................] - ETA: 1s - 2ms/step - loss: 0.4012 - accuracy:
//    0.8500
// redrawn in place at most every `interval` seconds, and finished as
//   1875/1875 [==============================] - 4s - 2ms/step - loss: 0.3950 - ... - val_loss: ...
// When the output is not a terminal (a log file, a pipe) or verbose is 2, one line per epoch:
//   Epoch 3/10 - 1875/1875 - 4s - 2ms/step - loss: 0.3950 - accuracy: 0.8512 - val_loss: ...
//
// Redrawing runs inside the training loop, which must not allocate: lines are formatted into
// a fixed buffer with snprintf and written with one fwrite. (Not fmt::format_to_n: under nvcc
// with --expt-relaxed-constexpr its constexpr internals warn about long double in device
// code, and this header reaches .cu files through model.hpp.)

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdarg>
#include <cstddef>
#include <cstdio>
#include <string_view>
#include <utility>

#if __has_include(<unistd.h>)
#include <unistd.h>
#define MEMOPT_HAS_ISATTY 1
#endif

#include "memopt/train/callback.hpp"
#include "memopt/train/history.hpp"

namespace memopt::callbacks {

/// Whether `out` is an interactive terminal.
///
/// ```cpp
/// bool bar = mo::callbacks::is_terminal(stdout);  // false when piped to a file
/// ```
inline bool is_terminal(std::FILE* out) {
#ifdef MEMOPT_HAS_ISATTY
  return out && ::isatty(::fileno(out)) == 1;
#else
  (void)out;
  return false;
#endif
}

/// Keras's progress bar, driven by fit.
///
/// ```cpp
/// mo::BatchLogs running_logs;
/// mo::Logs epoch_logs;
/// mo::callbacks::ProgressBar bar{{.out = stdout, .verbose = 1}};
/// bar.on_epoch_begin(0, 10, 1875);
/// for (std::size_t s = 1; s <= 1875; ++s) {
///   step();
///   if (bar.due()) bar.update(s, running_logs);
/// }
/// bar.on_epoch_end(1875, epoch_logs);
/// ```
class ProgressBar {
 public:
  struct Options {
    std::FILE* out = stdout;
    /// 0 silent, 1 a bar on a terminal (one line per epoch elsewhere), 2 one line per epoch.
    int verbose = 1;
    /// A terminal or not; decided from `out` when not given.
    int interactive = -1;
    /// Seconds between redraws of the bar.
    double interval = 0.05;
    /// Characters of the bar between the brackets.
    int width = 30;
  };

  ProgressBar() : ProgressBar(Options{}) {}
  explicit ProgressBar(Options o) : o_(o) {
    if (o_.interactive < 0) o_.interactive = is_terminal(o_.out) ? 1 : 0;
    o_.width = std::clamp(o_.width, 1, 100);
  }

  /// True when the bar is drawn during the epoch (verbose 1 on a terminal).
  bool interactive() const { return o_.verbose == 1 && o_.interactive == 1; }

  /// Starts epoch `epoch` (0-based) of `epochs`; `steps` is 0 when not known yet.
  void on_epoch_begin(int epoch, int epochs, std::size_t steps) {
    epoch_ = epoch;
    epochs_ = epochs;
    steps_ = steps;
    start_ = last_draw_ = clock::now();
    previous_width_ = 0;
    if (interactive()) {
      Line line(buffer_);
      line.format("Epoch %d/%d\n", epoch + 1, epochs);
      emit(line.n);
    }
  }

  /// Whether a redraw is due now: drawing and the interval has passed. Cheap: one clock read.
  bool due() {
    if (!interactive()) return false;
    const auto now = clock::now();
    if (now - last_draw_ < std::chrono::duration<double>(o_.interval)) return false;
    last_draw_ = now;
    return true;
  }

  /// Redraws the bar after `done` steps with the running `logs`. Allocates nothing.
  void update(std::size_t done, const BatchLogs& logs) {
    if (!interactive()) return;
    Line line(buffer_);
    line.put('\r');
    counter_and_bar(line, done);
    const double elapsed = seconds_since_start();
    const double per_step = done ? elapsed / static_cast<double>(done) : 0.0;
    if (steps_ > done) {
      line.text(" - ETA: ");
      duration(line, per_step * static_cast<double>(steps_ - done));
    } else {
      line.text(" - ");
      duration(line, elapsed);
    }
    line.text(" - ");
    step_time(line, per_step);
    value(line, "loss", logs.loss);
    if (has_accuracy_) value(line, "accuracy", logs.accuracy);
    finish(line, false);
  }

  /// Ends the epoch: the finished bar (terminal) or the epoch's one line, with every log.
  void on_epoch_end(std::size_t done, const Logs& logs) {
    if (o_.verbose <= 0) return;
    has_accuracy_ = logs.contains("accuracy");
    if (steps_ == 0) steps_ = done;
    Line line(buffer_);
    if (interactive()) {
      line.put('\r');
      counter_and_bar(line, done);
    } else {
      line.format("Epoch %d/%d - %llu/%llu", epoch_ + 1, epochs_,
                  static_cast<unsigned long long>(done), static_cast<unsigned long long>(steps_));
    }
    const double elapsed = seconds_since_start();
    line.text(" - ");
    duration(line, elapsed);
    line.text(" - ");
    step_time(line, done ? elapsed / static_cast<double>(done) : 0.0);
    // The training values, then the validation values; the loss first in each.
    for (const std::string_view loss : {"loss", "val_loss"}) {
      const bool validation = loss.starts_with("val_");
      if (const auto it = logs.find(loss); it != logs.end()) value(line, loss, it->second);
      for (const auto& [key, v] : logs)
        if (std::string_view(key).starts_with("val_") == validation && key != loss)
          value(line, key, v);
    }
    finish(line, true);
  }

  /// Tells update() whether to show accuracy before the first epoch has ended.
  void show_accuracy(bool yes) { has_accuracy_ = yes; }

 private:
  using clock = std::chrono::steady_clock;
  static constexpr std::size_t capacity = 512;

  // Appends into the fixed buffer, truncating rather than allocating.
  struct Line {
    std::array<char, capacity>& b;
    std::size_t n = 0;
    explicit Line(std::array<char, capacity>& buffer) : b(buffer) {}
    void put(char c) {
      if (n < b.size()) b[n++] = c;
    }
    void text(std::string_view s) {
      for (char c : s) put(c);
    }
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))  // the compiler checks each format's arguments
#endif
    void
    format(const char* f, ...) {
      if (n >= b.size()) return;
      std::va_list args;
      va_start(args, f);
      const int r = std::vsnprintf(b.data() + n, b.size() - n, f, args);
      va_end(args);
      // snprintf reserves a byte for its terminator: keep at most what fits before it.
      if (r > 0) n += std::min(static_cast<std::size_t>(r), b.size() - n - 1);
    }
  };

  double seconds_since_start() const {
    return std::chrono::duration<double>(clock::now() - start_).count();
  }

  void counter_and_bar(Line& line, std::size_t done) const {
    const auto d = static_cast<unsigned long long>(done);
    if (steps_ == 0) {
      line.format("%llu/Unknown", d);
      return;
    }
    int digits = 1;
    for (std::size_t s = steps_; s >= 10; s /= 10) ++digits;
    line.format("%*llu/%llu [", digits, d, static_cast<unsigned long long>(steps_));
    const int w = o_.width;
    const auto filled =
        static_cast<int>(static_cast<double>(w) * static_cast<double>(std::min(done, steps_)) /
                         static_cast<double>(steps_));
    for (int i = 0; i < w; ++i) {
      if (i < filled - 1 || (i == filled - 1 && done >= steps_))
        line.put('=');
      else if (i == filled - 1)
        line.put('>');
      else
        line.put('.');
    }
    line.put(']');
  }

  // Keras's forms: 1:02:03, 2:05, 7s.
  static void duration(Line& line, double seconds) {
    const auto s = static_cast<long long>(seconds + 0.5);
    if (s >= 3600)
      line.format("%lld:%02lld:%02lld", s / 3600, (s % 3600) / 60, s % 60);
    else if (s >= 60)
      line.format("%lld:%02lld", s / 60, s % 60);
    else
      line.format("%llds", s);
  }

  static void step_time(Line& line, double seconds) {
    if (seconds >= 1)
      line.format("%.0fs/step", seconds);
    else if (seconds >= 1e-3)
      line.format("%.0fms/step", seconds * 1e3);
    else
      line.format("%.0fus/step", seconds * 1e6);
  }

  static void value(Line& line, std::string_view key, double v) {
    line.text(" - ");
    line.text(key);
    line.text(": ");
    // Keras: four decimals, or scientific notation for the tiny values they would hide.
    if (v != 0 && v > -1e-3 && v < 1e-3)
      line.format("%.4e", v);
    else
      line.format("%.4f", v);
  }

  // Pads over what the previous draw left on the terminal line, then writes.
  void finish(Line& line, bool end_of_epoch) {
    const std::size_t width = line.n;
    if (interactive())
      for (std::size_t i = width; i < previous_width_; ++i) line.put(' ');
    previous_width_ = width;
    if (end_of_epoch) {
      if (line.n == buffer_.size()) --line.n;
      line.put('\n');
    }
    emit(line.n);
  }

  void emit(std::size_t n) {
    std::fwrite(buffer_.data(), 1, std::min(n, buffer_.size()), o_.out);
    std::fflush(o_.out);
  }

  Options o_;
  std::array<char, capacity> buffer_{};
  clock::time_point start_{};
  clock::time_point last_draw_{};
  std::size_t steps_ = 0;
  std::size_t previous_width_ = 0;
  int epoch_ = 0;
  int epochs_ = 0;
  bool has_accuracy_ = false;
};

}  // namespace memopt::callbacks
