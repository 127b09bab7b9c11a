#pragma once
// MemoryPlan: the buffers of a step and their offsets in one arena, computed at compile time.

#include <algorithm>
#include <array>
#include <cstddef>

#include "memopt/plan/buffer.hpp"

namespace memopt::plan {

/// Up to `N` buffers with lifetimes over `steps` kernels and offsets in one arena.
///
/// ```cpp
/// constexpr auto p = mo::plan::training_plan<Spec>(32);
/// static_assert(p.is_valid() && p.arena_bytes <= p.naive_bytes());
/// ```
template <std::size_t N>
struct MemoryPlan {
  std::array<Buffer, N> buffers{};
  std::size_t count = 0;
  int steps = 0;
  std::size_t arena_bytes = 0;

  constexpr void add(Buffer b) { buffers[count++] = b; }

  constexpr const Buffer* begin() const { return buffers.data(); }
  constexpr const Buffer* end() const { return buffers.data() + count; }

  /// One buffer per tensor, none shared: what a framework without planning allocates.
  constexpr std::size_t naive_bytes() const {
    std::size_t sum = 0;
    for (const Buffer& b : *this) sum += align_up(b.bytes);
    return sum;
  }

  /// The most bytes alive at any one step: no arena can be smaller.
  constexpr std::size_t lower_bound_bytes() const {
    // Each buffer adds its bytes where it starts and removes them after it ends; a running
    // sum over the steps then gives the live bytes of each (linear, not steps x buffers).
    std::size_t starts[2 * N + 2]{};
    std::size_t ends[2 * N + 2]{};
    const auto last_step = static_cast<std::size_t>(steps > 0 ? steps - 1 : 0);
    std::size_t best = 0;
    if (last_step + 2 > 2 * N + 2) {  // more steps than buffers can span: count directly
      for (int s = 0; s < steps; ++s) {
        std::size_t live = 0;
        for (const Buffer& b : *this) live += (b.first <= s && s <= b.last) ? align_up(b.bytes) : 0;
        best = std::max(best, live);
      }
      return best;
    }
    for (const Buffer& b : *this) {
      const int first = b.first < 0 ? 0 : b.first;  // only steps [0, steps) count
      const int last = b.last > steps - 1 ? steps - 1 : b.last;
      if (first > last) continue;
      starts[static_cast<std::size_t>(first)] += align_up(b.bytes);
      ends[static_cast<std::size_t>(last)] += align_up(b.bytes);
    }
    std::size_t live = 0;
    for (std::size_t s = 0; s <= last_step; ++s) {
      live += starts[s];
      best = std::max(best, live);
      live -= ends[s];
    }
    return best;
  }

  constexpr bool contains(BufferRole role, int layer = -1, int slot = 0) const {
    return std::any_of(begin(), end(), [&](const Buffer& b) {
      return b.role == role && b.layer == layer && b.slot == slot;
    });
  }

  /// The buffer with this role, layer and slot; a compile error in constant evaluation if
  /// absent.
  constexpr const Buffer& find(BufferRole role, int layer = -1, int slot = 0) const {
    for (const Buffer& b : *this)
      if (b.role == role && b.layer == layer && b.slot == slot) return b;
    throw "MemoryPlan::find: no such buffer";  // NOLINT: unreachable for a built plan
  }

  /// No two buffers alive at the same step share a byte, and all fit in the arena.
  constexpr bool is_valid() const {
    std::size_t lo[N]{}, hi[N]{};  // cached: constant evaluation charges for every access
    int first[N]{}, last[N]{};
    for (std::size_t i = 0; i < count; ++i) {
      const Buffer& b = buffers[i];
      if (b.offset % arena_alignment != 0 || b.offset + b.bytes > arena_bytes) return false;
      lo[i] = b.offset;
      hi[i] = b.offset + align_up(b.bytes);
      first[i] = b.first;
      last[i] = b.last;
    }
    for (std::size_t i = 0; i < count; ++i)
      for (std::size_t j = i + 1; j < count; ++j)
        if (first[i] <= last[j] && first[j] <= last[i] && lo[i] < hi[j] && lo[j] < hi[i])
          return false;
    return true;
  }
};

}  // namespace memopt::plan
