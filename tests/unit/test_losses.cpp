// Losses: each one's value by hand, its gradient against finite differences, and each one
// trained through the CPU backend's loss head against a float64 reference of the whole model,
// for every kind of last activation. Random, non-zero data throughout.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <memopt/memopt.hpp>

#include "reference_mlp.hpp"

namespace mo = memopt;
using mo::testing::ReferenceMlp;
using mo::testing::relative_error;

namespace {

// Batches of float rows with float targets, as a data source would hand them out.
struct FloatRows {
  std::vector<float> x, y;
  std::size_t in = 0, out = 0;
  std::span<const float> features() const { return x; }
  std::span<const float> targets() const { return y; }
  std::size_t size() const { return x.size() / in; }
  std::size_t width() const { return in; }
  std::size_t target_width() const { return out; }
};
static_assert(mo::data::FloatTargetBatch<FloatRows> && mo::data::TrainingBatch<FloatRows>);

// A loss of a user's own: the mean over the outputs of (y_pred - y)^4.
struct MeanFourthPower {
  static constexpr std::string_view name = "mean_fourth_power";
  using target_type = float;
  static constexpr mo::AccuracyKind accuracy = mo::AccuracyKind::none;
  double value_and_grad(const mo::LossRow<float>& r) const {
    const float per = 1.0f / static_cast<float>(r.y_pred.size());
    double sum = 0;
    for (std::size_t u = 0; u < r.y_pred.size(); ++u) {
      const float e = r.y_pred[u] - r.y_true[u];
      sum += static_cast<double>(e * e * e * e);
      if (!r.grad.empty()) r.grad[u] = r.grad_scale * per * 4.0f * e * e * e;
    }
    return sum * static_cast<double>(per);
  }
};

static_assert(mo::Loss<mo::SparseCategoricalCrossentropy> && mo::Loss<mo::CategoricalCrossentropy>);
static_assert(mo::Loss<mo::BinaryCrossentropy> && mo::Loss<mo::MeanSquaredError>);
static_assert(mo::Loss<mo::MeanAbsoluteError> && mo::Loss<mo::Huber> && mo::Loss<MeanFourthPower>);
static_assert(!mo::Loss<int> && !mo::Loss<mo::metrics::Accuracy>);

// Value and gradient of one row through whichever form the loss has (logits first).
template <class L>
double row_value(const L& loss, std::span<const float> y_pred,
                 std::span<const typename L::target_type> y, std::span<float> grad = {}) {
  const mo::LossRow<typename L::target_type> row{y_pred, y, grad, 1.0f, 0};
  if constexpr (mo::detail::LossOnLogits<L>)
    return loss.logits_value_and_grad(row);
  else
    return loss.value_and_grad(row);
}

}  // namespace

