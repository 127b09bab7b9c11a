#pragma once
// BinaryCrossentropy: 0/1 targets (binary or multi-label) against Sigmoid's logits.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <string_view>

#include "memopt/train/loss.hpp"

namespace memopt {

/// Keras's `BinaryCrossentropy`: a 0/1 target per output (one output for a binary task, one
/// per label for a multi-label one), -(y log p + (1 - y) log(1 - p)), mean over the outputs
/// and then over the batch. `label_smoothing` moves the targets towards 0.5. Fused with a
/// final Sigmoid (or, with `from_logits`, a Linear last layer) in the form that cannot
/// overflow, max(z, 0) - z y + log(1 + e^-|z|), as Keras computes it from logits.
///
/// ```cpp
/// using Net = mo::Sequential<mo::Dense<64, mo::ReLU>, mo::Dense<1, mo::Sigmoid>>;
/// auto model = mo::Model<Net, mo::Input<30>>{42};
/// model.compile(mo::Adam{}, mo::BinaryCrossentropy{}, mo::metrics::AUC{});
/// ```
struct BinaryCrossentropy {
  struct Options {
    bool from_logits = false;
    float label_smoothing = 0.0f;
  };
  Options options{};
  static constexpr std::string_view name = "binary_crossentropy";
  using target_type = float;
  static constexpr AccuracyKind accuracy = AccuracyKind::binary;
  static constexpr ActivationKind logits_of = ActivationKind::sigmoid;

  template <ActivationKind Last>
  static constexpr void check_last() {
    static_assert(Last != ActivationKind::softmax,
                  "Model::compile: BinaryCrossentropy after Softmax: end the model with "
                  "Dense<N, Sigmoid> (independent 0/1 outputs), or use "
                  "CategoricalCrossentropy for one class per sample");
    static_assert(Last == ActivationKind::sigmoid || Last == ActivationKind::linear,
                  "Model::compile: BinaryCrossentropy needs the last layer to be "
                  "Dense<N, Sigmoid>, or Dense<N> (Linear) with from_logits=true");
  }

  /// The gradient by z is (sigmoid(z) - y') / outputs.
  double logits_value_and_grad(const LossRow<float>& r) const {
    const std::size_t k = r.y_pred.size();
    const float s = options.label_smoothing;
    const float per = 1.0f / static_cast<float>(k);
    float loss = 0;
    for (std::size_t u = 0; u < k; ++u) {
      const float z = r.y_pred[u], y = r.y_true[u] * (1.0f - s) + 0.5f * s;
      loss += std::max(z, 0.0f) - z * y + std::log1p(std::exp(-std::abs(z)));
      if (!r.grad.empty()) {
        const float p = 1.0f / (1.0f + std::exp(-z));
        r.grad[u] = r.grad_scale * per * (p - y);
      }
    }
    return static_cast<double>(loss * per);
  }
};

}  // namespace memopt
