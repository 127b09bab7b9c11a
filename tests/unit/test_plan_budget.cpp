// MemoryBudget: the planner chooses which layers to recompute so that the arena fits, with
// the least added forward FLOPs; checked against an exhaustive search written here.
#include <doctest/doctest.h>

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <memopt/memopt.hpp>

namespace mo = memopt;

namespace {

using Mlp = mo::Sequential<mo::Dense<1024, mo::ReLU>, mo::Dense<256, mo::ReLU>,
                           mo::Dense<1024, mo::ReLU>, mo::Dense<10, mo::Softmax>>;
using MlpSpec = mo::ModelSpec<Mlp, mo::Input<784>, mo::float32>;
using Mixed =
    mo::Sequential<mo::Dense<96, mo::ReLU>, mo::Dense<80, mo::GELU>, mo::Dense<64, mo::Sigmoid>,
                   mo::Dense<72, mo::Tanh>, mo::Dense<32, mo::ReLU>, mo::Dense<10, mo::Softmax>>;
using MixedSpec = mo::ModelSpec<Mixed, mo::Input<48>, mo::float32>;
using Conv =
    mo::Sequential<mo::Conv2D<8, 3, mo::Same, mo::ReLU>, mo::Conv2D<8, 3, mo::Same, mo::ReLU>,
                   mo::Conv2D<8, 3, mo::Same, mo::ReLU>, mo::MaxPooling2D<2>, mo::Flatten,
                   mo::Dense<4, mo::Softmax>>;
using ConvIn = mo::Input<8, 8, 2>;
using ConvSpec = mo::ModelSpec<Conv, ConvIn, mo::float32>;

// Eight hidden layers: a budget between the least and the unbudgeted arena recomputes a run.
using Deep =
    mo::Sequential<mo::Dense<64, mo::ReLU>, mo::Dense<64, mo::ReLU>, mo::Dense<64, mo::ReLU>,
                   mo::Dense<64, mo::Recompute<mo::ReLU>>, mo::Dense<64, mo::ReLU>,
                   mo::Dense<64, mo::Tanh>, mo::Dense<64, mo::ReLU>, mo::Dense<64, mo::ReLU>,
                   mo::Dense<10, mo::Softmax>>;
using DeepSpec = mo::ModelSpec<Deep, mo::Input<48>, mo::float32>;

// The least arena any choice reaches: a budget of 0 fits nothing, so every set is planned.
template <class Spec>
constexpr std::size_t least_reachable(std::size_t batch) {
  return mo::plan::choose_recompute(mo::plan::graph_of<Spec>(), batch, 0).least_bytes;
}

constexpr std::size_t mlp_least = least_reachable<MlpSpec>(256);
constexpr std::size_t mixed_least = least_reachable<MixedSpec>(64);
constexpr std::size_t conv_least = least_reachable<ConvSpec>(16);

// Below the unbudgeted arena, so that the budget must recompute something.
static_assert(mlp_least < mo::ModelPlan<Mlp, mo::Input<784>>::arena_bytes(256));
static_assert(mixed_least < mo::ModelPlan<Mixed, mo::Input<48>>::arena_bytes(64));
static_assert(conv_least < mo::ModelPlan<Conv, ConvIn>::arena_bytes(16));

// At the least reachable and just above, the arena fits by construction.
template <class Net, class In, std::size_t Bytes, std::size_t Batch, class P = mo::float32>
using Budgeted = mo::Model<Net, In, mo::MemoryBudget<Bytes, Batch, P>>;
static_assert(Budgeted<Mlp, mo::Input<784>, mlp_least, 256>::arena_bytes(256) <= mlp_least);
static_assert(Budgeted<Mlp, mo::Input<784>, mlp_least + 1, 256>::arena_bytes(256) <= mlp_least + 1);
static_assert(Budgeted<Mixed, mo::Input<48>, mixed_least, 64>::arena_bytes(64) <= mixed_least);
static_assert(Budgeted<Conv, ConvIn, conv_least, 16>::arena_bytes(16) <= conv_least);
// The budget's policy computes as its precision.
static_assert(std::is_same_v<
              Budgeted<Mlp, mo::Input<784>, mlp_least, 256, mo::mixed_float16>::spec::compute_type,
              mo::half>);

// Just below the least: no choice fits (the model itself would not compile; see
// tests/compile_fail/memory_budget_below_least.cpp).
static_assert(
    !mo::plan::choose_recompute(mo::plan::graph_of<MlpSpec>(), 256, mlp_least - 1).feasible);
static_assert(
    !mo::plan::choose_recompute(mo::plan::graph_of<ConvSpec>(), 16, conv_least - 1).feasible);
static_assert(mo::plan::choose_recompute(mo::plan::graph_of<ConvSpec>(), 16, conv_least - 1)
                  .least_bytes == conv_least);

// Residual blocks: a block's inner layers may be recomputed, the branch point and a shortcut
// that the Add reads second may not (tests/compile_fail/memory_budget_below_least_residual.cpp
// is the refusal below the least).
using ResMlp = mo::Sequential<
    mo::Dense<64, mo::ReLU>,
    mo::Residual<mo::Sequential<mo::Dense<128, mo::ReLU>, mo::Dense<256, mo::Tanh>, mo::Dense<64>>>,
    mo::Residual<mo::Sequential<mo::Dense<32, mo::GELU>, mo::Dense<64, mo::ReLU>>, mo::Dense<64>>,
    mo::Dense<10, mo::Softmax>>;
using ResMlpSpec = mo::ModelSpec<ResMlp, mo::Input<48>, mo::float32>;
using ResConv = mo::Sequential<
    mo::Conv2D<8, 3, mo::Same, mo::ReLU>,
    mo::Residual<mo::Sequential<mo::Conv2D<8, 3, mo::Same, mo::ReLU>, mo::Conv2D<8, 3, mo::Same>>>,
    mo::Residual<mo::Sequential<mo::Conv2D<16, 3, mo::Strides<2>, mo::Same, mo::ReLU>,
                                mo::Conv2D<16, 3, mo::Same>>,
                 mo::Conv2D<16, 1, mo::Strides<2>, mo::Same>>,
    mo::GlobalAveragePooling2D, mo::Dense<4, mo::Softmax>>;
using ResConvSpec = mo::ModelSpec<ResConv, ConvIn, mo::float32>;
// dense, dense_1..3, add, dense_4, dense_5, dense_6 (shortcut), add_1, dense_7.
static_assert(!mo::plan::may_recompute(mo::plan::graph_of<ResMlpSpec>(), 0));  // branch point
static_assert(mo::plan::may_recompute(mo::plan::graph_of<ResMlpSpec>(), 1));
static_assert(mo::plan::may_recompute(mo::plan::graph_of<ResMlpSpec>(), 3));   // the Add's first
static_assert(!mo::plan::may_recompute(mo::plan::graph_of<ResMlpSpec>(), 4));  // Add
static_assert(!mo::plan::may_recompute(mo::plan::graph_of<ResMlpSpec>(), 7));  // its second
constexpr std::size_t resmlp_least = least_reachable<ResMlpSpec>(64);
constexpr std::size_t resconv_least = least_reachable<ResConvSpec>(16);
static_assert(resmlp_least < mo::ModelPlan<ResMlp, mo::Input<48>>::arena_bytes(64));
static_assert(resconv_least < mo::ModelPlan<ResConv, ConvIn>::arena_bytes(16));
static_assert(Budgeted<ResMlp, mo::Input<48>, resmlp_least, 64>::arena_bytes(64) <= resmlp_least);
static_assert(Budgeted<ResConv, ConvIn, resconv_least, 16>::arena_bytes(16) <= resconv_least);

// A layer written Recompute stays recomputed under a budget; the budget adds others.
constexpr std::size_t deep_unbudgeted = mo::ModelPlan<Deep, mo::Input<48>>::arena_bytes(256);
constexpr std::size_t deep_least = least_reachable<DeepSpec>(256);
constexpr std::size_t deep_budget = (deep_least + deep_unbudgeted) / 2;
using DeepBudgeted = Budgeted<Deep, mo::Input<48>, deep_budget, 256>;
static_assert(DeepBudgeted::spec::nodes[3].recompute);
static_assert(DeepBudgeted::arena_bytes(256) <= deep_budget);
static_assert(deep_least < deep_budget && deep_budget < deep_unbudgeted);

// A budget the unbudgeted plan meets recomputes nothing.
constexpr std::size_t mlp_unbudgeted = mo::ModelPlan<Mlp, mo::Input<784>>::arena_bytes(256);
static_assert(mo::plan::choose_recompute(mo::plan::graph_of<MlpSpec>(), 256, mlp_unbudgeted)
                  .added_flops == 0);

// The exhaustive search, written independently of the library's: every subset of the hidden
// layers (those the planner may recompute: in a chain, every one but the last), planned by the
// ordinary planner; the least FLOPs within the budget, ties to the smaller arena.
struct Best {
  bool feasible = false;
  std::size_t flops = 0, arena = 0, least = std::numeric_limits<std::size_t>::max();
};

template <std::size_t D>
std::size_t chain_recompute_flops(const mo::plan::Chain<D>& c, std::size_t i, std::size_t batch) {
  if (c.activations[i] == mo::ActivationKind::gelu) return batch * c.dims[i + 1];
  return batch * c.dims[i + 1] * (2 * c.dims[i] + 1);
}

template <std::size_t D>
Best exhaustive(mo::plan::Chain<D> c, std::size_t batch, std::size_t budget) {
  Best best;
  const std::size_t hidden = c.depth - 1;
  for (std::size_t mask = 0; mask < (std::size_t{1} << hidden); ++mask) {
    std::size_t flops = 0;
    for (std::size_t i = 0; i < hidden; ++i) {
      c.recompute[i] = (mask >> i) & 1;
      if (c.recompute[i]) flops += chain_recompute_flops(c, i, batch);
    }
    const std::size_t arena = mo::plan::training_plan_of(c, batch).arena_bytes;
    if (arena < best.least) best.least = arena;
    if (arena > budget) continue;
    if (!best.feasible || flops < best.flops || (flops == best.flops && arena < best.arena))
      best = {true, flops, arena, best.least};
  }
  return best;
}

// The same search over a model's graph: every subset of the nodes a rule written here allows
// (parameters, no saved buffers or state, not the last, not Softmax, the output read by the
// next node alone, as its first input), planned by the ordinary planner.
template <std::size_t D>
bool recomputable(const mo::plan::Graph<D>& g, std::size_t i) {
  const mo::NodeInfo& n = g.nodes[i];
  if (i + 1 >= g.depth || n.parameters == 0 || n.saved_count != 0 || n.state != 0 ||
      n.activation == mo::ActivationKind::softmax)
    return false;
  for (std::size_t j = i + 1; j < g.depth; ++j)
    for (std::size_t k = 0; k < g.nodes[j].input_count; ++k)
      if (g.nodes[j].sources[k] == static_cast<int>(i) && (j != i + 1 || k != 0)) return false;
  return true;
}

template <std::size_t D>
Best exhaustive(mo::plan::Graph<D> g, std::size_t batch, std::size_t budget,
                std::size_t* candidates = nullptr) {
  std::vector<std::size_t> free;
  for (std::size_t i = 0; i < g.depth; ++i)
    if (!g.nodes[i].recompute && recomputable(g, i)) free.push_back(i);
  if (candidates) *candidates = free.size();
  Best best;
  for (std::size_t mask = 0; mask < (std::size_t{1} << free.size()); ++mask) {
    std::size_t flops = 0;
    for (std::size_t k = 0; k < free.size(); ++k) {
      g.nodes[free[k]].recompute = (mask >> k) & 1;
      if (g.nodes[free[k]].recompute) flops += mo::plan::recompute_flops(g, free[k], batch);
    }
    const std::size_t arena = mo::plan::training_plan_of(g, batch).arena_bytes;
    if (arena < best.least) best.least = arena;
    if (arena > budget) continue;
    if (!best.feasible || flops < best.flops || (flops == best.flops && arena < best.arena))
      best = {true, flops, arena, best.least};
  }
  return best;
}

template <std::size_t D>
mo::plan::Chain<D> random_chain(mo::Rng& rng, std::size_t depth) {
  constexpr std::size_t widths[] = {8, 24, 64, 200, 512};
  constexpr mo::ActivationKind acts[] = {mo::ActivationKind::relu, mo::ActivationKind::sigmoid,
                                         mo::ActivationKind::tanh, mo::ActivationKind::gelu,
                                         mo::ActivationKind::linear};
  mo::plan::Chain<D> c;
  c.depth = depth;
  for (std::size_t i = 0; i <= depth; ++i) c.dims[i] = widths[rng.below(5)];
  for (std::size_t i = 0; i + 1 < depth; ++i) c.activations[i] = acts[rng.below(5)];
  c.activations[depth - 1] = mo::ActivationKind::softmax;
  c.compute_bytes = rng.below(2) ? 4 : 2;
  return c;
}

std::vector<float> random_features(std::size_t n, std::uint64_t seed) {
  mo::Rng rng(seed);
  std::vector<float> v(n);
  for (float& x : v) x = rng.uniform(-1.5f, 1.5f);
  return v;
}
std::vector<std::int32_t> random_labels(std::size_t n, std::size_t classes, std::uint64_t seed) {
  mo::Rng rng(seed);
  std::vector<std::int32_t> v(n);
  for (auto& y : v) y = static_cast<std::int32_t>(rng.below(classes));
  return v;
}

// One step at learning rate 0: the gradients of the same weights on the same batch, and the
// arena the executor allocated.
template <class Model>
std::vector<float> gradients(std::size_t rows, std::size_t* arena = nullptr) {
  constexpr std::size_t in = Model::spec::inputs, out = Model::spec::outputs;
  Model model{/*seed=*/5};
  model.compile(mo::SGD{{.learning_rate = 0.0}}, mo::SparseCategoricalCrossentropy{});
  auto data = mo::data::from(random_features(rows * in, 1), random_labels(rows, out, 2), in);
  model.fit(data | mo::data::batch(rows), {.epochs = 1, .verbose = 0});
  std::vector<float> g(Model::parameter_count);
  model.executor().get_gradients(g);
  if (arena) *arena = model.executor().arena_bytes();
  return g;
}

std::size_t nonzero(const std::vector<float>& g) {
  std::size_t n = 0;
  for (float v : g) n += v != 0.0f;
  return n;
}

template <class Spec>
std::size_t recomputed_nodes() {
  std::size_t n = 0;
  for (const mo::NodeInfo& node : Spec::nodes) n += node.recompute;
  return n;
}

}  // namespace

