#pragma once
// Offset assignment: greedy best fit over several buffer orderings, keeping the smallest.
//
// Greedy-by-size alone (TensorFlow Lite's arena planner) misses the liveness lower bound on
// bottlenecks like 784-1024-256-1024-10; trying other orders, as XLA's heap simulator does,
// usually reaches it.

#include <array>
#include <cstddef>

#include "memopt/plan/memory_plan.hpp"

namespace memopt::plan {

namespace detail {

enum class Order { size, first_use, duration, area };

template <std::size_t N>
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
  }
  return false;
}

// Places buffers in `order`, each in the smallest gap among the buffers it overlaps in time.
template <std::size_t N>
constexpr MemoryPlan<N> place_greedy(MemoryPlan<N> plan, Order order) {
  std::array<std::size_t, N> idx{};
  for (std::size_t i = 0; i < plan.count; ++i) idx[i] = i;
  for (std::size_t i = 1; i < plan.count; ++i)  // insertion sort: stable, constexpr, N small
    for (std::size_t j = i; j > 0 && goes_before<N>(order, plan.buffers[idx[j]],
                                                     plan.buffers[idx[j - 1]]);
         --j) {
      const std::size_t t = idx[j];
      idx[j] = idx[j - 1];
      idx[j - 1] = t;
    }

  std::array<std::size_t, N> placed{};
  std::size_t placed_count = 0;
  std::size_t arena = 0;
  for (std::size_t k = 0; k < plan.count; ++k) {
    Buffer& b = plan.buffers[idx[k]];
    const std::size_t size = align_up(b.bytes);
    std::array<std::size_t, N> live{};  // placed buffers that overlap b in time, by offset
    std::size_t live_count = 0;
    for (std::size_t p = 0; p < placed_count; ++p) {
      const Buffer& o = plan.buffers[placed[p]];
      if (!o.overlaps_in_time(b)) continue;
      std::size_t j = live_count++;
      for (; j > 0 && plan.buffers[live[j - 1]].offset > o.offset; --j) live[j] = live[j - 1];
      live[j] = placed[p];
    }
    std::size_t best_offset = 0;
    std::size_t best_gap = static_cast<std::size_t>(-1);
    std::size_t end = 0;
    for (std::size_t j = 0; j < live_count; ++j) {
      const Buffer& o = plan.buffers[live[j]];
      if (o.offset >= end) {
        const std::size_t gap = o.offset - end;
        if (gap >= size && gap < best_gap) {
          best_gap = gap;
          best_offset = end;
        }
      }
      end = end > o.offset + align_up(o.bytes) ? end : o.offset + align_up(o.bytes);
    }
    b.offset = best_gap != static_cast<std::size_t>(-1) ? best_offset : end;
    arena = arena > b.offset + size ? arena : b.offset + size;
    placed[placed_count++] = idx[k];
  }
  plan.arena_bytes = arena;
  return plan;
}

}  // namespace detail

/// Assigns every buffer an offset; returns the plan with the smallest arena found.
template <std::size_t N>
constexpr MemoryPlan<N> assign_offsets(const MemoryPlan<N>& plan) {
  MemoryPlan<N> best = detail::place_greedy(plan, detail::Order::size);
  for (detail::Order order :
       {detail::Order::first_use, detail::Order::duration, detail::Order::area}) {
    if (best.arena_bytes == best.lower_bound_bytes()) break;
    MemoryPlan<N> candidate = detail::place_greedy(plan, order);
    if (candidate.arena_bytes < best.arena_bytes) best = candidate;
  }
  return best;
}

}  // namespace memopt::plan
