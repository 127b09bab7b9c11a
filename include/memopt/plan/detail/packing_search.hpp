#pragma once
// A bounded exact search for offsets that fit a plan's buffers into `target` bytes.
//
// The problem is dynamic storage allocation: rectangles with fixed spans in time and free
// positions in memory. It is NP-hard in general, but a step's buffers are few (4 per layer)
// and the target is the liveness lower bound, which leaves no slack at the peak steps; a
// depth-first search with that slack as its bound finds a packing in a few hundred nodes
// where greedy orders miss by a few percent.
//
// The search places buffers in order of offset. Every packing can be pushed down until each
// buffer rests on offset 0 or on the top of a buffer alive at the same time, so the only
// offsets tried are 0 and such tops. A branch dies as soon as, at some step, the bytes still to
// place there no longer fit above the current offset (its waste exceeds the step's slack).
// The work budget bounds compile time; different child orders are tried in turn because a
// search that goes wrong early rarely recovers, while a fresh order often succeeds at once.

#include <cstddef>
#include <cstdint>

#include "memopt/plan/memory_plan.hpp"

namespace memopt::plan::detail {

/// How the search orders the buffers it may place at one offset.
enum class ChildOrder {
  area,
  duration,
  size,
  first_use,
  shortest,
  last_use,
  latest_first,
  smallest
};

/// Looks for offsets that fit `plan`'s buffers into `target` bytes, within `budget` work.
///
/// ```cpp
/// using mo::plan::detail::ChildOrder, mo::plan::detail::PackingSearch;
/// mo::plan::MemoryPlan<3> plan;  // three buffers over three steps, not placed yet
/// plan.steps = 3;
/// plan.add({.bytes = 1024, .first = 0, .last = 1});
/// plan.add({.bytes = 512, .first = 1, .last = 2});
/// plan.add({.bytes = 1024, .first = 2, .last = 2});
/// PackingSearch<3> search(plan, plan.lower_bound_bytes(), ChildOrder::area, 40'000);
/// if (search.run()) plan = search.plan();  // offsets set, arena_bytes == the target
/// ```
template <std::size_t N>
class PackingSearch {
 public:
  static_assert(N <= 64, "PackingSearch: at most 64 buffers (their sets are 64-bit masks)");

  constexpr PackingSearch(const MemoryPlan<N>& plan, std::size_t target, ChildOrder order,
                          long budget)
      : plan_(plan), target_(target), budget_(budget) {
    const std::size_t n = plan_.count;
    for (std::size_t i = 0; i < n; ++i) {
      size_[i] = align_up(plan_.buffers[i].bytes);
      first_[i] = plan_.buffers[i].first;
      last_[i] = plan_.buffers[i].last;
    }
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t j = 0; j < n; ++j)
        if (i != j && plan_.buffers[i].overlaps_in_time(plan_.buffers[j])) conflicts_[i] |= bit(j);
    for (std::size_t i = 0; i < n; ++i) order_[i] = i;
    for (std::size_t i = 1; i < n; ++i)  // insertion sort: stable, constexpr
      for (std::size_t j = i; j > 0 && before(order, order_[j], order_[j - 1]); --j) {
        const std::size_t t = order_[j];
        order_[j] = order_[j - 1];
        order_[j - 1] = t;
      }
  }

  /// Searches; on success the plan's offsets are set and its arena is `target`.
  constexpr bool run() {
    if (plan_.steps < 0 || static_cast<std::size_t>(plan_.steps) > max_steps) return false;
    for (std::size_t i = 0; i < plan_.count; ++i)
      if (first_[i] < 0 || last_[i] >= plan_.steps || first_[i] > last_[i]) return false;
    for (std::size_t i = 0; i < plan_.count; ++i)
      for (int s = first_[i]; s <= last_[i]; ++s) need_[static_cast<std::size_t>(s)] += size_[i];
    if (!search(0, -1)) return false;
    for (std::size_t i = 0; i < plan_.count; ++i) plan_.buffers[i].offset = offset_[i];
    plan_.arena_bytes = target_;
    return true;
  }
  constexpr const MemoryPlan<N>& plan() const { return plan_; }
  /// Work done, in inner-loop iterations: what the budget limits.
  constexpr long work() const { return work_; }

 private:
  static constexpr std::uint64_t bit(std::size_t i) { return std::uint64_t{1} << i; }

  constexpr std::size_t span(std::size_t i) const {
    return static_cast<std::size_t>(last_[i] - first_[i] + 1);
  }
  constexpr bool before(ChildOrder order, std::size_t a, std::size_t b) const {
    const std::size_t ka = key(order, a), kb = key(order, b);
    return ka != kb ? ka > kb : a < b;
  }
  constexpr std::size_t key(ChildOrder order, std::size_t i) const {
    const auto steps = static_cast<std::size_t>(plan_.steps);
    switch (order) {
      case ChildOrder::area:
        return size_[i] * span(i);
      case ChildOrder::duration:
        return span(i) * target_ + size_[i];
      case ChildOrder::size:
        return size_[i];
      case ChildOrder::first_use:
        return (steps - static_cast<std::size_t>(first_[i])) * target_ + size_[i];
      case ChildOrder::shortest:
        return steps - span(i);
      case ChildOrder::last_use:
        return static_cast<std::size_t>(last_[i]) * target_ + size_[i];
      case ChildOrder::latest_first:
        return static_cast<std::size_t>(first_[i]) * target_ + size_[i];
      case ChildOrder::smallest:
        return target_ - size_[i];
    }
    return 0;
  }

