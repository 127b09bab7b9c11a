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
    std::size_t best = 0;
    for (int s = 0; s < steps; ++s) {
      std::size_t live = 0;
      for (const Buffer& b : *this) live += (b.first <= s && s <= b.last) ? align_up(b.bytes) : 0;
      best = std::max(best, live);
    }
    return best;
  }

  constexpr bool contains(BufferRole role, int layer = -1) const {
    return std::any_of(begin(), end(),
                       [&](const Buffer& b) { return b.role == role && b.layer == layer; });
  }

  /// The buffer with this role and layer; a compile error in constant evaluation if absent.
  constexpr const Buffer& find(BufferRole role, int layer = -1) const {
    for (const Buffer& b : *this)
      if (b.role == role && b.layer == layer) return b;
    throw "MemoryPlan::find: no such buffer";  // NOLINT: unreachable for a built plan
  }

  /// No two buffers alive at the same step share a byte, and all fit in the arena.
  constexpr bool is_valid() const {
    for (std::size_t i = 0; i < count; ++i) {
      const Buffer& a = buffers[i];
      if (a.offset % arena_alignment != 0 || a.offset + a.bytes > arena_bytes) return false;
      for (std::size_t j = i + 1; j < count; ++j)
        if (a.overlaps_in_time(buffers[j]) && a.overlaps_in_memory(buffers[j])) return false;
    }
    return true;
  }
};

}  // namespace memopt::plan
