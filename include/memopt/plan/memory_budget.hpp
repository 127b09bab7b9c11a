#pragma once
// MemoryBudget<Bytes, Batch, Policy>: a precision policy that also states the most bytes a
// training step may take at a batch; the planner then chooses, at compile time, which hidden
// layers to recompute in backward so that the arena fits, with the least added forward work.
//
// The choice is a branch and bound over the layers that may recompute (those whose forward is
// a pure function of their input and weights: Dense, Conv2D), each candidate set planned by
// the ordinary planner, so the arena it reports is the one the model gets. It decides the
// layers from the top down and cuts a partial choice by cost (costs only grow as layers are
// added) and by a lower bound on the peak of every completion (bound_before_undecided); a set
// is placed (assign_offsets) only when its liveness lower bound fits, since no placement beats
// that bound. Checked against exhaustive search on 280 random chains of up to 8 layers. On a
// model with residual blocks the bound (which counts a chain's schedule) is left out: every
// set of candidates is planned, and there are few (a block's layers that only the next one
// reads); checked against exhaustive search on Dense and convolutional residual models.
//
// Its cost is constant evaluation: within GCC's default -fconstexpr-ops-limit (2^25) a chain of
// 12 layers takes about 2 s at any budget (16 layers when the budget is below the least
// reachable); deeper chains may need -fconstexpr-ops-limit=268435456. A dynamic program over
// segments would scale further; this search is exact and reuses the planner unchanged.

#include <array>
#include <cstddef>
#include <span>
#include <string_view>

#include "memopt/core/policy.hpp"
#include "memopt/model/spec.hpp"
#include "memopt/plan/step_plans.hpp"

namespace memopt {

/// The precision of `P` and a memory budget: the training arena at `Batch` rows takes at most
/// `Bytes`. The planner recomputes in backward the hidden layers that make it fit with the
/// least added forward FLOPs (ties: the smaller arena):
///
/// ```cpp
/// // 784-1024-256-1024-10: 8,605,184 bytes at batch 256 unbudgeted; 8 MiB recomputes the
/// // first layer (+60% forward FLOPs) for 7,523,840 bytes.
/// using M = mo::Model<Net, mo::Input<784>, mo::MemoryBudget<(8 << 20), 256>>;
/// static_assert(M::arena_bytes(256) <= (8 << 20));  // holds by construction
/// ```
///
/// A budget below the least arena any choice reaches fails to compile, naming that least number
/// of bytes (`BudgetBelowLeastReachable<least, budget>`).
template <std::size_t Bytes, std::size_t Batch, Policy P = float32>
struct MemoryBudget : P {
  static_assert(Batch > 0, "MemoryBudget: the batch must be at least 1");
  using precision = P;
  static constexpr std::size_t budget_bytes = Bytes;
  static constexpr std::size_t budget_batch = Batch;
};

namespace plan {

/// Forward FLOPs of node `n` per sample: a multiply and an add per weight and output position,
/// plus the bias (Dense: `units * (2 * inputs + 1)`; Conv2D the same at each output pixel).
/// Nodes without parameters count nothing.
constexpr std::size_t forward_flops_per_sample(const NodeInfo& n) {
  const std::size_t channels = n.out.channels();
  if (n.parameters <= channels || channels == 0) return 0;
  const std::size_t macs = (n.parameters - channels) / channels;  // weights per output value
  return n.out.size() * (2 * macs + 1);
}

/// Whether the planner may recompute node `i` of `g`: a hidden node whose forward is a pure
/// function of its input and weights (no saved buffers, no moving statistics, no randomness:
/// Dense and Conv2D) and whose output only the next node reads (not a residual's branch point
/// or a branch's last layer), as `Recompute<...>` allows.
template <std::size_t D>
constexpr bool may_recompute(const Graph<D>& g, std::size_t i) {
  const NodeInfo& n = g.nodes[i];
  return i + 1 < g.depth && n.parameters > 0 && n.saved_count == 0 && n.state == 0 &&
         n.activation != ActivationKind::softmax &&
         output_only_to_next(std::span<const NodeInfo>(g.nodes.data(), g.depth), i);
}

/// FLOPs that recomputing node `i` adds to a step of `batch` rows: its forward again, or for
/// GELU, which keeps z, one element-wise pass (counted as one operation per value).
template <std::size_t D>
constexpr std::size_t recompute_flops(const Graph<D>& g, std::size_t i, std::size_t batch) {
  const NodeInfo& n = g.nodes[i];
  return batch *
         (n.activation == ActivationKind::gelu ? n.out.size() : forward_flops_per_sample(n));
}

/// What the planner chose for a budget.
template <std::size_t D>
struct RecomputeChoice {
  bool feasible = false;
  std::array<bool, D> recompute{};  // the nodes recomputed (those written Recompute included)
  std::array<bool, D> chosen{};     // of those, the ones the budget added
  std::size_t arena_bytes = 0;      // with them
  std::size_t unbudgeted_arena_bytes = 0;
  std::size_t least_bytes = 0;    // the least arena any choice reaches (when not feasible)
  std::size_t added_flops = 0;    // forward FLOPs the recomputation adds per step
  std::size_t forward_flops = 0;  // forward FLOPs of the step without it
  long evaluated = 0;             // complete sets planned (for tests and reports)
  long bounded = 0;               // partial sets bounded
};

namespace detail {

template <std::size_t D>
class RecomputeSearch {
 public:
  constexpr RecomputeSearch(const Graph<D>& g, std::size_t batch, std::size_t budget)
      : g_(g), batch_(batch), budget_(budget), branches_(g.has_branches()) {
    for (std::size_t i = 0; i < g.depth; ++i) declared_[i] = g.nodes[i].recompute;
    // From the top down: the step's peak is usually where backward starts, which the upper
    // layers' choices settle first (see bound_before_undecided).
    for (std::size_t i = g.depth; i-- > 0;) {
      if (!g.nodes[i].recompute && may_recompute(g, i)) {
        candidates_[count_] = i;
        cost_[count_] = recompute_flops(g, i, batch);
        ++count_;
      }
    }
  }