TEST_CASE("the budget's choice is the exhaustive search's on every chain of up to 8 layers") {
  mo::Rng rng(2026);
  int chains = 0, fitted = 0, refused = 0;
  for (std::size_t depth = 2; depth <= 8; ++depth) {
    for (int k = 0; k < 40; ++k) {
      const mo::plan::Chain<8> c = random_chain<8>(rng, depth);
      const std::size_t batch = 1 + rng.below(300);
      const auto g = c.graph();
      const std::size_t full = mo::plan::training_plan_of(c, batch).arena_bytes;
      const Best all = exhaustive(c, batch, 0);
      REQUIRE(!all.feasible);
      ++chains;
      // At, just above and just below the least reachable, and between it and the arena.
      const std::size_t budgets[] = {all.least,
                                     all.least + 1,
                                     all.least - 1,
                                     all.least + (full - all.least) / 3,
                                     all.least + 2 * (full - all.least) / 3,
                                     full};
      for (std::size_t budget : budgets) {
        INFO("depth " << depth << ", batch " << batch << ", budget " << budget << " (least "
                      << all.least << ", unbudgeted " << full << ")");
        const Best want = exhaustive(c, batch, budget);
        const auto got = mo::plan::choose_recompute(g, batch, budget);
        REQUIRE(got.feasible == want.feasible);
        if (!want.feasible) {
          CHECK(got.least_bytes == all.least);
          ++refused;
          continue;
        }
        ++fitted;
        CHECK(got.added_flops == want.flops);
        CHECK(got.arena_bytes == want.arena);
        CHECK(got.arena_bytes <= budget);
        // The set it names plans to the arena it reports.
        mo::plan::Chain<8> chosen = c;
        std::size_t flops = 0;
        for (std::size_t i = 0; i < depth; ++i) {
          chosen.recompute[i] = got.recompute[i];
          if (got.recompute[i]) flops += chain_recompute_flops(c, i, batch);
        }
        CHECK(flops == got.added_flops);
        CHECK(mo::plan::training_plan_of(chosen, batch).arena_bytes == got.arena_bytes);
      }
    }
  }
  MESSAGE(chains << " chains: " << fitted << " budgets met optimally, " << refused
                 << " below the least reachable refused");
  CHECK(refused == chains);  // least - 1 each time
}