TEST_CASE("each loss equals its value worked by hand") {
  const float ln3 = std::log(3.0f);  // softmax(0, ln 3) = (1/4, 3/4); sigmoid(ln 3) = 3/4
  const std::vector<float> logits{0.0f, ln3};
  const std::vector<float> pred{1.0f, 2.0f}, truth{0.0f, 4.0f};  // errors 1 and -2
  const std::int32_t label = 1;

  CHECK(row_value(mo::SparseCategoricalCrossentropy{}, logits, std::span(&label, 1)) ==
        doctest::Approx(-std::log(0.75)).epsilon(1e-6));
  const std::vector<float> onehot{0.0f, 1.0f};
  CHECK(row_value(mo::CategoricalCrossentropy{}, logits, std::span<const float>(onehot)) ==
        doctest::Approx(-std::log(0.75)).epsilon(1e-6));
  // label_smoothing 0.2 over 2 classes: targets (0.1, 0.9).
  CHECK(row_value(mo::CategoricalCrossentropy{{.label_smoothing = 0.2f}}, logits,
                  std::span<const float>(onehot)) ==
        doctest::Approx(-0.1 * std::log(0.25) - 0.9 * std::log(0.75)).epsilon(1e-6));
  // Targets (1, 0) against probabilities (1/2, 3/4): -(ln 1/2 + ln 1/4) / 2.
  const std::vector<float> bits{1.0f, 0.0f};
  CHECK(row_value(mo::BinaryCrossentropy{}, logits, std::span<const float>(bits)) ==
        doctest::Approx(-(std::log(0.5) + std::log(0.25)) / 2).epsilon(1e-6));
  CHECK(row_value(mo::BinaryCrossentropy{{.label_smoothing = 0.5f}}, logits,
                  std::span<const float>(bits)) ==
        doctest::Approx(-(0.75 * std::log(0.5) + 0.25 * std::log(0.5) + 0.25 * std::log(0.75) +
                          0.75 * std::log(0.25)) /
                        2)
            .epsilon(1e-6));
  CHECK(row_value(mo::MeanSquaredError{}, pred, std::span<const float>(truth)) ==
        doctest::Approx(2.5));
  CHECK(row_value(mo::MeanAbsoluteError{}, pred, std::span<const float>(truth)) ==
        doctest::Approx(1.5));
  // Huber, delta 1: 1/2 * 1^2 and 1 * (2 - 1/2), averaged.
  CHECK(row_value(mo::Huber{}, pred, std::span<const float>(truth)) == doctest::Approx(1.0));
  CHECK(row_value(mo::Huber{{.delta = 3.0f}}, pred, std::span<const float>(truth)) ==
        doctest::Approx((0.5 + 2.0) / 2));
}

TEST_CASE("each loss's gradient equals central differences of its value") {
  mo::Rng rng(5);
  constexpr std::size_t k = 6;
  std::vector<float> z(k), y(k), soft(k);
  for (float& v : z) v = rng.uniform(-2.0f, 2.0f);
  for (float& v : y) v = rng.uniform(-1.5f, 1.5f);
  float mass = 0;
  for (float& v : soft) mass += (v = rng.uniform(0.1f, 1.0f));
  for (float& v : soft) v /= mass;
  std::vector<float> bits(k);
  for (float& v : bits) v = rng.below(2) ? 1.0f : 0.0f;
  const std::int32_t label = 4;

  const auto check = [&](const auto& loss, const auto& targets, const char* what) {
    CAPTURE(what);
    std::vector<float> grad(k), fd(k);
    const std::span t(targets);
    row_value(loss, std::span<const float>(z), t, std::span<float>(grad));
    for (std::size_t u = 0; u < k; ++u) {
      const float h = 1e-2f;
      std::vector<float> up = z, down = z;
      up[u] += h;
      down[u] -= h;
      fd[u] = static_cast<float>((row_value(loss, std::span<const float>(up), t) -
                                  row_value(loss, std::span<const float>(down), t)) /
                                 (2.0 * h));
    }
    CHECK(relative_error(grad, fd) < 2e-3);
  };
  check(mo::SparseCategoricalCrossentropy{}, std::vector<std::int32_t>{label}, "sparse cce");
  check(mo::CategoricalCrossentropy{{.label_smoothing = 0.1f}}, soft, "cce");
  check(mo::BinaryCrossentropy{{.label_smoothing = 0.1f}}, bits, "bce");
  check(mo::MeanSquaredError{}, y, "mse");
  check(mo::MeanAbsoluteError{}, y, "mae");
  check(mo::Huber{{.delta = 0.5f}}, y, "huber");
  check(MeanFourthPower{}, y, "user-defined");
}

