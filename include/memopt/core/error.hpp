#pragma once
// memopt::error: the one exception type for bad runtime input.

#include <stdexcept>
#include <string>

namespace memopt {

/// Raised for bad runtime input: a truncated file, a shape mismatch, a NaN loss.
/// The message says what was expected and what was found.
///
/// ```cpp
/// try { auto [train, test] = mo::data::fashion_mnist("/nope"); }
/// catch (const mo::error& e) { std::puts(e.what()); }
/// ```
class error : public std::runtime_error {
 public:
  explicit error(const std::string& what) : std::runtime_error(what) {}
  explicit error(const char* what) : std::runtime_error(what) {}
};

}  // namespace memopt