  constexpr RecomputeChoice<D> run() {
    RecomputeChoice<D> r;
    for (std::size_t i = 0; i < g_.depth; ++i) {
      r.forward_flops += batch_ * forward_flops_per_sample(g_.nodes[i]);
      if (g_.nodes[i].recompute) r.added_flops += recompute_flops(g_, i, batch_);
    }
    r.unbudgeted_arena_bytes = training_plan_of(g_, batch_).arena_bytes;
    // Seed the least bound with every candidate recomputed (and with every other one), so
    // that while nothing fits the bound cuts from the start.
    for (int parity = 0; parity < 3; ++parity) {
      for (std::size_t k = 0; k < count_; ++k)
        g_.nodes[candidates_[k]].recompute = parity == 0 || k % 2 == std::size_t(parity - 1);
      note_least(training_buffers_of(g_, batch_).lower_bound_bytes());
    }
    for (std::size_t k = 0; k < count_; ++k) g_.nodes[candidates_[k]].recompute = false;
    visit(0, 0);
    if (!found_) {
      // Nothing fits: least_ is the least lower bound of any set. Placing that set almost
      // always reaches it; if not, search again, placing every set that could beat it.
      Graph<D> least_graph = g_;
      for (std::size_t i = 0; i < g_.depth; ++i) least_graph.nodes[i].recompute = least_set_[i];
      const std::size_t bound = least_;
      least_ = training_plan_of(least_graph, batch_).arena_bytes;
      if (least_ != bound) {
        place_for_least_ = true;
        visit(0, 0);
      }
    }
    r.feasible = found_;
    r.evaluated = evaluated_;
    r.bounded = bounded_;
    r.least_bytes = least_;
    if (found_) {
      r.arena_bytes = best_arena_;
      r.added_flops += best_cost_;
      for (std::size_t i = 0; i < g_.depth; ++i) {
        r.chosen[i] = best_[i];
        r.recompute[i] = g_.nodes[i].recompute || best_[i];
      }
    }
    return r;
  }

 private:
  // Decides candidate j and the ones after it (lower nodes); candidates before j are set in g_.
  constexpr void visit(std::size_t j, std::size_t cost) {
    if (found_ && cost > best_cost_) return;  // costs only grow from here
    if (j == count_) {
      leaf(cost);
      return;
    }
    if (j > 0 && !branches_) {
      // No completion can fit (or beat the least arena while nothing fits) if the steps that
      // the undecided layers cannot lower any further already hold too much.
      const std::size_t bound = bound_before_undecided(j);
      if (bound > budget_ && (found_ || bound >= least_)) return;
    }
    const std::size_t node = candidates_[j];
    visit(j + 1, cost);  // kept: the cheaper branch first, so that a fit found early cuts more
    g_.nodes[node].recompute = true;
    visit(j + 1, cost + cost_[j]);
    g_.nodes[node].recompute = false;
  }

