#pragma once
// Huber: squared error near the target, absolute error beyond `delta`.

#include <cmath>
#include <string_view>
#include <utility>

#include "memopt/train/loss.hpp"
#include "memopt/train/losses/detail/elementwise.hpp"

namespace memopt {

/// Keras's `Huber`: per output, e^2 / 2 where |e| <= delta and delta (|e| - delta / 2)
/// beyond, with e = y_pred - y; mean over the outputs, then over the batch.
///
/// ```cpp
/// model.compile(mo::Adam{}, mo::Huber{{.delta = 2.0f}});
/// ```
struct Huber {
  struct Options {
    float delta = 1.0f;
  };
  Options options{};
  static constexpr std::string_view name = "huber_loss";
  using target_type = float;
  static constexpr AccuracyKind accuracy = AccuracyKind::none;

  double value_and_grad(const LossRow<float>& r) const {
    const float d = options.delta;
    return detail::mean_of_errors(r, [d](float e) {
      const float a = std::abs(e);
      if (a <= d) return std::pair{0.5f * e * e, e};
      return std::pair{d * (a - 0.5f * d), e > 0.0f ? d : -d};
    });
  }
};

}  // namespace memopt
