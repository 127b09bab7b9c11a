// The static memory plan: every buffer of a step with its lifetime, placed in one arena at
// the liveness lower bound. Proved with static_assert over a table of chains, checked again
// at run time over more batches.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include <memopt/memopt.hpp>

#include "plan_table.hpp"

namespace mo = memopt;
using mo::ActivationKind;
using mo::plan::BufferRole;
using mo::plan::StepKind;

namespace {

// The table (plan_table.hpp): each chain at both element sizes and three batches, training
// and inference. Each verdict is its own constant evaluation, so each stays far inside GCC's
// default -fconstexpr-ops-limit.
template <std::size_t Depth, std::size_t Variant, bool Recompute>
constexpr std::size_t table_verdict = mo::testing::chain_verdict(Depth, Variant, Recompute);

template <bool Recompute, std::size_t Variant, std::size_t... Ds>
constexpr bool depths_at_bound(std::index_sequence<Ds...>) {
  return ((table_verdict<Ds + 1, Variant, Recompute> == 0) && ...);
}
template <bool Recompute, std::size_t... Vs>
constexpr bool table_at_bound(std::index_sequence<Vs...>) {
  return (depths_at_bound<Recompute, Vs>(std::make_index_sequence<8>{}) && ...);
}

// No two buffers alive at the same step overlap, and the arena is the lower bound: for every
// chain of the table (depth 1 to 8, widths 1 to 4096, every activation, both element sizes,
// batches 1 to 4096) ...
static_assert(table_at_bound<false>(std::make_index_sequence<mo::testing::table_variants>{}),
              "plan: a chain of the table is invalid or above its lower bound (see the "
              "run-time test 'the whole table' for which and by how much)");
// ... and for chains with Recompute layers, for the half of the table checked at compile time.
static_assert(table_at_bound<true>(std::make_index_sequence<mo::testing::table_variants / 2>{}),
              "plan: a chain of the table with Recompute layers is invalid or above its lower "
              "bound");

// The models of the benchmark, through their real types.
using Small = mo::Sequential<mo::Dense<128, mo::ReLU>, mo::Dense<10, mo::Softmax>>;
using Wide =
    mo::Sequential<mo::Dense<512, mo::ReLU>, mo::Dense<512, mo::ReLU>, mo::Dense<10, mo::Softmax>>;
using Narrow =
    mo::Sequential<mo::Dense<64, mo::ReLU>, mo::Dense<64, mo::ReLU>, mo::Dense<64, mo::ReLU>,
                   mo::Dense<64, mo::ReLU>, mo::Dense<64, mo::ReLU>, mo::Dense<64, mo::ReLU>,
                   mo::Dense<64, mo::ReLU>, mo::Dense<64, mo::ReLU>, mo::Dense<10, mo::Softmax>>;
using Bottleneck = mo::Sequential<mo::Dense<1024, mo::ReLU>, mo::Dense<256, mo::ReLU>,
                                  mo::Dense<1024, mo::ReLU>, mo::Dense<10, mo::Softmax>>;

template <class Net, std::size_t In, class P>
using SpecOf = mo::ModelSpec<Net, mo::Input<In>, P>;

template <class S>
constexpr bool at_bound(std::size_t batch) {
  const auto t = mo::plan::training_plan<S>(batch);
  const auto i = mo::plan::inference_plan<S>(batch);
  return t.is_valid() && i.is_valid() && t.arena_bytes == t.lower_bound_bytes() &&
         i.arena_bytes == i.lower_bound_bytes() && t.arena_bytes < t.naive_bytes();
}
static_assert(at_bound<SpecOf<Small, 784, mo::float32>>(32));
static_assert(at_bound<SpecOf<Small, 784, mo::mixed_float16>>(4096));
static_assert(at_bound<SpecOf<Wide, 784, mo::mixed_float16>>(256));
static_assert(at_bound<SpecOf<Narrow, 64, mo::float32>>(33));
// The bottleneck greedy-by-size used to miss by 256 bytes under mixed_float16.
static_assert(at_bound<SpecOf<Bottleneck, 784, mo::mixed_float16>>(32));
static_assert(at_bound<SpecOf<Bottleneck, 784, mo::float32>>(255));

// mixed_float16 and mixed_bfloat16 have the same element size, so the same plan; and a 16-bit
// activation is half a float32 one.
constexpr bool same_plan(std::size_t batch) {
  const auto h = mo::plan::training_plan<SpecOf<Wide, 784, mo::mixed_float16>>(batch);
  const auto b = mo::plan::training_plan<SpecOf<Wide, 784, mo::mixed_bfloat16>>(batch);
  for (std::size_t k = 0; k < h.count; ++k)
    if (h.buffers[k].offset != b.buffers[k].offset || h.buffers[k].bytes != b.buffers[k].bytes)
      return false;
  return h.arena_bytes == b.arena_bytes;
}
static_assert(same_plan(64));
static_assert(mo::plan::training_plan<SpecOf<Wide, 784, mo::mixed_float16>>(64)
                      .find(BufferRole::activation, 1)
                      .bytes *
                  2 ==
              mo::plan::training_plan<SpecOf<Wide, 784, mo::float32>>(64)
                  .find(BufferRole::activation, 1)
                  .bytes);

// cuBLASLt's auxiliary layouts.
static_assert(mo::plan::relu_mask_ld(1) == 128 && mo::plan::relu_mask_ld(128) == 128 &&
              mo::plan::relu_mask_ld(129) == 256);
static_assert(mo::plan::relu_mask_bytes(512, 33) == 512 / 8 * 33);
static_assert(mo::plan::relu_mask_bytes(128, 32) * 16 == 128 * 32 * 2, "1/16 of a 16-bit copy");
static_assert(mo::plan::gelu_aux_ld(19) == 24 && mo::plan::gelu_aux_ld(64) == 64);

// The training schedule of a two-layer model: forward, loss, dW and dX of the last layer,
// dW of the first, optimizer.
using SmallSpec = SpecOf<Small, 784, mo::mixed_float16>;
constexpr auto small_schedule = mo::plan::training_schedule<SmallSpec>();
static_assert(small_schedule.count == 7);
static_assert(small_schedule.index(StepKind::forward, 0) == 0 &&
              small_schedule.index(StepKind::forward, 1) == 1 &&
              small_schedule.index(StepKind::loss) == 2 &&
              small_schedule.index(StepKind::weight_grad, 1) == 3 &&
              small_schedule.index(StepKind::input_grad, 1) == 4 &&
              small_schedule.index(StepKind::weight_grad, 0) == 5 &&
              small_schedule.index(StepKind::optimizer) == 6);

}  // namespace