TEST_CASE("on residual models the budget's choice is the exhaustive search's") {
  int budgets_met = 0, refused = 0;
  const auto check = [&](const auto& g, std::size_t batch) {
    std::size_t candidates = 0;
    const std::size_t full = mo::plan::training_plan_of(g, batch).arena_bytes;
    const Best all = exhaustive(g, batch, 0, &candidates);
    REQUIRE(candidates >= 3);
    REQUIRE(all.least < full);
    const std::size_t budgets[] = {all.least,
                                   all.least + 1,
                                   all.least - 1,
                                   all.least + (full - all.least) / 3,
                                   all.least + 2 * (full - all.least) / 3,
                                   full};
    for (std::size_t budget : budgets) {
      INFO("batch " << batch << ", budget " << budget << " (least " << all.least << ", unbudgeted "
                    << full << ", " << candidates << " candidates)");
      const Best want = exhaustive(g, batch, budget);
      const auto got = mo::plan::choose_recompute(g, batch, budget);
      REQUIRE(got.feasible == want.feasible);
      if (!want.feasible) {
        CHECK(got.least_bytes == all.least);
        ++refused;
        continue;
      }
      ++budgets_met;
      CHECK(got.added_flops == want.flops);
      CHECK(got.arena_bytes == want.arena);
      auto chosen = g;
      for (std::size_t i = 0; i < g.depth; ++i) chosen.nodes[i].recompute = got.recompute[i];
      CHECK(mo::plan::training_plan_of(chosen, batch).arena_bytes == got.arena_bytes);
    }
  };
  for (std::size_t batch : {1, 7, 64, 256}) check(mo::plan::graph_of<ResMlpSpec>(), batch);
  for (std::size_t batch : {1, 5, 16, 64}) check(mo::plan::graph_of<ResConvSpec>(), batch);
  MESSAGE(budgets_met << " budgets met optimally, " << refused << " refused below the least");
  CHECK(refused == 8);
}

