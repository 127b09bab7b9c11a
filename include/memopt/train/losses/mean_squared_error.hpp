#pragma once
// MeanSquaredError: the regression loss.

#include <string_view>
#include <utility>

#include "memopt/train/loss.hpp"
#include "memopt/train/losses/detail/elementwise.hpp"

namespace memopt {

/// Keras's `MeanSquaredError`: mean over the outputs of (y_pred - y)^2, then over the batch.
/// It reads the outputs after the last activation, whatever it is.
///
/// ```cpp
/// model.compile(mo::AdamW{}, mo::MeanSquaredError{}, mo::metrics::MeanAbsoluteError{});
/// ```
struct MeanSquaredError {
  static constexpr std::string_view name = "mean_squared_error";
  using target_type = float;
  static constexpr AccuracyKind accuracy = AccuracyKind::none;

  double value_and_grad(const LossRow<float>& r) const {
    return detail::mean_of_errors(r, [](float e) { return std::pair{e * e, 2.0f * e}; });
  }
};

}  // namespace memopt
