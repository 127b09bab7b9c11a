#pragma once
// Offset assignment: greedy best fit over several buffer orderings, then, if none reaches the
// liveness lower bound, a repair pass that moves the buffers left above it (one swap at most
// each), then a bounded exact search for a packing at the lower bound.
//
// Greedy-by-size with best fit is TensorFlow Lite's arena planner; trying several orders and
// keeping the best is what XLA's heap simulator does. On training steps the five greedy orders
// here still miss the lower bound on about one chain in eighty (with the coarser schedule this
// replaced, 784-1024-256-1024-10 missed by 256 bytes at batch 32): the parameter gradients
// appear mid-step and must slot into the space the forward pass frees. The search
// (detail/packing_search.hpp) closes those gaps: on 300,000 random chains (depth 1 to 8,
// widths 1 to 4096, every activation, both element sizes, batches 1 to 1000) it left no plan
// above the bound.

#include <array>
#include <cstddef>

#include "memopt/plan/detail/packing_search.hpp"
#include "memopt/plan/memory_plan.hpp"

namespace memopt::plan {

namespace detail {

enum class Order { size, first_use, duration, area, last_use };

constexpr bool goes_before(Order order, const Buffer& a, const Buffer& b) {
  const auto len = [](const Buffer& x) { return static_cast<std::size_t>(x.last - x.first + 1); };
  switch (order) {
    case Order::size:
      if (a.bytes != b.bytes) return a.bytes > b.bytes;
      return a.first < b.first;
    case Order::first_use:
      if (a.first != b.first) return a.first < b.first;
      return a.bytes > b.bytes;
    case Order::duration:
      if (len(a) != len(b)) return len(a) > len(b);
      return a.bytes > b.bytes;
    case Order::area:
      if (a.bytes * len(a) != b.bytes * len(b)) return a.bytes * len(a) > b.bytes * len(b);
      return a.first < b.first;
    case Order::last_use:
      if (a.last != b.last) return a.last > b.last;
      return a.bytes > b.bytes;
  }
  return false;
}

// Sorts the first `n` of `idx` by `before(a, b)`, stably: a bottom-up merge sort, O(n log n)
// comparisons where an insertion sort's O(n^2) ran out of GCC's constexpr operations on a
// 300-layer plan.
template <std::size_t N, class Before>
constexpr void sort_indices(std::size_t (&idx)[N], std::size_t n, Before before) {
  std::size_t merged[N]{};
  for (std::size_t width = 1; width < n; width *= 2) {
    for (std::size_t lo = 0; lo < n; lo += 2 * width) {
      const std::size_t mid = lo + width < n ? lo + width : n;
      const std::size_t hi = lo + 2 * width < n ? lo + 2 * width : n;
      std::size_t a = lo, b = mid;
      for (std::size_t out = lo; out < hi; ++out) {
        const bool from_b = a == mid || (b < hi && before(idx[b], idx[a]));
        merged[out] = from_b ? idx[b++] : idx[a++];
      }
    }
    for (std::size_t i = 0; i < n; ++i) idx[i] = merged[i];
  }
}

// Places buffers in `order`, each in the smallest gap among the buffers it overlaps in time.
// (Plain arrays and cached fields: constant evaluation charges for every call.)
template <std::size_t N>
[[gnu::cold]] constexpr MemoryPlan<N> place_greedy(MemoryPlan<N> plan, Order order) {
  const std::size_t n = plan.count < N ? plan.count : N;  // (tells the optimizer n <= N)
  std::size_t idx[N]{};
  for (std::size_t i = 0; i < n; ++i) idx[i] = i;
  sort_indices(idx, n, [&](std::size_t a, std::size_t b) {
    return goes_before(order, plan.buffers[a], plan.buffers[b]);
  });
  int first[N]{}, last[N]{};
  std::size_t size[N]{}, offset[N]{};
  for (std::size_t i = 0; i < n; ++i) {
    first[i] = plan.buffers[i].first;
    last[i] = plan.buffers[i].last;
    size[i] = align_up(plan.buffers[i].bytes);
  }

  // The placed buffers by offset, ties in placement order, kept sorted as each is placed:
  // each new buffer scans them once, skipping those it does not overlap in time. (Sorting the
  // overlapping ones afresh for every buffer cost O(n^3) steps, which stopped a 200-layer
  // plan at GCC's constexpr operation limit.)
  std::size_t by_offset[N]{};
  std::size_t arena = 0;
  for (std::size_t k = 0; k < n; ++k) {
    const std::size_t b = idx[k];
    std::size_t best_offset = 0;
    std::size_t best_gap = static_cast<std::size_t>(-1);
    std::size_t end = 0;
    for (std::size_t j = 0; j < k; ++j) {
      const std::size_t o = by_offset[j];
      if (first[o] > last[b] || first[b] > last[o]) continue;
      if (offset[o] >= end) {
        const std::size_t gap = offset[o] - end;
        if (gap >= size[b] && gap < best_gap) {
          best_gap = gap;
          best_offset = end;
        }
      }
      end = end > offset[o] + size[o] ? end : offset[o] + size[o];
    }
    offset[b] = best_gap != static_cast<std::size_t>(-1) ? best_offset : end;
    arena = arena > offset[b] + size[b] ? arena : offset[b] + size[b];
    std::size_t j = k;
    for (; j > 0 && offset[by_offset[j - 1]] > offset[b]; --j) by_offset[j] = by_offset[j - 1];
    by_offset[j] = b;
  }
  for (std::size_t i = 0; i < n; ++i) plan.buffers[i].offset = offset[i];
  plan.arena_bytes = arena;
  return plan;
}

// The lowest offset at which `b` fits below `top` among the buffers it overlaps in time,
// leaving out buffers `skip` and `skip2` (a buffer being moved); `top` if there is none. The
// overlapping buffers are sorted by offset and swept once: O(n log n), which keeps the repair
// within clang's constexpr step limit.
template <std::size_t N>
constexpr std::size_t lowest_gap(const MemoryPlan<N>& plan, std::size_t b, std::size_t top,
                                 std::size_t skip,
                                 std::size_t skip2 = static_cast<std::size_t>(-1)) {
  const Buffer& x = plan.buffers[b];
  std::size_t idx[N]{};
  std::size_t k = 0;
  for (std::size_t c = 0; c < plan.count; ++c)
    if (c != b && c != skip && c != skip2 && x.overlaps_in_time(plan.buffers[c])) idx[k++] = c;
  sort_indices(idx, k, [&](std::size_t p, std::size_t q) {
    return plan.buffers[p].offset < plan.buffers[q].offset;
  });
  const std::size_t size = align_up(x.bytes);
  std::size_t end = 0;  // the highest end among the buffers swept so far
  for (std::size_t i = 0; i < k; ++i) {
    const Buffer& y = plan.buffers[idx[i]];
    if (y.offset >= end + size) break;  // the gap [end, y.offset) holds b
    const std::size_t e = y.offset + align_up(y.bytes);
    end = end > e ? end : e;
  }
  return end + size <= top ? end : top;
}

// Tries to bring the buffers that end above `bound` below it: each moves to a gap below the
// bound, or, where none is wide enough, swaps with one buffer in its way that itself finds a
// gap elsewhere. Greedy placement leaves such strays on large convolutional plans (one
// 18.9 MB gradient of Keras's 39-layer image classifier), where the exact search is too dear.
template <std::size_t N>
[[gnu::cold]] constexpr MemoryPlan<N> repair_above(MemoryPlan<N> plan, std::size_t bound) {
  const std::size_t none = static_cast<std::size_t>(-1);
  for (std::size_t b = 0; b < plan.count; ++b) {
    Buffer& x = plan.buffers[b];
    if (x.offset + align_up(x.bytes) <= bound) continue;
    const std::size_t direct = lowest_gap(plan, b, bound, none);
    if (direct < bound) {
      x.offset = direct;
      continue;
    }
    // One buffer c in b's way: place b as if c were gone, then c elsewhere below the bound.
    for (std::size_t c = 0; c < plan.count; ++c) {
      Buffer& y = plan.buffers[c];
      if (c == b || !x.overlaps_in_time(y) || y.offset + align_up(y.bytes) > bound) continue;
      const std::size_t at = lowest_gap(plan, b, bound, c);
      if (at >= bound) continue;
      const std::size_t old_b = x.offset, old_c = y.offset;
      x.offset = at;
      const std::size_t moved = lowest_gap(plan, c, bound, none);
      if (moved < bound) {
        y.offset = moved;
        break;
      }
      x.offset = old_b;
      y.offset = old_c;
    }
  }
  std::size_t arena = 0;
  for (std::size_t i = 0; i < plan.count; ++i) {
    const std::size_t end = plan.buffers[i].offset + align_up(plan.buffers[i].bytes);
    arena = arena > end ? arena : end;
  }
  plan.arena_bytes = arena;
  return plan;
}

}  // namespace detail

/// Work (inner-loop iterations) the exact search may do for one plan, over all its restarts.
/// It bounds the compile time of a plan that greedy cannot place at its lower bound: at most
/// about 20 million operations of GCC's constant evaluator (a second), inside the default
/// -fconstexpr-ops-limit of 2^25 with the greedy passes on top.
inline constexpr long packing_search_budget = 300'000;

/// Assigns every buffer an offset; returns the plan with the smallest arena found, which is
/// the lower bound unless both the greedy orders and the bounded search miss it.
///
/// ```cpp
/// constexpr auto unplaced = [] {
///   mo::plan::MemoryPlan<3> plan;  // three buffers over three steps
///   plan.steps = 3;
///   plan.add({.bytes = 1024, .first = 0, .last = 1});
///   plan.add({.bytes = 512, .first = 1, .last = 2});
///   plan.add({.bytes = 1024, .first = 2, .last = 2});
///   return plan;
/// }();
/// constexpr auto placed = mo::plan::assign_offsets(unplaced);
/// static_assert(placed.is_valid() && placed.arena_bytes == 1536);  // the lower bound
/// ```
/// At run time it places a prepared batch size once, never inside a step: cold, so that GCC
/// optimizes it for size and compiles it faster.
template <std::size_t N>
[[gnu::cold]] constexpr MemoryPlan<N> assign_offsets(const MemoryPlan<N>& plan) {
  const std::size_t bound = plan.lower_bound_bytes();
  MemoryPlan<N> best = detail::place_greedy(plan, detail::Order::size);
  for (detail::Order order : {detail::Order::first_use, detail::Order::duration,
                              detail::Order::area, detail::Order::last_use}) {
    if (best.arena_bytes == bound) return best;
    MemoryPlan<N> candidate = detail::place_greedy(plan, order);
    if (candidate.arena_bytes < best.arena_bytes) best = candidate;
  }
  if (best.arena_bytes != bound) {
    const MemoryPlan<N> repaired = detail::repair_above(best, bound);
    if (repaired.arena_bytes < best.arena_bytes && repaired.is_valid()) best = repaired;
  }
  if constexpr (N <= 64) {
    // Restarts, each with its own child order and an equal share of the budget: a search
    // that goes wrong early rarely recovers, while a fresh order often succeeds at once.
    // Measured on 100,000 random chains with Recompute on a third of them: eight orders with
    // 1/8 of the budget each leave about 15 above the bound, one order with all of it 150.
    constexpr detail::ChildOrder orders[] = {
        detail::ChildOrder::area,         detail::ChildOrder::duration,
        detail::ChildOrder::size,         detail::ChildOrder::first_use,
        detail::ChildOrder::shortest,     detail::ChildOrder::last_use,
        detail::ChildOrder::latest_first, detail::ChildOrder::smallest};
    for (detail::ChildOrder order : orders) {
      if (best.arena_bytes == bound) break;
      detail::PackingSearch<N> search(plan, bound, order, packing_search_budget / 8);
      if (search.run()) best = search.plan();
    }
  }
  return best;
}

}  // namespace memopt::plan
