#pragma once
// Adagrad: Keras's keras.optimizers.Adagrad (keras/src/optimizers/adagrad.py).

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <Eigen/Core>

#include "memopt/core/error.hpp"
#include "memopt/core/host_device.hpp"
#include "memopt/train/learning_rate.hpp"
#include "memopt/train/optimizer.hpp"
#include "memopt/train/optimizers/base_steps.hpp"

namespace memopt {

/// Keras's `Adagrad` with its defaults: lr 1e-3, initial_accumulator_value 0.1, epsilon 1e-7.
/// One slot, "accumulator", which starts at initial_accumulator_value.
///
/// ```cpp
/// model.compile(mo::Adagrad{{.learning_rate = 0.01}}, mo::SparseCategoricalCrossentropy{});
/// ```
class Adagrad {
 public:
  struct Options {
    LearningRate learning_rate = 1e-3;
    double initial_accumulator_value = 0.1;
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

  static constexpr std::string_view name = "adagrad";

  Adagrad() : Adagrad(Options{}) {}
  explicit Adagrad(Options o) : options(std::move(o)) {
    detail::BaseSteps::validate(options, "Adagrad");
    if (options.initial_accumulator_value < 0)
      throw error("Adagrad: expected initial_accumulator_value >= 0, found " +
                  std::to_string(options.initial_accumulator_value));
  }

  std::size_t slots() const { return 1; }
  std::vector<std::string> slot_names() const { return {"accumulator"}; }
  double learning_rate(std::int64_t iteration) const { return options.learning_rate(iteration); }
  void set_learning_rate(double value) { options.learning_rate.set(value); }
  void build(std::span<const ParameterRange> ranges) {
    base_.build(ranges, options.exclude_from_weight_decay);
  }
  /// Every accumulator starts at initial_accumulator_value.
  void initialize_state(std::span<float> state) const {
    std::fill(state.begin(), state.end(), static_cast<float>(options.initial_accumulator_value));
  }

  struct Coefficients {
    float learning_rate, epsilon;
  };
  Coefficients coefficients(std::int64_t iteration) const {
    return {static_cast<float>(learning_rate(iteration)), static_cast<float>(options.epsilon)};
  }

  /// One parameter: a += g^2; w -= lr g / sqrt(a + eps).
  static MEMOPT_HD void apply(const Coefficients& c, float& w, float g, float* accumulator) {
    *accumulator += g * g;
    w -= c.learning_rate * g / std::sqrt(*accumulator + c.epsilon);
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
    Eigen::Map<Array> wa(w.data(), n), a(state.data() + slice.offset, n);
    const Eigen::Map<const Array> ga(g.data(), n);
    a += ga.square();
    wa -= (c.learning_rate * ga) / (a + c.epsilon).sqrt();
  }

 private:
  detail::BaseSteps base_;
};

}  // namespace memopt
