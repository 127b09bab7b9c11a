// Activation<Act>, an activation as a layer of its own: Keras's shapes and names, gradients
// through the whole CPU step against central differences, and Dense<N> + Activation<A>
// against Dense<N, A>. Random, non-zero data throughout.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include <memopt/backend/cpu.hpp>
#include <memopt/memopt.hpp>

#include "reference_mlp.hpp"
#include "temp_dir.hpp"

namespace mo = memopt;
using mo::testing::relative_error;

namespace {

static_assert(mo::Layer<mo::Activation<mo::ReLU>>);
static_assert(mo::Activation<mo::GELU>::output_shape(mo::image_shape(5, 4, 3)) ==
              mo::image_shape(5, 4, 3));
static_assert(mo::weight_decl_count_v<mo::Activation<mo::Tanh>> == 0);
static_assert(mo::Activation<mo::Sigmoid>::name == "activation" &&
              mo::Activation<mo::Sigmoid>::class_name == "Activation");

// Keras's Conv2D -> BatchNormalization -> Activation("relu"), then a Dense and its activation
// apart, and a Softmax layer last.
using ConvBnRelu =
    mo::Sequential<mo::Conv2D<4, 3>, mo::BatchNormalization, mo::Activation<mo::ReLU>, mo::Flatten,
                   mo::Dense<6>, mo::Activation<mo::ReLU>, mo::Dense<3>,
                   mo::Activation<mo::Softmax>>;
using ConvBnReluIn = mo::Input<6, 5, 2>;
using ConvBnReluSpec = mo::ModelSpec<ConvBnRelu, ConvBnReluIn, mo::float32>;
static_assert(ConvBnReluSpec::depth == 7);  // Flatten is a view; every Activation a node
static_assert(ConvBnReluSpec::ends_in_softmax);
static_assert(ConvBnReluSpec::parameter_count ==
              (3 * 3 * 2 * 4 + 4) + 2 * 4 + (48 * 6 + 6) + (6 * 3 + 3));

template <class Spec>
constexpr bool plan_at_lower_bound(std::size_t batch) {
  const auto p = mo::plan::training_plan<Spec>(batch);
  return p.is_valid() && p.arena_bytes == p.lower_bound_bytes();
}
static_assert(plan_at_lower_bound<ConvBnReluSpec>(8));
// The ReLU's derivative comes from its 1-bit mask, as a Conv2D<..., ReLU>'s does.
static_assert(mo::plan::training_plan<ConvBnReluSpec>(8).contains(mo::plan::BufferRole::relu_mask,
                                                                  2));

struct Problem {
  std::vector<float> x;
  std::vector<std::int32_t> y;
  std::size_t rows;
};

template <class Spec>
Problem random_problem(std::size_t rows, std::uint64_t seed) {
  mo::Rng rng(seed);
  Problem p{std::vector<float>(rows * Spec::inputs), std::vector<std::int32_t>(rows), rows};
  for (float& v : p.x) v = rng.uniform(-1.5f, 1.5f);
  for (auto& v : p.y) v = static_cast<std::int32_t>(rng.below(Spec::outputs));
  return p;
}

// The mean training loss at weights `w` and its gradient: one step with learning rate 0.
template <class Spec>
struct TrainingLoss {
  mo::cpu_backend::Executor<Spec> e;
  const Problem& p;
  std::vector<float> state;

