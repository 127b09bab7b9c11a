#pragma once
// Adam: Keras's keras.optimizers.Adam (keras/src/optimizers/adam.py).

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

/// Keras's `Adam` with its defaults: lr 1e-3, beta_1 0.9, beta_2 0.999, epsilon 1e-7.
///
/// ```cpp
/// model.compile(mo::Adam{{.learning_rate = 1e-3}}, mo::SparseCategoricalCrossentropy{});
/// ```
class Adam {
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

  static constexpr std::string_view name = "adam";

  Adam() : Adam(Options{}) {}
  explicit Adam(Options o) : options(std::move(o)) { detail::BaseSteps::validate(options, "Adam"); }

  /// Two slots per parameter: the first moment m, then the second moment v.
  std::size_t slots() const { return 2; }
  std::vector<std::string> slot_names() const { return {"momentum", "velocity"}; }
  double learning_rate(std::int64_t iteration) const { return options.learning_rate(iteration); }
  void set_learning_rate(double value) { options.learning_rate.set(value); }
  void build(std::span<const ParameterRange> ranges) {
    base_.build(ranges, options.exclude_from_weight_decay);
  }

  /// The per-iteration factors of the rule. `one_minus_beta_1` and `one_minus_beta_2` are
  /// computed in double and rounded once, as Keras does: in float, `1.0f - 0.999f` is
  /// 0.00099998713, which puts every second moment 1.3e-5 off.
  struct Coefficients {
    float alpha, one_minus_beta_1, one_minus_beta_2, epsilon;
  };
  /// Bias correction for update number `iteration` (0-based), folded into the step size
  /// as Keras does: alpha = lr sqrt(1 - b2^t) / (1 - b1^t), t = iteration + 1.
  static Coefficients coefficients(double lr, double beta_1, double beta_2, double epsilon,
                                   std::int64_t iteration) {
    const double t = static_cast<double>(iteration + 1);
    const double alpha = lr * std::sqrt(1.0 - std::pow(beta_2, t)) / (1.0 - std::pow(beta_1, t));
    return {static_cast<float>(alpha), static_cast<float>(1.0 - beta_1),
            static_cast<float>(1.0 - beta_2), static_cast<float>(epsilon)};
  }
  Coefficients coefficients(std::int64_t iteration) const {
    return coefficients(learning_rate(iteration), options.beta_1, options.beta_2, options.epsilon,
                        iteration);
  }

  /// One parameter: m += (g - m)(1 - b1); v += (g^2 - v)(1 - b2); w -= alpha m / (sqrt v + eps).
  static MEMOPT_HD void apply(const Coefficients& c, float& w, float g, float* m, float* v) {
    *m += (g - *m) * c.one_minus_beta_1;
    *v += (g * g - *v) * c.one_minus_beta_2;
    w -= c.alpha * *m / (std::sqrt(*v) + c.epsilon);
  }

  /// Applies the whole buffer's rule with coefficients `c`; `state` holds all m, then all v.
  static void apply_all(const Coefficients& c, std::span<float> w, std::span<const float> g,
                        std::span<float> state) {
    apply_all(c, w, g, state.first(w.size()), state.subspan(w.size(), w.size()));
  }
  /// The same with the moments `m_slot` and `v_slot` laid out like `w`.
  static void apply_all(const Coefficients& c, std::span<float> w, std::span<const float> g,
                        std::span<float> m_slot, std::span<float> v_slot) {
    // Eigen's packet math vectorises sqrt and divide, which a plain loop cannot while
    // std::sqrt must set errno.
    using Array = Eigen::Array<float, Eigen::Dynamic, 1>;
    const auto n = static_cast<Eigen::Index>(w.size());
    Eigen::Map<Array> wa(w.data(), n), m(m_slot.data(), n), v(v_slot.data(), n);
    const Eigen::Map<const Array> ga(g.data(), n);
    m += (ga - m) * c.one_minus_beta_1;
    v += (ga.square() - v) * c.one_minus_beta_2;
    wa -= c.alpha * m / (v.sqrt() + c.epsilon);
  }

  /// Applies the rule to every parameter; `state` holds all m, then all v.
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
    apply_all(coefficients(iteration), w, g, state.subspan(slice.offset, w.size()),
              state.subspan(slice.total + slice.offset, w.size()));
  }

 private:
  detail::BaseSteps base_;
};

}  // namespace memopt
