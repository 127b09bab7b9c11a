#pragma once
// CategoricalCrossentropy: one-hot (or soft) targets against Softmax's logits.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <string_view>

#include "memopt/train/loss.hpp"

namespace memopt {

/// Keras's `CategoricalCrossentropy`: a distribution over the classes per sample (one-hot,
/// or soft), -sum y log p, mean over the batch. `label_smoothing` moves the targets towards
/// uniform, y (1 - s) + s / classes, as Keras does. Fused with a final Softmax (or, with
/// `from_logits`, a Linear last layer), in float32 under every policy.
///
/// ```cpp
/// model.compile(mo::AdamW{}, mo::CategoricalCrossentropy{{.label_smoothing = 0.1f}});
/// model.fit(train | mo::data::one_hot(10) | mo::data::batch(32));
/// ```
struct CategoricalCrossentropy {
  struct Options {
    bool from_logits = false;
    float label_smoothing = 0.0f;
  };
  Options options{};
  static constexpr std::string_view name = "categorical_crossentropy";
  using target_type = float;
  static constexpr AccuracyKind accuracy = AccuracyKind::categorical;
  static constexpr ActivationKind logits_of = ActivationKind::softmax;

  template <ActivationKind Last>
  static constexpr void check_last() {
    static_assert(Last == ActivationKind::softmax || Last == ActivationKind::linear,
                  "Model::compile: CategoricalCrossentropy needs the last layer to be "
                  "Dense<N, Softmax>, or Dense<N> (Linear) with from_logits=true; for 0/1 "
                  "targets after a Sigmoid, use BinaryCrossentropy");
  }

  /// sum_u y'_u (lse(z) - z_u) with y' the smoothed targets; its gradient is
  /// softmax(z) sum(y') - y'.
  double logits_value_and_grad(const LossRow<float>& r) const {
    const std::size_t k = r.y_pred.size();
    const float* z = r.y_pred.data();
    const float s = options.label_smoothing;
    const float keep = 1.0f - s, spread = s / static_cast<float>(k);
    const float m = *std::max_element(z, z + k);
    float sum = 0;
    for (std::size_t u = 0; u < k; ++u) sum += std::exp(z[u] - m);
    const float lse = std::log(sum) + m;
    float loss = 0, mass = 0;
    for (std::size_t u = 0; u < k; ++u) {
      const float y = r.y_true[u] * keep + spread;
      loss += y * (lse - z[u]);
      mass += y;
    }
    if (!r.grad.empty()) {
      const float g = r.grad_scale, inv = 1.0f / sum;
      for (std::size_t u = 0; u < k; ++u) {
        const float y = r.y_true[u] * keep + spread;
        r.grad[u] = g * (std::exp(z[u] - m) * inv * mass - y);
      }
    }
    return static_cast<double>(loss);
  }
};

}  // namespace memopt