TEST_CASE("the gradient is scaled by grad_scale and may overwrite the outputs in place") {
  mo::Rng rng(9);
  std::vector<float> z(5), y(5);
  for (float& v : z) v = rng.uniform(-2.0f, 2.0f);
  for (float& v : y) v = rng.below(2) ? 1.0f : 0.0f;
  std::vector<float> apart(5);
  const mo::BinaryCrossentropy bce;
  const double value = bce.logits_value_and_grad({z, y, apart, 3.0f, 0});
  std::vector<float> in_place = z;
  CHECK(bce.logits_value_and_grad({in_place, y, in_place, 3.0f, 0}) == value);
  CHECK(in_place == apart);
  for (std::size_t u = 0; u < z.size(); ++u) {
    const float p = 1.0f / (1.0f + std::exp(-z[u]));
    CHECK(apart[u] == doctest::Approx(3.0f * (p - y[u]) / 5.0f).epsilon(1e-5));
  }
}

namespace {

// The float64 loss of a whole batch from the model's last pre-activations, as Keras defines
// each loss, written apart from memopt's.
using Reference = std::function<double(std::span<const double> z, std::span<const float> y)>;

double sigmoid(double z) {
  return 1 / (1 + std::exp(-z));
}
std::vector<double> softmax(std::span<const double> z) {
  double m = z[0], sum = 0;
  for (double v : z) m = std::max(m, v);
  std::vector<double> p(z.size());
  for (std::size_t u = 0; u < z.size(); ++u) sum += (p[u] = std::exp(z[u] - m));
  for (double& v : p) v /= sum;
  return p;
}
// The mean over outputs of f(a_u - y_u), with a the last activation of z.
Reference elementwise(mo::ActivationKind last, std::function<double(double)> f) {
  return [=](std::span<const double> z, std::span<const float> y) {
    std::vector<double> a(z.begin(), z.end());
    if (last == mo::ActivationKind::softmax)
      a = softmax(z);
    else
      for (double& v : a) v = ReferenceMlp::act(last, v);
    double s = 0;
    for (std::size_t u = 0; u < z.size(); ++u) s += f(a[u] - y[u]);
    return s / static_cast<double>(z.size());
  };
}

template <class Net, class Policy = mo::float32>
struct Case {
  using M = mo::Model<Net, mo::Input<5>, Policy>;
  static constexpr std::size_t rows = 9, in = 5, out = M::spec::outputs;

  // Targets: 0/1 bits, a distribution, or values, by what the loss reads.
  static FloatRows batch(std::uint64_t seed, int kind) {
    mo::Rng rng(seed);
    FloatRows b{std::vector<float>(rows * in), std::vector<float>(rows * out), in, out};
    for (float& v : b.x) v = rng.uniform(-1.5f, 1.5f);
    for (std::size_t r = 0; r < rows; ++r) {
      float mass = 0;
      for (std::size_t u = 0; u < out; ++u) {
        float& v = b.y[r * out + u];
        v = kind == 0 ? (rng.below(2) ? 1.0f : 0.0f) : rng.uniform(kind == 1 ? 0.1f : -1.0f, 1.0f);
        mass += v;
      }
      if (kind == 1)
        for (std::size_t u = 0; u < out; ++u) b.y[r * out + u] /= mass;
    }
    return b;
  }

  // memopt's gradients (one step at learning rate 0) against central differences of the
  // float64 reference's mean loss; memopt's loss against the reference's.
  template <class L>
  static void check(const L& loss, int target_kind, const Reference& reference, double tolerance) {
    M model{3};
    model.compile(mo::SGD{{.learning_rate = 0.0}}, loss);
    const FloatRows b = batch(17, target_kind);
    const std::vector<FloatRows> data{b};
    model.fit(data, {.epochs = 1, .verbose = 0});
    std::vector<float> got(M::parameter_count);
    model.executor().get_gradients(got);

    ReferenceMlp ref = ReferenceMlp::template of<typename M::spec>(model.get_weights());
    const auto mean_loss = [&] {
      std::vector<std::vector<double>> z, a;
      ref.forward(b.x, rows, z, a);
      double total = 0;
      for (std::size_t r = 0; r < rows; ++r)
        total += reference(std::span<const double>(z.back()).subspan(r * out, out),
                           std::span<const float>(b.y).subspan(r * out, out));
      return total / rows;
    };
    std::vector<double> want(M::parameter_count);
    for (std::size_t i = 0; i < want.size(); ++i) {
      const double keep = ref.params[i], h = 1e-6;
      ref.params[i] = keep + h;
      const double up = mean_loss();
      ref.params[i] = keep - h;
      const double down = mean_loss();
      ref.params[i] = keep;
      want[i] = (up - down) / (2 * h);
    }
    CHECK(relative_error(got, want) < tolerance);
    CHECK(model.evaluate(data).loss == doctest::Approx(mean_loss()).epsilon(tolerance));
  }
};

template <class Last, std::size_t Out = 3>
using Net = mo::Sequential<mo::Dense<7, mo::Tanh>, mo::Dense<Out, Last>>;

}  // namespace

