#pragma once
// SGD: Keras's keras.optimizers.SGD (keras/src/optimizers/sgd.py).

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "memopt/core/host_device.hpp"
#include "memopt/train/learning_rate.hpp"
#include "memopt/train/optimizer.hpp"
#include "memopt/train/optimizers/base_steps.hpp"

namespace memopt {

/// Keras's `SGD`: plain, with momentum, or Nesterov momentum. Its per-element rule `apply` is
/// a host/device function: the CUDA backend's fused update runs the same arithmetic.
///
/// ```cpp
/// model.compile(mo::SGD{{.learning_rate = 0.01, .momentum = 0.9, .nesterov = true}},
///               mo::SparseCategoricalCrossentropy{});
/// ```
class SGD {
 public:
  struct Options {
    LearningRate learning_rate = 0.01;
    double momentum = 0.0;
    bool nesterov = false;
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

  static constexpr std::string_view name = "sgd";

  SGD() : SGD(Options{}) {}
  explicit SGD(Options o) : options(std::move(o)) { detail::BaseSteps::validate(options, "SGD"); }

  /// Float slots of state per parameter: one velocity with momentum, none without.
  std::size_t slots() const { return options.momentum != 0.0 ? 1 : 0; }
  std::vector<std::string> slot_names() const {
    return slots() ? std::vector<std::string>{"momentum"} : std::vector<std::string>{};
  }
  double learning_rate(std::int64_t iteration) const { return options.learning_rate(iteration); }
  void set_learning_rate(double value) { options.learning_rate.set(value); }
  void build(std::span<const ParameterRange> ranges) {
    base_.build(ranges, options.exclude_from_weight_decay);
  }

  struct Coefficients {
    float learning_rate, momentum;
    bool nesterov;
  };
  Coefficients coefficients(std::int64_t iteration) const {
    return {static_cast<float>(learning_rate(iteration)), static_cast<float>(options.momentum),
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
    float* v = slots() ? state.data() + slice.offset : nullptr;
    for (std::size_t j = 0; j < w.size(); ++j) apply(c, w[j], g[j], v ? v + j : nullptr);
  }

 private:
  detail::BaseSteps base_;
};

}  // namespace memopt
