#pragma once
// MeanAbsoluteError: the regression loss that outliers pull least.

#include <cmath>
#include <string_view>
#include <utility>

#include "memopt/train/loss.hpp"
#include "memopt/train/losses/detail/elementwise.hpp"

namespace memopt {

/// Keras's `MeanAbsoluteError`: mean over the outputs of |y_pred - y|, then over the batch.
/// Its derivative at a zero error is taken as 0, as TensorFlow's sign(0).
///
/// ```cpp
/// model.compile(mo::Adam{}, mo::MeanAbsoluteError{});
/// ```
struct MeanAbsoluteError {
  static constexpr std::string_view name = "mean_absolute_error";
  using target_type = float;
  static constexpr AccuracyKind accuracy = AccuracyKind::none;

  double value_and_grad(const LossRow<float>& r) const {
    return detail::mean_of_errors(r, [](float e) {
      return std::pair{std::abs(e), e > 0.0f ? 1.0f : e < 0.0f ? -1.0f : 0.0f};
    });
  }
};

}  // namespace memopt