  TrainingLoss(const Problem& problem, std::span<const float> initial_state) : p(problem) {
    e.set_seed(5);
    e.prepare(p.rows, 0);
    state.assign(initial_state.begin(), initial_state.end());
  }
  double operator()(std::span<const float> w, std::vector<float>* gradients = nullptr) {
    e.set_parameters(w);
    if constexpr (Spec::state_count > 0) e.set_state_weights(state);
    std::int64_t iterations = 0;
    mo::NoLossScale scale;
    (void)e.take_totals();
    mo::train::training_step(e, p.x.data(), p.y.data(), p.rows, mo::SGD{{.learning_rate = 0.0}},
                             iterations, scale);
    if (gradients) {
      gradients->resize(Spec::parameter_count);
      e.get_gradients(*gradients);
    }
    return e.take_totals().loss_sum / static_cast<double>(p.rows);
  }
};

template <class Net, class In>
void check_gradients(double tolerance) {
  using M = mo::Model<Net, In, mo::float32>;
  using Spec = typename M::spec;
  M model{3};
  std::vector<float> w = model.get_parameters();
  mo::Rng rng(17);  // non-zero biases and normalization parameters
  for (float& v : w) v += rng.uniform(-0.1f, 0.1f);
  const Problem p = random_problem<Spec>(5, 23);
  TrainingLoss<Spec> loss(p, model.get_state_weights());

  std::vector<float> analytic;
  const double at_w = loss(w, &analytic);
  CHECK(std::isfinite(at_w));
  const auto central = [&](std::size_t j, float h) {
    const float keep = w[j];
    w[j] = keep + h;
    const double up = loss(w);
    w[j] = keep - h;
    const double down = loss(w);
    w[j] = keep;
    return (up - down) / (2.0 * static_cast<double>(h));
  };
  // A step across a ReLU kink is no derivative: two step sizes that disagree reveal it.
  std::vector<double> got, want;
  for (std::size_t j = 0; j < w.size(); ++j) {
    const double coarse = central(j, 1e-2f), fine = central(j, 5e-3f);
    if (std::abs(coarse - fine) > 1e-3 + 0.05 * std::abs(fine)) continue;
    got.push_back(analytic[j]);
    want.push_back(fine);
  }
  const double kept = static_cast<double>(got.size()) / static_cast<double>(w.size());
  const double error = relative_error(got, want);
  MESSAGE(Spec::parameter_count << " parameters (" << kept * 100
                                << "% smooth): gradient relative error " << error);
  CHECK(kept > 0.8);
  CHECK(error < tolerance);
}

// Loss, gradients and predictions of two nets with the same parameter layout, at the same
// weights, on the same batch.
template <class A, class B, class In, class Policy = mo::float32>
struct SideBySide {
  using SA = mo::ModelSpec<A, In, Policy>;
  using SB = mo::ModelSpec<B, In, Policy>;
  static_assert(SA::parameter_count == SB::parameter_count && SA::state_count == SB::state_count);
  double loss_a = 0, loss_b = 0;
  std::vector<float> grad_a, grad_b, out_a, out_b;

  explicit SideBySide(std::uint64_t seed) {
    const Problem p = random_problem<SA>(7, seed);
    mo::Model<A, In, mo::float32> init{seed};
    std::vector<float> w = init.get_parameters();
    mo::Rng rng(seed + 1);
    for (float& v : w) v += rng.uniform(-0.1f, 0.1f);
    TrainingLoss<SA> a(p, init.get_state_weights());
    TrainingLoss<SB> b(p, init.get_state_weights());
    loss_a = a(w, &grad_a);
    loss_b = b(w, &grad_b);
    out_a.resize(p.rows * SA::outputs);
    out_b.resize(p.rows * SB::outputs);
    a.e.predict(p.x.data(), p.rows, out_a.data());
    b.e.predict(p.x.data(), p.rows, out_b.data());
  }
};

template <class Act>
void check_same_as_dense_activation() {
  using Apart = mo::Sequential<mo::Dense<64>, mo::Activation<Act>, mo::Dense<10>,
                               mo::Activation<mo::Softmax>>;
  using Fused = mo::Sequential<mo::Dense<64, Act>, mo::Dense<10, mo::Softmax>>;
  const SideBySide<Apart, Fused, mo::Input<12>> r(29);
  INFO(Act::name);
  CHECK(r.loss_a > 0.0);
  // The same kernels on the same float32 values, one copy apart: the same bits.
  CHECK(r.loss_a == r.loss_b);
  CHECK(r.grad_a == r.grad_b);
  CHECK(r.out_a == r.out_b);
}

}  // namespace

TEST_CASE("Activation<ReLU> after Conv2D and BatchNormalization and after Dense: gradients") {
  check_gradients<ConvBnRelu, ConvBnReluIn>(1e-2);
}

TEST_CASE("Activation of every kind between Dense layers: gradients") {
  check_gradients<
      mo::Sequential<mo::Dense<6>, mo::Activation<mo::GELU>, mo::Dense<5>,
                     mo::Activation<mo::Sigmoid>, mo::Dense<5>, mo::Activation<mo::Tanh>,
                     mo::Activation<mo::Linear>, mo::Dense<3>, mo::Activation<mo::Softmax>>,
      mo::Input<4>>(1e-2);
}

