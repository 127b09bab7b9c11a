#pragma once
// The Loss concept: what Model::compile accepts as a loss, and the row a loss sees.

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <type_traits>

#include "memopt/layers/activation.hpp"

namespace memopt {

/// One sample as a loss sees it. `y_pred` holds the model's outputs for the sample: what the
/// last activation produced, or its input (the logits) for a loss's `logits_value_and_grad`.
/// `y_true` holds one class index (`Target = std::int32_t`) or `y_pred.size()` floats. The
/// loss writes `grad_scale` times the derivative of the sample's loss by `y_pred` into `grad`
/// (unless `grad` is empty: evaluation). `grad` may be the very memory of `y_pred`, so read
/// what you need before writing.
template <class Target>
struct LossRow {
  std::span<const float> y_pred;
  std::span<const Target> y_true;
  std::span<float> grad;
  float grad_scale = 1.0f;
  std::size_t row = 0;  // the sample's row in its batch, for error messages
};

/// What Keras's `'accuracy'` means next to a loss (Keras resolves the name by the loss):
/// the largest output is the class (sparse or one-hot targets), each output thresholded at
/// 0.5 matches its 0/1 target, or no accuracy at all (regression).
enum class AccuracyKind { categorical, binary, none };

namespace detail {
template <class L>
concept LossOnOutputs = requires(const L& loss, const LossRow<typename L::target_type>& row) {
  { loss.value_and_grad(row) } -> std::convertible_to<double>;
};
template <class L>
concept LossOnLogits = requires(const L& loss, const LossRow<typename L::target_type>& row) {
  { L::logits_of } -> std::convertible_to<ActivationKind>;
  { loss.logits_value_and_grad(row) } -> std::convertible_to<double>;
};
}  // namespace detail

/// A loss: Keras's `name`, the `target_type` of its targets (`std::int32_t` class indices or
/// `float` vectors as wide as the model's output), the accuracy Keras pairs with it, and the
/// per-sample loss with its gradient. A loss reads either the outputs (`value_and_grad`:
/// after the last layer's activation, whose derivative the backend applies), or the logits of
/// its `logits_of` activation (`logits_value_and_grad`: crossentropies, which fuse Softmax or
/// Sigmoid for accuracy and speed, as Keras does), or either. The batch's loss is the mean of
/// the samples' (Keras's `sum_over_batch_size`).
///
/// ```cpp
/// struct MeanFourthPower {  // a loss of your own
///   static constexpr std::string_view name = "mean_fourth_power";
///   using target_type = float;
///   static constexpr mo::AccuracyKind accuracy = mo::AccuracyKind::none;
///   double value_and_grad(const mo::LossRow<float>& r) const;  // defined elsewhere
/// };
/// // model.compile(mo::Adam{}, MeanFourthPower{});
/// ```
template <class L>
concept Loss = std::copy_constructible<L> && requires {
  { L::name } -> std::convertible_to<std::string_view>;
  typename L::target_type;
  { L::accuracy } -> std::convertible_to<AccuracyKind>;
} &&(std::same_as<typename L::target_type, std::int32_t> ||
     std::same_as<typename L::target_type, float>)&&(detail::LossOnOutputs<L> ||
                                                     detail::LossOnLogits<L>);

/// Whether `loss` asks for logits from a Linear last layer (Keras's `from_logits=True`).
template <class L>
constexpr bool from_logits(const L& loss) {
  if constexpr (requires { loss.options.from_logits; })
    return loss.options.from_logits;
  else
    return false;
}

}  // namespace memopt
