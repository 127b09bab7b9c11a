#pragma once
// RMSprop: Keras's keras.optimizers.RMSprop (keras/src/optimizers/rmsprop.py).

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

/// Keras's `RMSprop` with its defaults: lr 1e-3, rho 0.9, momentum 0, epsilon 1e-7, not
/// centered. Slots, in Keras's order: "velocity", then "momentum" when momentum > 0, then
/// "average_gradient" when centered.
///
/// ```cpp
/// model.compile(mo::RMSprop{{.learning_rate = 1e-3, .momentum = 0.9}},
///               mo::SparseCategoricalCrossentropy{});
/// ```
class RMSprop {
 public:
  struct Options {
    LearningRate learning_rate = 1e-3;
    double rho = 0.9;
    double momentum = 0.0;
    double epsilon = 1e-7;
    bool centered = false;
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

  static constexpr std::string_view name = "rmsprop";

  RMSprop() : RMSprop(Options{}) {}
  explicit RMSprop(Options o) : options(std::move(o)) {
    detail::BaseSteps::validate(options, "RMSprop");
  }

  std::size_t slots() const { return 1 + (options.momentum > 0) + options.centered; }
  std::vector<std::string> slot_names() const {
    std::vector<std::string> names{"velocity"};
    if (options.momentum > 0) names.emplace_back("momentum");
    if (options.centered) names.emplace_back("average_gradient");
    return names;
  }
  double learning_rate(std::int64_t iteration) const { return options.learning_rate(iteration); }
  void set_learning_rate(double value) { options.learning_rate.set(value); }
  void build(std::span<const ParameterRange> ranges) {
    base_.build(ranges, options.exclude_from_weight_decay);
  }

  /// `one_minus_rho` in double, rounded once (as Keras's Python `1 - rho`).
  struct Coefficients {
    float learning_rate, rho, one_minus_rho, momentum, epsilon;
  };
  Coefficients coefficients(std::int64_t iteration) const {
    return {static_cast<float>(learning_rate(iteration)), static_cast<float>(options.rho),
            static_cast<float>(1.0 - options.rho), static_cast<float>(options.momentum),
            static_cast<float>(options.epsilon)};
  }

  /// One parameter: v = rho v + (1 - rho) g^2; centered: a = rho a + (1 - rho) g and the
  /// denominator v - a^2 + eps, else v + eps; step = lr g / sqrt(denominator); with momentum
  /// m = momentum m + step and w -= m, else w -= step.
  static MEMOPT_HD void apply(const Coefficients& c, float& w, float g, float* velocity,
                              float* momentum, float* average) {
    *velocity = c.rho * *velocity + c.one_minus_rho * (g * g);
    float denominator = *velocity + c.epsilon;
    if (average) {
      *average = c.rho * *average + c.one_minus_rho * g;
      denominator = *velocity - *average * *average + c.epsilon;
    }
    const float step = c.learning_rate * g / std::sqrt(denominator);
    if (momentum) {
      *momentum = c.momentum * *momentum + step;
      w -= *momentum;
    } else {
      w -= step;
    }
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
    const bool with_momentum = options.momentum > 0;
    Eigen::Map<Array> wa(w.data(), n), v(state.data() + slice.offset, n);
    const Eigen::Map<const Array> ga(g.data(), n);
    v = c.rho * v + c.one_minus_rho * ga.square();
    const auto step = [&](const auto& denominator) {
      if (with_momentum) {
        Eigen::Map<Array> m(state.data() + slice.total + slice.offset, n);
        m = c.momentum * m + (c.learning_rate * ga) / denominator.sqrt();
        wa -= m;
      } else {
        wa -= (c.learning_rate * ga) / denominator.sqrt();
      }
    };
    if (options.centered) {
      Eigen::Map<Array> a(state.data() + (with_momentum ? 2 : 1) * slice.total + slice.offset, n);
      a = c.rho * a + c.one_minus_rho * ga;
      step(v - a.square() + c.epsilon);
    } else {
      step(v + c.epsilon);
    }
  }

 private:
  detail::BaseSteps base_;
};

}  // namespace memopt