TEST_CASE("every loss trains through every kind of last layer as float64 says") {
  using mo::ActivationKind;
  const auto bce = [](std::span<const double> z, std::span<const float> y) {
    double s = 0;
    for (std::size_t u = 0; u < z.size(); ++u) {
      const double p = sigmoid(z[u]);
      s -= y[u] * std::log(p) + (1 - y[u]) * std::log(1 - p);
    }
    return s / static_cast<double>(z.size());
  };
  const auto cce = [](double smoothing) {
    return [smoothing](std::span<const double> z, std::span<const float> y) {
      const std::vector<double> p = softmax(z);
      double s = 0;
      for (std::size_t u = 0; u < z.size(); ++u)
        s -= (y[u] * (1 - smoothing) + smoothing / static_cast<double>(z.size())) * std::log(p[u]);
      return s;
    };
  };
  const auto square = [](double e) { return e * e; };

  SUBCASE("BinaryCrossentropy after Sigmoid, and on a Linear layer's logits") {
    Case<Net<mo::Sigmoid>>::check(mo::BinaryCrossentropy{}, 0, bce, 1e-5);
    Case<Net<mo::Linear>>::check(mo::BinaryCrossentropy{{.from_logits = true}}, 0, bce, 1e-5);
  }
  SUBCASE("CategoricalCrossentropy after Softmax, smoothed, and on logits") {
    Case<Net<mo::Softmax>>::check(mo::CategoricalCrossentropy{}, 1, cce(0.0), 1e-5);
    Case<Net<mo::Softmax>>::check(mo::CategoricalCrossentropy{{.label_smoothing = 0.1f}}, 1,
                                  cce(0.1), 1e-5);
    Case<Net<mo::Linear>>::check(mo::CategoricalCrossentropy{{.from_logits = true}}, 1, cce(0.0),
                                 1e-5);
  }
  SUBCASE("MeanSquaredError after Linear, Tanh, Sigmoid and Softmax (its full Jacobian)") {
    Case<Net<mo::Linear>>::check(mo::MeanSquaredError{}, 2,
                                 elementwise(ActivationKind::linear, square), 1e-5);
    Case<Net<mo::Tanh>>::check(mo::MeanSquaredError{}, 2, elementwise(ActivationKind::tanh, square),
                               1e-5);
    Case<Net<mo::Sigmoid>>::check(mo::MeanSquaredError{}, 0,
                                  elementwise(ActivationKind::sigmoid, square), 1e-5);
    Case<Net<mo::Softmax>>::check(mo::MeanSquaredError{}, 1,
                                  elementwise(ActivationKind::softmax, square), 1e-5);
  }
  SUBCASE("MeanAbsoluteError after ReLU, Huber after GELU") {
    Case<Net<mo::ReLU>>::check(
        mo::MeanAbsoluteError{}, 2,
        elementwise(ActivationKind::relu, [](double e) { return std::abs(e); }), 1e-5);
    Case<Net<mo::GELU>>::check(mo::Huber{{.delta = 0.5f}}, 2,
                               elementwise(ActivationKind::gelu,
                                           [](double e) {
                                             const double a = std::abs(e);
                                             return a <= 0.5 ? 0.5 * e * e : 0.5 * (a - 0.25);
                                           }),
                               1e-5);
  }
  SUBCASE("a loss of the user's own, after Tanh") {
    Case<Net<mo::Tanh>>::check(
        MeanFourthPower{}, 2,
        elementwise(ActivationKind::tanh, [](double e) { return e * e * e * e; }), 1e-5);
  }
  SUBCASE("under mixed_float16 within 16-bit rounding") {
    Case<Net<mo::Sigmoid>, mo::mixed_float16>::check(mo::BinaryCrossentropy{}, 0, bce, 2e-2);
    Case<Net<mo::Tanh>, mo::mixed_bfloat16>::check(mo::MeanSquaredError{}, 2,
                                                   elementwise(ActivationKind::tanh, square), 5e-2);
  }
}

