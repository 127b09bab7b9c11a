// Recompute<Act>: fewer activations kept, the same gradients, a smaller arena.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include <memopt/memopt.hpp>

namespace mo = memopt;
using mo::plan::BufferRole;
using mo::plan::StepKind;

namespace {

// Recomputed by a matrix product: every other layer (ReLU, Sigmoid), or a run of two, which
// comes back as one segment.
using Plain =
    mo::Sequential<mo::Dense<96, mo::ReLU>, mo::Dense<80, mo::ReLU>, mo::Dense<64, mo::Sigmoid>,
                   mo::Dense<32, mo::ReLU>, mo::Dense<10, mo::Softmax>>;
using ByProduct = mo::Sequential<mo::Dense<96, mo::Recompute<mo::ReLU>>, mo::Dense<80, mo::ReLU>,
                                 mo::Dense<64, mo::Recompute<mo::Sigmoid>>, mo::Dense<32, mo::ReLU>,
                                 mo::Dense<10, mo::Softmax>>;
using Run =
    mo::Sequential<mo::Dense<96, mo::Recompute<mo::ReLU>>, mo::Dense<80, mo::Recompute<mo::ReLU>>,
                   mo::Dense<64, mo::Sigmoid>, mo::Dense<32, mo::ReLU>, mo::Dense<10, mo::Softmax>>;
// Recomputed by GELU's element-wise pass from the z it keeps.
using PlainGelu = mo::Sequential<mo::Dense<96, mo::GELU>, mo::Dense<64, mo::Tanh>,
                                 mo::Dense<48, mo::GELU>, mo::Dense<10, mo::Softmax>>;
using ByGelu = mo::Sequential<mo::Dense<96, mo::Recompute<mo::GELU>>, mo::Dense<64, mo::Tanh>,
                              mo::Dense<48, mo::Recompute<mo::GELU>>, mo::Dense<10, mo::Softmax>>;

template <class Net, class P>
using M = mo::Model<Net, mo::Input<48>, P>;

// Fewer bytes where the peak is the turn from forward to backward.
static_assert(M<ByProduct, mo::float32>::arena_bytes(512) <
              M<Plain, mo::float32>::arena_bytes(512));
static_assert(M<ByProduct, mo::mixed_float16>::arena_bytes(4096) <
              M<Plain, mo::mixed_float16>::arena_bytes(4096));
static_assert(M<ByGelu, mo::float32>::arena_bytes(512) <
              M<PlainGelu, mo::float32>::arena_bytes(512));
// Still at the lower bound, still valid.
static_assert(M<ByProduct, mo::float32>::arena_bytes(512) ==
              M<ByProduct, mo::float32>::lower_bound_bytes(512));
static_assert(M<ByProduct, mo::float32>::training_plan(512).is_valid());

// Each Recompute layer comes back just before dW of the layer above it; a run of two comes
// back together, before dW of the layer above the run.
constexpr auto schedule = M<ByProduct, mo::float32>::training_schedule();
static_assert(schedule.index(StepKind::recompute, 0) + 1 ==
              schedule.index(StepKind::weight_grad, 1));
static_assert(schedule.index(StepKind::recompute, 2) + 1 ==
              schedule.index(StepKind::weight_grad, 3));
constexpr auto run_schedule = M<Run, mo::float32>::training_schedule();
static_assert(run_schedule.index(StepKind::recompute, 0) + 1 ==
              run_schedule.index(StepKind::recompute, 1));
static_assert(run_schedule.index(StepKind::recompute, 1) + 1 ==
              run_schedule.index(StepKind::weight_grad, 2));

std::vector<float> random_features(std::size_t n, std::uint64_t seed) {
  mo::Rng rng(seed);
  std::vector<float> v(n);
  for (float& x : v) x = rng.uniform(-1.5f, 1.5f);
  return v;
}
std::vector<std::int32_t> random_labels(std::size_t n, std::uint64_t seed) {
  mo::Rng rng(seed);
  std::vector<std::int32_t> v(n);
  for (auto& y : v) y = static_cast<std::int32_t>(rng.below(10));
  return v;
}

// One step at learning rate 0: the gradients of the same weights on the same batch.
template <class Model>
std::vector<float> gradients(std::size_t rows) {
  Model model{/*seed=*/5};
  model.compile(mo::SGD{{.learning_rate = 0.0}}, mo::SparseCategoricalCrossentropy{});
  auto data = mo::data::from(random_features(rows * 48, 1), random_labels(rows, 2), 48);
  model.fit(data | mo::data::batch(rows), {.epochs = 1, .verbose = 0});
  std::vector<float> g(Model::parameter_count);
  model.executor().get_gradients(g);
  return g;
}

double relative_difference(const std::vector<float>& a, const std::vector<float>& b) {
  double diff = 0, norm = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    diff += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
    norm += double(b[i]) * b[i];
  }
  return std::sqrt(diff / norm);
}