TEST_CASE("Activation on an image: GELU, then a ReLU below a tiling max pool, as if fused") {
  // The pool's input gradient applies that ReLU from its own argmax, as below a
  // Conv2D<..., ReLU>. (Central differences here cross too many pooling switches to be a
  // sharp test: 0.035 for both nets; the two nets' bits are.)
  using Apart = mo::Sequential<mo::Conv2D<3, 3, mo::Same>, mo::Activation<mo::GELU>,
                               mo::Conv2D<4, 2>, mo::Activation<mo::ReLU>, mo::MaxPooling2D<2>,
                               mo::Flatten, mo::Dense<3>, mo::Activation<mo::Softmax>>;
  using Fused = mo::Sequential<mo::Conv2D<3, 3, mo::Same, mo::GELU>, mo::Conv2D<4, 2, mo::ReLU>,
                               mo::MaxPooling2D<2>, mo::Flatten, mo::Dense<3, mo::Softmax>>;
  using In = mo::Input<7, 6, 2>;
  // The ReLU keeps no mask: the pool carries it, as for the fused net.
  static_assert(!mo::plan::training_plan<mo::ModelSpec<Apart, In, mo::float32>>(8).contains(
      mo::plan::BufferRole::relu_mask, 3));
  const SideBySide<Apart, Fused, In> r(37);
  CHECK(r.loss_a > 0.0);
  CHECK(r.loss_a == r.loss_b);
  CHECK(r.grad_a == r.grad_b);
  CHECK(r.out_a == r.out_b);
}

TEST_CASE("Dense<64> + Activation<A> computes what Dense<64, A> does, bit for bit in float32") {
  check_same_as_dense_activation<mo::ReLU>();
  check_same_as_dense_activation<mo::Sigmoid>();
  check_same_as_dense_activation<mo::Tanh>();
  check_same_as_dense_activation<mo::GELU>();
}

TEST_CASE("Dense + Activation under mixed_bfloat16: within 1e-2 of Dense<N, A>") {
  // The pre-activation is stored in bfloat16 before f, which the fused epilogue applies in
  // float: the same model, rounded at a different place.
  using Apart = mo::Sequential<mo::Dense<64>, mo::Activation<mo::GELU>, mo::Dense<10>,
                               mo::Activation<mo::Softmax>>;
  using Fused = mo::Sequential<mo::Dense<64, mo::GELU>, mo::Dense<10, mo::Softmax>>;
  const SideBySide<Apart, Fused, mo::Input<12>, mo::mixed_bfloat16> r(31);
  CHECK(std::abs(r.loss_a - r.loss_b) / r.loss_b < 1e-2);
  CHECK(relative_error(r.grad_a, r.grad_b) < 1e-2);
  CHECK(relative_error(r.out_a, r.out_b) < 1e-2);
}

TEST_CASE("Activation<Recompute<ReLU>>: the same gradients as Activation<ReLU>") {
  using Kept = mo::Sequential<mo::Conv2D<4, 3>, mo::BatchNormalization, mo::Activation<mo::ReLU>,
                              mo::Flatten, mo::Dense<3>, mo::Activation<mo::Softmax>>;
  using Recomputed = mo::Sequential<mo::Conv2D<4, 3>, mo::BatchNormalization,
                                    mo::Activation<mo::Recompute<mo::ReLU>>, mo::Flatten,
                                    mo::Dense<3>, mo::Activation<mo::Softmax>>;
  const SideBySide<Kept, Recomputed, mo::Input<6, 5, 2>> r(37);
  CHECK(r.loss_a == r.loss_b);
  CHECK(r.grad_a == r.grad_b);
}

TEST_CASE("Activation: summary rows, checkpoints with no weights, Keras's layer names") {
  using M = mo::Model<ConvBnRelu, ConvBnReluIn, mo::float32>;
  const std::string s = M{1}.summary_string();
  CHECK(s.find("activation (Activation)") != std::string::npos);
  CHECK(s.find("activation_1 (Activation)") != std::string::npos);
  CHECK(s.find("activation_2 (Activation)") != std::string::npos);
  // Its own forward kernel; the derivative goes with the input gradient of the node above.
  CHECK(s.find("copy + relu") != std::string::npos);
  CHECK(s.find("dX * relu'") != std::string::npos);
  CHECK(mo::checkpoint::model_description<M::spec>().find("activation_2(3, softmax)") !=
        std::string::npos);

  const Problem p = random_problem<M::spec>(8, 41);
  M trained{5};
  trained.compile(mo::Adam{}, mo::SparseCategoricalCrossentropy{});
  trained.fit(mo::data::from(p.x, p.y, M::spec::inputs) | mo::data::batch(4),
              {.epochs = 1, .verbose = 0});
  mo::testing::TempDir dir;
  trained.save_weights(dir / "w.safetensors");
  const auto file = mo::io::SafetensorsFile::read(dir / "w.safetensors");
  CHECK(file.find("dense_1/kernel") != nullptr);
  CHECK(file.find("activation/kernel") == nullptr);
  M restored{6};
  restored.load_weights(dir / "w.safetensors");
  CHECK(restored.predict(p.x) == trained.predict(p.x));

  trained.save(dir / "full.safetensors");
  M resumed{7};
  resumed.compile(mo::Adam{}, mo::SparseCategoricalCrossentropy{});
  resumed.load(dir / "full.safetensors");
  CHECK(resumed.predict(p.x) == trained.predict(p.x));
}
