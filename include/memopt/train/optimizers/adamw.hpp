#pragma once
// AdamW: Keras's keras.optimizers.AdamW (keras/src/optimizers/adamw.py): Adam's rule after
// the base optimizer's decoupled weight decay, w -= w * weight_decay * lr
// (keras/src/optimizers/base_optimizer.py, _apply_weight_decay), default 0.004.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "memopt/train/learning_rate.hpp"
#include "memopt/train/optimizer.hpp"
#include "memopt/train/optimizers/adam.hpp"
#include "memopt/train/optimizers/base_steps.hpp"

namespace memopt {

/// Keras's `AdamW`: Adam with decoupled weight decay. Exclude biases and normalization
/// parameters by name, as Keras's `exclude_from_weight_decay(var_names=[...])`.
///
/// ```cpp
/// model.compile(mo::AdamW{{.learning_rate = 1e-3, .weight_decay = 0.004,
///                          .exclude_from_weight_decay = {"bias", "gamma", "beta"}}},
///               mo::SparseCategoricalCrossentropy{});
/// ```
class AdamW {
 public:
  struct Options {
    LearningRate learning_rate = 1e-3;
    double beta_1 = 0.9;
    double beta_2 = 0.999;
    double epsilon = 1e-7;
    double weight_decay = 0.004;
    double clipnorm = 0.0;
    double clipvalue = 0.0;
    double global_clipnorm = 0.0;
    std::vector<std::string> exclude_from_weight_decay{};
    /// Keras 3's: apply the mean gradient of this many batches once every that many
    /// batches (1: every batch); train/gradient_accumulation.hpp.
    int gradient_accumulation_steps = 1;
  };
  Options options;

  static constexpr std::string_view name = "adamw";

  AdamW() : AdamW(Options{}) {}
  explicit AdamW(Options o) : options(std::move(o)) {
    detail::BaseSteps::validate(options, "AdamW");
  }

  std::size_t slots() const { return 2; }
  std::vector<std::string> slot_names() const { return {"momentum", "velocity"}; }
  double learning_rate(std::int64_t iteration) const { return options.learning_rate(iteration); }
  void set_learning_rate(double value) { options.learning_rate.set(value); }
  void build(std::span<const ParameterRange> ranges) {
    base_.build(ranges, options.exclude_from_weight_decay);
  }

  /// Decays the weights at this iteration's learning rate, then applies Adam's rule.
  void update(std::span<float> w, std::span<float> g, std::span<float> state,
              std::int64_t iteration) const {
    update(w, g, state, iteration, ParameterSlice{0, w.size()});
  }
  /// The same on the part `w`, `g` of the parameters that `slice` places (UpdateInBackward's
  /// per-layer update); `state` is the whole state.
  void update(std::span<float> w, std::span<float> g, std::span<float> state,
              std::int64_t iteration, ParameterSlice slice) const {
    const double lr = learning_rate(iteration);
    base_.apply(options, lr, w, g, slice);
    Adam::apply_all(
        Adam::coefficients(lr, options.beta_1, options.beta_2, options.epsilon, iteration), w, g,
        state.subspan(slice.offset, w.size()), state.subspan(slice.total + slice.offset, w.size()));
  }

  /// Whether weight decay applies to the `k`-th tensor given to build().
  bool decays(std::size_t k) const { return base_.decays(k); }

 private:
  detail::BaseSteps base_;
};

}  // namespace memopt