TEST_CASE("a ReLU layer's mask lives from its forward to the dX above it, in RELU_AUX layout") {
  static constexpr auto p = mo::plan::training_plan<SmallSpec>(33);
  constexpr auto s = small_schedule;
  constexpr auto mask = p.find(BufferRole::relu_mask, 0);
  static_assert(mask.bytes == 33 * 128 / 8);
  static_assert(mask.first == s.index(StepKind::forward, 0));
  static_assert(mask.last == s.index(StepKind::input_grad, 1));
  // The activation's last reader is dW above it; its gradient is born at dX above it.
  constexpr auto act = p.find(BufferRole::activation, 0);
  constexpr auto grad = p.find(BufferRole::activation_grad, 0);
  static_assert(act.last == s.index(StepKind::weight_grad, 1));
  static_assert(grad.first == s.index(StepKind::input_grad, 1));
  static_assert(!act.overlaps_in_time(grad), "so the gradient may take the activation's bytes");
  // Under a 16-bit policy the float32 logits die at the loss; the 16-bit gradient goes on.
  static_assert(p.find(BufferRole::logits, 1).last == s.index(StepKind::loss));
  static_assert(p.find(BufferRole::logits_grad, 1).last == s.index(StepKind::input_grad, 1));
  CHECK(p.is_valid());
}

TEST_CASE("every buffer of a training step is in the plan, each offset aligned to 256") {
  using Mixed = mo::Sequential<mo::Dense<19, mo::GELU>, mo::Dense<11, mo::Tanh>,
                               mo::Dense<9, mo::ReLU>, mo::Dense<7>, mo::Dense<4, mo::Softmax>>;
  constexpr auto p = mo::plan::training_plan<SpecOf<Mixed, 5, mo::mixed_float16>>(13);
  static_assert(p.is_valid());
  for (BufferRole r : {BufferRole::input, BufferRole::labels, BufferRole::parameter_grads,
                       BufferRole::step_scalars})
    CHECK(p.contains(r));
  for (int i = 0; i < 4; ++i) {
    CHECK(p.contains(BufferRole::activation, i));
    CHECK(p.contains(BufferRole::activation_grad, i));
  }
  CHECK(p.contains(BufferRole::pre_activation, 0));                   // GELU keeps z
  CHECK(p.find(BufferRole::pre_activation, 0).bytes == 13 * 24 * 2);  // ld rounded to 8
  CHECK(p.contains(BufferRole::relu_mask, 2));                        // ReLU keeps a mask
  CHECK_FALSE(p.contains(BufferRole::relu_mask, 1));                  // Tanh reads a
  CHECK(p.contains(BufferRole::logits, 4));
  CHECK(p.contains(BufferRole::logits_grad, 4));
  CHECK(p.find(BufferRole::step_scalars).bytes == 16);
  CHECK(p.find(BufferRole::parameter_grads).bytes ==
        SpecOf<Mixed, 5, mo::mixed_float16>::parameter_count * sizeof(float));
  for (const auto& b : p) CHECK(b.offset % 256 == 0);
}

