// The CPU backend against a float64 reference: forward, gradients, and the reference's own
// gradients against central finite differences. Random, non-zero data throughout.
#include <doctest/doctest.h>

#include <cstdint>
#include <vector>

#include <memopt/memopt.hpp>

#include "reference_mlp.hpp"

namespace mo = memopt;
using mo::testing::ReferenceMlp;
using mo::testing::relative_error;

namespace {

struct Problem {
  std::vector<float> x;
  std::vector<std::int32_t> y;
  std::size_t rows;
};

Problem random_problem(std::size_t rows, std::size_t width, std::size_t classes,
                       std::uint64_t seed) {
  mo::Rng rng(seed);
  Problem p{std::vector<float>(rows * width), std::vector<std::int32_t>(rows), rows};
  for (float& v : p.x) v = rng.uniform(-1.5f, 1.5f);
  for (auto& v : p.y) v = static_cast<std::int32_t>(rng.below(classes));
  return p;
}

// Runs one step with learning rate 0, so the weights stay put and the gradients stay readable.
template <class M>
std::vector<float> gradients_of(M& model, const Problem& p) {
  model.compile(mo::SGD{{.learning_rate = 0.0}},
                mo::SparseCategoricalCrossentropy{{.from_logits = !M::spec::ends_in_softmax}});
  auto data = mo::data::from(p.x, p.y, M::spec::inputs);
  model.fit(data | mo::data::batch(p.rows), {.epochs = 1, .verbose = 0});
  std::vector<float> g(M::parameter_count);
  model.executor().get_gradients(g);
  return g;
}

template <class Net, std::size_t In, class Policy>
void check_against_reference(double tolerance) {
  using M = mo::Model<Net, mo::Input<In>, Policy>;
  M model{7};
  const Problem p = random_problem(13, In, M::spec::outputs, 11);
  const std::vector<float> w = model.get_weights();
  const ReferenceMlp ref = ReferenceMlp::of<typename M::spec>(w);

  // Forward: predicted probabilities (softmax of the logits for from_logits models).
  std::vector<float> pred = model.predict(p.x);
  if constexpr (!M::spec::ends_in_softmax) {
    const std::size_t k = M::spec::outputs;
    for (std::size_t r = 0; r < p.rows; ++r) {
      float m = pred[r * k], sum = 0;
      for (std::size_t u = 0; u < k; ++u) m = std::max(m, pred[r * k + u]);
      for (std::size_t u = 0; u < k; ++u) sum += (pred[r * k + u] = std::exp(pred[r * k + u] - m));
      for (std::size_t u = 0; u < k; ++u) pred[r * k + u] /= sum;
    }
  }
  const double forward_error = relative_error(pred, ref.probabilities(p.x, p.rows));
  CHECK(forward_error < tolerance);

  // Backward: every parameter gradient.
  const std::vector<float> got = gradients_of(model, p);
  const double backward_error = relative_error(got, ref.gradients(p.x, p.y));
  CHECK(backward_error < tolerance);
  MESSAGE(Policy::name << ": forward error " << forward_error << ", gradient error "
                       << backward_error);
}

using ReluSoftmax = mo::Sequential<mo::Dense<17, mo::ReLU>, mo::Dense<5, mo::Softmax>>;
using Mixed = mo::Sequential<mo::Dense<19, mo::GELU>, mo::Dense<11, mo::Tanh>,
                             mo::Dense<9, mo::Sigmoid>, mo::Dense<7>, mo::Dense<4, mo::Softmax>>;
using Logits = mo::Sequential<mo::Dense<8, mo::ReLU>, mo::Dense<3>>;

}  // namespace

TEST_CASE("float32 forward and gradients match float64 within 1e-5") {
  check_against_reference<ReluSoftmax, 13, mo::float32>(1e-5);
  check_against_reference<Mixed, 6, mo::float32>(1e-5);
  check_against_reference<Logits, 5, mo::float32>(1e-5);
}

TEST_CASE("16-bit policies match float64 within 1e-2") {
  check_against_reference<ReluSoftmax, 13, mo::mixed_float16>(1e-2);
  check_against_reference<Mixed, 6, mo::mixed_float16>(1e-2);
  check_against_reference<ReluSoftmax, 13, mo::mixed_bfloat16>(1e-2);
  check_against_reference<Mixed, 6, mo::mixed_bfloat16>(1e-2);
}

TEST_CASE("the float64 reference's gradients equal central finite differences") {
  using M = mo::Model<Mixed, mo::Input<6>, mo::float32>;
  M model{3};
  const Problem p = random_problem(5, 6, 4, 5);
  ReferenceMlp ref = ReferenceMlp::of<M::spec>(model.get_weights());
  const std::vector<double> analytic = ref.gradients(p.x, p.y);
  std::vector<double> numeric(analytic.size());
  const double h = 1e-6;
  for (std::size_t j = 0; j < ref.params.size(); ++j) {
    const double keep = ref.params[j];
    ref.params[j] = keep + h;
    const double up = ref.loss(p.x, p.y);
    ref.params[j] = keep - h;
    const double down = ref.loss(p.x, p.y);
    ref.params[j] = keep;
    numeric[j] = (up - down) / (2 * h);
  }
  CHECK(relative_error(analytic, numeric) < 1e-6);
}

TEST_CASE("the CPU backend's gradients equal finite differences of its own float64 loss") {
  // Directly against finite differences, not only against the reference's backprop.
  using M = mo::Model<ReluSoftmax, mo::Input<13>, mo::float32>;
  M model{9};
  const Problem p = random_problem(8, 13, 5, 21);
  ReferenceMlp ref = ReferenceMlp::of<M::spec>(model.get_weights());
  const std::vector<float> got = gradients_of(model, p);
  std::vector<double> numeric(got.size());
  for (std::size_t j = 0; j < ref.params.size(); ++j) {
    const double keep = ref.params[j];
    ref.params[j] = keep + 1e-6;
    const double up = ref.loss(p.x, p.y);
    ref.params[j] = keep - 1e-6;
    const double down = ref.loss(p.x, p.y);
    ref.params[j] = keep;
    numeric[j] = (up - down) / 2e-6;
  }
  CHECK(relative_error(got, numeric) < 1e-5);
}

TEST_CASE("16-bit policies store activations in 16 bits, halving them") {
  using F = mo::Model<ReluSoftmax, mo::Input<13>, mo::float32>;
  using H = mo::Model<ReluSoftmax, mo::Input<13>, mo::mixed_float16>;
  constexpr auto f = mo::plan::training_plan<F::spec>(64);
  constexpr auto h = mo::plan::training_plan<H::spec>(64);
  static_assert(h.find(mo::plan::BufferRole::activation, 0).bytes * 2 ==
                f.find(mo::plan::BufferRole::activation, 0).bytes);
  static_assert(h.find(mo::plan::BufferRole::input).bytes * 2 ==
                f.find(mo::plan::BufferRole::input).bytes);
  // The loss runs in float32 under every policy.
  static_assert(h.find(mo::plan::BufferRole::logits, 1).bytes ==
                f.find(mo::plan::BufferRole::logits, 1).bytes);
}
