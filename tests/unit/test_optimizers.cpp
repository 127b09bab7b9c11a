// SGD and Adam against values computed by hand from Keras's update rules.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <span>
#include <vector>

#include <memopt/train/optimizers.hpp>

namespace mo = memopt;

namespace {
template <class O>
std::vector<float> steps(const O& opt, std::vector<float> w,
                         const std::vector<std::vector<float>>& gs) {
  std::vector<float> state(opt.slots() * w.size(), 0.0f);
  std::int64_t t = 0;
  for (const auto& g : gs) opt.update(w, g, state, t++);
  return w;
}
}  // namespace

TEST_CASE("SGD without momentum: w -= lr g") {
  const auto w = steps(mo::SGD{{.learning_rate = 0.1}}, {1.0f, -2.0f}, {{0.5f, -1.0f}});
  CHECK(w[0] == doctest::Approx(0.95));
  CHECK(w[1] == doctest::Approx(-1.9));
  CHECK(mo::SGD{}.slots() == 0);
}

TEST_CASE("SGD with momentum keeps a velocity") {
  // v1 = -0.05, w1 = 0.95; v2 = 0.9 * -0.05 - 0.05 = -0.095, w2 = 0.855
  const auto w = steps(mo::SGD{{.learning_rate = 0.1, .momentum = 0.9}}, {1.0f}, {{0.5f}, {0.5f}});
  CHECK(w[0] == doctest::Approx(0.855));
}

TEST_CASE("SGD with Nesterov momentum looks ahead") {
  // v1 = -0.05; w1 = 1 + 0.9 * -0.05 - 0.05 = 0.905
  // v2 = 0.9 * -0.05 - 0.05 = -0.095; w2 = 0.905 + 0.9 * -0.095 - 0.05 = 0.7695
  const auto w = steps(mo::SGD{{.learning_rate = 0.1, .momentum = 0.9, .nesterov = true}}, {1.0f},
                       {{0.5f}, {0.5f}});
  CHECK(w[0] == doctest::Approx(0.7695));
}

TEST_CASE("Adam's defaults are Keras's") {
  const mo::Adam adam{};
  CHECK(adam.options.learning_rate == 1e-3);
  CHECK(adam.options.beta_1 == 0.9);
  CHECK(adam.options.beta_2 == 0.999);
  CHECK(adam.options.epsilon == 1e-7);
  CHECK(adam.slots() == 2);
}

TEST_CASE("Adam's first two steps, by hand") {
  const mo::Adam adam{{.learning_rate = 0.01}};
  const double g1 = 0.5, g2 = -0.25;
  // t = 1
  double m = 0.1 * g1, v = 0.001 * g1 * g1;
  double alpha = 0.01 * std::sqrt(1 - 0.999) / (1 - 0.9);
  double w = 2.0 - alpha * m / (std::sqrt(v) + 1e-7);
  // t = 2
  m += (g2 - m) * 0.1;
  v += (g2 * g2 - v) * 0.001;
  alpha = 0.01 * std::sqrt(1 - 0.999 * 0.999) / (1 - 0.9 * 0.9);
  w -= alpha * m / (std::sqrt(v) + 1e-7);

  const auto got = steps(adam, {2.0f}, {{static_cast<float>(g1)}, {static_cast<float>(g2)}});
  CHECK(got[0] == doctest::Approx(w).epsilon(1e-6));
}

TEST_CASE("Adam updates each parameter independently") {
  const auto got = steps(mo::Adam{}, {1.0f, 1.0f, 1.0f}, {{1.0f, -1.0f, 0.25f}});
  // The first Adam step moves every parameter by about lr against its gradient's sign.
  CHECK(got[0] == doctest::Approx(1.0 - 1e-3).epsilon(1e-6));
  CHECK(got[1] == doctest::Approx(1.0 + 1e-3).epsilon(1e-6));
  CHECK(got[2] == doctest::Approx(1.0 - 1e-3).epsilon(1e-6));
}

TEST_CASE("Adam: ten steps match a float64 reference of Keras's rule to 1e-6") {
  // Keras computes 1 - beta_2 in double and rounds it once; in float it is 0.00099998713,
  // which puts v 1.3e-5 and each step 6e-6 off: far outside this tolerance.
  const mo::Adam adam{};
  const std::size_t n = 64;
  std::vector<float> w(n, 0.0f), state(2 * n, 0.0f);
  std::vector<double> wr(n, 0.0), mr(n, 0.0), vr(n, 0.0);
  for (std::int64_t t = 0; t < 10; ++t) {
    std::vector<float> g(n);
    // Same sign per parameter across steps (so w grows away from 0), varied magnitudes.
    for (std::size_t j = 0; j < n; ++j)
      g[j] = static_cast<float>((j % 2 ? -1.0 : 1.0) * (0.05 + 0.01 * double(j) + 0.1 * double(t)));
    adam.update(w, g, state, t);
    const double step = static_cast<double>(t + 1);
    const double alpha =
        1e-3 * std::sqrt(1.0 - std::pow(0.999, step)) / (1.0 - std::pow(0.9, step));
    for (std::size_t j = 0; j < n; ++j) {
      const double gj = g[j];
      mr[j] += (gj - mr[j]) * (1.0 - 0.9);
      vr[j] += (gj * gj - vr[j]) * (1.0 - 0.999);
      wr[j] -= alpha * mr[j] / (std::sqrt(vr[j]) + 1e-7);
    }
  }
  const auto rel = [](std::span<const float> got, const std::vector<double>& want) {
    double num = 0, den = 0;
    for (std::size_t j = 0; j < want.size(); ++j) {
      num += (got[j] - want[j]) * (got[j] - want[j]);
      den += want[j] * want[j];
    }
    REQUIRE(den > 0);
    return std::sqrt(num / den);
  };
  const std::span<const float> s(state);
  CHECK(rel(w, wr) < 1e-6);
  CHECK(rel(s.first(n), mr) < 1e-6);
  CHECK(rel(s.subspan(n, n), vr) < 1e-6);
}
