#pragma once
// PerBatch<P>: a kernel's library primitives, one per batch size it has been prepared for.
//
// oneDNN fixes a primitive's shapes when it creates it. A training run sees a few batch sizes
// (the batch, the last partial batch, the validation batch), so each is created once, the
// first time the executor prepares that size, and selected again by a lookup afterwards.

#include <cstddef>
#include <memory>
#include <utility>
#include <vector>

namespace memopt::cpu_backend {

/// The primitive for the batch size last selected, and those made for the other sizes.
///
/// ```cpp
/// using namespace mo::cpu_backend;
/// PerBatch<onednn::Matmul> dense;  // x [rows, 784] w [784, 128]
/// auto make = [](std::size_t rows) {
///   return onednn::Matmul({.m = static_cast<std::int64_t>(rows), .k = 784, .n = 128});
/// };
/// dense.select(32, make);  // made now; selected by a lookup the next time
/// std::vector<float> x(32 * 784), w(784 * 128), z(32 * 128);
/// std::vector<std::byte> scratch(dense->scratchpad_bytes());
/// dense->run(x.data(), w.data(), z.data(), scratch.data());
/// ```
template <class P>
class PerBatch {
 public:
  /// Makes `make(rows)` unless one exists for `rows`, and makes it the current one.
  template <class Make>
  P& select(std::size_t rows, Make&& make) {
    for (auto& [r, p] : made_)
      if (r == rows) return *(current_ = p.get());
    made_.emplace_back(rows, std::make_unique<P>(std::forward<Make>(make)(rows)));
    return *(current_ = made_.back().second.get());
  }
  P* operator->() const { return current_; }
  P& operator*() const { return *current_; }
  explicit operator bool() const { return current_ != nullptr; }

 private:
  std::vector<std::pair<std::size_t, std::unique_ptr<P>>> made_;
  P* current_ = nullptr;
};

}  // namespace memopt::cpu_backend
