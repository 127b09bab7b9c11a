// Each optimizer against Keras's update rule: by hand for a step or two, and for three steps
// against values from a float64 transliteration of the rule in keras/src/optimizers/<name>.py
// (weights {0.5, -1.25, 2}, gradients below). Then clipping and weight decay, the steps
// Keras's base optimizer takes first (keras/src/optimizers/base_optimizer.py).
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <span>
#include <vector>

#include <string>
#include <string_view>

#include <memopt/core/error.hpp>
#include <memopt/train/any_optimizer.hpp>
#include <memopt/train/optimizers.hpp>

namespace mo = memopt;

namespace {
template <class O>
std::vector<float> steps(const O& opt, std::vector<float> w,
                         const std::vector<std::vector<float>>& gs) {
  std::vector<float> state(opt.slots() * w.size(), 0.0f);
  if constexpr (requires { opt.initialize_state(std::span<float>(state)); })
    opt.initialize_state(state);
  std::int64_t t = 0;
  for (auto g : gs) opt.update(w, g, state, t++);  // g by value: update may clip it
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
  CHECK(adam.learning_rate(0) == 1e-3);
  CHECK(!adam.options.learning_rate.is_schedule());
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
    std::vector<float> gc = g;
    adam.update(w, gc, state, t);
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

// Three steps of each rule from the same start, as keras/src/optimizers/<name>.py computes
// them (in float64; memopt's float32 update stays within a few ulps of it).
namespace {
const std::vector<float> w0{0.5f, -1.25f, 2.0f};
const std::vector<std::vector<float>> three_gradients{
    {0.1f, -0.2f, 0.3f}, {0.4f, 0.05f, -0.6f}, {-0.3f, 0.25f, 0.15f}};

void check_close(const std::vector<float>& got, const std::vector<double>& want) {
  REQUIRE(got.size() == want.size());
  for (std::size_t j = 0; j < want.size(); ++j) {
    CAPTURE(j);
    CHECK(got[j] == doctest::Approx(want[j]).epsilon(2e-6));
  }
}
}  // namespace

TEST_CASE("AdamW: Keras's defaults, decoupled decay w -= w wd lr before Adam's rule") {
  // keras/src/optimizers/adamw.py (weight_decay=0.004) and base_optimizer.py's
  // _apply_weight_decay, which runs before update_step with the same learning rate.
  const mo::AdamW defaults{};
  CHECK(defaults.options.weight_decay == 0.004);
  CHECK(defaults.learning_rate(0) == 1e-3);
  CHECK(defaults.options.beta_1 == 0.9);
  CHECK(defaults.options.beta_2 == 0.999);
  CHECK(defaults.options.epsilon == 1e-7);
  CHECK(defaults.slot_names() == std::vector<std::string>{"momentum", "velocity"});
  check_close(steps(mo::AdamW{{.learning_rate = 0.01}}, w0, three_gradients),
              {0.4793307031327651, -1.2377795374533194, 1.9947886868918645});
  // Adam with weight_decay is the same rule (Keras's base optimizer decays for every
  // optimizer that is given weight_decay).
  check_close(steps(mo::Adam{{.learning_rate = 0.01, .weight_decay = 0.1}}, w0, three_gradients),
              {0.47791987959116738, -1.2342069767412629, 1.9890503505284243});
}

TEST_CASE("RMSprop: Keras's defaults and rule") {
  // keras/src/optimizers/rmsprop.py: v = rho v + (1 - rho) g^2; w -= lr g / sqrt(v + eps).
  const mo::RMSprop defaults{};
  CHECK(defaults.learning_rate(0) == 1e-3);
  CHECK(defaults.options.rho == 0.9);
  CHECK(defaults.options.momentum == 0.0);
  CHECK(defaults.options.epsilon == 1e-7);
  CHECK(!defaults.options.centered);
  CHECK(defaults.slot_names() == std::vector<std::string>{"velocity"});
  // One step by hand: v = 0.1 * 0.01 = 0.001; w = 0.5 - 0.01 * 0.1 / sqrt(0.001 + 1e-7).
  CHECK(steps(mo::RMSprop{{.learning_rate = 0.01}}, {0.5f}, {{0.1f}})[0] ==
        doctest::Approx(0.5 - 0.001 / std::sqrt(0.001 + 1e-7)).epsilon(1e-6));
  check_close(steps(mo::RMSprop{{.learning_rate = 0.01}}, w0, three_gradients),
              {0.45689037204447891, -1.2517996634510045, 1.9896243197972379});
}

TEST_CASE("RMSprop with momentum and centered keeps three slots in Keras's order") {
  const mo::RMSprop opt{{.learning_rate = 0.01, .momentum = 0.9, .centered = true}};
  CHECK(opt.slots() == 3);
  CHECK(opt.slot_names() == std::vector<std::string>{"velocity", "momentum", "average_gradient"});
  std::vector<float> w = w0, state(3 * w.size(), 0.0f);
  for (std::int64_t t = 0; t < 3; ++t) {
    std::vector<float> g = three_gradients[std::size_t(t)];
    opt.update(w, g, state, t);
  }
  check_close(w, {0.36591552480671979, -1.2009238989791891, 1.9572923938640321});
  check_close({state.begin(), state.begin() + 3},
              {0.024209999999999999, 0.0097149999999999979, 0.041939999999999991});
  check_close({state.begin() + 3, state.begin() + 6},
              {0.037535437186388458, 0.0060153283665763634, 0.0083054992204831084});
  check_close({state.begin() + 6, state.end()},
              {0.014100000000000001, 0.013299999999999994, -0.014699999999999994});
}

TEST_CASE("Adagrad: the accumulator starts at initial_accumulator_value") {
  // keras/src/optimizers/adagrad.py: a += g^2; w -= lr g / sqrt(a + eps); a starts at 0.1.
  const mo::Adagrad defaults{};
  CHECK(defaults.learning_rate(0) == 1e-3);
  CHECK(defaults.options.initial_accumulator_value == 0.1);
  CHECK(defaults.options.epsilon == 1e-7);
  CHECK(defaults.slot_names() == std::vector<std::string>{"accumulator"});
  // One step by hand: a = 0.1 + 0.25; w = 1 - 0.1 * 0.5 / sqrt(0.35 + 1e-7).
  CHECK(steps(mo::Adagrad{{.learning_rate = 0.1}}, {1.0f}, {{0.5f}})[0] ==
        doctest::Approx(1.0 - 0.05 / std::sqrt(0.35 + 1e-7)).epsilon(1e-6));
  check_close(steps(mo::Adagrad{{.learning_rate = 0.1}}, w0, three_gradients),
              {0.44286885066644055, -1.2650088392009333, 1.9922547178090244});
  CHECK_THROWS_AS(mo::Adagrad({.initial_accumulator_value = -1.0}), mo::error);
}

TEST_CASE("Nadam: Keras's rule, with the running product of u_t") {
  // keras/src/optimizers/nadam.py: u_t = b1 (1 - 0.5 * 0.96^t), its running product kept by
  // _backend_update_step; m_hat = u_{t+1} m / (1 - prod_{t+1}) + (1 - u_t) g / (1 - prod_t).
  const mo::Nadam defaults{};
  CHECK(defaults.learning_rate(0) == 1e-3);
  CHECK(defaults.options.beta_1 == 0.9);
  CHECK(defaults.options.beta_2 == 0.999);
  CHECK(defaults.options.epsilon == 1e-7);
  check_close(steps(mo::Nadam{{.learning_rate = 0.01}}, w0, three_gradients),
              {0.48475017486077421, -1.2490548530960588, 1.9962675048397533});
}

TEST_CASE("Nadam's product of u_t, a function of the step, equals Keras's running product") {
  double running = 1.0;
  for (std::int64_t t = 1; t <= 2000; ++t) {
    running *= 0.9 * (1.0 - 0.5 * std::pow(0.96, double(t)));
    if (t % 97 == 0 || t < 5) {
      CAPTURE(t);
      CHECK(mo::Nadam::u_product(0.9, t) == doctest::Approx(running).epsilon(1e-12));
    }
  }
}

TEST_CASE("clipnorm holds each tensor's gradient norm at clipnorm, separately") {
  // base_optimizer.py _clip_by_norm: g * clipnorm / max(||g||, clipnorm), per variable.
  mo::SGD sgd{{.learning_rate = 1.0, .clipnorm = 1.0}};
  const std::vector<mo::ParameterRange> ranges{{"dense/kernel", "kernel", 0, 2},
                                               {"dense/bias", "bias", 2, 1}};
  sgd.build(ranges);
  std::vector<float> w{0, 0, 0}, g{3, 4, 0.5f}, state;
  sgd.update(w, g, state, 0);
  CHECK(w[0] == doctest::Approx(-0.6));  // the kernel's norm 5 becomes 1
  CHECK(w[1] == doctest::Approx(-0.8));
  CHECK(w[2] == doctest::Approx(-0.5));  // the bias's norm 0.5 stays
}

TEST_CASE("global_clipnorm scales all gradients by one factor; clipvalue clamps each") {
  // base_optimizer.py clip_by_global_norm and _clip_gradients' ops.clip.
  std::vector<float> state;
  {
    const mo::SGD sgd{{.learning_rate = 1.0, .global_clipnorm = 1.0}};
    std::vector<float> w{0, 0, 0}, g{3, 0, 4};
    sgd.update(w, g, state, 0);
    CHECK(w == std::vector<float>{-0.6f, -0.0f, -0.8f});
    std::vector<float> small{0.1f, 0.2f, 0.0f}, w2{0, 0, 0};
    sgd.update(w2, small, state, 1);  // norm under the limit: unchanged
    CHECK(w2 == std::vector<float>{-0.1f, -0.2f, 0.0f});
  }
  {
    const mo::SGD sgd{{.learning_rate = 1.0, .clipvalue = 0.5}};
    std::vector<float> w{0, 0, 0}, g{3, -4, 0.25f};
    sgd.update(w, g, state, 0);
    CHECK(w == std::vector<float>{-0.5f, 0.5f, -0.25f});
  }
  CHECK_THROWS_WITH_AS(mo::Adam({.clipnorm = 1.0, .clipvalue = 1.0}),
                       doctest::Contains("only one of clipnorm, clipvalue and global_clipnorm"),
                       mo::error);
}

TEST_CASE("exclude_from_weight_decay spares the tensors whose names contain a given name") {
  // base_optimizer.py _use_weight_decay: re.search of the names in variable.name.
  mo::AdamW adamw{
      {.learning_rate = 0.1, .weight_decay = 0.5, .exclude_from_weight_decay = {"bias", "gamma"}}};
  adamw.build(std::vector<mo::ParameterRange>{{"dense/kernel", "kernel", 0, 2},
                                              {"dense/bias", "bias", 2, 1},
                                              {"batch_normalization/gamma", "gamma", 3, 1}});
  CHECK(adamw.decays(0));
  CHECK(!adamw.decays(1));
  CHECK(!adamw.decays(2));
  // Zero gradients: Adam's step is zero, so only the decay w -= w * 0.5 * 0.1 moves w.
  std::vector<float> w{1, 2, 3, 4}, g(4, 0.0f), state(8, 0.0f);
  adamw.update(w, g, state, 0);
  CHECK(w[0] == doctest::Approx(0.95));
  CHECK(w[1] == doctest::Approx(1.9));
  CHECK(w[2] == 3.0f);
  CHECK(w[3] == 4.0f);
}

namespace {
// A user's optimizer: w -= 1e-3 sign(g). A new type, no edit anywhere else.
struct SignSGD {
  static constexpr std::string_view name = "sign_sgd";
  std::size_t slots() const { return 0; }
  std::vector<std::string> slot_names() const { return {}; }
  double learning_rate(std::int64_t) const { return 1e-3; }
  void update(std::span<float> w, std::span<float> g, std::span<float>, std::int64_t) const {
    for (std::size_t j = 0; j < w.size(); ++j) w[j] -= 1e-3f * float((g[j] > 0) - (g[j] < 0));
  }
};
}  // namespace

TEST_CASE("every optimizer is an mo::Optimizer, and so is a new type") {
  static_assert(mo::Optimizer<mo::SGD> && mo::Optimizer<mo::Adam> && mo::Optimizer<mo::AdamW> &&
                mo::Optimizer<mo::RMSprop> && mo::Optimizer<mo::Adagrad> &&
                mo::Optimizer<mo::Nadam> && mo::Optimizer<SignSGD>);
  static_assert(!mo::Optimizer<int>);
  mo::AnyOptimizer any{SignSGD{}};
  CHECK(any.name() == "sign_sgd");
  CHECK(any.target<SignSGD>() != nullptr);
  CHECK(any.target<mo::SGD>() == nullptr);
  CHECK_THROWS_WITH_AS(any.set_learning_rate(0.1), doctest::Contains("no settable learning rate"),
                       mo::error);
  std::vector<float> w{1, 1}, g{2, -3}, state;
  any.update(w, g, state, 0);
  CHECK(w == std::vector<float>{1 - 1e-3f, 1 + 1e-3f});
}

TEST_CASE("a schedule as learning_rate is evaluated at the iteration; a constant is settable") {
  mo::SGD sgd{{.learning_rate = mo::ExponentialDecay{
                   {.initial_learning_rate = 0.1, .decay_steps = 1, .decay_rate = 0.5}}}};
  CHECK(sgd.learning_rate(0) == doctest::Approx(0.1));
  CHECK(sgd.learning_rate(2) == doctest::Approx(0.025));
  std::vector<float> w{1}, g{1}, state;
  sgd.update(w, g, state, 2);
  CHECK(w[0] == doctest::Approx(0.975));
  CHECK_THROWS_WITH_AS(sgd.set_learning_rate(0.5), doctest::Contains("not settable"), mo::error);
  mo::Adam adam{};
  adam.set_learning_rate(0.5);
  CHECK(adam.learning_rate(7) == 0.5);
}

TEST_CASE("each optimizer's per-element apply() is the rule its buffer update runs") {
  // A backend kernel runs apply() per parameter; the CPU runs update() over the buffer.
  const std::size_t n = 37;
  std::vector<float> w(n), g(n);
  for (std::size_t j = 0; j < n; ++j) {
    w[j] = 0.1f * float(j % 7) - 0.3f;
    g[j] = 0.05f * float(j % 5) - 0.11f;
  }
  const auto compare = [&](const auto& opt, auto per_element) {
    std::vector<float> wu = w, wa = w, su(opt.slots() * n, 0.2f), sa = su;
    for (std::int64_t t = 0; t < 3; ++t) {
      std::vector<float> gu = g;
      opt.update(wu, gu, su, t);
      const auto c = opt.coefficients(t);
      for (std::size_t j = 0; j < n; ++j) per_element(c, wa[j], g[j], sa.data(), j);
    }
    for (std::size_t j = 0; j < n; ++j) CHECK(wa[j] == doctest::Approx(wu[j]).epsilon(1e-6));
    for (std::size_t j = 0; j < su.size(); ++j)
      CHECK(sa[j] == doctest::Approx(su[j]).epsilon(1e-6));
  };
  compare(mo::RMSprop{{.momentum = 0.9, .centered = true}},
          [&](const auto& c, float& wj, float gj, float* s, std::size_t j) {
            mo::RMSprop::apply(c, wj, gj, s + j, s + n + j, s + 2 * n + j);
          });
  compare(mo::RMSprop{}, [&](const auto& c, float& wj, float gj, float* s, std::size_t j) {
    mo::RMSprop::apply(c, wj, gj, s + j, nullptr, nullptr);
  });
  compare(mo::Adagrad{}, [&](const auto& c, float& wj, float gj, float* s, std::size_t j) {
    mo::Adagrad::apply(c, wj, gj, s + j);
  });
  compare(mo::Nadam{}, [&](const auto& c, float& wj, float gj, float* s, std::size_t j) {
    mo::Nadam::apply(c, wj, gj, s + j, s + n + j);
  });
  compare(mo::Adam{}, [&](const auto& c, float& wj, float gj, float* s, std::size_t j) {
    mo::Adam::apply(c, wj, gj, s + j, s + n + j);
  });
}
