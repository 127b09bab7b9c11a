#pragma once
// data::PassScope: which pass over a pipeline a begin() starts, for the adaptors whose elements
// depend on it (shuffle's order), so that a fit resumed in a new process reads epoch e as the
// uninterrupted run did.

#include <cstdint>
#include <optional>

namespace memopt::data {

/// Names the pass that `begin()` calls on this thread start while the scope lives. `fit` opens
/// one around each epoch with the epoch's number; the adaptors whose elements depend on the
/// pass (`shuffle`, which draws pass p's order from its seed and p) take their pass number
/// from it instead of counting their own passes. Without it, a fit resumed in a new process
/// (`BackupAndRestore`, `initial_epoch`) would shuffle its first epoch as pass 0, not as the
/// epoch it resumes. The worker threads of `prefetch` and of a parallel `map` carry the scope
/// of the thread that started their pass; `repeat(n)` gives its passes over upstream the
/// numbers `p * n + k`.
///
/// Outside any scope, an adaptor counts its own passes from 0, as before.
///
/// ```cpp
/// auto epoch = train | mo::data::shuffle(60'000, 1) | mo::data::batch(32);
/// {
///   const mo::data::PassScope third(2);
///   for (const auto& b : epoch) use(b);  // the order of the third pass, whatever came before
/// }
/// ```
class PassScope {
 public:
  explicit PassScope(std::uint64_t pass) noexcept : previous_(current_) { current_ = pass; }
  /// A scope that names `pass` when it has a value, and otherwise leaves the enclosing one.
  explicit PassScope(std::optional<std::uint64_t> pass) noexcept : previous_(current_) {
    if (pass) current_ = pass;
  }
  PassScope(const PassScope&) = delete;
  PassScope& operator=(const PassScope&) = delete;
  ~PassScope() { current_ = previous_; }

  /// The pass named by the innermost scope on this thread, if any.
  static std::optional<std::uint64_t> current() noexcept { return current_; }

 private:
  inline static thread_local std::optional<std::uint64_t> current_{};
  std::optional<std::uint64_t> previous_;
};

namespace detail {

/// The number of the pass a view starts now: the scope's, if one is open (and the view's own
/// counter then continues after it), else the view's own count of passes.
inline std::uint64_t next_pass(std::uint64_t& counter) noexcept {
  if (const auto scoped = PassScope::current()) {
    counter = *scoped + 1;
    return *scoped;
  }
  return counter++;
}

}  // namespace detail

}  // namespace memopt::data