  // A lower bound on the peak of every completion of the choices above candidate j: the live
  // bytes at each step before the backward block of H, the node that hosts the undecided
  // layers' recomputation at the latest (recompute_host of the highest undecided one), planned
  // with every undecided layer recomputed. Before that block an undecided layer recomputed
  // holds nothing (its first copy died at the next forward, its second is not yet made) and
  // one kept holds its output, so recomputing all of them gives each such step its least; the
  // decided layers' buffers and the order of those steps do not depend on the undecided ones.
  constexpr std::size_t bound_before_undecided(std::size_t j) {
    ++bounded_;
    for (std::size_t k = j; k < count_; ++k) g_.nodes[candidates_[k]].recompute = true;
    const std::size_t h = g_.recompute_host(candidates_[j]);
    const auto p = training_buffers_of(g_, batch_);
    for (std::size_t k = j; k < count_; ++k) g_.nodes[candidates_[k]].recompute = false;
    // The steps before H's block (training_schedule_of's order, counted rather than built:
    // building a schedule costs as much constant evaluation as the buffers): the forwards, the
    // loss, each node above H's dW and dX, and the recomputation of the nodes hosted above
    // H: those above H, and H itself when it recomputes (GELU's pass, hosted by H + 1).
    int cut = static_cast<int>(g_.depth) + 1 + int(g_.nodes[h].recompute);
    bool below_has_parameters = false;
    for (std::size_t u = 0; u < g_.depth; ++u) {
      if (u > h)  // (a node above H is hosted above it: H does not recompute by product)
        cut += int(g_.nodes[u].recompute) + int(g_.nodes[u].parameters > 0) +
               int(below_has_parameters);
      below_has_parameters = below_has_parameters || g_.nodes[u].parameters > 0;
    }
    std::size_t starts[4 * D + 2]{}, ends[4 * D + 2]{};
    for (const Buffer& b : p) {
      if (b.first >= cut) continue;
      const int last = b.last < cut ? b.last : cut - 1;
      starts[static_cast<std::size_t>(b.first)] += align_up(b.bytes);
      ends[static_cast<std::size_t>(last)] += align_up(b.bytes);
    }
    std::size_t live = 0, peak = 0;
    for (std::size_t k = 0; k < static_cast<std::size_t>(cut); ++k) {
      live += starts[k];
      peak = peak > live ? peak : live;
      live -= ends[k];
    }
    return peak;
  }

  constexpr void note_least(std::size_t least) {
    if (least >= least_) return;
    least_ = least;
    for (std::size_t i = 0; i < g_.depth; ++i) least_set_[i] = g_.nodes[i].recompute;
  }

  constexpr void leaf(std::size_t cost) {
    ++evaluated_;
    const std::size_t bound = training_buffers_of(g_, batch_).lower_bound_bytes();
    // While nothing fits, keep the least bound (or, searching again, arena) for the diagnostic.
    if (!found_ && bound < least_)
      note_least(place_for_least_ ? training_plan_of(g_, batch_).arena_bytes : bound);
    if (bound > budget_) return;
    if (found_ && (cost > best_cost_ || (cost == best_cost_ && bound >= best_arena_))) return;
    const std::size_t arena = training_plan_of(g_, batch_).arena_bytes;
    if (arena > budget_) return;
    if (found_ && cost == best_cost_ && arena >= best_arena_) return;
    found_ = true;
    best_cost_ = cost;
    best_arena_ = arena;
    for (std::size_t i = 0; i < g_.depth; ++i) best_[i] = g_.nodes[i].recompute && !declared_[i];
  }

  Graph<D> g_;
  std::size_t batch_ = 0, budget_ = 0;
  std::size_t candidates_[D + 1]{}, cost_[D + 1]{};
  std::size_t count_ = 0;
  bool declared_[D + 1]{};
  bool best_[D + 1]{};
  bool least_set_[D + 1]{};
  // bound_before_undecided counts a chain's schedule: residual models are searched without it
  // (their candidates are few: a block's layers with one reader and no saved buffers).
  bool branches_ = false;
  bool place_for_least_ = false;
  bool found_ = false;
  std::size_t best_cost_ = 0, best_arena_ = 0;
  std::size_t least_ = static_cast<std::size_t>(-1);
  long evaluated_ = 0, bounded_ = 0;
};

}  // namespace detail

/// The set of nodes of `g` to recompute so that its training arena at `batch` rows takes at
/// most `budget` bytes with the least added forward FLOPs (ties: the smaller arena). Nodes
/// `g` already recomputes stay recomputed.
///
/// ```cpp
/// constexpr auto c = mo::plan::choose_recompute(mo::plan::graph_of<Spec>(), 256, 8 << 20);
/// static_assert(!c.feasible || c.arena_bytes <= (8 << 20));  // else c.least_bytes > 8 MiB
/// ```
template <std::size_t D>
constexpr RecomputeChoice<D> choose_recompute(const Graph<D>& g, std::size_t batch,
                                              std::size_t budget) {
  detail::RecomputeSearch<D> search(g, batch, budget);
  return search.run();
}

}  // namespace plan

/// Instantiated when a budget is below the least reachable arena: the diagnostic names both.
template <std::size_t LeastReachableBytes, std::size_t BudgetBytes>
struct BudgetBelowLeastReachable {
  static_assert(LeastReachableBytes <= BudgetBytes,
                "MemoryBudget: the budget is below the least arena any choice of recomputed "
                "layers reaches; BudgetBelowLeastReachable<least bytes, budget bytes> names both: "
                "raise the budget or lower the batch");
  static constexpr bool value = true;
};

// ModelSpec's hook (model/spec.hpp): the nodes a budget recomputes, planned on the spec of the
// same network under the budget's precision.
template <class Spec, std::size_t Bytes, std::size_t Batch, Policy P>
struct budget_choice<Spec, MemoryBudget<Bytes, Batch, P>> {
  static constexpr plan::RecomputeChoice<Spec::depth> choice =
      plan::choose_recompute(plan::graph_of<Spec>(), Batch, Bytes);
  static_assert(BudgetBelowLeastReachable < choice.feasible ? 0 : choice.least_bytes,
                Bytes > ::value);
};

}  // namespace memopt
