#pragma once
// Nadam: Keras's keras.optimizers.Nadam (keras/src/optimizers/nadam.py).

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <Eigen/Core>

#include "memopt/core/host_device.hpp"
#include "memopt/train/learning_rate.hpp"
#include "memopt/train/optimizer.hpp"
#include "memopt/train/optimizers/base_steps.hpp"

namespace memopt {

/// Keras's `Nadam` (Adam with Nesterov momentum) with its defaults: lr 1e-3, beta_1 0.9,
/// beta_2 0.999, epsilon 1e-7. Slots "momentum" and "velocity".
///
/// Keras keeps the running product u_1 ... u_t (u_t = beta_1 (1 - 0.5 * 0.96^t)) in a variable;
/// here it is a function of the iteration count, computed in double, so that a checkpoint's
/// iteration count is all a resumed run needs.
///
/// ```cpp
/// model.compile(mo::Nadam{{.learning_rate = 2e-3}}, mo::SparseCategoricalCrossentropy{});
/// ```
class Nadam {
 public:
  struct Options {
    LearningRate learning_rate = 1e-3;
    double beta_1 = 0.9;
    double beta_2 = 0.999;
    double epsilon = 1e-7;
    // Keras's base-optimizer options (0: off).
    double weight_decay = 0.0;
    double clipnorm = 0.0;
    double clipvalue = 0.0;
    double global_clipnorm = 0.0;
    std::vector<std::string> exclude_from_weight_decay{};
    /// Keras 3's: apply the mean gradient of this many batches once every that many
    /// batches (1: every batch); train/gradient_accumulation.hpp.
    int gradient_accumulation_steps = 1;
  };
  Options options;

  static constexpr std::string_view name = "nadam";

  Nadam() : Nadam(Options{}) {}
  explicit Nadam(Options o) : options(std::move(o)) {
    detail::BaseSteps::validate(options, "Nadam");
  }

  std::size_t slots() const { return 2; }
  std::vector<std::string> slot_names() const { return {"momentum", "velocity"}; }
  double learning_rate(std::int64_t iteration) const { return options.learning_rate(iteration); }
  void set_learning_rate(double value) { options.learning_rate.set(value); }
  void build(std::span<const ParameterRange> ranges) {
    base_.build(ranges, options.exclude_from_weight_decay);
  }

  /// u_1 u_2 ... u_t. Past t of about 900, 1 - 0.5 * 0.96^t rounds to 1 in double, so the
  /// product is beta_1^t times at most that many factors.
  static double u_product(double beta_1, std::int64_t t) {
    double product = std::pow(beta_1, static_cast<double>(t)), power = 1.0;
    for (std::int64_t k = 1; k <= t; ++k) {
      power *= 0.96;
      const double factor = 1.0 - 0.5 * power;
      if (factor == 1.0) break;
      product *= factor;
    }
    return product;
  }

  /// m_hat = m_coefficient m + g_coefficient g; v_hat = v * v_coefficient, with
  /// m_coefficient = u_{t+1} / (1 - u_1..u_{t+1}), g_coefficient = (1 - u_t) / (1 - u_1..u_t),
  /// v_coefficient = 1 / (1 - beta_2^t), t = iteration + 1; computed in double, rounded once.
  struct Coefficients {
    float learning_rate, m_coefficient, g_coefficient, v_coefficient, one_minus_beta_1,
        one_minus_beta_2, epsilon;
  };
  Coefficients coefficients(std::int64_t iteration) const {
    const double b1 = options.beta_1, b2 = options.beta_2;
    const std::int64_t t = iteration + 1;
    const double u_t = b1 * (1.0 - 0.5 * std::pow(0.96, static_cast<double>(t)));
    const double u_next = b1 * (1.0 - 0.5 * std::pow(0.96, static_cast<double>(t + 1)));
    const double product = u_product(b1, t);
    const double product_next = product * u_next;
    return {static_cast<float>(learning_rate(iteration)),
            static_cast<float>(u_next / (1.0 - product_next)),
            static_cast<float>((1.0 - u_t) / (1.0 - product)),
            static_cast<float>(1.0 / (1.0 - std::pow(b2, static_cast<double>(t)))),
            static_cast<float>(1.0 - b1),
            static_cast<float>(1.0 - b2),
            static_cast<float>(options.epsilon)};
  }

  /// One parameter: m += (g - m)(1 - b1); v += (g^2 - v)(1 - b2);
  /// w -= lr m_hat / (sqrt(v_hat) + eps).
  static MEMOPT_HD void apply(const Coefficients& c, float& w, float g, float* m, float* v) {
    *m += (g - *m) * c.one_minus_beta_1;
    *v += (g * g - *v) * c.one_minus_beta_2;
    const float m_hat = c.m_coefficient * *m + c.g_coefficient * g;
    w -= c.learning_rate * m_hat / (std::sqrt(*v * c.v_coefficient) + c.epsilon);
  }

  void update(std::span<float> w, std::span<float> g, std::span<float> state,
              std::int64_t iteration) const {
    update(w, g, state, iteration, ParameterSlice{0, w.size()});
  }
  /// The same on the part `w`, `g` of the parameters that `slice` places (UpdateInBackward's
  /// per-layer update); `state` is the whole state.
  void update(std::span<float> w, std::span<float> g, std::span<float> state,
              std::int64_t iteration, ParameterSlice slice) const {
    if (detail::BaseSteps::active(options))
      base_.apply(options, learning_rate(iteration), w, g, slice);
    const Coefficients c = coefficients(iteration);
    // apply()'s arithmetic, in Eigen's packet math (a plain loop does not vectorise sqrt).
    using Array = Eigen::Array<float, Eigen::Dynamic, 1>;
    const auto n = static_cast<Eigen::Index>(w.size());
    Eigen::Map<Array> wa(w.data(), n), m(state.data() + slice.offset, n),
        v(state.data() + slice.total + slice.offset, n);
    const Eigen::Map<const Array> ga(g.data(), n);
    m += (ga - m) * c.one_minus_beta_1;
    v += (ga.square() - v) * c.one_minus_beta_2;
    wa -= (c.learning_rate * (c.m_coefficient * m + c.g_coefficient * ga)) /
          ((v * c.v_coefficient).sqrt() + c.epsilon);
  }

 private:
  detail::BaseSteps base_;
};

}  // namespace memopt
