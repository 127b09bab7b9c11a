#pragma once
// SparseCategoricalCrossentropy: class indices against Softmax's logits.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "memopt/core/error.hpp"
#include "memopt/train/loss.hpp"

namespace memopt {

/// Keras's `SparseCategoricalCrossentropy`: one class index per sample, -log p(label), mean
/// over the batch. Fused with a final Softmax (or, with `from_logits`, with a Linear last
/// layer); computed in float32 under every policy, as Keras advises. Samples labelled
/// `ignore_class` (e.g. -1 or 255 for "void") add nothing, and the mean is over the others, as
/// Keras masks them.
///
/// ```cpp
/// model.compile(mo::Adam{}, mo::SparseCategoricalCrossentropy{{.from_logits = true}});
/// model.compile(mo::Adam{}, mo::SparseCategoricalCrossentropy{{.ignore_class = -1}});
/// ```
struct SparseCategoricalCrossentropy {
  struct Options {
    bool from_logits = false;
    std::optional<std::int32_t> ignore_class = std::nullopt;
  };
  Options options{};
  static constexpr std::string_view name = "sparse_categorical_crossentropy";
  using target_type = std::int32_t;
  static constexpr AccuracyKind accuracy = AccuracyKind::categorical;
  static constexpr ActivationKind logits_of = ActivationKind::softmax;

  template <ActivationKind Last>
  static constexpr void check_last() {
    static_assert(Last == ActivationKind::softmax || Last == ActivationKind::linear,
                  "Model::compile: SparseCategoricalCrossentropy needs the last layer to be "
                  "Dense<N, Softmax>, or Dense<N> (Linear) with from_logits=true");
  }

  /// Whether a sample with these targets is left out (the loss head skips it).
  bool ignores(std::span<const std::int32_t> y_true) const {
    return options.ignore_class && y_true[0] == *options.ignore_class;
  }

  /// log(sum exp z) - z[label]; the gradient is softmax(z) - onehot(label).
  double logits_value_and_grad(const LossRow<std::int32_t>& r) const {
    const std::size_t k = r.y_pred.size();
    const float* z = r.y_pred.data();
    const std::int32_t label = r.y_true[0];
    if (label < 0 || static_cast<std::size_t>(label) >= k)
      throw error("SparseCategoricalCrossentropy: label " + std::to_string(label) + " at row " +
                  std::to_string(r.row) + " is outside [0, " + std::to_string(k) + ")");
    const float m = *std::max_element(z, z + k);
    float sum = 0;
    for (std::size_t u = 0; u < k; ++u) sum += std::exp(z[u] - m);
    const float loss = std::log(sum) + m - z[label];
    if (!r.grad.empty()) {
      const float g = r.grad_scale, inv = 1.0f / sum;
      for (std::size_t u = 0; u < k; ++u) r.grad[u] = g * std::exp(z[u] - m) * inv;
      r.grad[static_cast<std::size_t>(label)] -= g;
    }
    return static_cast<double>(loss);
  }
};

}  // namespace memopt