TEST_CASE("accuracy follows the loss, as Keras resolves 'accuracy'") {
  // Dense<2> with an identity kernel and no bias: the outputs are the inputs.
  const std::vector<float> identity{1, 0, 0, 1, 0, 0};
  const std::vector<FloatRows> data{
      {{2, 1, -1, 3, 0.5f, -0.5f, -2, -1}, {1, 0, 0, 1, 0, 1, 1, 1}, 2, 2}};

  SUBCASE("categorical: the largest output is the target's largest") {
    mo::Model<mo::Sequential<mo::Dense<2>>, mo::Input<2>> model;
    model.set_weights(identity);
    model.compile(mo::SGD{}, mo::CategoricalCrossentropy{{.from_logits = true}},
                  mo::metrics::Accuracy{});
    // Rows 1 and 2 right; row 3 (0.5 > -0.5, target 1) wrong; row 4 (-2 < -1) wrong, as the
    // target's tie of ones counts as its first.
    CHECK(model.evaluate(data).accuracy == doctest::Approx(0.5));
  }
  SUBCASE("binary: each output above probability 1/2 matches its 0/1 target") {
    mo::Model<mo::Sequential<mo::Dense<2, mo::Sigmoid>>, mo::Input<2>> model;
    model.set_weights(identity);
    model.compile(mo::SGD{}, mo::BinaryCrossentropy{}, mo::metrics::Accuracy{});
    // Outputs above 1/2 where the input is positive: 1, 2, 0 and 0 of each row's 2 right.
    CHECK(model.evaluate(data).accuracy == doctest::Approx((0.5 + 1.0 + 0.0 + 0.0) / 4));
  }
}

TEST_CASE("fit on float targets learns a linear regression with MeanSquaredError") {
  mo::Rng rng(21);
  FloatRows b{std::vector<float>(64 * 3), std::vector<float>(64), 3, 1};
  for (float& v : b.x) v = rng.uniform(-1.0f, 1.0f);
  for (std::size_t r = 0; r < 64; ++r)
    b.y[r] = 0.5f * b.x[r * 3] - 2.0f * b.x[r * 3 + 1] + b.x[r * 3 + 2] + 0.25f;
  mo::Model<mo::Sequential<mo::Dense<1>>, mo::Input<3>> model{1};
  model.compile(mo::Adam{{.learning_rate = 0.05}}, mo::MeanSquaredError{});
  const std::vector<FloatRows> data{b};
  const mo::History h = model.fit(data, {.epochs = 150, .verbose = 0});
  const std::vector<double>& loss = h.history.at("loss");
  CHECK(loss.front() > 0.5);
  CHECK(loss.back() < 1e-3 * loss.front());
}