TEST_CASE("inference needs two ping-pong buffers and the output") {
  constexpr auto p = mo::plan::inference_plan<SpecOf<Wide, 784, mo::float32>>(100);
  static_assert(p.count == 4 && p.is_valid());
  // At most two values alive at once: the input and the first output, or two outputs.
  static_assert(p.arena_bytes == p.lower_bound_bytes());
  static_assert(p.arena_bytes == (784 + 512) * 100 * 4);
  CHECK(p.find(BufferRole::activation, 0).offset != p.find(BufferRole::activation, 1).offset);
}

TEST_CASE("the whole table, at all six batches, is at its lower bound") {
  using mo::testing::TableChain;
  std::vector<TableChain> chains;
  for (bool recompute : {false, true})
    for (std::size_t d = 1; d <= mo::testing::table_depth; ++d)
      for (std::size_t v = 0; v < mo::testing::table_variants; ++v) {
        const std::size_t verdict = mo::testing::chain_verdict(d, v, recompute, true);
        INFO("depth " << d << ", variant " << v << (recompute ? ", with Recompute" : "")
                      << ": verdict " << verdict
                      << " (1: invalid; k > 1: k - 1 units of 256 bytes above the bound)");
        CHECK(verdict == 0);
        chains.push_back(mo::testing::table_chain(d, v, recompute));
      }

  // The table is what the claim above needs: no chain is checked twice under another name,
  // and at every depth with a hidden layer some chain recomputes one. (A chain of depth 1 has
  // nothing to recompute, so one of the Recompute half may equal one of the plain half: the
  // generator makes such a pair, chains 2 and 82.)
  const auto same = [](const TableChain& a, const TableChain& b) {
    return a.depth == b.depth && a.dims == b.dims && a.activations == b.activations &&
           a.recompute == b.recompute;
  };
  const std::size_t half = chains.size() / 2;
  for (std::size_t i = 0; i < chains.size(); ++i)
    for (std::size_t j = 0; j < i; ++j) {
      const bool same_half = (i < half) == (j < half);
      if (!same_half && chains[i].depth == 1) continue;
      INFO("chains " << j << " and " << i << " of the table are the same");
      CHECK_FALSE(same(chains[i], chains[j]));
    }
  for (std::size_t d = 2; d <= mo::testing::table_depth; ++d) {
    const bool recomputes = std::ranges::any_of(chains, [d](const TableChain& c) {
      return c.depth == d && std::ranges::find(c.recompute, true) != c.recompute.end();
    });
    INFO("no chain of depth " << d << " has a Recompute layer");
    CHECK(recomputes);
  }
}

TEST_CASE("greedy orders alone miss the bound where the search does not") {
  // Found by the random search of the planner's development: one layer, 1000 -> 512, batch
  // 1000, 16-bit. Every greedy order leaves a gap; the bounded exact search closes it.
  mo::plan::Chain<1> c{1, {1000, 512}, {ActivationKind::softmax}, {}, 2};
  const auto unplaced = mo::plan::training_buffers_of(c, 1000);
  std::size_t best_greedy = static_cast<std::size_t>(-1);
  using mo::plan::detail::Order;
  for (Order o : {Order::size, Order::first_use, Order::duration, Order::area, Order::last_use}) {
    const auto g = mo::plan::detail::place_greedy(unplaced, o);
    CHECK(g.is_valid());
    best_greedy = g.arena_bytes < best_greedy ? g.arena_bytes : best_greedy;
  }
  const auto placed = mo::plan::assign_offsets(unplaced);
  CHECK(placed.is_valid());
  CHECK(placed.arena_bytes == unplaced.lower_bound_bytes());
  CHECK(best_greedy > placed.arena_bytes);
  MESSAGE("greedy " << best_greedy << " bytes, search " << placed.arena_bytes
                    << " bytes = lower bound");
}

TEST_CASE("random chains: always valid; above the bound only rarely, and then said by how much") {
  mo::testing::TableRng rng{2024};
  std::size_t above = 0, worst = 0;
  const std::size_t n = 3000;
  for (std::size_t t = 0; t < n; ++t) {
    mo::testing::TableChain c;
    c.depth = 1 + rng(8);
    for (std::size_t i = 0; i <= c.depth; ++i)
      c.dims[i] = mo::testing::table_widths[rng(std::size(mo::testing::table_widths))];
    for (std::size_t i = 0; i + 1 < c.depth; ++i) {
      c.activations[i] = mo::testing::table_hidden[rng(5)];
      c.recompute[i] = rng(3) == 0;
    }
    c.activations[c.depth - 1] = ActivationKind::softmax;
    c.compute_bytes = rng(2) ? 4 : 2;
    const std::size_t batch = 1 + rng(1000);
    const auto p = mo::plan::training_plan_of(c, batch);
    REQUIRE(p.is_valid());
    const std::size_t gap = p.arena_bytes - p.lower_bound_bytes();
    above += gap > 0;
    worst = gap > worst ? gap : worst;
  }
  MESSAGE(above << " of " << n << " random chains (a third of their hidden layers Recompute) "
                << "above the lower bound; the largest gap " << worst << " bytes");
  CHECK(above * 500 <= n);  // measured: 2 of these 3,000
}
