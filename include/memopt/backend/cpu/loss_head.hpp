#pragma once
// The loss head on the CPU: the last layer's activation, the loss, its accuracy and the
// gradient by the last layer's pre-activation, over a batch of rows.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <type_traits>

#include "memopt/core/error.hpp"
#include "memopt/layers/activation.hpp"
#include "memopt/train/loss.hpp"

namespace memopt::cpu_backend {

/// What the head sums over a batch: the samples' losses and the correct predictions.
struct HeadSums {
  double loss = 0;
  double correct = 0;
};

/// The last layer's activation on one row of pre-activations `z` (in place is fine).
template <ActivationKind Act>
void activate_row(const float* z, float* a, std::size_t width) {
  if constexpr (Act == ActivationKind::softmax) {
    const float m = *std::max_element(z, z + width);
    float sum = 0;
    for (std::size_t u = 0; u < width; ++u) sum += (a[u] = std::exp(z[u] - m));
    const float inv = 1.0f / sum;
    for (std::size_t u = 0; u < width; ++u) a[u] *= inv;
  } else {
    for (std::size_t u = 0; u < width; ++u) {
      const float x = z[u];
      if constexpr (Act == ActivationKind::relu)
        a[u] = ReLU::apply(x);
      else if constexpr (Act == ActivationKind::sigmoid)
        a[u] = Sigmoid::apply(x);
      else if constexpr (Act == ActivationKind::tanh)
        a[u] = Tanh::apply(x);
      else if constexpr (Act == ActivationKind::gelu)
        a[u] = GELU::apply(x);
      else
        a[u] = x;
    }
  }
}

namespace detail {

template <Loss L, ActivationKind Last>
bool head_fuses(const L& loss) {
  if constexpr (memopt::detail::LossOnLogits<L>)
    return Last == L::logits_of || (Last == ActivationKind::linear && from_logits(loss));
  else
    return false;
}

// 1 if row `r` is predicted right, by the accuracy Keras pairs with the loss; for binary
// accuracy, the fraction of outputs right. `out` holds logits when `logits` (the largest
// logit is the largest probability; a logit above 0 is a probability above 0.5).
template <AccuracyKind Kind, class Target>
double correct_in_row(const float* out, bool logits, const Target* y, std::size_t width) {
  if constexpr (Kind == AccuracyKind::none) {
    return 0.0;
  } else if constexpr (Kind == AccuracyKind::binary) {
    const float threshold = logits ? 0.0f : 0.5f;
    double right = 0;
    for (std::size_t u = 0; u < width; ++u)
      right += (out[u] > threshold) == (static_cast<float>(y[u]) > 0.5f) ? 1.0 : 0.0;
    return right / static_cast<double>(width);
  } else {
    const std::size_t best = static_cast<std::size_t>(std::max_element(out, out + width) - out);
    if constexpr (std::is_same_v<Target, std::int32_t>) {
      return best == static_cast<std::size_t>(y[0]) ? 1.0 : 0.0;
    } else {
      const std::size_t label = static_cast<std::size_t>(std::max_element(y, y + width) - y);
      return best == label ? 1.0 : 0.0;
    }
  }
}

// dz = f'(z) da for the activation `Last`, given z and a = f(z); Softmax's Jacobian is full.
template <ActivationKind Last>
void chain_activation(float* z, const float* a, const float* da, std::size_t width) {
  if constexpr (Last == ActivationKind::softmax) {
    float dot = 0;
    for (std::size_t u = 0; u < width; ++u) dot += a[u] * da[u];
    for (std::size_t u = 0; u < width; ++u) z[u] = a[u] * (da[u] - dot);
  } else if constexpr (Last == ActivationKind::gelu) {
    for (std::size_t u = 0; u < width; ++u) z[u] = GELU::derivative(z[u]) * da[u];
  } else {
    for (std::size_t u = 0; u < width; ++u) z[u] = derivative_from_output(Last, a[u]) * da[u];
  }
}

}  // namespace detail

/// Runs `loss` over `rows` rows of the last layer's pre-activations `z` (`width` each) and
/// their targets `y` (one class index, or `width` floats, per row). With `grad_scale` set, z
/// is replaced by grad_scale / rows times the gradient of the batch's mean loss by z. With
/// `predictions`, the activated outputs are written there (for metrics). `scratch` holds
/// 2 * width floats.
template <ActivationKind Last, Loss L>
HeadSums run_loss_head(const L& loss, float* z, const typename L::target_type* y, std::size_t rows,
                       std::size_t width, const float* grad_scale, float* predictions,
                       float* scratch) {
  using Target = typename L::target_type;
  const std::size_t target_width = std::is_same_v<Target, std::int32_t> ? 1 : width;
  const bool fused = detail::head_fuses<L, Last>(loss);
  if constexpr (!memopt::detail::LossOnOutputs<L>)
    if (!fused) throw error(std::string(L::name) + ": the loss reads logits; see compile()");
  // A loss may leave samples out (SparseCategoricalCrossentropy's ignore_class): the batch's
  // loss is then the mean over the others, as Keras's mask makes it.
  const auto ignored = [&](std::size_t r) {
    if constexpr (requires { loss.ignores(std::span<const Target>()); })
      return loss.ignores(std::span<const Target>(y + r * target_width, target_width));
    else
      return false;
  };
  std::size_t counted = rows;
  for (std::size_t r = 0; r < rows; ++r) counted -= ignored(r) ? 1 : 0;
  const float g = grad_scale && counted ? *grad_scale / static_cast<float>(counted) : 0.0f;
  HeadSums sums;
  for (std::size_t r = 0; r < rows; ++r) {
    float* zr = z + r * width;
    const Target* yr = y + r * target_width;
    const std::span<const Target> targets(yr, target_width);
    if (predictions) activate_row<Last>(zr, predictions + r * width, width);
    // An ignored sample still counts for accuracy (Keras's metrics see no mask).
    const bool skip = ignored(r);
    if (fused) {
      if constexpr (memopt::detail::LossOnLogits<L>) {
        sums.correct += detail::correct_in_row<L::accuracy>(zr, true, yr, width);
        if (skip) {
          if (grad_scale) std::fill_n(zr, width, 0.0f);
          continue;
        }
        sums.loss += loss.logits_value_and_grad(
            {std::span<const float>(zr, width), targets,
             grad_scale ? std::span<float>(zr, width) : std::span<float>(), g, r});
      }
    } else if constexpr (memopt::detail::LossOnOutputs<L>) {
      float* a = scratch;
      float* da = scratch + width;
      activate_row<Last>(zr, a, width);
      sums.correct += detail::correct_in_row<L::accuracy>(a, false, yr, width);
      if (skip) {
        if (grad_scale) std::fill_n(zr, width, 0.0f);
        continue;
      }
      sums.loss += loss.value_and_grad(
          {std::span<const float>(a, width), targets,
           grad_scale ? std::span<float>(da, width) : std::span<float>(), g, r});
      if (grad_scale) detail::chain_activation<Last>(zr, a, da, width);
    }
  }
  // Per sample over the whole batch, as the totals count samples.
  if (counted != rows && counted != 0)
    sums.loss *= static_cast<double>(rows) / static_cast<double>(counted);
  return sums;
}

}  // namespace memopt::cpu_backend
