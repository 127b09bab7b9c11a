#pragma once
// Optimizers with Keras's update rules, applied over the flat parameter buffer.
//
// Each exposes its per-element rule as a host/device function so that every backend
// applies the same arithmetic: the CPU loops over it, the CUDA backend runs it in one kernel.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <span>

#include <Eigen/Core>

#include "memopt/core/host_device.hpp"

namespace memopt {

/// Keras's `SGD`: plain, with momentum, or Nesterov momentum.
///
/// ```cpp
/// model.compile(mo::SGD{{.learning_rate = 0.01, .momentum = 0.9, .nesterov = true}}, ...);
/// ```
struct SGD {
  struct Options {
    double learning_rate = 0.01;
    double momentum = 0.0;
    bool nesterov = false;
  };
  Options options{};

  /// Float slots of state per parameter: one velocity with momentum, none without.
  std::size_t slots() const { return options.momentum != 0.0 ? 1 : 0; }

  struct Coefficients {
    float learning_rate, momentum;
    bool nesterov;
  };
  Coefficients coefficients(std::int64_t /*iteration*/) const {
    return {static_cast<float>(options.learning_rate), static_cast<float>(options.momentum),
            options.nesterov};
  }

  /// One parameter: v = m v - lr g; w += v (or w += m v - lr g with Nesterov).
  static MEMOPT_HD void apply(const Coefficients& c, float& w, float g, float* velocity) {
    if (!velocity) {
      w -= c.learning_rate * g;
      return;
    }
    const float v = c.momentum * *velocity - c.learning_rate * g;
    *velocity = v;
    w += c.nesterov ? c.momentum * v - c.learning_rate * g : v;
  }

  /// Applies the rule to every parameter; `state` holds `slots()` floats per parameter.
  void update(std::span<float> w, std::span<const float> g, std::span<float> state,
              std::int64_t iteration) const {
    const Coefficients c = coefficients(iteration);
    float* v = slots() ? state.data() : nullptr;
    for (std::size_t j = 0; j < w.size(); ++j) apply(c, w[j], g[j], v ? v + j : nullptr);
  }
};

/// Keras's `Adam` with its defaults: lr 1e-3, beta_1 0.9, beta_2 0.999, epsilon 1e-7.
///
/// ```cpp
/// model.compile(mo::Adam{{.learning_rate = 1e-3}}, mo::SparseCategoricalCrossentropy{});
/// ```
struct Adam {
  struct Options {
    double learning_rate = 1e-3;
    double beta_1 = 0.9;
    double beta_2 = 0.999;
    double epsilon = 1e-7;
  };
  Options options{};

  /// Two slots per parameter: the first moment m, then the second moment v.
  std::size_t slots() const { return 2; }

  /// The per-iteration factors of the rule. `one_minus_beta_1` and `one_minus_beta_2` are
  /// computed in double and rounded once, as Keras does: in float, `1.0f - 0.999f` is
  /// 0.00099998713, which puts every second moment 1.3e-5 off.
  struct Coefficients {
    float alpha, one_minus_beta_1, one_minus_beta_2, epsilon;
  };
  /// Bias correction for update number `iteration` (0-based), folded into the step size
  /// as Keras does: alpha = lr sqrt(1 - b2^t) / (1 - b1^t), t = iteration + 1.
  Coefficients coefficients(std::int64_t iteration) const {
    const double t = static_cast<double>(iteration + 1);
    const double alpha = options.learning_rate * std::sqrt(1.0 - std::pow(options.beta_2, t)) /
                         (1.0 - std::pow(options.beta_1, t));
    return {static_cast<float>(alpha), static_cast<float>(1.0 - options.beta_1),
            static_cast<float>(1.0 - options.beta_2), static_cast<float>(options.epsilon)};
  }

  /// One parameter: m += (g - m)(1 - b1); v += (g^2 - v)(1 - b2); w -= alpha m / (sqrt v + eps).
  static MEMOPT_HD void apply(const Coefficients& c, float& w, float g, float* m, float* v) {
    *m += (g - *m) * c.one_minus_beta_1;
    *v += (g * g - *v) * c.one_minus_beta_2;
    w -= c.alpha * *m / (std::sqrt(*v) + c.epsilon);
  }

  /// Applies the rule to every parameter; `state` holds all m, then all v.
  void update(std::span<float> w, std::span<const float> g, std::span<float> state,
              std::int64_t iteration) const {
    const Coefficients c = coefficients(iteration);
    // Eigen's packet math vectorises sqrt and divide, which a plain loop cannot while
    // std::sqrt must set errno.
    using Array = Eigen::Array<float, Eigen::Dynamic, 1>;
    const auto n = static_cast<Eigen::Index>(w.size());
    Eigen::Map<Array> wa(w.data(), n), m(state.data(), n), v(state.data() + n, n);
    const Eigen::Map<const Array> ga(g.data(), n);
    m += (ga - m) * c.one_minus_beta_1;
    v += (ga.square() - v) * c.one_minus_beta_2;
    wa -= c.alpha * m / (v.sqrt() + c.epsilon);
  }
};

/// What `Model::compile` accepts as an optimizer.
template <class O>
concept Optimizer = requires(const O& o, std::span<float> w, std::span<const float> g) {
  { o.slots() } -> std::convertible_to<std::size_t>;
  o.update(w, g, w, std::int64_t{0});
};

}  // namespace memopt
