#pragma once
// The shape every regression loss shares: a function of each output's error, averaged over
// the outputs of a sample (Keras's mean over the last axis).

#include <cstddef>
#include <utility>

#include "memopt/train/loss.hpp"

namespace memopt::detail {

/// mean_u f(y_pred_u - y_true_u); `f(e)` returns the value and its derivative by e.
template <class F>
double mean_of_errors(const LossRow<float>& r, F f) {
  const std::size_t k = r.y_pred.size();
  const float per = 1.0f / static_cast<float>(k);
  double sum = 0;
  for (std::size_t u = 0; u < k; ++u) {
    const auto [value, slope] = f(r.y_pred[u] - r.y_true[u]);
    sum += static_cast<double>(value);
    if (!r.grad.empty()) r.grad[u] = r.grad_scale * per * slope;
  }
  return sum * static_cast<double>(per);
}

}  // namespace memopt::detail
