#pragma once
// data::autotune: tf.data's AUTOTUNE, for prefetch depth and map parallelism.

#include <cstddef>

namespace memopt::data {

/// Asks an adaptor to size itself at run time, as `tf.data.AUTOTUNE` does.
///
/// - `prefetch(autotune)` starts one element deep and doubles its depth each time the consumer
///   has to wait for an element although the worker was held back by the depth limit since
///   the last change, up to `max_depth`; it never holds more than `memory_cap` bytes of
///   elements (measured on the first element). The slots for the largest depth it may reach
///   are reserved when the first element arrives, so growing later allocates nothing: a
///   training loop fed by it allocates nothing after its first step.
/// - `map(fn, autotune)` runs `fn` on as many threads as the machine has cores.
///
/// ```cpp
/// auto fast = train | mo::data::batch(32) | mo::data::prefetch(mo::data::autotune);
/// auto small = train | mo::data::batch(32)
///                    | mo::data::prefetch(mo::data::Autotune{.memory_cap = 8 << 20});
/// ```
struct Autotune {
  /// The most bytes of elements the prefetch buffer may hold, the consumer's element included.
  std::size_t memory_cap = std::size_t{64} << 20;
  /// The most elements the prefetch buffer may hold ahead of the consumer's.
  std::size_t max_depth = 16;
};

/// The default `Autotune`: a 64 MiB cap and a depth of at most 16.
inline constexpr Autotune autotune{};

}  // namespace memopt::data