std::size_t nonzero(const std::vector<float>& g) {
  std::size_t n = 0;
  for (float v : g) n += v != 0.0f;
  return n;
}

}  // namespace

TEST_CASE("recomputing by matrix product gives the same gradients, bit for bit") {
  const std::vector<float> plain = gradients<M<Plain, mo::float32>>(77);
  const std::vector<float> re = gradients<M<ByProduct, mo::float32>>(77);
  REQUIRE(plain.size() == re.size());
  CHECK(nonzero(plain) > plain.size() / 2);  // not a vacuous comparison
  CHECK(plain == re);

  CHECK(plain == gradients<M<Run, mo::float32>>(77));

  const std::vector<float> plain16 = gradients<M<Plain, mo::mixed_float16>>(77);
  CHECK(plain16 == gradients<M<ByProduct, mo::mixed_float16>>(77));
  CHECK(plain16 == gradients<M<Run, mo::mixed_float16>>(77));
}

TEST_CASE("recomputing GELU from its kept input gives the same gradients") {
  const std::vector<float> plain = gradients<M<PlainGelu, mo::float32>>(64);
  const std::vector<float> re = gradients<M<ByGelu, mo::float32>>(64);
  CHECK(nonzero(plain) > plain.size() / 2);
  CHECK(plain == re);  // float32 keeps z exactly, so gelu(z) is the same bits
  // In 16 bits backward recomputes from the rounded z that it keeps, forward used the float z.
  const double d = relative_difference(gradients<M<ByGelu, mo::mixed_float16>>(64),
                                       gradients<M<PlainGelu, mo::mixed_float16>>(64));
  MESSAGE("mixed_float16, GELU recomputed from 16-bit z: relative difference " << d);
  CHECK(d < 1e-2);
}

TEST_CASE("the plan, the executor's arena and the report all see Recompute") {
  using R = M<ByProduct, mo::float32>;
  constexpr auto p = R::training_plan(256);
  // Layer 0 keeps its output only until layer 1's forward; backward has a second copy.
  constexpr auto first = p.find(BufferRole::activation, 0);
  constexpr auto again = p.find(BufferRole::recomputed_activation, 0);
  static_assert(first.last == schedule.index(StepKind::forward, 1));
  static_assert(again.first == schedule.index(StepKind::recompute, 0));
  static_assert(again.last == schedule.index(StepKind::weight_grad, 1));
  // A recomputed ReLU's mask is written by the recompute step.
  static_assert(p.find(BufferRole::relu_mask, 0).first == schedule.index(StepKind::recompute, 0));

  R model{1};
  model.compile(mo::Adam{}, mo::SparseCategoricalCrossentropy{});
  auto data = mo::data::from(random_features(256 * 48, 3), random_labels(256, 4), 48);
  model.fit(data | mo::data::batch(256), {.epochs = 1, .verbose = 0});
  CHECK(model.executor().arena_bytes() == R::arena_bytes(256));

  const mo::plan::MemoryReport r = R::memory_report(256);
  bool found = false;
  for (const auto& b : r.buffers) found = found || b.name == "dense/recomputed_activation";
  CHECK(found);
  CHECK(r.steps[static_cast<std::size_t>(schedule.index(StepKind::recompute, 2))] ==
        "recompute dense_2");
  MESSAGE("arena at batch 512, float32: " << M<Plain, mo::float32>::arena_bytes(512)
                                          << " bytes plain, " << R::arena_bytes(512)
                                          << " with Recompute");
}
