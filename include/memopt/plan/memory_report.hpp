#pragma once
// MemoryReport's plain structs, apart from the planner that fills them (plan/report.hpp), so
// that the callback interface can hand one to logging callbacks without the planner's headers.

#include <cstddef>
#include <string>
#include <vector>

#include "memopt/plan/buffer.hpp"

namespace memopt::plan {

/// One buffer of a report. `first` and `last` index `MemoryReport::steps`; the buffer is
/// alive from the start of `first` to the end of `last`.
struct BufferReport {
  std::string name;  // the layer's Keras name and the role: "dense/activation", "input"
  BufferRole role{};
  int layer = -1;
  std::size_t bytes = 0;  // as used; the arena reserves it rounded up to 256
  std::size_t offset = 0;
  int first = 0;
  int last = 0;
};

/// A memory plan with names: what `Model::memory_report(batch)` returns.
///
/// ```cpp
/// auto r = model.memory_report(32);
/// fmt::print("{}", r);                       // a table
/// std::string j = mo::plan::to_json(r);      // {"kind":"training",...,"buffers":[...]}
/// ```
struct MemoryReport {
  std::string kind;    // "training" or "inference"
  std::string policy;  // "float32", "mixed_float16", ...
  std::size_t batch = 0;
  std::size_t arena_bytes = 0;
  std::size_t naive_bytes = 0;
  std::size_t lower_bound_bytes = 0;
  std::vector<std::string> steps;  // "forward dense", "loss", "dW dense_1", ...
  std::vector<BufferReport> buffers;

  /// The first step at which the live bytes reach the lower bound.
  int peak_step() const {
    int best = 0;
    std::size_t most = 0;
    for (int s = 0; s < static_cast<int>(steps.size()); ++s) {
      std::size_t live = 0;
      for (const BufferReport& b : buffers)
        if (b.first <= s && s <= b.last) live += align_up(b.bytes);
      if (live > most) most = live, best = s;
    }
    return best;
  }
};

}  // namespace memopt::plan