TEST_CASE("gradients under a budget are the unbudgeted model's, bit for bit (float32)") {
  SUBCASE("residual blocks of Dense layers") {
    using B = Budgeted<ResMlp, mo::Input<48>, resmlp_least, 64>;
    CHECK(recomputed_nodes<B::spec>() > 0);
    std::size_t arena_plain = 0, arena_budget = 0;
    const std::vector<float> plain = gradients<mo::Model<ResMlp, mo::Input<48>>>(64, &arena_plain);
    const std::vector<float> budgeted = gradients<B>(64, &arena_budget);
    CHECK(nonzero(plain) > plain.size() / 2);
    CHECK(plain == budgeted);
    CHECK(arena_budget <= resmlp_least);
    CHECK(arena_budget < arena_plain);
  }
  SUBCASE("residual blocks of convolutions, one with a strided shortcut") {
    using B = Budgeted<ResConv, ConvIn, resconv_least, 16>;
    CHECK(recomputed_nodes<B::spec>() > 0);
    std::size_t arena_plain = 0, arena_budget = 0;
    const std::vector<float> plain = gradients<mo::Model<ResConv, ConvIn>>(16, &arena_plain);
    const std::vector<float> budgeted = gradients<B>(16, &arena_budget);
    CHECK(nonzero(plain) > plain.size() / 2);
    CHECK(plain == budgeted);
    CHECK(arena_budget <= resconv_least);
    CHECK(arena_budget < arena_plain);
  }
  SUBCASE("MLP with ReLU, GELU, Sigmoid and Tanh") {
    using B = Budgeted<Mixed, mo::Input<48>, mixed_least, 64>;
    CHECK(recomputed_nodes<B::spec>() > 0);
    std::size_t arena_plain = 0, arena_budget = 0;
    const std::vector<float> plain = gradients<mo::Model<Mixed, mo::Input<48>>>(64, &arena_plain);
    const std::vector<float> budgeted = gradients<B>(64, &arena_budget);
    CHECK(nonzero(plain) > plain.size() / 2);  // not a vacuous comparison
    CHECK(plain == budgeted);
    CHECK(arena_budget == B::arena_bytes(64));
    CHECK(arena_budget <= mixed_least);
    CHECK(arena_budget < arena_plain);
  }
  SUBCASE("eight hidden layers, one written Recompute") {
    CHECK(recomputed_nodes<DeepBudgeted::spec>() > 1);
    std::size_t arena_plain = 0, arena_budget = 0;
    const std::vector<float> plain = gradients<mo::Model<Deep, mo::Input<48>>>(256, &arena_plain);
    const std::vector<float> budgeted = gradients<DeepBudgeted>(256, &arena_budget);
    CHECK(nonzero(plain) > plain.size() / 2);
    CHECK(plain == budgeted);
    CHECK(arena_budget <= deep_budget);
    CHECK(arena_budget < arena_plain);
  }
  SUBCASE("convolutions") {
    using B = Budgeted<Conv, ConvIn, conv_least, 16>;
    CHECK(recomputed_nodes<B::spec>() > 0);
    std::size_t arena_plain = 0, arena_budget = 0;
    const std::vector<float> plain = gradients<mo::Model<Conv, ConvIn>>(16, &arena_plain);
    const std::vector<float> budgeted = gradients<B>(16, &arena_budget);
    CHECK(nonzero(plain) > plain.size() / 2);
    CHECK(plain == budgeted);
    CHECK(arena_budget <= conv_least);
    CHECK(arena_budget < arena_plain);
  }
}