  // Placed buffers at one step are disjoint and all start at or below `floor`, so at most one
  // reaches above it: the bytes still to place at step s must fit above max(floor, top(s)).
  constexpr bool room_above(std::size_t floor) {
    for (std::size_t s = 0; s < static_cast<std::size_t>(plan_.steps); ++s) {
      ++work_;
      const std::size_t base = top_[s] > floor ? top_[s] : floor;
      if (base + need_[s] > target_) return false;
    }
    return true;
  }

  constexpr bool fits(std::size_t i, std::size_t at) {
    if (at + size_[i] > target_) return false;
    std::uint64_t others = conflicts_[i] & placed_;
    for (std::size_t j = 0; others != 0; ++j, others >>= 1) {
      ++work_;
      if ((others & 1u) && at < offset_[j] + size_[j] && offset_[j] < at + size_[i]) return false;
    }
    return true;
  }

  // Places the buffers not yet placed at offsets >= floor; `last` was placed at `floor`, and
  // buffers at one offset go in index order so that each packing is visited once.
  [[gnu::cold]] constexpr bool search(std::size_t floor, int last) {
    if (work_ > budget_) return false;
    const std::size_t n = plan_.count;
    if (depth_ == n) return true;
    if (!room_above(floor)) return false;

    // Candidate offsets: 0 and the tops of placed buffers, ascending, from `floor` up.
    std::size_t at[N + 1]{};
    std::size_t count = 0;
    for (std::size_t j = 0; j <= n; ++j) {
      if (j < n && !(placed_ & bit(j))) continue;
      const std::size_t v = j < n ? offset_[j] + size_[j] : 0;
      if (v < floor) continue;
      std::size_t k = 0;
      while (k < count && at[k] != v) ++k;
      if (k < count) continue;
      k = count++;
      for (; k > 0 && at[k - 1] > v; --k) at[k] = at[k - 1];
      at[k] = v;
    }
    work_ += static_cast<long>(n + count * count);

    for (std::size_t c = 0; c < count; ++c) {
      const std::size_t o = at[c];
      std::uint64_t rests_on = 0;  // placed buffers whose top is o
      for (std::size_t j = 0; j < n; ++j)
        if ((placed_ & bit(j)) && offset_[j] + size_[j] == o) rests_on |= bit(j);
      work_ += static_cast<long>(2 * n);
      for (std::size_t k = 0; k < n; ++k) {
        const std::size_t i = order_[k];
        if (placed_ & bit(i)) continue;
        if (o == floor && static_cast<int>(i) < last) continue;
        if (o != 0 && !(conflicts_[i] & rests_on)) continue;
        if (!fits(i, o)) continue;
        if (place(i, o)) return true;
        if (work_ > budget_) return false;
      }
    }
    return false;
  }

  // Places buffer i at offset o, searches on, and undoes the placement if that fails.
  constexpr bool place(std::size_t i, std::size_t o) {
    const auto first = static_cast<std::size_t>(first_[i]);
    const auto last = static_cast<std::size_t>(last_[i]);
    std::size_t* saved = saved_[depth_];
    for (std::size_t s = first; s <= last; ++s) {
      saved[s] = top_[s];
      need_[s] -= size_[i];
      if (o + size_[i] > top_[s]) top_[s] = o + size_[i];
    }
    work_ += static_cast<long>(last - first + 1);
    offset_[i] = o;
    placed_ |= bit(i);
    ++depth_;
    if (search(o, static_cast<int>(i))) return true;
    --depth_;
    placed_ &= ~bit(i);
    for (std::size_t s = first; s <= last; ++s) {
      top_[s] = saved[s];
      need_[s] += size_[i];
    }
    return false;
  }

  MemoryPlan<N> plan_;
  std::size_t target_;
  long budget_;
  long work_ = 0;
  std::uint64_t placed_ = 0;
  // Plain arrays, not std::array: constant evaluation charges for every operator[] call.
  static constexpr std::size_t max_steps = 2 * N + 2;
  std::size_t size_[N]{};
  std::size_t offset_[N]{};
  std::uint64_t conflicts_[N]{};
  std::size_t order_[N]{};
  int first_[N]{};
  int last_[N]{};
  std::size_t need_[max_steps]{};      // per step: bytes alive there, not yet placed
  std::size_t top_[max_steps]{};       // per step: the highest top placed there
  std::size_t saved_[N][max_steps]{};  // per search depth: top_ before that placement
  std::size_t depth_ = 0;              // buffers placed
};

}  // namespace memopt::plan::detail
