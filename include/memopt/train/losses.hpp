#pragma once
// Losses. The backends fuse them with the last layer; these types carry their options.

#include <string_view>

namespace memopt {

/// Keras's `SparseCategoricalCrossentropy`: integer labels, mean over the batch. memopt
/// fuses it with a final Softmax (or, with `from_logits`, with a Linear last layer) and
/// computes it in float32 under every policy, as Keras advises.
///
/// ```cpp
/// model.compile(mo::Adam{}, mo::SparseCategoricalCrossentropy{{.from_logits = true}});
/// ```
struct SparseCategoricalCrossentropy {
  struct Options {
    bool from_logits = false;
  };
  Options options{};
  static constexpr std::string_view name = "sparse_categorical_crossentropy";
};

}  // namespace memopt
