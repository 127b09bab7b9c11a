#pragma once
// The table of chains the plan tests prove things about, as constexpr data: depth 1 to 8,
// widths 1 to 4096, every activation, both element sizes (4 bytes: float32; 2 bytes:
// mixed_float16 and mixed_bfloat16, whose plans are the same), batches from 1 to 4096,
// odd ones included.

#include <cstddef>

#include <memopt/plan/step_plans.hpp>

namespace memopt::testing {

inline constexpr std::size_t table_depth = 8;
using TableChain = plan::Chain<table_depth>;

inline constexpr std::size_t table_widths[] = {1,   3,   10,  17,   64,   100,  128,
                                               255, 256, 784, 1000, 1024, 2048, 4096};
inline constexpr ActivationKind table_hidden[] = {ActivationKind::relu, ActivationKind::gelu,
                                                  ActivationKind::tanh, ActivationKind::sigmoid,
                                                  ActivationKind::linear};
inline constexpr std::size_t table_batches[] = {1, 7, 32, 33, 255, 4096};
inline constexpr std::size_t table_variants = 10;  // chains per depth

// A small deterministic generator, so that the table is the same on every compiler.
struct TableRng {
  unsigned long long state;
  constexpr std::size_t operator()(std::size_t n) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<std::size_t>(state >> 33) % n;
  }
};

/// Chain `variant` of depth `depth`; with `recompute`, about half its hidden layers are
/// Recompute<...>.
constexpr TableChain table_chain(std::size_t depth, std::size_t variant, bool recompute = false) {
  TableRng rng{depth * 1000 + variant * 7 + (recompute ? 500 : 0)};
  TableChain c;
  c.depth = depth;
  for (std::size_t i = 0; i <= depth; ++i) c.dims[i] = table_widths[rng(std::size(table_widths))];
  for (std::size_t i = 0; i + 1 < depth; ++i) {
    c.activations[i] = table_hidden[(variant + i) % std::size(table_hidden)];
    c.recompute[i] = recompute && rng(2) == 1;
  }
  c.activations[depth - 1] = variant % 2 ? ActivationKind::linear : ActivationKind::softmax;
  return c;
}

/// What a plan of the table is like: 0 when valid and at its lower bound, 1 when two buffers
/// alive at the same step overlap (or one leaves the arena or is misaligned), else how many
/// 256-byte units the arena lies above the lower bound, plus 1.
template <std::size_t N>
constexpr std::size_t verdict(const plan::MemoryPlan<N>& p) {
  if (!p.is_valid()) return 1;
  const std::size_t bound = p.lower_bound_bytes();
  if (p.arena_bytes < bound) return 1;
  return p.arena_bytes == bound ? 0 : (p.arena_bytes - bound) / plan::arena_alignment + 1;
}

/// The worst verdict over one chain's training and inference plans at both element sizes and
/// three of the table's batches (all six with `all_batches`; three keep compile times short).
constexpr std::size_t chain_verdict(std::size_t depth, std::size_t variant, bool recompute,
                                    bool all_batches = false) {
  std::size_t worst = 0;
  for (std::size_t bytes : {std::size_t{4}, std::size_t{2}}) {
    TableChain c = table_chain(depth, variant, recompute);
    c.compute_bytes = bytes;
    for (std::size_t k = 0; k < std::size(table_batches); ++k) {
      if (!all_batches && (k + variant) % 2 == 1) continue;
      const std::size_t batch = table_batches[k];
      const std::size_t t = verdict(plan::training_plan_of(c, batch));
      const std::size_t i = verdict(plan::inference_plan_of(c, batch));
      worst = t > worst ? t : worst;
      worst = i > worst ? i : worst;
    }
  }
  return worst;
}

}  // namespace memopt::testing