TEST_CASE("compile and fit name a loss that does not fit the model or the data") {
  SUBCASE("from_logits after an activation") {
    mo::Model<Net<mo::Sigmoid>, mo::Input<5>> model;
    CHECK_THROWS_WITH_AS(model.compile(mo::Adam{}, mo::BinaryCrossentropy{{.from_logits = true}}),
                         doctest::Contains("applies Sigmoid, so the loss must not use "
                                           "from_logits=true"),
                         mo::error);
  }
  SUBCASE("a crossentropy on a Linear layer without from_logits") {
    mo::Model<Net<mo::Linear>, mo::Input<5>> model;
    CHECK_THROWS_WITH_AS(model.compile(mo::Adam{}, mo::CategoricalCrossentropy{}),
                         doctest::Contains("categorical_crossentropy needs probabilities: end the "
                                           "model with Dense<N, Softmax>"),
                         mo::error);
  }
  SUBCASE("class indices for a loss that reads float targets, and the reverse") {
    mo::Model<Net<mo::Softmax>, mo::Input<5>> model;
    model.compile(mo::Adam{}, mo::CategoricalCrossentropy{});
    const std::vector<float> x(10, 0.5f);
    const std::vector<std::int32_t> labels{0, 2};
    auto indexed = mo::data::from(x, labels, 5);
    CHECK_THROWS_WITH_AS(model.fit(indexed | mo::data::batch(2), {.verbose = 0}),
                         doctest::Contains("reads float targets, 3 per row; the batches hold "
                                           "class indices: add `| mo::data::one_hot(3)`"),
                         mo::error);
    model.compile(mo::Adam{}, mo::SparseCategoricalCrossentropy{});
    const std::vector<FloatRows> floats{{x, std::vector<float>(6, 0.5f), 5, 3}};
    CHECK_THROWS_WITH_AS(model.fit(floats, {.verbose = 0}),
                         doctest::Contains("sparse_categorical_crossentropy reads class indices"),
                         mo::error);
  }
  SUBCASE("targets as wide as the model's outputs") {
    mo::Model<Net<mo::Softmax>, mo::Input<5>> model;
    model.compile(mo::Adam{}, mo::CategoricalCrossentropy{});
    const std::vector<FloatRows> narrow{{std::vector<float>(10, 0.5f), {1, 0, 0, 1}, 5, 2}};
    CHECK_THROWS_WITH_AS(model.fit(narrow, {.verbose = 0}),
                         doctest::Contains("the model has 3 outputs, so each row needs 3 "
                                           "targets; the batch has 2 per row"),
                         mo::error);
    CHECK_THROWS_WITH_AS(model.evaluate(narrow), doctest::Contains("evaluate: the model has 3"),
                         mo::error);
  }
}

TEST_CASE("ignore_class leaves samples out: the mean and the gradient are over the others") {
  using M = mo::Model<Net<mo::Softmax>, mo::Input<5>>;
  mo::Rng rng(13);
  std::vector<float> x(4 * 5);
  for (float& v : x) v = rng.uniform(-1.0f, 1.0f);
  const std::vector<std::int32_t> labels{2, -1, 0, -1};
  const std::vector<float> kept_x(x.begin(), x.begin() + 5);
  std::vector<float> kept = kept_x;
  kept.insert(kept.end(), x.begin() + 10, x.begin() + 15);
  const std::vector<std::int32_t> kept_labels{2, 0};

  const auto run = [](const std::vector<float>& features, const std::vector<std::int32_t>& y,
                      mo::SparseCategoricalCrossentropy loss) {
    M model{11};
    model.compile(mo::SGD{{.learning_rate = 0.0}}, loss);
    model.fit(mo::data::from(features, y, 5) | mo::data::batch(y.size()), {.verbose = 0});
    std::vector<float> g(M::parameter_count);
    model.executor().get_gradients(g);
    return std::pair{g, model.evaluate(mo::data::from(features, y, 5) | mo::data::batch(4)).loss};
  };
  const auto [g_masked, loss_masked] = run(x, labels, {{.ignore_class = -1}});
  const auto [g_kept, loss_kept] = run(kept, kept_labels, {});
  CHECK(loss_masked == doctest::Approx(loss_kept).epsilon(1e-6));
  CHECK(relative_error(g_masked, g_kept) < 1e-6);
  // Without ignore_class, -1 is a label outside [0, 3).
  CHECK_THROWS_WITH_AS(run(x, labels, {}), doctest::Contains("label -1 at row 1"), mo::error);
}