TEST_CASE("summary names what the budget recomputes and what it costs") {
  Budgeted<Mlp, mo::Input<784>, mlp_least, 256> model{1};
  const std::string s = model.summary_string(256);
  INFO(s);
  CHECK(s.find("Memory budget " + std::to_string(mlp_least) + " bytes at batch 256: recomputes") !=
        std::string::npos);
  CHECK(s.find(std::to_string(mlp_unbudgeted) + " without the budget") != std::string::npos);
  CHECK(s.find("Recomputed in backward: ") != std::string::npos);
  // A residual model's summary says the same beside its "Connected to" column.
  Budgeted<ResMlp, mo::Input<48>, resmlp_least, 64> residual{1};
  const std::string r = residual.summary_string(64);
  INFO(r);
  CHECK(r.find("Memory budget " + std::to_string(resmlp_least) +
               " bytes at batch 64: recomputes") != std::string::npos);
  CHECK(r.find("Connected to") != std::string::npos);
  // Without a budget, no such line.
  mo::Model<Mlp, mo::Input<784>> plain{1};
  CHECK(plain.summary_string(256).find("Memory budget") == std::string::npos);
}

TEST_CASE("784-1024-256-1024-10 at batch 256: the arena a budget reaches and its cost") {
  constexpr auto c = mo::plan::choose_recompute(mo::plan::graph_of<MlpSpec>(), 256, mlp_least);
  static_assert(c.feasible && c.arena_bytes == mlp_least);
  MESSAGE("float32, batch 256: arena "
          << mlp_unbudgeted << " bytes unbudgeted, " << c.arena_bytes
          << " at the least reachable budget ("
          << 100.0 * double(c.arena_bytes) / double(mlp_unbudgeted) << "%), +" << c.added_flops
          << " forward FLOPs (" << 100.0 * double(c.added_flops) / double(c.forward_flops)
          << "% of " << c.forward_flops << "); " << c.evaluated << " sets planned");
  CHECK(c.added_flops > 0);
}
