#pragma once
// BatchNormalization: Keras's normalization over the last axis with learned scale and shift
// and moving statistics for inference.

#include <array>
#include <cstddef>
#include <ratio>
#include <string_view>

#include "memopt/core/shape.hpp"
#include "memopt/layers/activation.hpp"
#include "memopt/layers/layer.hpp"
#include "memopt/layers/ratio.hpp"

namespace memopt {

/// Keras's `BatchNormalization(axis=-1, momentum, epsilon)` with its `gamma`, `beta`
/// (trainable) and `moving_mean`, `moving_variance` (not trainable, in checkpoints). In `fit`
/// it normalizes with the batch's mean and biased variance and updates
/// moving = moving * momentum + batch * (1 - momentum); in `evaluate` and `predict` it uses
/// the moving statistics. Backward keeps the batch mean and variance.
///
/// ```cpp
/// using BN = mo::BatchNormalization;  // momentum 0.99, epsilon 1e-3
/// using Slow = mo::BatchNormalizationWith<std::ratio<9, 10>, std::ratio<1, 100'000>>;
/// ```
template <class Momentum = std::ratio<99, 100>, class Epsilon = std::ratio<1, 1000>>
struct BatchNormalizationWith {
  static_assert(is_ratio_v<Momentum> && is_ratio_v<Epsilon>,
                "BatchNormalization: momentum and epsilon are std::ratio values");
  static_assert(Momentum::num >= 0 && Momentum::num <= Momentum::den,
                "BatchNormalization: the momentum must be in [0, 1]");
  static_assert(Epsilon::num > 0, "BatchNormalization: epsilon must be positive");
  static constexpr double momentum = ratio_value_v<Momentum>;
  static constexpr double epsilon = ratio_value_v<Epsilon>;

  using layer_tag = void;
  using activation = Linear;
  static constexpr std::string_view name = "batch_normalization";
  static constexpr std::string_view class_name = "BatchNormalization";
  static constexpr std::string_view op = "batch normalization";
  static constexpr bool is_view = false;
  // dgamma = sum dy * x_hat and dx both read x.
  static constexpr BackwardReads backward_reads{.weight_grad_reads_input = true,
                                                .input_grad_reads_input = true};

  template <Shape In>
  static consteval bool accepts() {
    return true;
  }
  static constexpr Shape output_shape(Shape in) { return in; }

  static constexpr std::array<WeightDecl, 4> weights(Shape in) {
    const std::size_t c = in.channels();
    return {WeightDecl{"gamma", {c}, 1, true, Init::ones},
            WeightDecl{"beta", {c}, 1, true, Init::zeros},
            WeightDecl{"moving_mean", {c}, 1, false, Init::zeros},
            WeightDecl{"moving_variance", {c}, 1, false, Init::ones}};
  }
  static constexpr std::array<SavedDecl, 2> saved(Shape in) {
    return {SavedDecl{"batch_mean", 0, in.channels(), Unit::f32},
            SavedDecl{"batch_variance", 0, in.channels(), Unit::f32}};
  }
};

/// Keras's defaults: momentum 0.99, epsilon 1e-3.
using BatchNormalization = BatchNormalizationWith<>;

}  // namespace memopt
